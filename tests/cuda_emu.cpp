/* tests/cuda_emu.cpp - the CUDA runtime calls that cc_cuda.cuh and
 * tests/test_cuda.cu make, done on the CPU for one emulated device, so that
 * cc_cuda.cuh's staged path (device to host, cc.h's host collective, host to
 * device) runs in CI, where there is nvcc but no GPU.
 *
 * Linked instead of libcudart (nvcc -cudart=none) with an object nvcc built
 * as usual. What it emulates, and how strictly:
 *
 *   device memory   cudaMalloc'd blocks of host memory in a registry. Every
 *                   call that takes a device pointer checks that the whole
 *                   range lies in one live block, and that host pointers are
 *                   not passed as device ones (cudaMemcpyAsync checks its
 *                   direction against both sides, as a GPU's copy would fail).
 *   pointer queries cuPointerGetAttributes (through the driver entry point
 *                   call) and cudaPointerGetAttributes: memory type, buffer id
 *                   (new for every allocation), range, device ordinal, as the
 *                   driver reports them; other memory gets the driver's
 *                   defaults (type 0).
 *   streams         handles in a registry; work runs when it is queued, so
 *                   stream order holds trivially. A destroyed or unknown
 *                   stream is cudaErrorInvalidResourceHandle.
 *   errors          each failing call sets the thread's last error, as the
 *                   runtime does; cudaGetLastError returns and clears it.
 *
 * What it does not do: run kernels (a launch fails with cudaErrorNotSupported,
 * so ipc mode, which needs them, is not emulated: no CUDA IPC, no host
 * registration, no stream memory operations), and catch host code that reads
 * device memory directly (a GPU would fault; here the read works).
 *
 * cc_cuda_emulated() tells a test it runs on this. */
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define EMU_MAXA 4096 /* live allocations */
#define EMU_MAXS 256  /* live streams */
#define EMU_BUSID "0000:00:00.0"

struct CUstream_st { /* a stream is its address, in emu_stream while it lives */
  char unused;
};

static pthread_mutex_t emu_lock = PTHREAD_MUTEX_INITIALIZER;
static struct {
  char *p;
  size_t n;
  unsigned long long id;
} emu_alloc[EMU_MAXA];
static unsigned long long emu_next_id = 1;
static cudaStream_t emu_stream[EMU_MAXS];
static __thread cudaError_t emu_last = cudaSuccess;

extern "C" int cc_cuda_emulated(void) { return 1; }

static cudaError_t emu_err(cudaError_t e) {
  if (e != cudaSuccess) emu_last = e;
  return e;
}

/* The allocation holding byte p and the n - 1 after it, or -1. Caller holds
 * emu_lock. */
static int emu_find(const void *p, size_t n) {
  const char *q = (const char *)p;
  int i;
  for (i = 0; i < EMU_MAXA; i++)
    if (emu_alloc[i].p && q >= emu_alloc[i].p && q < emu_alloc[i].p + emu_alloc[i].n &&
        n <= (size_t)(emu_alloc[i].p + emu_alloc[i].n - q))
      return i;
  return -1;
}

static int emu_is_dev(const void *p, size_t n) {
  int i;
  pthread_mutex_lock(&emu_lock);
  i = emu_find(p, n);
  pthread_mutex_unlock(&emu_lock);
  return i >= 0;
}

/* Does any byte of [p, p + n) lie in device memory? */
static int emu_touches_dev(const void *p, size_t n) {
  const char *q = (const char *)p;
  int i, hit = 0;
  pthread_mutex_lock(&emu_lock);
  for (i = 0; i < EMU_MAXA && !hit; i++)
    if (emu_alloc[i].p && q < emu_alloc[i].p + emu_alloc[i].n && emu_alloc[i].p < q + n) hit = 1;
  pthread_mutex_unlock(&emu_lock);
  return hit;
}

static int emu_stream_ok(cudaStream_t s) {
  int i, ok = 0;
  if (s == 0 || s == cudaStreamLegacy || s == cudaStreamPerThread) return 1;
  pthread_mutex_lock(&emu_lock);
  for (i = 0; i < EMU_MAXS; i++)
    if (emu_stream[i] == s) ok = 1;
  pthread_mutex_unlock(&emu_lock);
  return ok;
}

/* ------------------------------------------------------------ device and errors */

cudaError_t cudaGetDeviceCount(int *count) {
  if (!count) return emu_err(cudaErrorInvalidValue);
  *count = 1;
  return cudaSuccess;
}

cudaError_t cudaSetDevice(int device) {
  return device == 0 ? cudaSuccess : emu_err(cudaErrorInvalidDevice);
}

cudaError_t cudaGetDevice(int *device) {
  if (!device) return emu_err(cudaErrorInvalidValue);
  *device = 0;
  return cudaSuccess;
}

cudaError_t cudaGetDeviceProperties(struct cudaDeviceProp *prop, int device) {
  if (!prop) return emu_err(cudaErrorInvalidValue);
  if (device != 0) return emu_err(cudaErrorInvalidDevice);
  memset(prop, 0, sizeof *prop);
  snprintf(prop->name, sizeof prop->name, "CPU emulation of one device (tests/cuda_emu.cpp)");
  prop->multiProcessorCount = 1;
  return cudaSuccess;
}

cudaError_t cudaDeviceGetAttribute(int *value, enum cudaDeviceAttr attr, int device) {
  if (!value) return emu_err(cudaErrorInvalidValue);
  if (device != 0) return emu_err(cudaErrorInvalidDevice);
  *value = attr == cudaDevAttrMultiProcessorCount ? 1 : 0;
  return cudaSuccess;
}

cudaError_t cudaDeviceGetPCIBusId(char *pciBusId, int len, int device) {
  if (!pciBusId || len <= 0) return emu_err(cudaErrorInvalidValue);
  if (device != 0) return emu_err(cudaErrorInvalidDevice);
  snprintf(pciBusId, (size_t)len, "%s", EMU_BUSID);
  return cudaSuccess;
}

cudaError_t cudaDeviceGetByPCIBusId(int *device, const char *pciBusId) {
  if (!device || !pciBusId) return emu_err(cudaErrorInvalidValue);
  if (strcmp(pciBusId, EMU_BUSID) != 0) return emu_err(cudaErrorInvalidDevice);
  *device = 0;
  return cudaSuccess;
}

cudaError_t cudaDeviceCanAccessPeer(int *canAccessPeer, int device, int peerDevice) {
  if (!canAccessPeer) return emu_err(cudaErrorInvalidValue);
  if (device != 0 || peerDevice != 0) return emu_err(cudaErrorInvalidDevice);
  *canAccessPeer = 0; /* a device is not its own peer */
  return cudaSuccess;
}

cudaError_t cudaDeviceSynchronize(void) { return cudaSuccess; }

cudaError_t cudaGetLastError(void) {
  cudaError_t e = emu_last;
  emu_last = cudaSuccess;
  return e;
}

const char *cudaGetErrorName(cudaError_t e) {
  switch (e) {
  case cudaSuccess: return "cudaSuccess";
  case cudaErrorInvalidValue: return "cudaErrorInvalidValue";
  case cudaErrorMemoryAllocation: return "cudaErrorMemoryAllocation";
  case cudaErrorInvalidDevice: return "cudaErrorInvalidDevice";
  case cudaErrorInvalidDevicePointer: return "cudaErrorInvalidDevicePointer";
  case cudaErrorInvalidMemcpyDirection: return "cudaErrorInvalidMemcpyDirection";
  case cudaErrorInvalidResourceHandle: return "cudaErrorInvalidResourceHandle";
  case cudaErrorNotSupported: return "cudaErrorNotSupported";
  default: return "cudaErrorUnknown";
  }
}

const char *cudaGetErrorString(cudaError_t e) {
  switch (e) {
  case cudaSuccess: return "no error";
  case cudaErrorInvalidValue: return "invalid argument";
  case cudaErrorMemoryAllocation: return "out of memory";
  case cudaErrorInvalidDevice: return "invalid device ordinal";
  case cudaErrorInvalidDevicePointer: return "invalid device pointer";
  case cudaErrorInvalidMemcpyDirection: return "invalid copy direction for memcpy";
  case cudaErrorInvalidResourceHandle: return "invalid resource handle";
  case cudaErrorNotSupported: return "operation not supported (the CPU emulation runs no kernels and has no IPC)";
  default: return "unknown error";
  }
}

/* ------------------------------------------------------------ memory */

cudaError_t cudaMalloc(void **devPtr, size_t size) {
  void *p = NULL;
  int i;
  if (!devPtr) return emu_err(cudaErrorInvalidValue);
  *devPtr = NULL;
  if (posix_memalign(&p, 512, size ? size : 1) != 0) return emu_err(cudaErrorMemoryAllocation);
  memset(p, 0xd7, size); /* not zero: nothing may count on fresh memory */
  pthread_mutex_lock(&emu_lock);
  for (i = 0; i < EMU_MAXA && emu_alloc[i].p; i++) {
  }
  if (i < EMU_MAXA) {
    emu_alloc[i].p = (char *)p;
    emu_alloc[i].n = size;
    emu_alloc[i].id = emu_next_id++;
  }
  pthread_mutex_unlock(&emu_lock);
  if (i == EMU_MAXA) {
    free(p);
    return emu_err(cudaErrorMemoryAllocation);
  }
  *devPtr = p;
  return cudaSuccess;
}

cudaError_t cudaFree(void *devPtr) {
  int i;
  if (!devPtr) return cudaSuccess; /* also the usual "make the context now" */
  pthread_mutex_lock(&emu_lock);
  for (i = 0; i < EMU_MAXA && emu_alloc[i].p != devPtr; i++) {
  }
  if (i < EMU_MAXA) emu_alloc[i].p = NULL;
  pthread_mutex_unlock(&emu_lock);
  if (i == EMU_MAXA) return emu_err(cudaErrorInvalidValue);
  free(devPtr);
  return cudaSuccess;
}

cudaError_t cudaMallocHost(void **ptr, size_t size) {
  if (!ptr) return emu_err(cudaErrorInvalidValue);
  if (posix_memalign(ptr, 4096, size ? size : 1) != 0) {
    *ptr = NULL;
    return emu_err(cudaErrorMemoryAllocation);
  }
  return cudaSuccess;
}

cudaError_t cudaFreeHost(void *ptr) {
  free(ptr);
  return cudaSuccess;
}

cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t count, enum cudaMemcpyKind kind,
                            cudaStream_t stream) {
  int dd, sd;
  if (!emu_stream_ok(stream)) return emu_err(cudaErrorInvalidResourceHandle);
  if (!count) return cudaSuccess;
  if (!dst || !src) return emu_err(cudaErrorInvalidValue);
  dd = emu_is_dev(dst, count);
  sd = emu_is_dev(src, count);
  if (kind == cudaMemcpyDefault) kind = sd ? (dd ? cudaMemcpyDeviceToDevice : cudaMemcpyDeviceToHost)
                                           : (dd ? cudaMemcpyHostToDevice : cudaMemcpyHostToHost);
  switch (kind) {
  case cudaMemcpyHostToDevice:
    if (!dd || emu_touches_dev(src, count)) return emu_err(cudaErrorInvalidValue);
    break;
  case cudaMemcpyDeviceToHost:
    if (!sd || emu_touches_dev(dst, count)) return emu_err(cudaErrorInvalidValue);
    break;
  case cudaMemcpyDeviceToDevice:
    if (!dd || !sd) return emu_err(cudaErrorInvalidValue);
    break;
  case cudaMemcpyHostToHost:
    if (emu_touches_dev(dst, count) || emu_touches_dev(src, count)) return emu_err(cudaErrorInvalidValue);
    break;
  default: return emu_err(cudaErrorInvalidMemcpyDirection);
  }
  memmove(dst, src, count);
  return cudaSuccess;
}

cudaError_t cudaMemsetAsync(void *devPtr, int value, size_t count, cudaStream_t stream) {
  if (!emu_stream_ok(stream)) return emu_err(cudaErrorInvalidResourceHandle);
  if (!count) return cudaSuccess;
  if (!emu_is_dev(devPtr, count)) return emu_err(cudaErrorInvalidValue);
  memset(devPtr, value, count);
  return cudaSuccess;
}

cudaError_t cudaPointerGetAttributes(struct cudaPointerAttributes *attributes, const void *ptr) {
  int i;
  if (!attributes) return emu_err(cudaErrorInvalidValue);
  memset(attributes, 0, sizeof *attributes);
  pthread_mutex_lock(&emu_lock);
  i = emu_find(ptr, 0);
  pthread_mutex_unlock(&emu_lock);
  attributes->type = i >= 0 ? cudaMemoryTypeDevice : cudaMemoryTypeUnregistered;
  attributes->device = i >= 0 ? 0 : -1;
  attributes->devicePointer = i >= 0 ? (void *)ptr : NULL;
  attributes->hostPointer = i >= 0 ? NULL : (void *)ptr;
  return cudaSuccess;
}

/* The driver's query, which cc_cuda.cuh fetches by name: unknown memory gets
 * default values and CUDA_SUCCESS, as the driver documents. */
static CUresult emu_cuPointerGetAttributes(unsigned int n, CUpointer_attribute *attrs, void **data, CUdeviceptr ptr) {
  unsigned int a;
  int i;
  char *base = NULL;
  size_t size = 0;
  unsigned long long id = 0;
  pthread_mutex_lock(&emu_lock);
  i = emu_find((const void *)(uintptr_t)ptr, 0);
  if (i >= 0) {
    base = emu_alloc[i].p;
    size = emu_alloc[i].n;
    id = emu_alloc[i].id;
  }
  pthread_mutex_unlock(&emu_lock);
  for (a = 0; a < n; a++) {
    switch (attrs[a]) {
    case CU_POINTER_ATTRIBUTE_MEMORY_TYPE: *(unsigned int *)data[a] = i >= 0 ? CU_MEMORYTYPE_DEVICE : 0; break;
    case CU_POINTER_ATTRIBUTE_IS_MANAGED: *(unsigned int *)data[a] = 0; break;
    case CU_POINTER_ATTRIBUTE_BUFFER_ID: *(unsigned long long *)data[a] = id; break;
    case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL: *(int *)data[a] = i >= 0 ? 0 : -2; break;
    case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR: *(CUdeviceptr *)data[a] = (CUdeviceptr)(uintptr_t)base; break;
    case CU_POINTER_ATTRIBUTE_RANGE_SIZE: *(size_t *)data[a] = size; break;
    default: return CUDA_ERROR_INVALID_VALUE;
    }
  }
  return CUDA_SUCCESS;
}

/* Of the driver, only the pointer query: no stream memory operations. */
cudaError_t cudaGetDriverEntryPointByVersion(const char *symbol, void **funcPtr, unsigned int cudaVersion,
                                             unsigned long long flags,
                                             enum cudaDriverEntryPointQueryResult *driverStatus) {
  (void)cudaVersion;
  (void)flags;
  if (!symbol || !funcPtr) return emu_err(cudaErrorInvalidValue);
  *funcPtr = !strcmp(symbol, "cuPointerGetAttributes") ? (void *)emu_cuPointerGetAttributes : NULL;
  if (driverStatus)
    *driverStatus = *funcPtr ? cudaDriverEntryPointSuccess : cudaDriverEntryPointSymbolNotFound;
  return cudaSuccess;
}

/* No CUDA IPC and no host registration: ipc mode is not emulated. */
cudaError_t cudaIpcGetMemHandle(cudaIpcMemHandle_t *handle, void *devPtr) {
  (void)handle;
  (void)devPtr;
  return emu_err(cudaErrorNotSupported);
}
cudaError_t cudaIpcOpenMemHandle(void **devPtr, cudaIpcMemHandle_t handle, unsigned int flags) {
  (void)devPtr;
  (void)handle;
  (void)flags;
  return emu_err(cudaErrorNotSupported);
}
cudaError_t cudaIpcCloseMemHandle(void *devPtr) {
  (void)devPtr;
  return emu_err(cudaErrorNotSupported);
}
cudaError_t cudaHostRegister(void *ptr, size_t size, unsigned int flags) {
  (void)ptr;
  (void)size;
  (void)flags;
  return emu_err(cudaErrorNotSupported);
}
cudaError_t cudaHostUnregister(void *ptr) {
  (void)ptr;
  return emu_err(cudaErrorNotSupported);
}
cudaError_t cudaHostGetDevicePointer(void **pDevice, void *pHost, unsigned int flags) {
  (void)pDevice;
  (void)pHost;
  (void)flags;
  return emu_err(cudaErrorNotSupported);
}

/* ------------------------------------------------------------ streams */

cudaError_t cudaStreamCreateWithFlags(cudaStream_t *pStream, unsigned int flags) {
  int i;
  (void)flags;
  if (!pStream) return emu_err(cudaErrorInvalidValue);
  *pStream = NULL;
  pthread_mutex_lock(&emu_lock);
  for (i = 0; i < EMU_MAXS && emu_stream[i]; i++) {
  }
  if (i < EMU_MAXS) {
    emu_stream[i] = (cudaStream_t)malloc(sizeof(struct CUstream_st));
    *pStream = emu_stream[i];
  }
  pthread_mutex_unlock(&emu_lock);
  return *pStream ? cudaSuccess : emu_err(cudaErrorMemoryAllocation);
}

cudaError_t cudaStreamDestroy(cudaStream_t stream) {
  int i;
  pthread_mutex_lock(&emu_lock);
  for (i = 0; i < EMU_MAXS && (!stream || emu_stream[i] != stream); i++) {
  }
  if (i < EMU_MAXS) emu_stream[i] = NULL;
  pthread_mutex_unlock(&emu_lock);
  if (i == EMU_MAXS) return emu_err(cudaErrorInvalidResourceHandle);
  free(stream);
  return cudaSuccess;
}

cudaError_t cudaStreamSynchronize(cudaStream_t stream) {
  return emu_stream_ok(stream) ? cudaSuccess : emu_err(cudaErrorInvalidResourceHandle);
}

/* ------------------------------------------------------------ what nvcc's code calls */

/* Module registration at start-up and exit: nothing to load. */
extern "C" {
static void *emu_module;
void **__cudaRegisterFatBinary(void *fatCubin) {
  (void)fatCubin;
  return &emu_module;
}
void __cudaRegisterFatBinaryEnd(void **handle) { (void)handle; }
void __cudaUnregisterFatBinary(void **handle) { (void)handle; }
char __cudaInitModule(void **handle) {
  (void)handle;
  return 1;
}
void __cudaRegisterFunction(void **handle, const char *hostFun, char *deviceFun, const char *deviceName,
                            int thread_limit, uint3 *tid, uint3 *bid, dim3 *bDim, dim3 *gDim, int *wSize) {
  (void)handle, (void)hostFun, (void)deviceFun, (void)deviceName, (void)thread_limit;
  (void)tid, (void)bid, (void)bDim, (void)gDim, (void)wSize;
}

/* Launches: the configuration is taken and given back; the launch fails. */
unsigned __cudaPushCallConfiguration(dim3 gridDim, dim3 blockDim, size_t sharedMem, struct CUstream_st *stream) {
  (void)gridDim, (void)blockDim, (void)sharedMem, (void)stream;
  return 0;
}
cudaError_t __cudaPopCallConfiguration(dim3 *gridDim, dim3 *blockDim, size_t *sharedMem, void *stream) {
  *gridDim = dim3(1, 1, 1);
  *blockDim = dim3(1, 1, 1);
  *sharedMem = 0;
  *(cudaStream_t *)stream = 0;
  return cudaSuccess;
}
#if CUDART_VERSION >= 13000
cudaError_t __cudaGetKernel(cudaKernel_t *kernel, const void *fun) {
  *kernel = (cudaKernel_t)fun;
  return cudaSuccess;
}
cudaError_t __cudaLaunchKernel(cudaKernel_t kernel, dim3 gridDim, dim3 blockDim, void **args, size_t sharedMem,
                               cudaStream_t stream) {
  (void)kernel, (void)gridDim, (void)blockDim, (void)args, (void)sharedMem, (void)stream;
  return emu_err(cudaErrorNotSupported);
}
#endif
}

/* CUDA 12 and older launch through this one. */
cudaError_t cudaLaunchKernel(const void *func, dim3 gridDim, dim3 blockDim, void **args, size_t sharedMem,
                             cudaStream_t stream) {
  (void)func, (void)gridDim, (void)blockDim, (void)args, (void)sharedMem, (void)stream;
  return emu_err(cudaErrorNotSupported);
}
