/* tests/cuda/test_cuda_hb.cu - the CUDA emulation's happens-before checker
 * (tests/cuda/cuda_emu.cpp with CC_EMU_HB=1) finds the races it must, and none
 * where the order is right. Linked with tests/cuda/cuda_emu.cpp (never with a real
 * CUDA runtime: it prints SKIP there); it restarts itself with CC_EMU_HB=1
 * when that is not set.
 *
 * Each case is a world of fresh processes (cc_spawn); its verdict comes from
 * the checker's counts before and after (they are every process's: the
 * checker's memory is shared with the ranks it forks), one PASS or FAIL line:
 *
 *   two_streams        cc_cuda calls alternating between two streams, one
 *                      held back 50 ms (the world of the regression
 *                      two_streams in tests/cuda/test_cuda.cu): 0 races, results
 *                      right
 *   two_streams_unordered  the same against a copy of cc_cuda.cuh whose wait
 *                      that orders calls on two streams the Makefile took out
 *                      (test_cuda_hb_unordered, built with HB_UNORDERED=1,
 *                      runs this case alone): races found
 *   ipc_flag           rank 0's stream writes a buffer and then a flag
 *                      (cuStreamWriteValue32 on shared registered memory);
 *                      rank 1's stream waits for the flag and reads the buffer
 *                      through CUDA IPC: 0 races, the bytes right
 *   ipc_no_flag        the same without the flag, the ranks ordered by a host
 *                      barrier only (which the checker does not see, as no GPU
 *                      would): a race (the shape of defect 2: a peer reads what
 *                      nothing on the GPU said was ready)
 *   event / no_event   one process: a write on stream A, a read on stream B
 *                      after cudaStreamWaitEvent: 0 races; without: a race
 *   use_after_free     rank 0 frees memory rank 1 still has open (what the
 *                      regression free_mapped guards against), then rank 1
 *                      reads it: a use after free, and
 *                      the emulator's own count of the free
 *   close_in_flight    as ipc_flag, but rank 1 closes its mapping while its
 *                      stream's read through it is not known to be done (it
 *                      only slept): reported
 *   remote_flush       each rank on a GPU of its own (CC_EMU_DEVICES=2, the
 *                      devices can flush remote writes): rank 0's stream
 *                      writes into rank 1's buffer through CUDA IPC, then a
 *                      flag; rank 1's stream waits for the flag with
 *                      CU_STREAM_WAIT_VALUE_FLUSH and reads its buffer: 0
 *                      races
 *   remote_no_flush    the same wait without the flush: a race (rank 1's GPU
 *                      may not see the remote write yet)
 * Built with ThreadSanitizer (test_cuda_hb_tsan), the two cases whose race
 * is between two threads of one process (two_streams_unordered, no_event)
 * are skipped: TSan reports that very race itself, and a sanitizer report
 * fails the run (the ASan build runs them).
 * A case that must find something must find only that (no use after free
 * where a race is wanted, and the other way round); a case that must find
 * nothing must check something (accesses and edges counted). */
#define _POSIX_C_SOURCE 200809L
#define CC_IMPLEMENTATION
#ifndef HB_UNORDERED                   /* 1: built against the Makefile's copy of cc_cuda.cuh without */
#define HB_UNORDERED 0                 /* the order of calls across streams */
#endif
#include "cc.h"
#include "cc_cuda.cuh"
#include "test_util.h"
#include "cuda_emu.h"

#include <cuda.h>
#include <cuda_runtime_api.h>
#include <unistd.h>

extern "C" int cc_emu_kernel_twin(const void *stub, cc_emu_twin *out) {
  size_t bytes = 0;
  cc_cuda__twin_fn f = cc_cuda__twin(stub, &bytes);
  if (!f) return 0;
  out->run = f;
  out->nargs = 1;
  out->size[0] = bytes;
  return 1;
}

typedef CUresult (*memop_fn)(CUstream, CUdeviceptr, cuuint32_t, unsigned int);

typedef struct shared {
  int bad[4];
  char why[4][300];
  long freed_mapped[4];
  cudaIpcMemHandle_t h;
  unsigned int *page;                  /* a flag page shared by the ranks (its own mapping) */
  int flag;                            /* the case's variant */
} shared;

static void why(shared *sh, int me, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void why(shared *sh, int me, const char *fmt, ...) {
  va_list ap;
  if (sh->bad[me]++) return;
  va_start(ap, fmt);
  vsnprintf(sh->why[me], sizeof sh->why[me], fmt, ap);
  va_end(ap);
}

#define CU(sh, me, call)                                                                             \
  do {                                                                                               \
    cudaError_t e_ = (call);                                                                         \
    if (e_ != cudaSuccess) {                                                                         \
      why(sh, me, "%s: %s", #call, cudaGetErrorName(e_));                                           \
      return 0;                                                                                      \
    }                                                                                                \
  } while (0)

static void CUDART_CB nap_50ms(void *u) {
  (void)u;
  tu_sleep_us(50000);
}

/* ---- two_streams: in-place and out-of-place all_reduce alternating between
   two streams; rank 0's first stream held back 50 ms */
#define TS_CALLS 6
static int two_streams_main(cc_comm *c, void *arg) {
  shared *sh = (shared *)arg;
  int me = cc_comm_rank(c), n = cc_comm_size(c), i;
  size_t counts[TS_CALLS], offs[TS_CALLS], tot = 0, j;
  cudaStream_t st[2];
  cc_cuda_comm *g = NULL;
  unsigned char *arena = NULL;
  float *host = (float *)malloc(4 * 4000);
  cc_result rc;
  if (!host) return 1;
  for (i = 0; i < TS_CALLS; i++) {
    counts[i] = 1000 + 500 * (size_t)i;
    offs[i] = tot;
    tot += (2 * counts[i] * 4 + 255) & ~(size_t)255;
  }
  CU(sh, me, cudaSetDevice(0));
  CU(sh, me, cudaStreamCreateWithFlags(&st[0], cudaStreamNonBlocking));
  CU(sh, me, cudaStreamCreateWithFlags(&st[1], cudaStreamNonBlocking));
  if ((rc = cc_cuda_comm_init(c, 0, &g)) != CC_OK || (rc = cc_cuda_malloc(g, (void **)&arena, tot)) != CC_OK) {
    why(sh, me, "cc_cuda_comm_init or cc_cuda_malloc: %s", cc_strerror(rc));
    return 0;
  }
  if (me == 0) CU(sh, me, cudaLaunchHostFunc(st[0], nap_50ms, NULL));
  for (i = 0; i < TS_CALLS; i++) {
    float *in = (float *)(void *)(arena + offs[i]), *out = in + counts[i];
    cudaStream_t s = st[i & 1];
    for (j = 0; j < counts[i]; j++) host[j] = (float)((me + 1) * (i + 1)) + (float)(j % 7);
    CU(sh, me, cudaMemcpyAsync(in, host, counts[i] * 4, cudaMemcpyHostToDevice, s));
    rc = cc_cuda_all_reduce(g, in, i % 2 ? out : in, counts[i], CC_FLOAT32, CC_SUM, s);
    if (rc != CC_OK) {
      why(sh, me, "call %d: cc_cuda_all_reduce: %s (%s)", i, cc_strerror(rc), cc_cuda_comm_last_error(g));
      break;
    }
  }
  if (HB_UNORDERED) {                   /* the defect may hang (a later call's post lands first, then an
                                          older one over it): give up after 3 s, as a user would */
    double t0 = tu_now();
    while ((cudaStreamQuery(st[0]) == cudaErrorNotReady || cudaStreamQuery(st[1]) == cudaErrorNotReady) &&
           tu_now() - t0 < 3)
      tu_sleep_us(10000);
    if (tu_now() - t0 >= 3) cc_cuda_comm_abort(g);
  }
  cudaStreamSynchronize(st[0]);
  cudaStreamSynchronize(st[1]);
  for (i = 0; i < TS_CALLS && !sh->bad[me] && !HB_UNORDERED; i++) {
    float *in = (float *)(void *)(arena + offs[i]), *out = in + counts[i];
    CU(sh, me, cudaMemcpy(host, i % 2 ? out : in, counts[i] * 4, cudaMemcpyDeviceToHost));
    for (j = 0; j < counts[i]; j++) {
      float want = (float)((i + 1) * n * (n + 1) / 2) + (float)(n * (int)(j % 7));
      if (host[j] != want) {
        why(sh, me, "call %d (stream %d): element %zu is %g, not %g", i, i & 1, j, (double)host[j], (double)want);
        break;
      }
    }
  }
  cc_cuda_free(g, arena);
  rc = cc_cuda_comm_destroy(g);
  if (rc != CC_OK && !HB_UNORDERED) why(sh, me, "cc_cuda_comm_destroy: %s", cc_strerror(rc));
  cudaStreamDestroy(st[0]);
  cudaStreamDestroy(st[1]);
  free(host);
  return 0;
}

/* ---- one buffer of rank 0's, read by rank 1 through CUDA IPC: with a flag
   between them (sh->flag), or ordered by host barriers only; sh->flag 2:
   with the flag, and rank 1 closes its mapping while its read is only slept
   on */
#define IPC_BYTES 65536
static int ipc_main(cc_comm *c, void *arg) {
  shared *sh = (shared *)arg;
  int me = cc_comm_rank(c), ok = 1;
  cudaStream_t s;
  unsigned char *buf = NULL, *peer = NULL, *mine = NULL, *host = (unsigned char *)malloc(IPC_BYTES);
  void *dflag = NULL;
  memop_fn write32 = NULL, wait32 = NULL;
  size_t i;
  if (!host) return 1;
  CU(sh, me, cudaSetDevice(0));
  CU(sh, me, cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  CU(sh, me, cudaGetDriverEntryPointByVersion("cuStreamWriteValue32", (void **)&write32, 12000, cudaEnableDefault, NULL));
  CU(sh, me, cudaGetDriverEntryPointByVersion("cuStreamWaitValue32", (void **)&wait32, 12000, cudaEnableDefault, NULL));
  CU(sh, me, cudaHostRegister(sh->page, 4096, cudaHostRegisterMapped | cudaHostRegisterPortable));
  CU(sh, me, cudaHostGetDevicePointer(&dflag, sh->page, 0));
  if (me == 0) {
    CU(sh, me, cudaMalloc((void **)&buf, IPC_BYTES));
    CU(sh, me, cudaIpcGetMemHandle(&sh->h, buf));
  }
  cc_barrier(c);                       /* the handle is there */
  if (me == 1) CU(sh, me, cudaIpcOpenMemHandle((void **)&peer, sh->h, cudaIpcMemLazyEnablePeerAccess));
  cc_barrier(c);
  if (me == 0) {
    CU(sh, me, cudaMemsetAsync(buf, 0x5a, IPC_BYTES, s));
    if (sh->flag && write32((CUstream)s, (CUdeviceptr)(uintptr_t)dflag, 1, 0) != CUDA_SUCCESS) why(sh, me, "write32");
    CU(sh, me, cudaStreamSynchronize(s));
  }
  cc_barrier(c);                       /* rank 0's write is done (the checker does not see this) */
  if (me == 1) {
    if (sh->flag && wait32((CUstream)s, (CUdeviceptr)(uintptr_t)dflag, 1, CU_STREAM_WAIT_VALUE_GEQ) != CUDA_SUCCESS)
      why(sh, me, "wait32");
    if (sh->flag == 2) {               /* close in flight */
      CU(sh, me, cudaMalloc((void **)&mine, IPC_BYTES));
      CU(sh, me, cudaMemcpyAsync(mine, peer, IPC_BYTES, cudaMemcpyDeviceToDevice, s));
      tu_sleep_us(300000);             /* done by now, surely; but nothing says so */
      CU(sh, me, cudaIpcCloseMemHandle(peer));
      CU(sh, me, cudaMemcpyAsync(host, mine, IPC_BYTES, cudaMemcpyDeviceToHost, s));
      peer = NULL;
    } else {
      CU(sh, me, cudaMemcpyAsync(host, peer, IPC_BYTES, cudaMemcpyDeviceToHost, s));
    }
    CU(sh, me, cudaStreamSynchronize(s));
    for (i = 0; i < IPC_BYTES && ok; i++)
      if (host[i] != 0x5a) {
        why(sh, me, "byte %zu is 0x%02x, not 0x5a", i, host[i]);
        ok = 0;
      }
    if (peer) CU(sh, me, cudaIpcCloseMemHandle(peer));
    if (mine) CU(sh, me, cudaFree(mine));
  }
  cc_barrier(c);                       /* closed before it is freed */
  if (me == 0) CU(sh, me, cudaFree(buf));
  sh->freed_mapped[me] = cc_emu_count("freed_while_mapped");
  cudaHostUnregister(sh->page);
  cudaStreamDestroy(s);
  free(host);
  return 0;
}

/* ---- rank 0 writes into rank 1's memory (another GPU) through CUDA IPC, then
   a flag; rank 1 waits for it with CU_STREAM_WAIT_VALUE_FLUSH (sh->flag 1)
   or without (0), then reads its buffer */
static int remote_main(cc_comm *c, void *arg) {
  shared *sh = (shared *)arg;
  int me = cc_comm_rank(c), ok = 1;
  cudaStream_t s;
  unsigned char *buf = NULL, *peer = NULL, *host = (unsigned char *)malloc(IPC_BYTES);
  void *dflag = NULL;
  memop_fn write32 = NULL, wait32 = NULL;
  size_t i;
  if (!host) return 1;
  CU(sh, me, cudaSetDevice(me));
  CU(sh, me, cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  CU(sh, me, cudaGetDriverEntryPointByVersion("cuStreamWriteValue32", (void **)&write32, 12000, cudaEnableDefault, NULL));
  CU(sh, me, cudaGetDriverEntryPointByVersion("cuStreamWaitValue32", (void **)&wait32, 12000, cudaEnableDefault, NULL));
  CU(sh, me, cudaHostRegister(sh->page, 4096, cudaHostRegisterMapped | cudaHostRegisterPortable));
  CU(sh, me, cudaHostGetDevicePointer(&dflag, sh->page, 0));
  if (me == 1) {
    CU(sh, me, cudaMalloc((void **)&buf, IPC_BYTES));
    CU(sh, me, cudaIpcGetMemHandle(&sh->h, buf));
  }
  cc_barrier(c);
  if (me == 0) {
    CU(sh, me, cudaIpcOpenMemHandle((void **)&peer, sh->h, cudaIpcMemLazyEnablePeerAccess));
    CU(sh, me, cudaMemsetAsync(peer, 0x6b, IPC_BYTES, s));   /* a remote write into rank 1's GPU */
    if (write32((CUstream)s, (CUdeviceptr)(uintptr_t)dflag, 1, 0) != CUDA_SUCCESS) why(sh, me, "write32");
    CU(sh, me, cudaStreamSynchronize(s));
    CU(sh, me, cudaIpcCloseMemHandle(peer));
  } else {
    if (wait32((CUstream)s, (CUdeviceptr)(uintptr_t)dflag, 1,
               CU_STREAM_WAIT_VALUE_GEQ | (sh->flag ? CU_STREAM_WAIT_VALUE_FLUSH : 0)) != CUDA_SUCCESS)
      why(sh, me, "wait32");
    CU(sh, me, cudaMemcpyAsync(host, buf, IPC_BYTES, cudaMemcpyDeviceToHost, s));
    CU(sh, me, cudaStreamSynchronize(s));
    for (i = 0; i < IPC_BYTES && ok; i++)
      if (host[i] != 0x6b) {
        why(sh, me, "byte %zu is 0x%02x, not 0x6b", i, host[i]);
        ok = 0;
      }
  }
  cc_barrier(c);                       /* closed before it is freed */
  if (me == 1) CU(sh, me, cudaFree(buf));
  cudaHostUnregister(sh->page);
  cudaStreamDestroy(s);
  free(host);
  return 0;
}

/* ---- one process: written on stream a, read on stream b, with an event
   between them (sh->flag) or nothing */
static int event_main(cc_comm *c, void *arg) {
  shared *sh = (shared *)arg;
  int me = cc_comm_rank(c);
  cudaStream_t a, b;
  cudaEvent_t ev;
  unsigned char *buf, *out, host[256];
  CU(sh, me, cudaSetDevice(0));
  CU(sh, me, cudaStreamCreateWithFlags(&a, cudaStreamNonBlocking));
  CU(sh, me, cudaStreamCreateWithFlags(&b, cudaStreamNonBlocking));
  CU(sh, me, cudaEventCreateWithFlags(&ev, cudaEventDisableTiming));
  CU(sh, me, cudaMalloc((void **)&buf, 4096));
  CU(sh, me, cudaMalloc((void **)&out, 4096));
  CU(sh, me, cudaLaunchHostFunc(a, nap_50ms, NULL));
  CU(sh, me, cudaMemsetAsync(buf, 0x33, 4096, a));
  if (sh->flag) {
    CU(sh, me, cudaEventRecord(ev, a));
    CU(sh, me, cudaStreamWaitEvent(b, ev, 0));
  }
  CU(sh, me, cudaMemcpyAsync(out, buf, 4096, cudaMemcpyDeviceToDevice, b));
  CU(sh, me, cudaStreamSynchronize(a));
  CU(sh, me, cudaStreamSynchronize(b));
  CU(sh, me, cudaMemcpy(host, out, sizeof host, cudaMemcpyDeviceToHost));
  if (sh->flag && host[0] != 0x33) why(sh, me, "the read on stream b ran before the write on stream a");
  (void)c;
  cudaFree(buf);
  cudaFree(out);
  cudaEventDestroy(ev);
  cudaStreamDestroy(a);
  cudaStreamDestroy(b);
  return 0;
}

/* ---- rank 0 frees memory rank 1 has open; rank 1 reads it after */
static int free_main(cc_comm *c, void *arg) {
  shared *sh = (shared *)arg;
  int me = cc_comm_rank(c);
  unsigned char *buf = NULL, *peer = NULL, host[512];
  CU(sh, me, cudaSetDevice(0));
  if (me == 0) {
    CU(sh, me, cudaMalloc((void **)&buf, 4096));
    CU(sh, me, cudaMemsetAsync(buf, 1, 4096, 0));
    CU(sh, me, cudaStreamSynchronize(0));
    CU(sh, me, cudaIpcGetMemHandle(&sh->h, buf));
  }
  cc_barrier(c);
  if (me == 1) CU(sh, me, cudaIpcOpenMemHandle((void **)&peer, sh->h, cudaIpcMemLazyEnablePeerAccess));
  cc_barrier(c);
  if (me == 0) CU(sh, me, cudaFree(buf));  /* while rank 1 has it open */
  cc_barrier(c);
  if (me == 1) {
    CU(sh, me, cudaMemcpy(host, peer, sizeof host, cudaMemcpyDeviceToHost));
    CU(sh, me, cudaIpcCloseMemHandle(peer));
  }
  sh->freed_mapped[me] = cc_emu_count("freed_while_mapped");
  return 0;
}

/* ---- the cases */

static const char *const names[] = {"hb_races", "hb_uaf", "hb_errors", "hb_after_release", "hb_accesses",
                                    "hb_flag_edges", "hb_sync_edges"};
enum { RACES, UAF, ERRS, AFTER, ACC, FLAGE, SYNCE, NCOUNT };

/* Run fn on n ranks; want: which count must grow (RACES or UAF), or -1 for a
   case that must find nothing (and whose ranks must be right). */
#if defined(__SANITIZE_THREAD__)
#define HB_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define HB_TSAN 1
#endif
#endif
#ifndef HB_TSAN
#define HB_TSAN 0
#endif

static void run_case(const char *name, int n, cc_main_fn fn, int flag, int want, long want_freed, const char *what,
                     int in_process = 0) {
  shared *sh;
  long before[NCOUNT], d[NCOUNT], freed = 0;
  char full[80], bad[700];
  size_t m = 0;
  int i, rc;
  snprintf(full, sizeof full, "cuda hb %s", name);
  if (HB_TSAN && in_process) {
    tu_skip(full, "%s: a race between two threads of one process, which ThreadSanitizer reports itself (the ASan "
            "build of this test runs it)", what);
    return;
  }
  sh = (shared *)tu_shared_alloc(sizeof(shared));
  if (!sh || !(sh->page = (unsigned int *)tu_shared_alloc(4096))) {
    tu_fail(full, "cannot map shared memory");
    return;
  }
  sh->flag = flag;
  for (i = 0; i < NCOUNT; i++) before[i] = cc_emu_count(names[i]);
  rc = tu_spawn(n, fn, sh);
  for (i = 0; i < NCOUNT; i++) d[i] = cc_emu_count(names[i]) - before[i];
  for (i = 0; i < n; i++) freed += sh->freed_mapped[i];
  bad[0] = 0;
#define BAD(...) (m += (size_t)snprintf(bad + m, m < sizeof bad ? sizeof bad - m : 0, __VA_ARGS__))
  if (d[ERRS]) BAD("%ld checker errors; ", d[ERRS]);
  if (d[AFTER] && want < 0) BAD("%ld reports after a released wait; ", d[AFTER]);
  if (want < 0) {
    if (d[RACES] || d[UAF]) BAD("%ld races and %ld uses after free reported where the order is right; ", d[RACES], d[UAF]);
    if (!d[ACC] || !(d[FLAGE] + d[SYNCE])) BAD("vacuous: %ld accesses, %ld edges checked; ", d[ACC], d[FLAGE] + d[SYNCE]);
    for (i = 0; i < n; i++)
      if (sh->bad[i]) BAD("rank %d: %s; ", i, sh->why[i]);
    if (rc != 0) BAD("cc_spawn returned %d; ", rc);
  } else if (d[want] <= 0) {
    BAD("no %s reported (races %ld, uses after free %ld, in %ld accesses): the checker missed it; ",
        want == RACES ? "race" : "use after free", d[RACES], d[UAF], d[ACC]);
  } else if (d[want == RACES ? UAF : RACES]) {
    BAD("%ld %s reported too, where there is none; ", d[want == RACES ? UAF : RACES],
        want == RACES ? "uses after free" : "races");
  }
  if (freed < want_freed) BAD("the emulator counted %ld frees of memory still open (want %ld at least); ", freed, want_freed);
  if (want_freed == 0 && freed) BAD("the emulator counted %ld frees of memory still open; ", freed);
#undef BAD
  if (m)
    tu_fail(full, "%s: %s", what, bad);
  else if (want < 0)
    tu_pass(full, "%s: 0 races in %ld accesses checked, %ld flag and %ld stream/event edges", what, d[ACC], d[FLAGE],
            d[SYNCE]);
  else
    tu_pass(full, "%s: %ld %s reported (%ld accesses checked)", what, d[want],
            want == RACES ? "race(s)" : "use(s) after free or close", d[ACC]);
  tu_shared_free(sh->page, 4096);
  tu_shared_free(sh, sizeof(shared));
}

int main(int argc, char **argv) {
  (void)argc;
  if (!cc_cuda_emulated) {
    tu_skip("cuda hb", "not linked with the CUDA emulation (tests/cuda/cuda_emu.cpp)");
    return 0;
  }
  if (cc_emu_count("hb_on") != 1) {    /* the checker is made before main: start again with it */
    setenv("CC_EMU_HB", "1", 1);
    execv("/proc/self/exe", argv);
    tu_fail("cuda hb", "cannot restart with CC_EMU_HB=1: %s", strerror(errno));
    return 1;
  }
  tu_default_timeout("20");
  setenv("CC_EMU_DEVICES", "1", 1);
  if (HB_UNORDERED) {                  /* the mutant: this case alone */
    run_case("two_streams_unordered", 3, two_streams_main, 0, RACES, 0,
             "cc_cuda all_reduce calls alternating between two streams, with cc_cuda.cuh's wait that orders calls on "
             "two streams taken out (the Makefile's mutant)", 1);
    return tu_exit_code();
  }
  run_case("two_streams", 3, two_streams_main, 0, -1, 0,
           "cc_cuda all_reduce calls alternating between two streams, one held back 50 ms");
  run_case("ipc_flag", 2, ipc_main, 1, -1, 0,
           "a buffer written on rank 0's stream, then a flag; read through CUDA IPC by rank 1's stream after it waits "
           "for the flag");
  run_case("ipc_no_flag", 2, ipc_main, 0, RACES, 0,
           "the same without the flag (host barriers only, which no GPU sees)");
  run_case("event", 1, event_main, 1, -1, 0, "written on stream a, read on stream b after cudaStreamWaitEvent");
  run_case("no_event", 1, event_main, 0, RACES, 0, "the same without the event", 1);
  run_case("use_after_free", 2, free_main, 0, UAF, 1,
           "rank 0 frees memory rank 1 still has open, rank 1 reads it after");
  run_case("close_in_flight", 2, ipc_main, 2, UAF, 0,
           "as ipc_flag, but rank 1 closes its mapping while its stream's read through it is only slept on");
  setenv("CC_EMU_DEVICES", "2", 1);
  setenv("CC_EMU_FLUSH", "1", 1);
  run_case("remote_flush", 2, remote_main, 1, -1, 0,
           "rank 0's stream writes into rank 1's GPU, then a flag; rank 1's stream waits for it with "
           "CU_STREAM_WAIT_VALUE_FLUSH and reads");
  run_case("remote_no_flush", 2, remote_main, 0, RACES, 0, "the same wait without the flush");
  setenv("CC_EMU_DEVICES", "1", 1);
  unsetenv("CC_EMU_FLUSH");
  return tu_exit_code();
}
