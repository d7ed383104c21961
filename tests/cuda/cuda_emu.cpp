/* tests/cuda/cuda_emu.cpp - the CUDA runtime calls that cc_cuda.cuh and
 * tests/cuda/test_cuda.cu make, done on the CPU, so that cc_cuda.cuh's ipc mode
 * (its kernels, CUDA IPC between processes, stream memory operations on a
 * registered flag page) and its staged path run in CI, where there is nvcc
 * but no GPU.
 *
 * Linked instead of libcudart (nvcc -cudart=none) with objects nvcc built as
 * usual. What it emulates, and how strictly:
 *
 *   kernels         a launch (fn<<<>>> or cudaLaunchKernel) is queued on its
 *                   stream with a copy of its arguments; the stream's thread
 *                   runs the kernel's CPU twin, which the program hands over
 *                   (tests/cuda/cuda_emu.h): the kernel's own __host__ __device__
 *                   body over the whole grid, thread after thread. A fault
 *                   inside it (SIGSEGV, SIGBUS) kills the context: the sticky
 *                   error cudaErrorIllegalAddress, returned by every later
 *                   call, as a GPU's fault does.
 *   streams         one thread per stream, running its work in order (a
 *                   FIFO), each item after a random delay (seeded:
 *                   CC_EMU_SEED; CC_EMU_DELAY_US the longest, default 300,
 *                   0 for none), so that work on different streams interleaves
 *                   as it may on a GPU. cudaStreamSynchronize, events,
 *                   cudaStreamWaitEvent and the legacy default stream's
 *                   implicit order with blocking streams are real.
 *                   cudaMemcpyAsync from pageable memory takes its source at
 *                   the call; to pageable memory it returns when done (as the
 *                   runtime documents); with pinned memory it is async.
 *                   cudaFree and cudaDeviceSynchronize wait for every stream.
 *                   Graph capture: work queued while capturing is not run;
 *                   cudaDeviceSynchronize during a capture fails. Capture
 *                   modes as the runtime documents them: each thread's mode
 *                   (cudaThreadExchangeStreamCaptureMode, Global by
 *                   default) and each capture's; a potentially unsafe call
 *                   (allocating, freeing, mapping or registering memory,
 *                   querying or synchronizing an event, a stream or the
 *                   device) from a thread that the rules prohibit fails with
 *                   cudaErrorStreamCaptureUnsupported and invalidates the
 *                   captures that prohibit it (cudaStreamEndCapture then
 *                   fails, with no graph); the legacy stream used while a
 *                   blocking stream captures invalidates it too; an event
 *                   recorded in a capture cannot be queried, synchronized or
 *                   waited for outside it.
 *   device memory   every cudaMalloc is a memfd of its own, mapped here;
 *                   every call that takes a device pointer checks that the
 *                   whole range lies in one live allocation, and that host
 *                   pointers are not passed as device ones (cudaMemcpyAsync
 *                   checks its direction against both sides).
 *   CUDA IPC        cudaIpcGetMemHandle names the memfd (pid, fd, buffer id);
 *                   cudaIpcOpenMemHandle in another process maps it at another
 *                   address (through /proc/PID/fd), refuses the exporting
 *                   process, and counts a second open of the same handle;
 *                   it fails with cudaErrorAlreadyMapped while this process
 *                   still has open memory that the owner has freed in the
 *                   same 2 MiB of the owner's addresses (CC_EMU_IPC_CHUNK,
 *                   a power of two, sets the span; on a real GPU the
 *                   mapping goes where the owner has the memory, and a stale
 *                   mapping holds that place: seen on an H200);
 *                   cudaIpcCloseMemHandle unmaps at the last close. A cudaFree
 *                   while a live process still has the memory open (undefined
 *                   in CUDA) is reported on stderr and counted.
 *   host memory     cudaMallocHost is pinned; cudaHostRegister pins a range
 *                   and cudaHostGetDevicePointer returns a second mapping of
 *                   the same pages (shared memory), so that code which mixes
 *                   up the host and the device address of a page reads
 *                   another address than it writes, as it would on a GPU.
 *   driver          through the entry-point query: cuPointerGetAttributes,
 *                   cuStreamBatchMemOp (not with CC_EMU_NO_BATCH=1),
 *                   cuStreamWriteValue32 and cuStreamWaitValue32 (GEQ, EQ,
 *                   AND, NOR, with CU_STREAM_WAIT_VALUE_FLUSH where the
 *                   device can flush remote writes: CC_EMU_FLUSH=1; default
 *                   0, what x86 hosts report, and the flag is then refused)
 *                   on device memory or a registered page's device address.
 *   devices         CC_EMU_DEVICES (default 1) devices with their own UUID and
 *                   PCI bus id, each reaching the others; CUDA_VISIBLE_DEVICES
 *                   picks and orders them. CC_EMU_MIG=1: they are MIG
 *                   instances of one GPU (one bus id, no peer access, no IPC
 *                   between them). CC_EMU_SMS SMs each (default 132);
 *                   cudaOccupancyMaxActiveBlocksPerMultiprocessor as if every
 *                   kernel used CC_EMU_REGS registers per thread (default 40);
 *                   launches larger than one wave are counted.
 *   errors          each failing call sets the thread's last error;
 *                   cudaGetLastError returns and clears it (not a sticky one).
 *   order           CC_EMU_HB=1: a happens-before checker of every access
 *                   to device memory across streams and processes (its
 *                   section below; docs/cuda.md).
 *
 * What it does not do: model a GPU's memory (its writes are the CPU's,
 * coherent at once across processes, so a missing fence goes unseen; a
 * missing flush of remote writes is seen only as an order, by the
 * happens-before checker), run threads of a kernel at the same time, catch
 * host code that reads device memory directly, or time anything like a GPU. */
#include "cuda_emu.h"
#include "cuda_emu_hb.h"

#include <cuda.h>
#include <cuda_runtime_api.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/types.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

extern "C" int cc_emu_kernel_twin(const void *stub, cc_emu_twin *out) __attribute__((weak));

#define EMU_MAXA 1024                 /* live allocations and registrations */
#define EMU_MAXDEV 8
#define EMU_HDR 4096                  /* the header page before a device allocation's data */
#define EMU_MAGIC 0x43434d45u         /* "CCME" */
#define EMU_OPENS 64                  /* processes that may have one allocation open */
#define EMU_MEM_LIMIT ((size_t)2 << 30) /* device memory per process (CC_EMU_MEM_LIMIT overrides) */
#define EMU_CHUNK ((uint64_t)2 << 20) /* CUDA maps a peer's memory in chunks of this (CC_EMU_IPC_CHUNK overrides) */
#define EMU_CHUNK_DOWN(a, c) ((uint64_t)(a) & ~((c) - 1))
#define EMU_CHUNK_UP(a, c) EMU_CHUNK_DOWN((uint64_t)(a) + (c) - 1, c)
#define EMU_WAIT_LIMIT_S 300          /* a stream wait that lasts longer kills the context */

/* ------------------------------------------------------------ state */

static pthread_mutex_t emu_lock = PTHREAD_MUTEX_INITIALIZER;
static __thread cudaError_t emu_last = cudaSuccess;
static __thread int emu_cur = 0;                  /* current device (ordinal) */
static cudaError_t emu_sticky = cudaSuccess;      /* atomic */
static long emu_counts[10];  /* see cc_emu_count's names */
enum { EC_FREED_MAPPED, EC_FLUSH, EC_KERNELS, EC_FAULTS, EC_CAPTURE, EC_WAVES, EC_MAXBLOCKS, EC_MEMOPS, EC_BATCHES,
       EC_ALREADY_MAPPED, EC_N };
static unsigned long long emu_next_id = 1;
static size_t emu_mem_used;

static long hb_count_of(const char *what);
extern "C" int cc_cuda_emulated(void) { return 1; }
extern "C" long cc_emu_count(const char *what) {
  static const char *const names[EC_N] = {"freed_while_mapped", "flush_waits", "kernels", "faults",
                                         "capture_violations", "over_one_wave", "max_blocks", "memop_calls",
                                         "batch_calls", "already_mapped"};
  int i;
  for (i = 0; i < EC_N; i++)
    if (!strcmp(what, names[i]))
      return i == EC_MAXBLOCKS ? __atomic_exchange_n(&emu_counts[i], 0, __ATOMIC_ACQ_REL)   /* since asked last */
                               : __atomic_load_n(&emu_counts[i], __ATOMIC_ACQUIRE);
  return hb_count_of(what);
}
static void emu_count(int i) { __atomic_add_fetch(&emu_counts[i], 1, __ATOMIC_ACQ_REL); }

static cudaError_t emu_sticky_err(void) { return __atomic_load_n(&emu_sticky, __ATOMIC_ACQUIRE); }

static cudaError_t emu_err(cudaError_t e) {
  if (e != cudaSuccess) emu_last = e;
  return e;
}

/* Every call that a dead context refuses starts with this. */
#define EMU_LIVE()                                                                                   \
  do {                                                                                               \
    cudaError_t emu_s_ = emu_sticky_err();                                                           \
    if (emu_s_ != cudaSuccess) return emu_err(emu_s_);                                              \
  } while (0)

static void emu_kill(cudaError_t e, const char *why) {
  cudaError_t none = cudaSuccess;
  if (__atomic_compare_exchange_n(&emu_sticky, &none, e, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
    fprintf(stderr, "cuda_emu: pid %d: the context is dead (%d): %s\n", (int)getpid(), (int)e, why);
}

static void emu_sleep_us(long us) {
  struct timespec ts;
  if (us <= 0) return;
  ts.tv_sec = us / 1000000;
  ts.tv_nsec = (us % 1000000) * 1000;
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
  }
}

static double emu_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static long emu_env_long(const char *name, long dflt) {
  const char *v = getenv(name);
  return v && *v ? strtol(v, NULL, 0) : dflt;
}

/* ------------------------------------------------------------ devices */

static int emu_ndev = -1, emu_phys[EMU_MAXDEV], emu_mig;

/* The visible devices: CC_EMU_DEVICES of them, filtered and ordered by
 * CUDA_VISIBLE_DEVICES. Caller holds emu_lock. */
static void emu_devices_locked(void) {
  long nphys = emu_env_long("CC_EMU_DEVICES", 1);
  const char *vis = getenv("CUDA_VISIBLE_DEVICES");
  if (emu_ndev >= 0) return;
  if (nphys < 1) nphys = 1;
  if (nphys > EMU_MAXDEV) nphys = EMU_MAXDEV;
  emu_mig = (int)emu_env_long("CC_EMU_MIG", 0);
  emu_ndev = 0;
  if (vis) {
    const char *p = vis;
    while (*p && emu_ndev < EMU_MAXDEV) {
      char *end;
      long d = strtol(p, &end, 10);
      if (end == p || d < 0 || d >= nphys) break; /* as CUDA: the list ends at the first bad entry */
      emu_phys[emu_ndev++] = (int)d;
      p = *end == ',' ? end + 1 : end;
      if (end == p && *p) break;
    }
  } else {
    for (; emu_ndev < nphys; emu_ndev++) emu_phys[emu_ndev] = emu_ndev;
  }
}

static int emu_devices(void) {
  pthread_mutex_lock(&emu_lock);
  emu_devices_locked();
  pthread_mutex_unlock(&emu_lock);
  return emu_ndev;
}

/* The ordinal of physical device p here, or -1 where it is not visible. */
static int emu_ordinal(int p) {
  int i, n = emu_devices();
  for (i = 0; i < n; i++)
    if (emu_phys[i] == p) return i;
  return -1;
}

static void emu_busid(int phys, char *out, size_t cap) {
  snprintf(out, cap, "0000:%02x:00.0", emu_mig ? 0x17 : 0x17 + phys);
}

static void emu_uuid(int phys, char *bytes) {
  int i;
  for (i = 0; i < 16; i++) bytes[i] = (char)(0xc0 + i);
  bytes[14] = (char)(emu_mig ? 0x4d : 0x47); /* 'M'IG instance or 'G'PU */
  bytes[15] = (char)phys;
}

/* Streaming multiprocessors per device (CC_EMU_SMS, default 132 as an H100
 * SXM), and what one holds at once: 2048 threads, 65536 registers, 32
 * blocks. The emulator does not know a kernel's registers: CC_EMU_REGS per
 * thread (default 40, the most cc_cuda.cuh's fold kernels use) stands for
 * every kernel's, in cudaOccupancyMaxActiveBlocksPerMultiprocessor and in the
 * count of launches larger than one wave (cc_emu_count("over_one_wave")). */
#define EMU_SM_THREADS 2048
#define EMU_SM_REGS 65536
static int emu_sms(void) {
  long v = emu_env_long("CC_EMU_SMS", 132);
  return v < 1 ? 1 : v > 1024 ? 1024 : (int)v;
}

static int emu_blocks_per_sm(unsigned int threads) {
  long regs = emu_env_long("CC_EMU_REGS", 40);
  unsigned int warps = (threads + 31) / 32, per_warp, by_regs, by_threads;
  if (regs < 1) regs = 1;
  if (regs > 255) regs = 255;
  per_warp = ((unsigned int)regs * 32 + 255) / 256 * 256;
  by_regs = EMU_SM_REGS / (warps * per_warp);
  by_threads = EMU_SM_THREADS / (warps * 32);
  return (int)(by_regs < by_threads ? (by_regs < 32 ? by_regs : 32) : (by_threads < 32 ? by_threads : 32));
}

/* CU_DEVICE_ATTRIBUTE_CAN_FLUSH_REMOTE_WRITES: CC_EMU_FLUSH, default 0 (what
 * x86 hosts report); a wait with CU_STREAM_WAIT_VALUE_FLUSH is refused
 * without it (CUDA_ERROR_NOT_SUPPORTED). The happens-before checker holds a
 * device's accesses of bytes that another device wrote into its memory to a
 * flushing order (tests/cuda/cuda_emu_hb.h). */
static int emu_can_flush(void) { return emu_env_long("CC_EMU_FLUSH", 0) != 0; }

/* Can memory of physical device a be used from device b? */
static int emu_reach(int a, int b) { return a == b || !emu_mig; }

/* ------------------------------------------------------------ memory registry */

enum { M_DEV = 1, M_IPC, M_MANAGED, M_PINNED, M_HOSTREG };

typedef struct emu_hdr {               /* the first page of a device allocation's memfd */
  uint32_t magic;
  int32_t owner;
  uint64_t id, size;
  int32_t dev, freed;                  /* freed: its owner called cudaFree (peers may still have it open) */
  uint64_t va;                         /* its address in its owner */
  struct { int32_t pid, count; } opens[EMU_OPENS];
} emu_hdr;

typedef struct emu_mem {
  int kind;
  char *p;                             /* where the memory is (host pointer for M_HOSTREG) */
  size_t n;
  unsigned long long id;
  int dev;                             /* physical device */
  int fd;                              /* M_DEV: the memfd, open while it lives */
  char *map;                           /* the whole mapping (header page first) */
  size_t maplen;
  int refs;                            /* M_IPC: opens of the handle here */
  char *alias;                         /* M_HOSTREG: the second mapping (device address) */
  struct hb_alloc *hb;                 /* the checker's shadow (CC_EMU_HB), NULL without */
  uint64_t fkey[2];                    /* M_HOSTREG: the file it maps (device, inode), 0 when private */
  uint64_t foff;                       /* ... and its offset there */
  const emu_hdr *src;                  /* M_IPC: the owner's header (its address there, freed or not) */
} emu_mem;

static emu_mem emu_mems[EMU_MAXA];

static int emu_in(const char *q, size_t n, const char *p, size_t len) {
  return q >= p && q < p + len && n <= (size_t)(p + len - q);
}

/* The allocation that device memory [p, p + n) lies in (device, imported,
 * managed), or -1. Caller holds emu_lock. */
static int emu_find_dev(const void *p, size_t n) {
  const char *q = (const char *)p;
  int i;
  for (i = 0; i < EMU_MAXA; i++) {
    emu_mem *m = &emu_mems[i];
    if ((m->kind == M_DEV || m->kind == M_IPC || m->kind == M_MANAGED) && emu_in(q, n, m->p, m->n)) return i;
  }
  return -1;
}

/* Pinned host memory (cudaMallocHost, registered), by its host address. */
static int emu_find_pinned(const void *p, size_t n) {
  const char *q = (const char *)p;
  int i;
  for (i = 0; i < EMU_MAXA; i++) {
    emu_mem *m = &emu_mems[i];
    if ((m->kind == M_PINNED || m->kind == M_HOSTREG) && emu_in(q, n, m->p, m->n)) return i;
  }
  return -1;
}

/* Memory the device may access by this address: device memory, pinned host
 * memory, a registered range's device address. */
static int emu_gpu_reaches(const void *p, size_t n) {
  const char *q = (const char *)p;
  int i, ok = 0;
  pthread_mutex_lock(&emu_lock);
  for (i = 0; i < EMU_MAXA && !ok; i++) {
    emu_mem *m = &emu_mems[i];
    if (!m->kind) continue;
    if (m->kind == M_HOSTREG) ok = emu_in(q, n, m->alias, m->n);
    else ok = emu_in(q, n, m->p, m->n);
  }
  pthread_mutex_unlock(&emu_lock);
  return ok;
}

static int emu_is_dev(const void *p, size_t n) {
  int i;
  pthread_mutex_lock(&emu_lock);
  i = emu_find_dev(p, n);
  pthread_mutex_unlock(&emu_lock);
  return i >= 0;
}

static int emu_is_pinned(const void *p, size_t n) {
  int i;
  pthread_mutex_lock(&emu_lock);
  i = emu_find_pinned(p, n);
  pthread_mutex_unlock(&emu_lock);
  return i >= 0;
}

/* Does any byte of [p, p + n) lie in device memory? */
static int emu_touches_dev(const void *p, size_t n) {
  const char *q = (const char *)p;
  int i, hit = 0;
  pthread_mutex_lock(&emu_lock);
  for (i = 0; i < EMU_MAXA && !hit; i++) {
    emu_mem *m = &emu_mems[i];
    if ((m->kind == M_DEV || m->kind == M_IPC) && q < m->p + m->n && m->p < q + n) hit = 1;
  }
  pthread_mutex_unlock(&emu_lock);
  return hit;
}

static int emu_slot_locked(void) {
  int i;
  for (i = 0; i < EMU_MAXA; i++)
    if (!emu_mems[i].kind) return i;
  return -1;
}

static int emu_pid_alive(int pid) {
  char path[64], st = 0, buf[512];
  FILE *f;
  size_t n;
  char *p;
  if (pid <= 0 || (kill(pid, 0) != 0 && errno == ESRCH)) return 0;
  snprintf(path, sizeof path, "/proc/%d/stat", pid);
  if (!(f = fopen(path, "r"))) return 0;
  n = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  buf[n] = 0;
  p = strrchr(buf, ')');
  if (p && p[1] == ' ') st = p[2];
  return st != 'Z' && st != 'X';
}

/* ------------------------------------------------------------ happens-before checker
 *
 * CC_EMU_HB=1 (in the environment when the program starts): every access of
 * the kernels (cc_cuda.cuh's twins tell it, CC_CUDA_EMU_HOOKS), copies and
 * memsets to device memory is checked against the earlier accesses of the
 * same bytes by every other stream of every process: it must be ordered
 * after them by what CUDA orders (tests/cuda/cuda_emu_hb.h has the logic):
 *   - a stream's work in its order; the work a host thread queues after what
 *     that thread knew when it queued it;
 *   - cudaStreamWaitEvent, the legacy stream's implicit waits; what a host
 *     thread waited for (cudaStreamSynchronize, cudaEventSynchronize,
 *     cudaDeviceSynchronize, a synchronous copy, cudaFree's wait, a query
 *     that found the work done);
 *   - flags: a stream memory write (cuStreamWriteValue32) or a twin's flag
 *     store publishes the writer's vector clock beside the word (in the
 *     region below, keyed by the word's file and offset, so that every
 *     process that maps it finds it); a wait or a twin's flag load that reads
 *     that very value takes it in.
 * Host threads' own loads and stores (cc.h's host collectives, a socket) are
 * not seen: an order made only that way is reported. A race is printed
 * ("cuda_emu: RACE: ...", both streams named) and counted; so is an access to
 * memory its owner freed while this process still had it open, and a
 * cudaIpcCloseMemHandle while this process's accesses through the mapping are
 * not known to be done. The counts are the region's, for every process: the
 * process that made it prints them when it exits (and appends them to
 * CC_EMU_HB_LOG). A wait that passed on a value nobody published (the
 * watchdog released it: the communicator failed) makes this process's later
 * races "after a released wait": printed and counted apart, since the
 * results of a failed communicator's calls are undefined anyway.
 *
 * The region is shared memory made before main, so the ranks that cc_spawn
 * (or fork) makes share it; processes started otherwise each have their own,
 * and the shadow of an allocation from another one is refused (an error). */

#define HB_NFLAG 16384                 /* flag words with a published clock */
#define HB_PROBE 64
#define HB_HIST 256                    /* clocks kept per stream, by operation number */
#define HB_PRINT 6                     /* reports printed per process; the rest are counted */

enum { HBC_ACCESSES, HBC_FLAG_EDGES, HBC_SYNC_EDGES, HBC_RACES, HBC_UAF, HBC_ERRORS, HBC_RELEASED, HBC_AFTER,
       HBC_DROPPED, HBC_MISSES, HBC_AGENTS, HBC_EVICTED, HBC_N };
static const char *const hb_count_names[HBC_N] = {
    "hb_accesses", "hb_flag_edges", "hb_sync_edges", "hb_races", "hb_uaf", "hb_errors", "hb_released",
    "hb_after_release", "hb_dropped_reads", "hb_history_misses", "hb_streams", "hb_evicted_flags"};

typedef struct hb_agent_info {         /* fields read without the lock: atomics */
  int32_t pid, rank, stream, live;
  uint32_t base, hi;                   /* its first and latest clock */
} hb_agent_info;

typedef struct hb_flag {
  uint64_t k[3];                       /* which word (hb_flag_key) */
  uint64_t stamp;                      /* 0: free */
  uint32_t value, unused;
  uint32_t vc[HB_MAXA];                /* the clock of the store of `value` */
  uint32_t fvc[HB_MAXA];               /* and the flushed one */
} hb_flag;

typedef struct hb_region {
  uint64_t id;
  int32_t creator, unused;
  pthread_mutex_t mu;                  /* agents (writes), flags */
  hb_agent_info agents[HB_MAXA];
  uint64_t counts[HBC_N];
  uint64_t stamp;
  hb_flag flags[HB_NFLAG];
} hb_region;

typedef struct hb_alloc {              /* after a device allocation's data, in its memfd */
  uint64_t region;                     /* the checker's id */
  pthread_mutex_t mu;
  int32_t owner, freed_by;             /* freed_by: the owner freed it (its pid) */
  uint64_t id;
  hb_shadow sh;
} hb_alloc;
#define HB_SHADOW_BYTES ((sizeof(hb_alloc) + 4095) & ~(size_t)4095)

typedef struct hb_ctx {                /* a thread's: a stream's (slot > 0) or a host thread's */
  int slot;                            /* agent + 1; 0: none */
  int dev;                             /* a stream's physical device */
  uint32_t vc[HB_MAXA];
  uint32_t fvc[HB_MAXA];               /* what it knows through flushing paths (cuda_emu_hb.h: remote writes) */
} hb_ctx;

static hb_region *hb_reg;
static __thread hb_ctx hb_host;
static __thread hb_ctx *hb_cur;        /* a stream thread's own */
static int hb_released_here;           /* atomic: a wait here passed on a value nobody published */
static long hb_printed;                /* atomic */

static hb_ctx *hb_me(void) { return hb_cur ? hb_cur : &hb_host; }
static void hb_count(int i, uint64_t n) {
  if (hb_reg && n) __atomic_add_fetch(&hb_reg->counts[i], n, __ATOMIC_RELAXED);
}

static void hb_lock(pthread_mutex_t *m) {
  if (pthread_mutex_lock(m) == EOWNERDEAD) pthread_mutex_consistent(m); /* its holder died: go on */
}

static void hb_mutex_init(pthread_mutex_t *m) {
  pthread_mutexattr_t a;
  pthread_mutexattr_init(&a);
  pthread_mutexattr_setpshared(&a, PTHREAD_PROCESS_SHARED);
  pthread_mutexattr_setrobust(&a, PTHREAD_MUTEX_ROBUST);
  pthread_mutex_init(m, &a);
  pthread_mutexattr_destroy(&a);
}

/* Should this report be printed (the first HB_PRINT of the process)? */
static int hb_print(void) {
  long n = __atomic_add_fetch(&hb_printed, 1, __ATOMIC_RELAXED);
  if (n == HB_PRINT + 1)
    fprintf(stderr, "cuda_emu: pid %d: HB: further reports of this process are counted, not printed\n", (int)getpid());
  return n <= HB_PRINT;
}

static void hb_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void hb_error(const char *fmt, ...) {
  char m[400];
  va_list ap;
  hb_count(HBC_ERRORS, 1);
  if (!hb_print()) return;
  va_start(ap, fmt);
  vsnprintf(m, sizeof m, fmt, ap);
  va_end(ap);
  fprintf(stderr, "cuda_emu: pid %d: HB: checker error: %s\n", (int)getpid(), m);
}

/* "rank 1 (pid 4711) stream 3" for agent a, whose access had clock clk. */
static void hb_name(int a, uint32_t clk, char *out, size_t cap) {
  hb_agent_info *g = &hb_reg->agents[a];
  int pid = __atomic_load_n(&g->pid, __ATOMIC_RELAXED), rank = __atomic_load_n(&g->rank, __ATOMIC_RELAXED);
  int st = __atomic_load_n(&g->stream, __ATOMIC_RELAXED);
  if (clk && clk < __atomic_load_n(&g->base, __ATOMIC_RELAXED))
    snprintf(out, cap, "a stream that has ended (checker slot %d)", a);
  else if (rank >= 0)
    snprintf(out, cap, "rank %d (pid %d) stream %d", rank, pid, st);
  else
    snprintf(out, cap, "pid %d stream %d", pid, st);
}

static const char *const hb_ops[] = {"an access", "copy kernel", "fold kernel", "cudaMemcpy", "cudaMemset"};
static uint16_t hb_op_code(const char *op) {
  uint16_t i;
  for (i = 1; i < sizeof hb_ops / sizeof hb_ops[0]; i++)
    if (op && !strcmp(op, hb_ops[i])) return i;
  return 0;
}

static void hb_summary(void);

/* cc_emu_count's names of the checker's counts (every process's): -1 for another name */
static long hb_count_of(const char *what) {
  int i;
  if (!strcmp(what, "hb_on")) return hb_reg != NULL;
  for (i = 0; i < HBC_N; i++)
    if (!strcmp(what, hb_count_names[i])) return hb_reg ? (long)__atomic_load_n(&hb_reg->counts[i], __ATOMIC_RELAXED) : 0;
  return -1;
}

/* Before main: the region, when CC_EMU_HB asks for it. */
__attribute__((constructor)) static void hb_init(void) {
  const char *v = getenv("CC_EMU_HB");
  void *p;
  if (!v || !*v || !strcmp(v, "0")) return;
  p = mmap(NULL, sizeof(hb_region), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) {
    fprintf(stderr, "cuda_emu: HB: cannot map the checker's shared memory; the checker is off\n");
    return;
  }
  hb_reg = (hb_region *)p;
  hb_reg->creator = (int32_t)getpid();
  hb_reg->id = ((uint64_t)getpid() << 32) ^ (uint64_t)time(NULL) ^ (uint64_t)(uintptr_t)p;
  hb_mutex_init(&hb_reg->mu);
  atexit(hb_summary);
}

/* The next tick of a stream's clock (after it published it). */
static void hb_tick(hb_ctx *c) {
  if (c->slot) {
    uint32_t v = ++c->vc[c->slot - 1];
    __atomic_store_n(&hb_reg->agents[c->slot - 1].hi, v, __ATOMIC_RELAXED);
  }
}

/* An agent for stream `stream` of this process: a free slot, else one whose
   process has exited; it starts above its slot's earlier clocks. */
static void hb_agent_new(hb_ctx *c, int stream) {
  int i, pick = -1;
  const char *rk = getenv("RANK");
  static int warned;
  hb_lock(&hb_reg->mu);
  for (i = 0; i < HB_MAXA && pick < 0; i++)
    if (!__atomic_load_n(&hb_reg->agents[i].live, __ATOMIC_RELAXED)) pick = i;
  for (i = 0; i < HB_MAXA && pick < 0; i++)
    if (!emu_pid_alive(__atomic_load_n(&hb_reg->agents[i].pid, __ATOMIC_RELAXED))) pick = i;
  if (pick >= 0) {
    hb_agent_info *g = &hb_reg->agents[pick];
    uint32_t base = __atomic_load_n(&g->hi, __ATOMIC_RELAXED) + 1;
    __atomic_store_n(&g->pid, (int32_t)getpid(), __ATOMIC_RELAXED);
    __atomic_store_n(&g->rank, rk ? atoi(rk) : -1, __ATOMIC_RELAXED);
    __atomic_store_n(&g->stream, stream, __ATOMIC_RELAXED);
    __atomic_store_n(&g->base, base, __ATOMIC_RELAXED);
    __atomic_store_n(&g->hi, base, __ATOMIC_RELAXED);
    __atomic_store_n(&g->live, 1, __ATOMIC_RELAXED);
    c->slot = pick + 1;
    c->vc[pick] = base;
    hb_count(HBC_AGENTS, 1);
  }
  pthread_mutex_unlock(&hb_reg->mu);
  if (pick < 0 && !__atomic_exchange_n(&warned, 1, __ATOMIC_RELAXED))
    hb_error("more than %d streams alive at once in the processes that share the checker: stream %d of this "
             "process is not checked (its order is still passed on)", HB_MAXA, stream);
  else if (pick < 0)
    hb_count(HBC_ERRORS, 1);
}

static void hb_agent_end(hb_ctx *c) {
  if (!c->slot) return;
  hb_lock(&hb_reg->mu);
  __atomic_store_n(&hb_reg->agents[c->slot - 1].live, 0, __ATOMIC_RELAXED);
  pthread_mutex_unlock(&hb_reg->mu);
  c->slot = 0;
}

/* Where the bytes of a registration come from: the device and inode of the
   file it maps and the offset there (/proc/self/maps), so that the same word
   has one key in every process; 0 in key[0..1] when it maps no shared file. */
static void hb_file_of(const void *p, uint64_t key[2], uint64_t *off) {
  FILE *f = fopen("/proc/self/maps", "r");
  char line[512];
  key[0] = key[1] = 0;
  *off = 0;
  if (!f) return;
  while (fgets(line, sizeof line, f)) {
    unsigned long long lo, hi, pg, ino;
    unsigned int maj, mn;
    char perms[8];
    if (sscanf(line, "%llx-%llx %7s %llx %x:%x %llu", &lo, &hi, perms, &pg, &maj, &mn, &ino) != 7) continue;
    if ((uintptr_t)p < lo || (uintptr_t)p >= hi) continue;
    if (ino && perms[3] == 's') {
      key[0] = ((uint64_t)maj << 32) | mn;
      key[1] = ino;
      *off = pg + ((uintptr_t)p - lo);
    }
    break;
  }
  fclose(f);
}

/* The key of the 32-bit word at p, the same in every process that maps it:
   (device, inode, offset) in a shared file; (owner pid, buffer id, offset) in
   device memory; (pid, address) otherwise. */
static void hb_flag_key(const void *p, uint64_t k[3]) {
  const char *q = (const char *)p;
  int i;
  k[0] = (uint64_t)getpid() | (1ull << 63);
  k[1] = 0;
  k[2] = (uint64_t)(uintptr_t)p;
  pthread_mutex_lock(&emu_lock);
  for (i = 0; i < EMU_MAXA; i++) {
    emu_mem *m = &emu_mems[i];
    if (m->kind == M_HOSTREG && m->fkey[1] && (emu_in(q, 4, m->p, m->n) || emu_in(q, 4, m->alias, m->n))) {
      k[0] = m->fkey[0];
      k[1] = m->fkey[1];
      k[2] = m->foff + (uint64_t)(emu_in(q, 4, m->p, m->n) ? q - m->p : q - m->alias);
      break;
    }
    if ((m->kind == M_DEV || m->kind == M_IPC) && emu_in(q, 4, m->p, m->n)) {
      k[0] = (uint64_t)(uint32_t)((emu_hdr *)(void *)m->map)->owner | (1ull << 62);
      k[1] = m->id;
      k[2] = (uint64_t)(q - m->p);
      break;
    }
  }
  pthread_mutex_unlock(&emu_lock);
}

/* The region's entry for key k (made when `make`), or NULL. Caller holds the lock. */
static hb_flag *hb_flag_at(const uint64_t k[3], int make) {
  uint64_t h = (k[0] * 0x9e3779b97f4a7c15ull) ^ (k[1] * 0xbf58476d1ce4e5b9ull) ^ (k[2] * 0x94d049bb133111ebull);
  hb_flag *free_one = NULL, *oldest = NULL;
  int j;
  h ^= h >> 29;
  for (j = 0; j < HB_PROBE; j++) {
    hb_flag *e = &hb_reg->flags[(h + (uint64_t)j) % HB_NFLAG];
    if (e->stamp && e->k[0] == k[0] && e->k[1] == k[1] && e->k[2] == k[2]) return e;
    if (!e->stamp && !free_one) free_one = e;
    if (e->stamp && (!oldest || e->stamp < oldest->stamp)) oldest = e;
  }
  if (!make) return NULL;
  if (!free_one) {                     /* the oldest goes (a flag of a world long gone, as a rule) */
    free_one = oldest;
    hb_count(HBC_EVICTED, 1);
  }
  memcpy(free_one->k, k, sizeof free_one->k);
  free_one->stamp = ++hb_reg->stamp;
  free_one->value = 0;
  memset(free_one->vc, 0, sizeof free_one->vc);
  memset(free_one->fvc, 0, sizeof free_one->fvc);
  return free_one;
}

/* Store v at p with release order, publishing c's clock beside it; then c ticks. */
static void hb_release(hb_ctx *c, volatile unsigned int *p, unsigned int v) {
  uint64_t k[3];
  hb_flag *e;
  if (!hb_reg) {
    __atomic_store_n(p, v, __ATOMIC_RELEASE);
    return;
  }
  hb_flag_key((const void *)p, k);
  hb_lock(&hb_reg->mu);
  e = hb_flag_at(k, 1);
  __atomic_store_n(p, v, __ATOMIC_RELEASE);
  e->value = v;
  memcpy(e->vc, c->vc, sizeof e->vc);
  memcpy(e->fvc, c->fvc, sizeof e->fvc);
  pthread_mutex_unlock(&hb_reg->mu);
  hb_tick(c);
}

/* Load the word at p with acquire order; when it holds the value whose clock
   was published beside it, c takes that clock in. `flush`: the wait flushes
   the remote writes into its device (CU_STREAM_WAIT_VALUE_FLUSH, or a
   kernel's acquire of the flag): what the publisher knew is visible, its own
   remote writes included; else only what the publisher knew flushed. */
static unsigned int hb_acquire(hb_ctx *c, const volatile unsigned int *p, int flush) {
  uint64_t k[3];
  hb_flag *e;
  unsigned int x;
  if (!hb_reg) return __atomic_load_n(p, __ATOMIC_ACQUIRE);
  hb_flag_key((const void *)p, k);
  hb_lock(&hb_reg->mu);
  x = __atomic_load_n(p, __ATOMIC_ACQUIRE);
  e = hb_flag_at(k, 0);
  if (e && e->value == x) {
    hb_vc_join(c->vc, e->vc);
    hb_vc_join(c->fvc, flush ? e->vc : e->fvc);
    hb_count(HBC_FLAG_EDGES, 1);
  } else if (x != 0 && !__atomic_exchange_n(&hb_released_here, 1, __ATOMIC_RELAXED)) {
    hb_count(HBC_RELEASED, 1);
  }
  pthread_mutex_unlock(&hb_reg->mu);
  return x;
}

/* cc_cuda.cuh's hooks (CC_CUDA_EMU_HOOKS), called by the kernels' CPU twins. */
extern "C" void cc_emu_flag_store(volatile unsigned int *p, unsigned int v) { hb_release(hb_me(), p, v); }
/* A wait kernel's twin polls its flag in a loop (with a sched_yield between
   loads). Each load takes the checker's lock, shared by every rank: on a
   2-CPU machine the pollers could keep it, and the CPUs, from the rank that
   is to post (CI once saw the kernel-waits run take over 70 s instead of 7).
   A thread that reads the same value at the same place many times in a row
   naps, a little longer the longer it has polled: the wait ends at most
   that nap later, and what it takes in is unchanged. */
static __thread const volatile unsigned int *emu_poll_at;
static __thread unsigned int emu_poll_value;
static __thread int emu_poll_same;

extern "C" unsigned int cc_emu_flag_load(const volatile unsigned int *p) {
  unsigned int x = hb_acquire(hb_me(), p, 1);   /* a kernel's load, then its system fence */
  if (p != emu_poll_at || x != emu_poll_value) {
    emu_poll_at = p;
    emu_poll_value = x;
    emu_poll_same = 0;
  } else if (++emu_poll_same > 8) {
    emu_sleep_us(emu_poll_same > 64 ? 50 : 5);
  }
  return x;
}

static void hb_report(int uaf, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void hb_report(int uaf, const char *fmt, ...) {
  char m[700];
  va_list ap;
  int after = __atomic_load_n(&hb_released_here, __ATOMIC_RELAXED);
  hb_count(after ? HBC_AFTER : uaf ? HBC_UAF : HBC_RACES, 1);
  if (!hb_print()) return;
  va_start(ap, fmt);
  vsnprintf(m, sizeof m, fmt, ap);
  va_end(ap);
  if (after)
    fprintf(stderr, "cuda_emu: pid %d: HB: after a released wait (the communicator failed; not counted as a race): %s\n",
            (int)getpid(), m);
  else
    fprintf(stderr, "cuda_emu: RACE: %s%s\n", uaf ? "use after free: " : "", m);
}

/* An access of [p, p + n) by this thread's stream, in operation `op`. Device
   memory only: host memory is not watched (a kernel's access to memory no
   allocation holds is reported when `kernel`). */
static void hb_touch(const void *p, size_t n, int write, uint16_t op, int kernel) {
  hb_ctx *c = hb_me();
  hb_alloc *a = NULL;
  hb_conflict cf;
  char me[80], other[80];
  const char *base = NULL;
  unsigned long long id = 0;
  int i, r = 0, freed = 0, owner = 0, host = 0, mdev = -1;
  memset(&cf, 0, sizeof cf);
  if (!hb_reg || !n) return;
  pthread_mutex_lock(&emu_lock);
  i = emu_find_dev(p, n);
  if (i >= 0) {
    a = emu_mems[i].hb;
    base = emu_mems[i].p;
    id = emu_mems[i].id;
    mdev = emu_mems[i].dev;
  } else {                             /* host memory a kernel may reach: not watched */
    int j;
    for (j = 0; j < EMU_MAXA && !host; j++)
      host = (emu_mems[j].kind == M_PINNED || emu_mems[j].kind == M_HOSTREG) &&
             (emu_in((const char *)p, 1, emu_mems[j].p, emu_mems[j].n) ||
              (emu_mems[j].alias && emu_in((const char *)p, 1, emu_mems[j].alias, emu_mems[j].n)));
  }
  pthread_mutex_unlock(&emu_lock);
  if (i < 0) {
    if (kernel && !host)
      hb_report(1, "a %s of %s touches %zu bytes at %p, which no live allocation of this process holds (freed, or "
                   "its mapping closed)", hb_ops[op], c->slot ? "a stream" : "a host thread", n, p);
    return;
  }
  if (!a) return;
  if (!c->slot) return;                /* a stream the checker has no room for (reported when made) */
  hb_count(HBC_ACCESSES, 1);
  hb_lock(&a->mu);
  owner = a->owner;
  if (a->freed_by) freed = a->freed_by;
  else r = hb_access(&a->sh, (uint64_t)((const char *)p - base), (uint64_t)((const char *)p - base) + n, write,
                     (uint16_t)(c->slot - 1), (uint16_t)(op | (write && c->dev != mdev ? HB_REMOTE : 0)), c->vc,
                     c->dev == mdev ? c->fvc : NULL, &cf);
  pthread_mutex_unlock(&a->mu);
  hb_name(c->slot - 1, 0, me, sizeof me);
  if (freed) {
    hb_report(1, "%s: a %s %s %zu bytes of device buffer %llu of pid %d, which pid %d freed (cudaFree) while this "
                 "process still had it open", me, hb_ops[op], write ? "writes" : "reads", n, id, owner, freed);
  } else if (r < 0) {
    hb_error("device buffer %llu of pid %d: more than %d segments of distinct accesses; an access of %zu bytes is "
             "not checked", id, owner, HB_NSEG, n);
  } else if (r > 0) {
    hb_name(cf.prev.agent, cf.prev.clk, other, sizeof other);
    uint16_t pop = (uint16_t)(cf.prev.op & ~HB_REMOTE);
    if (cf.kind == HB_UNFLUSHED)
      hb_report(0, "%s: a %s %s bytes [%llu, %llu) of device buffer %llu of pid %d (device %d), which %s (a %s) wrote "
                   "from another device: ordered after that remote write only by a wait without "
                   "CU_STREAM_WAIT_VALUE_FLUSH, so the device may not see it yet%s",
                me, hb_ops[op], write ? "writes" : "reads", (unsigned long long)cf.lo, (unsigned long long)cf.hi, id,
                owner, mdev, other, hb_ops[pop < 5 ? pop : 0], r > 1 ? " (and elsewhere in the range)" : "");
    else
      hb_report(0, "%s: a %s %s bytes [%llu, %llu) of device buffer %llu of pid %d, not ordered after the %s of those "
                   "bytes by %s (a %s): no stream order, event, synchronization or flag between them%s",
                me, hb_ops[op], write ? "writes" : "reads", (unsigned long long)cf.lo, (unsigned long long)cf.hi, id,
                owner, cf.kind == HB_RW ? "read" : "write", other, hb_ops[pop < 5 ? pop : 0],
                r > 1 ? " (and elsewhere in the range)" : "");
  }
}

extern "C" void cc_emu_access(const void *p, size_t bytes, int write, const char *op) {
  hb_touch(p, bytes, write, hb_op_code(op), 1);
}

/* A fresh shadow for allocation `id` of `size` bytes, at a. */
static void hb_alloc_init(hb_alloc *a, unsigned long long id, size_t size) {
  a->region = hb_reg->id;
  hb_mutex_init(&a->mu);
  a->owner = (int32_t)getpid();
  a->freed_by = 0;
  a->id = id;
  hb_shadow_init(&a->sh, size);
}

static int hb_mine(uint16_t agent, uint32_t clk, void *u) {
  (void)clk, (void)u;
  return __atomic_load_n(&hb_reg->agents[agent].pid, __ATOMIC_RELAXED) == (int32_t)getpid();
}

/* This process closes its mapping of buffer id: every access of its streams
   through it must be known done (ordered before this host thread). */
static void hb_closing(hb_alloc *a, unsigned long long id) {
  hb_conflict cf;
  char other[80];
  int found, owner;
  memset(&cf, 0, sizeof cf);
  if (!hb_reg || !a) return;
  hb_lock(&a->mu);
  owner = a->owner;
  found = hb_unordered(&a->sh, hb_me()->vc, hb_mine, NULL, &cf);
  pthread_mutex_unlock(&a->mu);
  if (!found) return;
  hb_name(cf.prev.agent, cf.prev.clk, other, sizeof other);
  hb_report(1, "pid %d closes its mapping of device buffer %llu of pid %d (cudaIpcCloseMemHandle) while the %s of "
               "bytes [%llu, %llu) by its %s (a %s) through it is not known to be done (no synchronization with "
               "that work since)", (int)getpid(), id, owner, cf.kind == HB_RW ? "read" : "write",
            (unsigned long long)cf.lo, (unsigned long long)cf.hi, other,
            hb_ops[(cf.prev.op & ~HB_REMOTE) < 5 ? cf.prev.op & ~HB_REMOTE : 0]);
}

/* The owner frees it: later accesses through another process's mapping are uses after free. */
static void hb_freeing(hb_alloc *a) {
  if (!hb_reg || !a) return;
  hb_lock(&a->mu);
  a->freed_by = (int32_t)getpid();
  pthread_mutex_unlock(&a->mu);
}

static void hb_counts_line(char *out, size_t cap) {
  uint64_t v[HBC_N];
  int i;
  for (i = 0; i < HBC_N; i++) v[i] = __atomic_load_n(&hb_reg->counts[i], __ATOMIC_RELAXED);
  snprintf(out, cap,
           "accesses=%llu flag_edges=%llu sync_edges=%llu races=%llu uaf=%llu errors=%llu released_waits=%llu "
           "after_release=%llu dropped_reads=%llu history_misses=%llu streams=%llu evicted_flags=%llu",
           (unsigned long long)v[0], (unsigned long long)v[1], (unsigned long long)v[2], (unsigned long long)v[3],
           (unsigned long long)v[4], (unsigned long long)v[5], (unsigned long long)v[6], (unsigned long long)v[7],
           (unsigned long long)v[8], (unsigned long long)v[9], (unsigned long long)v[10], (unsigned long long)v[11]);
}

/* At the exit of the process that made the region: the counts of all. */
static void hb_summary(void) {
  char line[600];
  const char *log = getenv("CC_EMU_HB_LOG");
  if (!hb_reg || hb_reg->creator != (int32_t)getpid()) return;
  hb_counts_line(line, sizeof line);
  fprintf(stderr, "cuda_emu: HB: summary: %s\n", line);
  if (log && *log) {
    FILE *f = fopen(log, "a");
    if (f) {
      fprintf(f, "%s\n", line);
      fclose(f);
    }
  }
}

/* ------------------------------------------------------------ streams */

enum { OP_KERNEL = 1, OP_COPY, OP_MEMSET, OP_WRITE32, OP_WAIT32, OP_WAITSEQ, OP_HOSTFN, OP_FLUSH };

struct CUstream_st;
typedef struct emu_op {
  int kind;
  struct emu_op *next;
  /* kernel */
  cc_emu_twin tw;
  dim3 grid, block;
  void *argv[8];
  unsigned char *argbuf;
  /* copy, memset */
  void *dst;
  const void *src;
  size_t n;
  int value;
  void *owned;                         /* freed after the op (a pageable source's copy) */
  /* memops */
  unsigned int *addr;
  unsigned int v, flags;
  /* wait for another stream */
  struct CUstream_st *other;
  unsigned long long seq;
  /* host function */
  cudaHostFn_t fn;
  void *user;
  uint32_t *hbvc;                      /* the queuing thread's clock (CC_EMU_HB) */
} emu_op;

struct CUstream_st {
  unsigned int magic;
  int id, blocking, legacy, capturing, dead;
  int cap_mode, cap_tid, cap_invalid;  /* the capture's mode, its thread, invalidated by a prohibited call */
  int dev;                             /* physical device (the current one when it was made) */
  pthread_mutex_t mu;
  pthread_cond_t cv;
  emu_op *head, *tail;
  unsigned long long submitted, completed;
  int stop;
  pthread_t th;
  uint64_t rng;
  struct CUstream_st *next_all;        /* every stream ever made (events may name a dead one) */
  hb_ctx hb;                           /* its agent and clock (CC_EMU_HB; the stream's thread's) */
  struct hb_snap *hist;                /* its clock after each of its latest HB_HIST operations (under mu) */
};
typedef struct hb_snap {
  unsigned long long seq;
  int slot;                            /* the stream's agent + 1 then */
  uint32_t vc[HB_MAXA], fvc[HB_MAXA];
} hb_snap;
#define EMU_STREAM_MAGIC 0x5743c0deu

struct CUevent_st {
  unsigned int magic;
  struct CUstream_st *s;               /* NULL: never recorded */
  unsigned long long seq;
  int captured;                        /* last recorded in a capturing stream */
};
#define EMU_EVENT_MAGIC 0x3e7e3e7eu

struct CUgraph_st {
  int unused;
};

static struct CUstream_st *emu_streams;    /* every stream made, newest first */
static struct CUstream_st *emu_legacy_s;
static int emu_next_stream;
static long emu_delay_max = -1;
static uint64_t emu_seed;

static uint64_t emu_rand(uint64_t *x) {    /* splitmix64 */
  uint64_t z = (*x += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

static __thread sigjmp_buf *emu_kjmp;      /* set while this thread runs a kernel */
static struct sigaction emu_old_segv, emu_old_bus;

static void emu_on_fault(int sig, siginfo_t *info, void *uc) {
  struct sigaction *old = sig == SIGBUS ? &emu_old_bus : &emu_old_segv;
  if (emu_kjmp) siglongjmp(*emu_kjmp, sig);
  /* not a kernel's: whoever handled it before */
  if (old->sa_flags & SA_SIGINFO) {
    if (old->sa_sigaction) {
      old->sa_sigaction(sig, info, uc);
      return;
    }
  } else if (old->sa_handler != SIG_DFL && old->sa_handler != SIG_IGN) {
    old->sa_handler(sig);
    return;
  }
  signal(sig, SIG_DFL);                    /* and fault again, for real */
}

/* c takes in stream s's clock after its operation seq (done: the caller
   knows). */
static void hb_join_seq(hb_ctx *c, struct CUstream_st *s, unsigned long long seq) {
  hb_snap *h;
  static int warned;
  if (!hb_reg || !seq || !s->hist) return;
  pthread_mutex_lock(&s->mu);
  h = &s->hist[seq % HB_HIST];
  if (h->seq == seq) {
    hb_vc_join(c->vc, h->vc);
    hb_vc_join(c->fvc, h->fvc);
    if (h->slot && h->vc[h->slot - 1] > c->fvc[h->slot - 1])   /* s's work is done: its writes landed */
      c->fvc[h->slot - 1] = h->vc[h->slot - 1];
    hb_count(HBC_SYNC_EDGES, 1);
  } else {
    hb_count(HBC_MISSES, 1);
  }
  pthread_mutex_unlock(&s->mu);
  if (h->seq != seq && !__atomic_exchange_n(&warned, 1, __ATOMIC_RELAXED))
    fprintf(stderr, "cuda_emu: pid %d: HB: a wait for operation %llu of stream %d came after %d more had run; its "
            "order is lost (counted as history_misses)\n", (int)getpid(), seq, s->id, HB_HIST);
}

static void emu_fault_handlers(void) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = emu_on_fault;
  sa.sa_flags = SA_SIGINFO | SA_NODEFER;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGSEGV, &sa, &emu_old_segv);
  sigaction(SIGBUS, &sa, &emu_old_bus);
}

static void emu_run_kernel(emu_op *o) {
  sigjmp_buf jb;
  static pthread_once_t once = PTHREAD_ONCE_INIT;
  pthread_once(&once, emu_fault_handlers);
  if (sigsetjmp(jb, 1) == 0) {
    emu_kjmp = &jb;
    o->tw.run(o->argv, o->grid, o->block);
    emu_kjmp = NULL;
    emu_count(EC_KERNELS);
  } else {
    emu_kjmp = NULL;
    emu_count(EC_FAULTS);
    emu_kill(cudaErrorIllegalAddress, "a kernel touched memory it may not (SIGSEGV or SIGBUS in its CPU twin)");
  }
}

static int emu_wait_ok(unsigned int cur, unsigned int v, unsigned int flags) {
  switch (flags & 0xf) {
  case CU_STREAM_WAIT_VALUE_GEQ: return (int)(cur - v) >= 0;
  case CU_STREAM_WAIT_VALUE_EQ: return cur == v;
  case CU_STREAM_WAIT_VALUE_AND: return (cur & v) != 0;
  case CU_STREAM_WAIT_VALUE_NOR: return ~(cur | v) != 0;
  default: return 1;
  }
}

static void emu_exec(struct CUstream_st *s, emu_op *o) {
  switch (o->kind) {
  case OP_KERNEL: emu_run_kernel(o); break;
  case OP_COPY:
    hb_touch(o->src, o->n, 0, 3, 0);
    hb_touch(o->dst, o->n, 1, 3, 0);
    memmove(o->dst, o->src, o->n);
    break;
  case OP_MEMSET:
    hb_touch(o->dst, o->n, 1, 4, 0);
    memset(o->dst, o->value, o->n);
    break;
  case OP_WRITE32: hb_release(&s->hb, o->addr, o->v); break;
  case OP_WAIT32: {
    long nap = 1;
    double t0 = emu_now();
    while (!emu_wait_ok(__atomic_load_n(o->addr, __ATOMIC_ACQUIRE), o->v, o->flags)) {
      if (emu_sticky_err() != cudaSuccess) return;
      if (emu_now() - t0 > EMU_WAIT_LIMIT_S) {
        emu_kill(cudaErrorLaunchTimeout, "a stream memory wait lasted longer than 300 s");
        return;
      }
      emu_sleep_us(nap);
      if (nap < 200) nap *= 2;
    }
    if (hb_reg) hb_acquire(&s->hb, o->addr, (o->flags & CU_STREAM_WAIT_VALUE_FLUSH) != 0);  /* the clock published with what it read */
    if (o->flags & CU_STREAM_WAIT_VALUE_FLUSH) emu_count(EC_FLUSH);
    break;
  }
  case OP_WAITSEQ: {
    struct CUstream_st *t = o->other;
    pthread_mutex_lock(&t->mu);
    while (t->completed < o->seq && emu_sticky_err() == cudaSuccess) {
      struct timespec ts;
      clock_gettime(CLOCK_REALTIME, &ts);
      ts.tv_nsec += 20 * 1000 * 1000;
      if (ts.tv_nsec >= 1000000000L) { ts.tv_sec++; ts.tv_nsec -= 1000000000L; }
      pthread_cond_timedwait(&t->cv, &t->mu, &ts);
    }
    pthread_mutex_unlock(&t->mu);
    if (emu_sticky_err() == cudaSuccess) hb_join_seq(&s->hb, t, o->seq);
    break;
  }
  case OP_HOSTFN: o->fn(o->user); break;
  case OP_FLUSH: hb_vc_join(s->hb.fvc, s->hb.vc); break;   /* the remote writes it knows of are visible */
  default: break;
  }
}

static void emu_op_free(emu_op *o) {
  free(o->hbvc);
  free(o->argbuf);
  free(o->owned);
  free(o);
}

static void *emu_worker(void *arg) {
  struct CUstream_st *s = (struct CUstream_st *)arg;
  hb_cur = &s->hb;
  pthread_mutex_lock(&s->mu);
  for (;;) {
    emu_op *o;
    while (!s->head && !s->stop) pthread_cond_wait(&s->cv, &s->mu);
    if (!s->head) break;
    o = s->head;
    s->head = o->next;
    if (!s->head) s->tail = NULL;
    pthread_mutex_unlock(&s->mu);
    if (emu_delay_max > 0 && emu_rand(&s->rng) % 4 == 0) emu_sleep_us((long)(emu_rand(&s->rng) % (uint64_t)emu_delay_max));
    if (o->hbvc) {                     /* after what its queuing thread knew */
      hb_vc_join(s->hb.vc, o->hbvc);
      hb_vc_join(s->hb.fvc, o->hbvc + HB_MAXA);
    }
    if (emu_sticky_err() == cudaSuccess) emu_exec(s, o);
    emu_op_free(o);
    pthread_mutex_lock(&s->mu);
    s->completed++;
    if (s->hist) {                     /* its clock now, for those who wait for this operation */
      s->hist[s->completed % HB_HIST].seq = s->completed;
      memcpy(s->hist[s->completed % HB_HIST].vc, s->hb.vc, sizeof s->hb.vc);
      memcpy(s->hist[s->completed % HB_HIST].fvc, s->hb.fvc, sizeof s->hb.fvc);
      s->hist[s->completed % HB_HIST].slot = s->hb.slot;
    }
    pthread_cond_broadcast(&s->cv);
    if (hb_reg) hb_tick(&s->hb);
  }
  pthread_mutex_unlock(&s->mu);
  if (hb_reg) hb_agent_end(&s->hb);
  return NULL;
}

/* A new stream and its thread. Caller holds emu_lock. */
static struct CUstream_st *emu_stream_new_locked(int blocking, int legacy) {
  struct CUstream_st *s = (struct CUstream_st *)calloc(1, sizeof *s);
  if (!s) return NULL;
  if (emu_delay_max < 0) {
    emu_delay_max = emu_env_long("CC_EMU_DELAY_US", 300);
    emu_seed = (uint64_t)emu_env_long("CC_EMU_SEED", (long)getpid());
  }
  s->magic = EMU_STREAM_MAGIC;
  s->id = ++emu_next_stream;
  s->blocking = blocking;
  s->legacy = legacy;
  s->rng = emu_seed * 1000003u + (uint64_t)s->id;
  pthread_mutex_init(&s->mu, NULL);
  pthread_cond_init(&s->cv, NULL);
  emu_devices_locked();
  s->dev = emu_phys[emu_cur];
  s->hb.dev = s->dev;
  if (hb_reg) {
    if (!(s->hist = (hb_snap *)calloc(HB_HIST, sizeof *s->hist)))
      hb_error("no memory for stream %d's clocks: waits for it carry no order", s->id);
    hb_agent_new(&s->hb, s->id);
  }
  if (pthread_create(&s->th, NULL, emu_worker, s) != 0) {
    pthread_mutex_destroy(&s->mu);
    pthread_cond_destroy(&s->cv);
    if (hb_reg) hb_agent_end(&s->hb);
    free(s->hist);
    free(s);
    return NULL;
  }
  s->next_all = emu_streams;
  emu_streams = s;
  return s;
}

/* The stream a handle names (0 and the special handles: the legacy default
 * stream), or NULL. */
static struct CUstream_st *emu_stream(cudaStream_t h) {
  struct CUstream_st *s, *found = NULL;
  pthread_mutex_lock(&emu_lock);
  if (h == 0 || h == cudaStreamLegacy || h == cudaStreamPerThread) {
    if (!emu_legacy_s) emu_legacy_s = emu_stream_new_locked(1, 1);
    found = emu_legacy_s;
  } else {
    for (s = emu_streams; s; s = s->next_all)
      if (s == (struct CUstream_st *)h && !s->dead) found = s;
  }
  pthread_mutex_unlock(&emu_lock);
  return found;
}

static unsigned long long emu_push(struct CUstream_st *s, emu_op *o) {
  unsigned long long seq;
  if (hb_reg && !o->hbvc && (o->hbvc = (uint32_t *)malloc(2 * sizeof hb_me()->vc))) {
    memcpy(o->hbvc, hb_me()->vc, sizeof hb_me()->vc);
    memcpy(o->hbvc + HB_MAXA, hb_me()->fvc, sizeof hb_me()->fvc);
  }
  pthread_mutex_lock(&s->mu);
  o->next = NULL;
  if (s->tail) s->tail->next = o;
  else s->head = o;
  s->tail = o;
  seq = ++s->submitted;
  pthread_cond_broadcast(&s->cv);
  pthread_mutex_unlock(&s->mu);
  return seq;
}

static unsigned long long emu_submitted(struct CUstream_st *s) {
  unsigned long long v;
  pthread_mutex_lock(&s->mu);
  v = s->submitted > s->completed || hb_reg ? s->submitted : 0; /* the checker: done work is ordered too */
  pthread_mutex_unlock(&s->mu);
  return v;
}

static void emu_push_wait(struct CUstream_st *s, struct CUstream_st *t, unsigned long long seq) {
  emu_op *w = (emu_op *)calloc(1, sizeof *w);
  if (!w) return;
  w->kind = OP_WAITSEQ;
  w->other = t;
  w->seq = seq;
  emu_push(s, w);
}

/* Queue o on s, after what the legacy default stream's implicit order asks;
 * returns its number on s, or 0 when the stream is capturing (then o is
 * dropped: graphs are not run). */
static unsigned long long emu_enqueue(struct CUstream_st *s, emu_op *o) {
  struct CUstream_st *t;
  unsigned long long seq;
  int capturing;
  pthread_mutex_lock(&emu_lock);
  capturing = s->capturing;
  pthread_mutex_unlock(&emu_lock);
  if (capturing) {
    emu_op_free(o);
    return 0;
  }
  if (s->legacy) {                     /* after all work queued so far on blocking streams */
    pthread_mutex_lock(&emu_lock);
    for (t = emu_streams; t; t = t->next_all) {
      if (t == s || !t->blocking || t->dead) continue;
      if ((seq = emu_submitted(t))) emu_push_wait(s, t, seq);
    }
    pthread_mutex_unlock(&emu_lock);
  } else if (s->blocking && emu_legacy_s && (seq = emu_submitted(emu_legacy_s))) {
    emu_push_wait(s, emu_legacy_s, seq);
  }
  return emu_push(s, o);
}

static int emu_reached(struct CUstream_st *s, unsigned long long seq) {
  int done;
  pthread_mutex_lock(&s->mu);
  done = s->completed >= seq;
  pthread_mutex_unlock(&s->mu);
  return done;
}

/* The host thread waits for operation seq of s (and knows what it did). */
static void emu_wait_seq(struct CUstream_st *s, unsigned long long seq) {
  pthread_mutex_lock(&s->mu);
  while (s->completed < seq) pthread_cond_wait(&s->cv, &s->mu);
  pthread_mutex_unlock(&s->mu);
  hb_join_seq(hb_me(), s, seq);
}

static void emu_drain(struct CUstream_st *s) {
  unsigned long long seq;
  pthread_mutex_lock(&s->mu);
  seq = s->submitted;
  while (s->completed < seq) pthread_cond_wait(&s->cv, &s->mu);
  pthread_mutex_unlock(&s->mu);
  hb_join_seq(hb_me(), s, seq);
}

/* Wait for every stream of this process. */
static void emu_drain_all(void) {
  struct CUstream_st *s, *list[256];
  int n = 0, i;
  pthread_mutex_lock(&emu_lock);
  for (s = emu_streams; s && n < 256; s = s->next_all)
    if (!s->dead) list[n++] = s;
  pthread_mutex_unlock(&emu_lock);
  for (i = 0; i < n; i++) emu_drain(list[i]);
}

static int emu_any_capturing(void) {
  struct CUstream_st *s;
  int c = 0;
  pthread_mutex_lock(&emu_lock);
  for (s = emu_streams; s; s = s->next_all)
    if (!s->dead && s->capturing) c = 1;
  pthread_mutex_unlock(&emu_lock);
  return c;
}

/* ------------------------------------------------------------ capture modes
 *
 * A thread's mode (cudaThreadExchangeStreamCaptureMode; Global unless set)
 * decides which captures prohibit its potentially unsafe calls: Global, its
 * own captures not begun Relaxed and every other thread's Global capture;
 * ThreadLocal, its own captures not begun Relaxed; Relaxed, none. A
 * prohibited call fails and invalidates the captures that prohibit it. */

static __thread enum cudaStreamCaptureMode emu_tmode = cudaStreamCaptureModeGlobal;
static __thread int emu_tid;                  /* this thread's number, from 1 */
static int emu_next_tid;

static int emu_thread_id(void) {
  if (!emu_tid) emu_tid = __atomic_add_fetch(&emu_next_tid, 1, __ATOMIC_ACQ_REL);
  return emu_tid;
}

static const char *emu_mode_name(int m) {
  return m == cudaStreamCaptureModeGlobal ? "Global" : m == cudaStreamCaptureModeThreadLocal ? "ThreadLocal" : "Relaxed";
}

/* A query or synchronization of stream s, which stands for no work while it
 * is captured: prohibited in every mode (the capture is invalidated). */
static int emu_captured_now(struct CUstream_st *s) {
  int c;
  pthread_mutex_lock(&emu_lock);
  c = s->capturing;
  if (c) s->cap_invalid = 1;
  pthread_mutex_unlock(&emu_lock);
  return c;
}

/* `call`, potentially unsafe during stream capture: cudaSuccess, or the
 * error it fails with (its prohibiting captures invalidated). */
static cudaError_t emu_capture_unsafe(const char *call) {
  struct CUstream_st *s;
  int me = emu_thread_id(), hit = 0, mode = 0, other = 0;
  long n;
  if (emu_tmode == cudaStreamCaptureModeRelaxed) return cudaSuccess;
  pthread_mutex_lock(&emu_lock);
  for (s = emu_streams; s; s = s->next_all) {
    if (s->dead || !s->capturing) continue;
    if ((s->cap_tid == me && s->cap_mode != cudaStreamCaptureModeRelaxed) ||
        (emu_tmode == cudaStreamCaptureModeGlobal && s->cap_tid != me && s->cap_mode == cudaStreamCaptureModeGlobal)) {
      s->cap_invalid = 1;
      hit = 1;
      mode = s->cap_mode;
      other = s->cap_tid != me;
    }
  }
  pthread_mutex_unlock(&emu_lock);
  if (!hit) return cudaSuccess;
  n = __atomic_add_fetch(&emu_counts[EC_CAPTURE], 1, __ATOMIC_ACQ_REL);
  if (n <= 3)
    fprintf(stderr, "cuda_emu: pid %d: %s from a thread in capture mode %s during a %s capture of %s: prohibited; "
            "the capture is invalidated\n", (int)getpid(), call, emu_mode_name(emu_tmode), emu_mode_name(mode),
            other ? "another thread" : "this thread");
  return emu_err(cudaErrorStreamCaptureUnsupported);
}
#define EMU_CAPTURE_SAFE(call)                                                                       \
  do {                                                                                               \
    cudaError_t emu_c_ = emu_capture_unsafe(call);                                                   \
    if (emu_c_ != cudaSuccess) return emu_c_;                                                        \
  } while (0)

/* Work queued on s: cudaSuccess, or why a capture forbids it (an invalidated
 * capture; the legacy stream while a blocking stream is captured, which
 * invalidates that capture). */
static cudaError_t emu_stream_use(struct CUstream_st *s) {
  struct CUstream_st *t;
  int implicit = 0, invalid;
  pthread_mutex_lock(&emu_lock);
  invalid = s->capturing && s->cap_invalid;
  for (t = emu_streams; t && s->legacy && !invalid; t = t->next_all)
    if (!t->dead && t->capturing && t->blocking) {
      t->cap_invalid = 1;
      implicit = 1;
    }
  pthread_mutex_unlock(&emu_lock);
  if (invalid) return emu_err(cudaErrorStreamCaptureInvalidated);
  if (implicit) __atomic_add_fetch(&emu_counts[EC_CAPTURE], 1, __ATOMIC_ACQ_REL);
  return implicit ? emu_err(cudaErrorStreamCaptureImplicit) : cudaSuccess;
}
#define EMU_STREAM_USE(s)                                                                            \
  do {                                                                                               \
    cudaError_t emu_u_ = emu_stream_use(s);                                                          \
    if (emu_u_ != cudaSuccess) return emu_u_;                                                        \
  } while (0)

cudaError_t cudaThreadExchangeStreamCaptureMode(enum cudaStreamCaptureMode *mode) {
  enum cudaStreamCaptureMode prev = emu_tmode;
  if (!mode || (*mode != cudaStreamCaptureModeGlobal && *mode != cudaStreamCaptureModeThreadLocal &&
                *mode != cudaStreamCaptureModeRelaxed))
    return emu_err(cudaErrorInvalidValue);
  emu_tmode = *mode;
  *mode = prev;
  return cudaSuccess;
}

static emu_op *emu_op_new(int kind) {
  emu_op *o = (emu_op *)calloc(1, sizeof *o);
  if (o) o->kind = kind;
  return o;
}

/* ------------------------------------------------------------ device and errors */

cudaError_t cudaGetDeviceCount(int *count) {
  if (!count) return emu_err(cudaErrorInvalidValue);
  *count = emu_devices();
  return *count ? cudaSuccess : emu_err(cudaErrorNoDevice);
}

cudaError_t cudaSetDevice(int device) {
  EMU_LIVE();
  if (device < 0 || device >= emu_devices()) return emu_err(cudaErrorInvalidDevice);
  emu_cur = device;
  return cudaSuccess;
}

cudaError_t cudaGetDevice(int *device) {
  if (!device) return emu_err(cudaErrorInvalidValue);
  *device = emu_cur;
  return cudaSuccess;
}

cudaError_t cudaGetDeviceProperties(struct cudaDeviceProp *prop, int device) {
  if (!prop) return emu_err(cudaErrorInvalidValue);
  if (device < 0 || device >= emu_devices()) return emu_err(cudaErrorInvalidDevice);
  memset(prop, 0, sizeof *prop);
  snprintf(prop->name, sizeof prop->name, "CPU emulation of device %d%s (tests/cuda/cuda_emu.cpp)", emu_phys[device],
           emu_mig ? ", a MIG instance" : "");
  emu_uuid(emu_phys[device], prop->uuid.bytes);
  prop->multiProcessorCount = emu_sms();
  prop->unifiedAddressing = 1;
  prop->major = 9;
  return cudaSuccess;
}

cudaError_t cudaDeviceGetAttribute(int *value, enum cudaDeviceAttr attr, int device) {
  if (!value) return emu_err(cudaErrorInvalidValue);
  if (device < 0 || device >= emu_devices()) return emu_err(cudaErrorInvalidDevice);
  switch (attr) {
  case cudaDevAttrMultiProcessorCount: *value = emu_sms(); break;
  case cudaDevAttrMaxThreadsPerMultiProcessor: *value = EMU_SM_THREADS; break;
  case cudaDevAttrMaxRegistersPerMultiprocessor: *value = EMU_SM_REGS; break;
  case cudaDevAttrUnifiedAddressing: *value = 1; break;
  case cudaDevAttrCanFlushRemoteWrites: *value = emu_can_flush(); break;
  default: *value = 0; break;
  }
  return cudaSuccess;
}

cudaError_t cudaDeviceGetPCIBusId(char *pciBusId, int len, int device) {
  if (!pciBusId || len <= 0) return emu_err(cudaErrorInvalidValue);
  if (device < 0 || device >= emu_devices()) return emu_err(cudaErrorInvalidDevice);
  emu_busid(emu_phys[device], pciBusId, (size_t)len);
  return cudaSuccess;
}

cudaError_t cudaDeviceGetByPCIBusId(int *device, const char *pciBusId) {
  char b[32];
  int i, n = emu_devices();
  if (!device || !pciBusId) return emu_err(cudaErrorInvalidValue);
  for (i = 0; i < n; i++) {
    emu_busid(emu_phys[i], b, sizeof b);
    if (!strcasecmp(b, pciBusId)) {
      *device = i;
      return cudaSuccess;
    }
  }
  return emu_err(cudaErrorInvalidDevice);
}

cudaError_t cudaDeviceCanAccessPeer(int *canAccessPeer, int device, int peerDevice) {
  int n = emu_devices();
  if (!canAccessPeer) return emu_err(cudaErrorInvalidValue);
  if (device < 0 || device >= n || peerDevice < 0 || peerDevice >= n) return emu_err(cudaErrorInvalidDevice);
  *canAccessPeer = device != peerDevice && emu_reach(emu_phys[device], emu_phys[peerDevice]);
  return cudaSuccess;
}

cudaError_t cudaDeviceSynchronize(void) {
  EMU_LIVE();
  EMU_CAPTURE_SAFE("cudaDeviceSynchronize");
  if (emu_any_capturing()) return emu_err(cudaErrorStreamCaptureUnsupported);
  emu_drain_all();
  EMU_LIVE();
  return cudaSuccess;
}

cudaError_t cudaGetLastError(void) {
  cudaError_t e = emu_last, s = emu_sticky_err();
  if (s != cudaSuccess) return emu_last = s;
  emu_last = cudaSuccess;
  return e;
}

cudaError_t cudaPeekAtLastError(void) {
  cudaError_t s = emu_sticky_err();
  return s != cudaSuccess ? s : emu_last;
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
  case cudaErrorNoDevice: return "cudaErrorNoDevice";
  case cudaErrorNotReady: return "cudaErrorNotReady";
  case cudaErrorIllegalAddress: return "cudaErrorIllegalAddress";
  case cudaErrorLaunchTimeout: return "cudaErrorLaunchTimeout";
  case cudaErrorInvalidDeviceFunction: return "cudaErrorInvalidDeviceFunction";
  case cudaErrorDeviceUninitialized: return "cudaErrorDeviceUninitialized";
  case cudaErrorMapBufferObjectFailed: return "cudaErrorMapBufferObjectFailed";
  case cudaErrorPeerAccessUnsupported: return "cudaErrorPeerAccessUnsupported";
  case cudaErrorHostMemoryAlreadyRegistered: return "cudaErrorHostMemoryAlreadyRegistered";
  case cudaErrorHostMemoryNotRegistered: return "cudaErrorHostMemoryNotRegistered";
  case cudaErrorStreamCaptureUnsupported: return "cudaErrorStreamCaptureUnsupported";
  case cudaErrorStreamCaptureInvalidated: return "cudaErrorStreamCaptureInvalidated";
  case cudaErrorStreamCaptureIsolation: return "cudaErrorStreamCaptureIsolation";
  case cudaErrorStreamCaptureImplicit: return "cudaErrorStreamCaptureImplicit";
  case cudaErrorCapturedEvent: return "cudaErrorCapturedEvent";
  case cudaErrorStreamCaptureWrongThread: return "cudaErrorStreamCaptureWrongThread";
  case cudaErrorIllegalState: return "cudaErrorIllegalState";
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
  case cudaErrorNotSupported: return "operation not supported (by the CPU emulation)";
  case cudaErrorNoDevice: return "no CUDA-capable device is detected";
  case cudaErrorNotReady: return "device not ready";
  case cudaErrorIllegalAddress: return "an illegal memory access was encountered";
  case cudaErrorLaunchTimeout: return "the launch timed out and was terminated";
  case cudaErrorInvalidDeviceFunction: return "invalid device function (the CPU emulation has no twin for it)";
  case cudaErrorDeviceUninitialized: return "invalid device context";
  case cudaErrorMapBufferObjectFailed: return "mapping of buffer object failed";
  case cudaErrorPeerAccessUnsupported: return "peer access is not supported between these two devices";
  case cudaErrorHostMemoryAlreadyRegistered: return "part or all of the requested memory range is already mapped";
  case cudaErrorHostMemoryNotRegistered: return "pointer does not correspond to a registered memory region";
  case cudaErrorStreamCaptureUnsupported: return "operation not permitted when stream is capturing";
  case cudaErrorStreamCaptureInvalidated: return "operation failed due to a previous error during capture";
  case cudaErrorStreamCaptureIsolation: return "dependency created on uncaptured work in another stream";
  case cudaErrorStreamCaptureImplicit: return "operation would make the legacy stream depend on a capturing blocking stream";
  case cudaErrorCapturedEvent: return "operation not permitted on an event last recorded in a capturing stream";
  case cudaErrorStreamCaptureWrongThread: return "attempt to terminate a thread-local capture sequence from another thread";
  case cudaErrorIllegalState: return "the operation cannot be performed in the present state";
  default: return "unknown error";
  }
}

/* ------------------------------------------------------------ memory */

static size_t emu_mem_limit(void) {
  long v = emu_env_long("CC_EMU_MEM_LIMIT", -1);
  return v >= 0 ? (size_t)v : EMU_MEM_LIMIT;
}

cudaError_t cudaMalloc(void **devPtr, size_t size) {
  size_t data, len;
  int fd = -1, i;
  char *map;
  emu_hdr *h;
  EMU_LIVE();
  EMU_CAPTURE_SAFE("cudaMalloc");
  if (!devPtr) return emu_err(cudaErrorInvalidValue);
  *devPtr = NULL;
  data = ((size ? size : 1) + 4095) & ~(size_t)4095;
  if (size > emu_mem_limit() || data < size) return emu_err(cudaErrorMemoryAllocation);
  pthread_mutex_lock(&emu_lock);
  if (emu_mem_used + data > emu_mem_limit()) {
    pthread_mutex_unlock(&emu_lock);
    return emu_err(cudaErrorMemoryAllocation);
  }
  emu_mem_used += data;
  pthread_mutex_unlock(&emu_lock);
  len = EMU_HDR + data + (hb_reg ? HB_SHADOW_BYTES : 0); /* the checker's shadow after the data */
  fd = (int)syscall(SYS_memfd_create, "cc-emu-device-memory", 0);
  if (fd < 0 || ftruncate(fd, (off_t)len) != 0 ||
      (map = (char *)mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0)) == MAP_FAILED) {
    if (fd >= 0) close(fd);
    pthread_mutex_lock(&emu_lock);
    emu_mem_used -= data;
    pthread_mutex_unlock(&emu_lock);
    return emu_err(cudaErrorMemoryAllocation);
  }
  memset(map + EMU_HDR, 0xd7, size); /* not zero: nothing may count on fresh memory */
  h = (emu_hdr *)(void *)map;
  pthread_mutex_lock(&emu_lock);
  emu_devices_locked();
  i = emu_slot_locked();
  if (i >= 0) {
    emu_mem *m = &emu_mems[i];
    m->kind = M_DEV;
    m->p = map + EMU_HDR;
    m->n = size;
    m->id = emu_next_id++;
    m->dev = emu_phys[emu_cur];
    m->fd = fd;
    m->map = map;
    m->maplen = len;
    h->magic = EMU_MAGIC;
    h->owner = (int32_t)getpid();
    h->id = m->id;
    h->size = size;
    h->dev = m->dev;
    h->va = (uint64_t)(uintptr_t)m->p;
    if (hb_reg) {
      m->hb = (struct hb_alloc *)(void *)(map + EMU_HDR + data);
      hb_alloc_init(m->hb, m->id, size);
    }
  } else {
    emu_mem_used -= data;
  }
  pthread_mutex_unlock(&emu_lock);
  if (i < 0) {
    munmap(map, len);
    close(fd);
    return emu_err(cudaErrorMemoryAllocation);
  }
  *devPtr = map + EMU_HDR;
  return cudaSuccess;
}

cudaError_t cudaMallocManaged(void **devPtr, size_t size, unsigned int flags) {
  void *p = NULL;
  int i;
  (void)flags;
  EMU_LIVE();
  EMU_CAPTURE_SAFE("cudaMallocManaged");
  if (!devPtr) return emu_err(cudaErrorInvalidValue);
  *devPtr = NULL;
  if (size > emu_mem_limit() || posix_memalign(&p, 4096, size ? size : 1) != 0)
    return emu_err(cudaErrorMemoryAllocation);
  pthread_mutex_lock(&emu_lock);
  emu_devices_locked();
  i = emu_slot_locked();
  if (i >= 0) {
    emu_mems[i].kind = M_MANAGED;
    emu_mems[i].p = (char *)p;
    emu_mems[i].n = size;
    emu_mems[i].id = emu_next_id++;
    emu_mems[i].dev = emu_phys[emu_cur];
    if (hb_reg && (emu_mems[i].hb = (struct hb_alloc *)calloc(1, sizeof(hb_alloc))))
      hb_alloc_init(emu_mems[i].hb, emu_mems[i].id, size);
  }
  pthread_mutex_unlock(&emu_lock);
  if (i < 0) {
    free(p);
    return emu_err(cudaErrorMemoryAllocation);
  }
  *devPtr = p;
  return cudaSuccess;
}

/* Report the processes (not this one) that still have allocation h open. */
static void emu_check_open(const emu_hdr *h, unsigned long long id, size_t n) {
  int k;
  for (k = 0; k < EMU_OPENS; k++) {
    int pid = __atomic_load_n(&h->opens[k].pid, __ATOMIC_ACQUIRE);
    int c = __atomic_load_n(&h->opens[k].count, __ATOMIC_ACQUIRE);
    if (pid && c > 0 && pid != (int)getpid() && emu_pid_alive(pid)) {
      long seen = __atomic_add_fetch(&emu_counts[EC_FREED_MAPPED], 1, __ATOMIC_ACQ_REL);
      if (seen <= 2)                   /* the first two per process; the rest are counted */
        fprintf(stderr, "cuda_emu: pid %d: cudaFree of buffer %llu (%zu bytes) while pid %d still has it open "
                "through cudaIpcOpenMemHandle (undefined behaviour in CUDA: close first, then free)%s\n",
                (int)getpid(), id, n, pid, seen == 2 ? "; further ones are counted, not printed" : "");
    }
  }
}

cudaError_t cudaFree(void *devPtr) {
  int i;
  emu_mem m;
  memset(&m, 0, sizeof m);
  EMU_CAPTURE_SAFE("cudaFree");
  if (!devPtr) {                       /* also the usual "make the context now" */
    EMU_LIVE();
    return cudaSuccess;
  }
  emu_drain_all();                     /* cudaFree waits for the device */
  pthread_mutex_lock(&emu_lock);
  for (i = 0; i < EMU_MAXA; i++)
    if ((emu_mems[i].kind == M_DEV || emu_mems[i].kind == M_MANAGED) && emu_mems[i].p == devPtr) break;
  if (i < EMU_MAXA) {
    m = emu_mems[i];
    memset(&emu_mems[i], 0, sizeof emu_mems[i]);
    if (m.kind == M_DEV) emu_mem_used -= m.maplen - EMU_HDR - (m.hb ? HB_SHADOW_BYTES : 0);
  }
  pthread_mutex_unlock(&emu_lock);
  if (i == EMU_MAXA) return emu_err(cudaErrorInvalidValue);
  if (m.kind == M_MANAGED) {
    free(devPtr);
    if (m.hb) pthread_mutex_destroy(&m.hb->mu);
    free(m.hb);
  } else {
    hb_freeing(m.hb);
    __atomic_store_n(&((emu_hdr *)(void *)m.map)->freed, 1, __ATOMIC_RELEASE);
    emu_check_open((const emu_hdr *)(void *)m.map, m.id, m.n);
    munmap(m.map, m.maplen);
    close(m.fd);
  }
  EMU_LIVE();
  return cudaSuccess;
}

cudaError_t cudaMallocHost(void **ptr, size_t size) {
  int i;
  EMU_LIVE();
  EMU_CAPTURE_SAFE("cudaMallocHost");
  if (!ptr) return emu_err(cudaErrorInvalidValue);
  if (posix_memalign(ptr, 4096, size ? size : 1) != 0) {
    *ptr = NULL;
    return emu_err(cudaErrorMemoryAllocation);
  }
  pthread_mutex_lock(&emu_lock);
  i = emu_slot_locked();
  if (i >= 0) {
    emu_mems[i].kind = M_PINNED;
    emu_mems[i].p = (char *)*ptr;
    emu_mems[i].n = size ? size : 1;
  }
  pthread_mutex_unlock(&emu_lock);
  if (i < 0) {
    free(*ptr);
    *ptr = NULL;
    return emu_err(cudaErrorMemoryAllocation);
  }
  return cudaSuccess;
}

cudaError_t cudaFreeHost(void *ptr) {
  int i;
  EMU_CAPTURE_SAFE("cudaFreeHost");
  if (!ptr) return cudaSuccess;
  emu_drain_all();
  pthread_mutex_lock(&emu_lock);
  for (i = 0; i < EMU_MAXA; i++)
    if (emu_mems[i].kind == M_PINNED && emu_mems[i].p == ptr) break;
  if (i < EMU_MAXA) memset(&emu_mems[i], 0, sizeof emu_mems[i]);
  pthread_mutex_unlock(&emu_lock);
  if (i == EMU_MAXA) return emu_err(cudaErrorInvalidValue);
  free(ptr);
  return cudaSuccess;
}

/* Pin [ptr, ptr + size) and give it a device address: a second mapping of the
 * same pages where they are shared memory, else the same address. */
cudaError_t cudaHostRegister(void *ptr, size_t size, unsigned int flags) {
  char *alias;
  uint64_t fkey[2] = {0, 0}, foff = 0;
  int i;
  (void)flags;
  EMU_LIVE();
  EMU_CAPTURE_SAFE("cudaHostRegister");
  if (!ptr || !size) return emu_err(cudaErrorInvalidValue);
  if (emu_is_pinned(ptr, 1) || emu_is_dev(ptr, 1)) return emu_err(cudaErrorHostMemoryAlreadyRegistered);
  alias = ((uintptr_t)ptr & 4095) == 0 ? (char *)mremap(ptr, 0, size, MREMAP_MAYMOVE) : (char *)MAP_FAILED;
  if (alias == (char *)MAP_FAILED) alias = (char *)ptr;
  if (hb_reg) hb_file_of(ptr, fkey, &foff);
  pthread_mutex_lock(&emu_lock);
  i = emu_slot_locked();
  if (i >= 0) {
    emu_mems[i].kind = M_HOSTREG;
    emu_mems[i].p = (char *)ptr;
    emu_mems[i].n = size;
    emu_mems[i].alias = alias;
    memcpy(emu_mems[i].fkey, fkey, sizeof fkey);
    emu_mems[i].foff = foff;
  }
  pthread_mutex_unlock(&emu_lock);
  if (i < 0) {
    if (alias != ptr) munmap(alias, size);
    return emu_err(cudaErrorMemoryAllocation);
  }
  return cudaSuccess;
}

cudaError_t cudaHostUnregister(void *ptr) {
  int i;
  emu_mem m;
  memset(&m, 0, sizeof m);
  EMU_CAPTURE_SAFE("cudaHostUnregister");
  emu_drain_all();
  pthread_mutex_lock(&emu_lock);
  for (i = 0; i < EMU_MAXA; i++)
    if (emu_mems[i].kind == M_HOSTREG && emu_mems[i].p == ptr) break;
  if (i < EMU_MAXA) {
    m = emu_mems[i];
    memset(&emu_mems[i], 0, sizeof emu_mems[i]);
  }
  pthread_mutex_unlock(&emu_lock);
  if (i == EMU_MAXA) return emu_err(cudaErrorHostMemoryNotRegistered);
  if (m.alias != m.p) munmap(m.alias, m.n);
  return cudaSuccess;
}

cudaError_t cudaHostGetDevicePointer(void **pDevice, void *pHost, unsigned int flags) {
  int i;
  char *d = NULL;
  EMU_LIVE();
  if (!pDevice || flags) return emu_err(cudaErrorInvalidValue);
  pthread_mutex_lock(&emu_lock);
  i = emu_find_pinned(pHost, 1);
  if (i >= 0)
    d = emu_mems[i].kind == M_HOSTREG ? emu_mems[i].alias + ((char *)pHost - emu_mems[i].p) : (char *)pHost;
  pthread_mutex_unlock(&emu_lock);
  if (!d) return emu_err(cudaErrorInvalidValue);
  *pDevice = d;
  return cudaSuccess;
}

/* ------------------------------------------------------------ copies */

static cudaError_t emu_copy(void *dst, const void *src, size_t count, enum cudaMemcpyKind kind, cudaStream_t stream,
                            int sync) {
  struct CUstream_st *s = emu_stream(stream);
  int dd, sd, pinned_src, pinned_dst;
  unsigned long long seq;
  emu_op *o;
  EMU_LIVE();
  if (sync) EMU_CAPTURE_SAFE("cudaMemcpy");
  if (!s) return emu_err(cudaErrorInvalidResourceHandle);
  EMU_STREAM_USE(s);
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
  pinned_src = sd || emu_is_pinned(src, count);
  pinned_dst = dd || emu_is_pinned(dst, count);
  if (!(o = emu_op_new(OP_COPY))) return emu_err(cudaErrorMemoryAllocation);
  o->dst = dst;
  o->src = src;
  o->n = count;
  if (!pinned_src) {                   /* pageable: taken now */
    if (!(o->owned = malloc(count))) {
      emu_op_free(o);
      return emu_err(cudaErrorMemoryAllocation);
    }
    memcpy(o->owned, src, count);
    o->src = o->owned;
  }
  seq = emu_enqueue(s, o);
  if (seq && (sync || !pinned_dst)) emu_wait_seq(s, seq); /* into pageable memory: done on return */
  return cudaSuccess;
}

cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t count, enum cudaMemcpyKind kind,
                            cudaStream_t stream) {
  return emu_copy(dst, src, count, kind, stream, 0);
}

cudaError_t cudaMemcpy(void *dst, const void *src, size_t count, enum cudaMemcpyKind kind) {
  cudaError_t e = emu_copy(dst, src, count, kind, 0, 1);
  return e == cudaSuccess ? cudaDeviceSynchronize() : e;
}

cudaError_t cudaMemsetAsync(void *devPtr, int value, size_t count, cudaStream_t stream) {
  struct CUstream_st *s = emu_stream(stream);
  emu_op *o;
  EMU_LIVE();
  if (!s) return emu_err(cudaErrorInvalidResourceHandle);
  EMU_STREAM_USE(s);
  if (!count) return cudaSuccess;
  if (!emu_is_dev(devPtr, count)) return emu_err(cudaErrorInvalidValue);
  if (!(o = emu_op_new(OP_MEMSET))) return emu_err(cudaErrorMemoryAllocation);
  o->dst = devPtr;
  o->value = value;
  o->n = count;
  emu_enqueue(s, o);
  return cudaSuccess;
}

/* ------------------------------------------------------------ pointer queries */

cudaError_t cudaPointerGetAttributes(struct cudaPointerAttributes *attributes, const void *ptr) {
  int i, pin;
  emu_mem m;
  memset(&m, 0, sizeof m);
  EMU_LIVE();
  if (!attributes) return emu_err(cudaErrorInvalidValue);
  memset(attributes, 0, sizeof *attributes);
  pthread_mutex_lock(&emu_lock);
  i = emu_find_dev(ptr, 0);
  pin = emu_find_pinned(ptr, 0);
  if (i >= 0) m = emu_mems[i];
  pthread_mutex_unlock(&emu_lock);
  if (i >= 0) {
    int ord = emu_ordinal(m.dev);
    attributes->type = m.kind == M_MANAGED ? cudaMemoryTypeManaged : cudaMemoryTypeDevice;
    attributes->device = ord >= 0 ? ord : emu_cur;
    attributes->devicePointer = (void *)ptr;
    attributes->hostPointer = m.kind == M_MANAGED ? (void *)ptr : NULL;
  } else {
    attributes->type = pin >= 0 ? cudaMemoryTypeHost : cudaMemoryTypeUnregistered;
    attributes->device = pin >= 0 ? emu_cur : -1;
    attributes->hostPointer = (void *)ptr;
  }
  return cudaSuccess;
}

/* The driver's query, which cc_cuda.cuh fetches by name: unknown memory gets
 * default values and CUDA_SUCCESS, as the driver documents. */
static CUresult emu_cuPointerGetAttributes(unsigned int n, CUpointer_attribute *attrs, void **data, CUdeviceptr ptr) {
  unsigned int a;
  int i, pin, ord = -2;
  emu_mem m;
  memset(&m, 0, sizeof m);
  memset(&m, 0, sizeof m);
  if (emu_sticky_err() != cudaSuccess) return CUDA_ERROR_ILLEGAL_ADDRESS;
  pthread_mutex_lock(&emu_lock);
  i = emu_find_dev((const void *)(uintptr_t)ptr, 0);
  pin = emu_find_pinned((const void *)(uintptr_t)ptr, 0);
  if (i >= 0) m = emu_mems[i];
  pthread_mutex_unlock(&emu_lock);
  if (i >= 0) {
    ord = emu_ordinal(m.dev);
    if (ord < 0) ord = emu_cur;
  }
  for (a = 0; a < n; a++) {
    switch (attrs[a]) {
    case CU_POINTER_ATTRIBUTE_MEMORY_TYPE:
      *(unsigned int *)data[a] = i >= 0 ? (m.kind == M_MANAGED ? CU_MEMORYTYPE_UNIFIED : CU_MEMORYTYPE_DEVICE)
                                        : pin >= 0 ? CU_MEMORYTYPE_HOST : 0;
      break;
    case CU_POINTER_ATTRIBUTE_IS_MANAGED: *(unsigned int *)data[a] = i >= 0 && m.kind == M_MANAGED; break;
    case CU_POINTER_ATTRIBUTE_BUFFER_ID: *(unsigned long long *)data[a] = i >= 0 ? m.id : 0; break;
    case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL: *(int *)data[a] = ord; break;
    case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR: *(CUdeviceptr *)data[a] = (CUdeviceptr)(uintptr_t)(i >= 0 ? m.p : NULL); break;
    case CU_POINTER_ATTRIBUTE_RANGE_SIZE: *(size_t *)data[a] = i >= 0 ? m.n : 0; break;
    default: return CUDA_ERROR_INVALID_VALUE;
    }
  }
  return CUDA_SUCCESS;
}

/* ------------------------------------------------------------ stream memory operations */

/* The stream of a memory operation, or why it cannot take one. */
static CUresult emu_memop_stream(CUstream hs, struct CUstream_st **out) {
  struct CUstream_st *s = emu_stream((cudaStream_t)hs);
  *out = s;
  if (emu_sticky_err() != cudaSuccess) return CUDA_ERROR_ILLEGAL_ADDRESS;
  if (!s) return CUDA_ERROR_INVALID_HANDLE;
  switch (emu_stream_use(s)) {
  case cudaSuccess: return CUDA_SUCCESS;
  case cudaErrorStreamCaptureImplicit: return CUDA_ERROR_STREAM_CAPTURE_IMPLICIT;
  default: return CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
  }
}

/* Is this a 32-bit write (wait) the v2 entry points take? Writes have no
 * flags (CU_STREAM_WRITE_VALUE_NO_MEMORY_BARRIER is not in the v2 API); a
 * wait takes a comparison and the flush flag, this one where the device can
 * flush. */
static CUresult emu_memop_check(CUdeviceptr addr, unsigned int flags, int wait) {
  if ((addr & 3) || !emu_gpu_reaches((const void *)(uintptr_t)addr, 4)) return CUDA_ERROR_INVALID_VALUE;
  if (wait ? (flags & ~(unsigned int)(CU_STREAM_WAIT_VALUE_FLUSH | 3)) != 0 : flags != 0) return CUDA_ERROR_INVALID_VALUE;
  if (wait && (flags & CU_STREAM_WAIT_VALUE_FLUSH) && !emu_can_flush()) return CUDA_ERROR_NOT_SUPPORTED;
  return CUDA_SUCCESS;
}

static CUresult emu_memop_queue(struct CUstream_st *s, int kind, CUdeviceptr addr, cuuint32_t value, unsigned int flags) {
  emu_op *o = emu_op_new(kind);
  if (!o) return CUDA_ERROR_OUT_OF_MEMORY;
  o->addr = (unsigned int *)(uintptr_t)addr;
  o->v = value;
  o->flags = flags;
  emu_enqueue(s, o);
  return CUDA_SUCCESS;
}

static CUresult emu_memop(CUstream hs, CUdeviceptr addr, cuuint32_t value, unsigned int flags, int wait) {
  struct CUstream_st *s;
  CUresult r = emu_memop_stream(hs, &s);
  if (r == CUDA_SUCCESS) r = emu_memop_check(addr, flags, wait);
  if (r != CUDA_SUCCESS) return r;
  emu_count(EC_MEMOPS);
  return emu_memop_queue(s, wait ? OP_WAIT32 : OP_WRITE32, addr, value, flags);
}
static CUresult emu_cuStreamWaitValue32(CUstream s, CUdeviceptr addr, cuuint32_t value, unsigned int flags) {
  return emu_memop(s, addr, value, flags, 1);
}
static CUresult emu_cuStreamWriteValue32(CUstream s, CUdeviceptr addr, cuuint32_t value, unsigned int flags) {
  return emu_memop(s, addr, value, flags, 0);
}

/* cuStreamBatchMemOp (v2): 32-bit waits and writes, flushes of remote
 * writes, memory barriers; every operation is checked before any is queued;
 * at most 255. */
static CUresult emu_cuStreamBatchMemOp(CUstream hs, unsigned int count, CUstreamBatchMemOpParams *ops,
                                       unsigned int flags) {
  struct CUstream_st *s;
  CUresult r = emu_memop_stream(hs, &s);
  unsigned int i;
  if (r != CUDA_SUCCESS) return r;
  if (!count || count >= 256 || !ops || flags) return CUDA_ERROR_INVALID_VALUE;
  for (i = 0; i < count; i++) {
    switch (ops[i].operation) {
    case CU_STREAM_MEM_OP_WAIT_VALUE_32: r = emu_memop_check(ops[i].waitValue.address, ops[i].waitValue.flags, 1); break;
    case CU_STREAM_MEM_OP_WRITE_VALUE_32: r = emu_memop_check(ops[i].writeValue.address, ops[i].writeValue.flags, 0); break;
    case CU_STREAM_MEM_OP_FLUSH_REMOTE_WRITES:
      r = ops[i].flushRemoteWrites.flags ? CUDA_ERROR_INVALID_VALUE : emu_can_flush() ? CUDA_SUCCESS : CUDA_ERROR_NOT_SUPPORTED;
      break;
    case CU_STREAM_MEM_OP_BARRIER: r = ops[i].memoryBarrier.flags > 1 ? CUDA_ERROR_INVALID_VALUE : CUDA_SUCCESS; break;
    default: r = CUDA_ERROR_INVALID_VALUE; break;   /* the 64-bit forms: not emulated */
    }
    if (r != CUDA_SUCCESS) return r;
  }
  emu_count(EC_BATCHES);
  for (i = 0; i < count && r == CUDA_SUCCESS; i++)
    switch (ops[i].operation) {
    case CU_STREAM_MEM_OP_WAIT_VALUE_32:
      r = emu_memop_queue(s, OP_WAIT32, ops[i].waitValue.address, ops[i].waitValue.value, ops[i].waitValue.flags);
      break;
    case CU_STREAM_MEM_OP_WRITE_VALUE_32:
      r = emu_memop_queue(s, OP_WRITE32, ops[i].writeValue.address, ops[i].writeValue.value, 0);
      break;
    case CU_STREAM_MEM_OP_FLUSH_REMOTE_WRITES: r = emu_memop_queue(s, OP_FLUSH, 0, 0, 0); break;
    default: break;                    /* a barrier: the emulation's writes are in order already */
    }
  return r;
}

/* Of the driver: the pointer query and the stream memory operations
 * (CC_EMU_NO_BATCH=1: a driver without cuStreamBatchMemOp). */
cudaError_t cudaGetDriverEntryPointByVersion(const char *symbol, void **funcPtr, unsigned int cudaVersion,
                                             unsigned long long flags,
                                             enum cudaDriverEntryPointQueryResult *driverStatus) {
  (void)cudaVersion;
  (void)flags;
  if (!symbol || !funcPtr) return emu_err(cudaErrorInvalidValue);
  *funcPtr = !strcmp(symbol, "cuPointerGetAttributes") ? (void *)emu_cuPointerGetAttributes
             : !strcmp(symbol, "cuStreamWaitValue32") ? (void *)emu_cuStreamWaitValue32
             : !strcmp(symbol, "cuStreamWriteValue32") ? (void *)emu_cuStreamWriteValue32
             : !strcmp(symbol, "cuStreamBatchMemOp") && !emu_env_long("CC_EMU_NO_BATCH", 0) ? (void *)emu_cuStreamBatchMemOp
                                                        : NULL;
  if (driverStatus)
    *driverStatus = *funcPtr ? cudaDriverEntryPointSuccess : cudaDriverEntryPointSymbolNotFound;
  return cudaSuccess;
}

/* ------------------------------------------------------------ CUDA IPC */

typedef struct emu_handle {            /* inside cudaIpcMemHandle_t (64 bytes) */
  uint32_t magic;
  int32_t pid, fd, dev;
  uint64_t id, size;
} emu_handle;

cudaError_t cudaIpcGetMemHandle(cudaIpcMemHandle_t *handle, void *devPtr) {
  emu_handle h;
  int i;
  EMU_LIVE();
  if (!handle) return emu_err(cudaErrorInvalidValue);
  pthread_mutex_lock(&emu_lock);
  for (i = 0; i < EMU_MAXA; i++)
    if (emu_mems[i].p == devPtr && emu_mems[i].kind) break;
  if (i < EMU_MAXA && emu_mems[i].kind == M_DEV) {
    memset(&h, 0, sizeof h);
    h.magic = EMU_MAGIC;
    h.pid = (int32_t)getpid();
    h.fd = emu_mems[i].fd;
    h.dev = emu_mems[i].dev;
    h.id = emu_mems[i].id;
    h.size = emu_mems[i].n;
  }
  pthread_mutex_unlock(&emu_lock);
  if (i == EMU_MAXA || emu_mems[i].kind != M_DEV) return emu_err(cudaErrorInvalidValue); /* managed, imported, not a base */
  memset(handle, 0, sizeof *handle);
  memcpy(handle, &h, sizeof h);
  return cudaSuccess;
}

cudaError_t cudaIpcOpenMemHandle(void **devPtr, cudaIpcMemHandle_t handle, unsigned int flags) {
  emu_handle h;
  emu_hdr *hdr;
  char path[64], *map;
  struct stat st;
  size_t len;
  uint64_t chunk;
  int fd, i, k;
  EMU_LIVE();
  EMU_CAPTURE_SAFE("cudaIpcOpenMemHandle");
  if (!devPtr || flags != cudaIpcMemLazyEnablePeerAccess) return emu_err(cudaErrorInvalidValue);
  *devPtr = NULL;
  memcpy(&h, &handle, sizeof h);
  if (h.magic != EMU_MAGIC) return emu_err(cudaErrorInvalidValue);
  if (h.pid == (int32_t)getpid()) return emu_err(cudaErrorDeviceUninitialized); /* not in the exporting process */
  if (!emu_reach(h.dev, emu_phys[emu_cur])) return emu_err(cudaErrorPeerAccessUnsupported);
  pthread_mutex_lock(&emu_lock);
  for (i = 0; i < EMU_MAXA; i++)
    if (emu_mems[i].kind == M_IPC && emu_mems[i].id == h.id && ((emu_hdr *)(void *)emu_mems[i].map)->owner == h.pid) {
      emu_mems[i].refs++;              /* opened before: the same address, counted */
      *devPtr = emu_mems[i].p;
      pthread_mutex_unlock(&emu_lock);
      return cudaSuccess;
    }
  pthread_mutex_unlock(&emu_lock);
  snprintf(path, sizeof path, "/proc/%d/fd/%d", (int)h.pid, (int)h.fd);
  if ((fd = open(path, O_RDWR | O_CLOEXEC)) < 0) return emu_err(cudaErrorInvalidValue); /* its process or memory is gone */
  len = EMU_HDR + ((h.size ? h.size : 1) + 4095) / 4096 * 4096;
  if (fstat(fd, &st) == 0 && (size_t)st.st_size == len + HB_SHADOW_BYTES) len += HB_SHADOW_BYTES; /* with a shadow */
  if (fstat(fd, &st) != 0 || (size_t)st.st_size != len ||
      (map = (char *)mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0)) == MAP_FAILED) {
    close(fd);
    return emu_err(cudaErrorMapBufferObjectFailed);
  }
  close(fd);
  hdr = (emu_hdr *)(void *)map;
  if (hdr->magic != EMU_MAGIC || hdr->id != h.id || hdr->owner != h.pid) { /* fd number reused */
    munmap(map, len);
    return emu_err(cudaErrorInvalidValue);
  }
  {                                    /* a power of two; a test makes it large to reach every stale mapping */
    const char *v = getenv("CC_EMU_IPC_CHUNK");
    unsigned long long c = v ? strtoull(v, NULL, 0) : 0;
    chunk = c && !(c & (c - 1)) ? (uint64_t)c : EMU_CHUNK;
  }
  pthread_mutex_lock(&emu_lock);
  for (i = 0; i < EMU_MAXA; i++) {     /* a mapping kept of memory its owner freed holds the place */
    const emu_hdr *o = emu_mems[i].src;
    if (emu_mems[i].kind == M_IPC && o && o->owner == h.pid && __atomic_load_n(&o->freed, __ATOMIC_ACQUIRE) &&
        EMU_CHUNK_DOWN(o->va, chunk) < EMU_CHUNK_UP(hdr->va + h.size, chunk) &&
        EMU_CHUNK_DOWN(hdr->va, chunk) < EMU_CHUNK_UP(o->va + o->size, chunk))
      break;
  }
  pthread_mutex_unlock(&emu_lock);
  if (i < EMU_MAXA) {
    __atomic_add_fetch(&emu_counts[EC_ALREADY_MAPPED], 1, __ATOMIC_ACQ_REL);
    munmap(map, len);
    return emu_err(cudaErrorAlreadyMapped);
  }
  for (k = 0; k < EMU_OPENS; k++) {   /* count this process's open in the allocation itself */
    int32_t zero = 0, me = (int32_t)getpid();
    if (__atomic_load_n(&hdr->opens[k].pid, __ATOMIC_ACQUIRE) == me ||
        __atomic_compare_exchange_n(&hdr->opens[k].pid, &zero, me, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
      __atomic_add_fetch(&hdr->opens[k].count, 1, __ATOMIC_ACQ_REL);
      break;
    }
  }
  pthread_mutex_lock(&emu_lock);
  i = emu_slot_locked();
  if (i >= 0) {
    emu_mem *m = &emu_mems[i];
    m->kind = M_IPC;
    m->p = map + EMU_HDR;
    m->n = (size_t)h.size;
    m->id = h.id;
    m->dev = h.dev;
    m->fd = -1;
    m->map = map;
    m->maplen = len;
    m->refs = 1;
    m->src = hdr;
    if (hb_reg && len > EMU_HDR + ((h.size ? h.size : 1) + 4095) / 4096 * 4096) {
      m->hb = (struct hb_alloc *)(void *)(map + len - HB_SHADOW_BYTES);
      if (m->hb->region != hb_reg->id) m->hb = NULL;
    }
    if (hb_reg && !m->hb)
      hb_error("device buffer %llu of pid %d has no shadow of this checker (its process was not forked from the one "
               "that made the checker, or runs without CC_EMU_HB): its accesses are not checked", (unsigned long long)h.id,
               (int)h.pid);
  }
  pthread_mutex_unlock(&emu_lock);
  if (i < 0) {
    munmap(map, len);
    return emu_err(cudaErrorMemoryAllocation);
  }
  *devPtr = map + EMU_HDR;
  return cudaSuccess;
}

cudaError_t cudaIpcCloseMemHandle(void *devPtr) {
  int i, k, last = 0;
  emu_mem m;
  memset(&m, 0, sizeof m);
  EMU_LIVE();
  EMU_CAPTURE_SAFE("cudaIpcCloseMemHandle");
  pthread_mutex_lock(&emu_lock);
  for (i = 0; i < EMU_MAXA; i++)
    if (emu_mems[i].kind == M_IPC && emu_mems[i].p == devPtr) break;
  if (i < EMU_MAXA && --emu_mems[i].refs == 0) {
    last = 1;
    m = emu_mems[i];
    memset(&emu_mems[i], 0, sizeof emu_mems[i]);
  }
  pthread_mutex_unlock(&emu_lock);
  if (i == EMU_MAXA) return emu_err(cudaErrorInvalidValue);
  if (last) {
    emu_hdr *hdr = (emu_hdr *)(void *)m.map;
    hb_closing(m.hb, m.id);
    for (k = 0; k < EMU_OPENS; k++)
      if (__atomic_load_n(&hdr->opens[k].pid, __ATOMIC_ACQUIRE) == (int32_t)getpid()) {
        __atomic_sub_fetch(&hdr->opens[k].count, 1, __ATOMIC_ACQ_REL);
        break;
      }
    munmap(m.map, m.maplen);
  }
  return cudaSuccess;
}

/* ------------------------------------------------------------ streams and events */

static cudaError_t emu_stream_create(cudaStream_t *pStream, int blocking) {
  struct CUstream_st *s;
  EMU_LIVE();
  if (!pStream) return emu_err(cudaErrorInvalidValue);
  pthread_mutex_lock(&emu_lock);
  s = emu_stream_new_locked(blocking, 0);
  pthread_mutex_unlock(&emu_lock);
  *pStream = s;
  return s ? cudaSuccess : emu_err(cudaErrorMemoryAllocation);
}

cudaError_t cudaStreamCreate(cudaStream_t *pStream) { return emu_stream_create(pStream, 1); }

cudaError_t cudaStreamCreateWithFlags(cudaStream_t *pStream, unsigned int flags) {
  return emu_stream_create(pStream, !(flags & cudaStreamNonBlocking));
}

/* The stream's work still runs; its thread then ends. The stream's memory
 * stays (an event may still name it). */
cudaError_t cudaStreamDestroy(cudaStream_t stream) {
  struct CUstream_st *s = stream ? emu_stream(stream) : NULL;
  if (!s || s->legacy) return emu_err(cudaErrorInvalidResourceHandle);
  pthread_mutex_lock(&emu_lock);
  s->dead = 1;
  pthread_mutex_unlock(&emu_lock);
  pthread_mutex_lock(&s->mu);
  s->stop = 1;
  pthread_cond_broadcast(&s->cv);
  pthread_mutex_unlock(&s->mu);
  pthread_detach(s->th);
  return cudaSuccess;
}

cudaError_t cudaStreamSynchronize(cudaStream_t stream) {
  struct CUstream_st *s = emu_stream(stream);
  EMU_LIVE();
  if (!s) return emu_err(cudaErrorInvalidResourceHandle);
  if (emu_captured_now(s)) return emu_err(cudaErrorStreamCaptureUnsupported);
  EMU_CAPTURE_SAFE("cudaStreamSynchronize");
  emu_drain(s);
  EMU_LIVE();
  return cudaSuccess;
}

cudaError_t cudaStreamQuery(cudaStream_t stream) {
  struct CUstream_st *s = emu_stream(stream);
  int idle;
  EMU_LIVE();
  if (!s) return emu_err(cudaErrorInvalidResourceHandle);
  if (emu_captured_now(s)) return emu_err(cudaErrorStreamCaptureUnsupported);
  EMU_CAPTURE_SAFE("cudaStreamQuery");
  unsigned long long seq;
  pthread_mutex_lock(&s->mu);
  idle = s->completed == s->submitted;
  seq = s->completed;
  pthread_mutex_unlock(&s->mu);
  if (idle) hb_join_seq(hb_me(), s, seq);          /* found done: ordered after it */
  return idle ? cudaSuccess : cudaErrorNotReady;   /* not an error: the last error stays */
}

cudaError_t cudaStreamBeginCapture(cudaStream_t stream, enum cudaStreamCaptureMode mode) {
  struct CUstream_st *s = emu_stream(stream);
  EMU_LIVE();
  if (!s || s->legacy) return emu_err(s ? cudaErrorStreamCaptureUnsupported : cudaErrorInvalidResourceHandle);
  if (mode != cudaStreamCaptureModeGlobal && mode != cudaStreamCaptureModeThreadLocal &&
      mode != cudaStreamCaptureModeRelaxed)
    return emu_err(cudaErrorInvalidValue);
  pthread_mutex_lock(&emu_lock);
  if (s->capturing) {
    pthread_mutex_unlock(&emu_lock);
    return emu_err(cudaErrorIllegalState);
  }
  s->capturing = 1;
  s->cap_mode = (int)mode;
  s->cap_tid = emu_thread_id();
  s->cap_invalid = 0;
  pthread_mutex_unlock(&emu_lock);
  return cudaSuccess;
}

/* The capture ends; an invalidated one gives no graph and fails. */
cudaError_t cudaStreamEndCapture(cudaStream_t stream, cudaGraph_t *pGraph) {
  struct CUstream_st *s = emu_stream(stream);
  int invalid;
  EMU_LIVE();
  if (!s || !pGraph) return emu_err(s ? cudaErrorInvalidValue : cudaErrorInvalidResourceHandle);
  pthread_mutex_lock(&emu_lock);
  if (!s->capturing) {
    pthread_mutex_unlock(&emu_lock);
    return emu_err(cudaErrorIllegalState);
  }
  if (s->cap_mode != cudaStreamCaptureModeRelaxed && s->cap_tid != emu_thread_id()) {
    pthread_mutex_unlock(&emu_lock);
    return emu_err(cudaErrorStreamCaptureWrongThread);
  }
  s->capturing = 0;
  invalid = s->cap_invalid;
  s->cap_invalid = 0;
  pthread_mutex_unlock(&emu_lock);
  *pGraph = NULL;
  if (invalid) return emu_err(cudaErrorStreamCaptureInvalidated);
  *pGraph = (cudaGraph_t)calloc(1, sizeof(struct CUgraph_st));
  return cudaSuccess;
}

cudaError_t cudaStreamIsCapturing(cudaStream_t stream, enum cudaStreamCaptureStatus *pCaptureStatus) {
  struct CUstream_st *s = emu_stream(stream), *t;
  int implicit = 0;
  EMU_LIVE();
  if (!s || !pCaptureStatus) return emu_err(s ? cudaErrorInvalidValue : cudaErrorInvalidResourceHandle);
  pthread_mutex_lock(&emu_lock);
  for (t = emu_streams; t && s->legacy; t = t->next_all)
    if (!t->dead && t->capturing && t->blocking) implicit = 1;
  *pCaptureStatus = !s->capturing ? cudaStreamCaptureStatusNone
                    : s->cap_invalid ? cudaStreamCaptureStatusInvalidated : cudaStreamCaptureStatusActive;
  pthread_mutex_unlock(&emu_lock);
  return implicit ? emu_err(cudaErrorStreamCaptureImplicit) : cudaSuccess;
}

cudaError_t cudaGraphDestroy(cudaGraph_t graph) {
  free(graph);
  return cudaSuccess;
}

cudaError_t cudaEventCreateWithFlags(cudaEvent_t *event, unsigned int flags) {
  struct CUevent_st *e;
  (void)flags;
  EMU_LIVE();
  if (!event) return emu_err(cudaErrorInvalidValue);
  e = (struct CUevent_st *)calloc(1, sizeof *e);
  if (!e) return emu_err(cudaErrorMemoryAllocation);
  e->magic = EMU_EVENT_MAGIC;
  *event = e;
  return cudaSuccess;
}

cudaError_t cudaEventCreate(cudaEvent_t *event) { return cudaEventCreateWithFlags(event, 0); }

cudaError_t cudaEventDestroy(cudaEvent_t event) {
  if (!event || event->magic != EMU_EVENT_MAGIC) return emu_err(cudaErrorInvalidResourceHandle);
  event->magic = 0;
  free(event);
  return cudaSuccess;
}

/* The event stands for everything queued on the stream so far. */
cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream) {
  struct CUstream_st *s = emu_stream(stream);
  EMU_LIVE();
  if (!event || event->magic != EMU_EVENT_MAGIC || !s) return emu_err(cudaErrorInvalidResourceHandle);
  EMU_STREAM_USE(s);
  if (s->capturing) {                  /* a node of the graph being captured */
    event->captured = 1;
    return cudaSuccess;
  }
  pthread_mutex_lock(&s->mu);
  event->s = s;
  event->seq = s->submitted;
  event->captured = 0;
  pthread_mutex_unlock(&s->mu);
  return cudaSuccess;
}

cudaError_t cudaStreamWaitEvent(cudaStream_t stream, cudaEvent_t event, unsigned int flags) {
  struct CUstream_st *s = emu_stream(stream);
  (void)flags;
  EMU_LIVE();
  if (!event || event->magic != EMU_EVENT_MAGIC || !s) return emu_err(cudaErrorInvalidResourceHandle);
  EMU_STREAM_USE(s);
  if (event->captured && !s->capturing) return emu_err(cudaErrorStreamCaptureIsolation);
  if (event->s && event->s != s && !s->capturing && (hb_reg || !emu_reached(event->s, event->seq)))
    emu_push_wait(s, event->s, event->seq);        /* the checker: done work is ordered too */
  return cudaSuccess;
}

cudaError_t cudaEventQuery(cudaEvent_t event) {
  EMU_LIVE();
  if (!event || event->magic != EMU_EVENT_MAGIC) return emu_err(cudaErrorInvalidResourceHandle);
  if (event->captured) return emu_err(cudaErrorCapturedEvent);
  EMU_CAPTURE_SAFE("cudaEventQuery");
  if (event->s && !emu_reached(event->s, event->seq)) return cudaErrorNotReady;
  if (event->s) hb_join_seq(hb_me(), event->s, event->seq);   /* found done: ordered after it */
  return cudaSuccess;
}

cudaError_t cudaEventSynchronize(cudaEvent_t event) {
  EMU_LIVE();
  if (!event || event->magic != EMU_EVENT_MAGIC) return emu_err(cudaErrorInvalidResourceHandle);
  if (event->captured) return emu_err(cudaErrorCapturedEvent);
  EMU_CAPTURE_SAFE("cudaEventSynchronize");
  if (event->s) emu_wait_seq(event->s, event->seq);
  EMU_LIVE();
  return cudaSuccess;
}

cudaError_t cudaLaunchHostFunc(cudaStream_t stream, cudaHostFn_t fn, void *userData) {
  struct CUstream_st *s = emu_stream(stream);
  emu_op *o;
  EMU_LIVE();
  if (!s || !fn) return emu_err(s ? cudaErrorInvalidValue : cudaErrorInvalidResourceHandle);
  EMU_STREAM_USE(s);
  if (!(o = emu_op_new(OP_HOSTFN))) return emu_err(cudaErrorMemoryAllocation);
  o->fn = fn;
  o->user = userData;
  emu_enqueue(s, o);
  return cudaSuccess;
}

/* ------------------------------------------------------------ kernels */

static pthread_mutex_t emu_names_lock = PTHREAD_MUTEX_INITIALIZER;
static struct { const void *stub; const char *name; } emu_names[512];
static int emu_nnames;

static const char *emu_kernel_name(const void *stub) {
  int i;
  const char *n = "?";
  pthread_mutex_lock(&emu_names_lock);
  for (i = 0; i < emu_nnames; i++)
    if (emu_names[i].stub == stub) n = emu_names[i].name;
  pthread_mutex_unlock(&emu_names_lock);
  return n;
}

static cudaError_t emu_launch(const void *func, dim3 grid, dim3 block, void **args, cudaStream_t stream) {
  struct CUstream_st *s = emu_stream(stream);
  cc_emu_twin tw;
  emu_op *o;
  size_t total = 0, at = 0;
  int i;
  EMU_LIVE();
  if (!s) return emu_err(cudaErrorInvalidResourceHandle);
  EMU_STREAM_USE(s);
  memset(&tw, 0, sizeof tw);
  if (!cc_emu_kernel_twin || !cc_emu_kernel_twin(func, &tw) || !tw.run || tw.nargs < 0 || tw.nargs > 8) {
    fprintf(stderr, "cuda_emu: pid %d: no CPU twin for kernel %s (%p)\n", (int)getpid(), emu_kernel_name(func), func);
    return emu_err(cudaErrorInvalidDeviceFunction);
  }
  if (!grid.x || !grid.y || !grid.z || !block.x || !block.y || !block.z || (size_t)block.x * block.y * block.z > 1024)
    return emu_err(cudaErrorInvalidConfiguration);
  if (tw.nargs && !args) return emu_err(cudaErrorInvalidValue);
  for (i = 0; i < tw.nargs; i++) total += (tw.size[i] + 15) & ~(size_t)15;
  if (!(o = emu_op_new(OP_KERNEL)) || (total && !(o->argbuf = (unsigned char *)malloc(total)))) {
    if (o) emu_op_free(o);
    return emu_err(cudaErrorMemoryAllocation);
  }
  for (i = 0; i < tw.nargs; i++) {     /* the arguments as they are now */
    memcpy(o->argbuf + at, args[i], tw.size[i]);
    o->argv[i] = o->argbuf + at;
    at += (tw.size[i] + 15) & ~(size_t)15;
  }
  o->tw = tw;
  o->grid = grid;
  o->block = block;
  {                                    /* more blocks than the device runs at once? */
    long blocks = (long)grid.x * grid.y * grid.z, most = __atomic_load_n(&emu_counts[EC_MAXBLOCKS], __ATOMIC_ACQUIRE);
    while (blocks > most &&
           !__atomic_compare_exchange_n(&emu_counts[EC_MAXBLOCKS], &most, blocks, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
    }
    if (blocks > (long)emu_sms() * emu_blocks_per_sm(block.x * block.y * block.z)) emu_count(EC_WAVES);
  }
  emu_enqueue(s, o);
  return cudaSuccess;
}

cudaError_t cudaOccupancyMaxActiveBlocksPerMultiprocessor(int *numBlocks, const void *func, int blockSize,
                                                         size_t dynamicSMemSize) {
  cc_emu_twin tw;
  memset(&tw, 0, sizeof tw);
  if (!numBlocks || blockSize <= 0 || blockSize > 1024 || dynamicSMemSize) return emu_err(cudaErrorInvalidValue);
  if (!cc_emu_kernel_twin || !cc_emu_kernel_twin(func, &tw)) return emu_err(cudaErrorInvalidDeviceFunction);
  *numBlocks = emu_blocks_per_sm((unsigned int)blockSize);
  return cudaSuccess;
}

/* CUDA 12 and older launch fn<<<>>> through this one; cc_cuda.cuh calls it. */
cudaError_t cudaLaunchKernel(const void *func, dim3 gridDim, dim3 blockDim, void **args, size_t sharedMem,
                             cudaStream_t stream) {
  if (sharedMem) return emu_err(cudaErrorInvalidValue); /* no kernel here uses dynamic shared memory */
  return emu_launch(func, gridDim, blockDim, args, stream);
}

/* ------------------------------------------------------------ what nvcc's code calls */

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
  (void)handle, (void)deviceFun, (void)thread_limit;
  (void)tid, (void)bid, (void)bDim, (void)gDim, (void)wSize;
  pthread_mutex_lock(&emu_names_lock);
  if (emu_nnames < 512) {              /* for messages: the kernel's (mangled) name */
    emu_names[emu_nnames].stub = (const void *)hostFun;
    emu_names[emu_nnames++].name = deviceName;
  }
  pthread_mutex_unlock(&emu_names_lock);
}

/* fn<<<grid, block, shmem, stream>>>(args): the configuration is pushed, the
 * host stub pops it and launches. */
static __thread dim3 emu_cfg_grid, emu_cfg_block;
static __thread size_t emu_cfg_shmem;
static __thread cudaStream_t emu_cfg_stream;
unsigned __cudaPushCallConfiguration(dim3 gridDim, dim3 blockDim, size_t sharedMem, struct CUstream_st *stream) {
  emu_cfg_grid = gridDim;
  emu_cfg_block = blockDim;
  emu_cfg_shmem = sharedMem;
  emu_cfg_stream = stream;
  return 0;
}
cudaError_t __cudaPopCallConfiguration(dim3 *gridDim, dim3 *blockDim, size_t *sharedMem, void *stream) {
  *gridDim = emu_cfg_grid;
  *blockDim = emu_cfg_block;
  *sharedMem = emu_cfg_shmem;
  *(cudaStream_t *)stream = emu_cfg_stream;
  return cudaSuccess;
}
#if CUDART_VERSION >= 13000
cudaError_t __cudaGetKernel(cudaKernel_t *kernel, const void *fun) {
  *kernel = (cudaKernel_t)fun;
  return cudaSuccess;
}
cudaError_t __cudaLaunchKernel(cudaKernel_t kernel, dim3 gridDim, dim3 blockDim, void **args, size_t sharedMem,
                               cudaStream_t stream) {
  return cudaLaunchKernel((const void *)kernel, gridDim, blockDim, args, sharedMem, stream);
}
#endif
}
