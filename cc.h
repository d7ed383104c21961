/* cc.h - v0.1.0 - collective communication for C processes - MIT licence (end of file)

   Usage: in exactly one C or C++ file of your program

       #define CC_IMPLEMENTATION
       #include "cc.h"

   and plain `#include "cc.h"` everywhere else. Link with -pthread.

   Example: four ranks add up their numbers (build, then `ccrun -n 4 ./sum`)

       #define CC_IMPLEMENTATION
       #include "cc.h"
       #include <stdio.h>
       int main(void) {
           cc_comm *c;
           if (cc_comm_init(&c, NULL) != CC_OK) {       // rank, size from the environment
               fprintf(stderr, "%s\n", cc_comm_last_error(NULL));
               return 1;
           }
           float x = (float)(cc_comm_rank(c) + 1);
           cc_all_reduce(c, &x, &x, 1, CC_FLOAT32, CC_SUM);   // in place
           printf("rank %d: %g\n", cc_comm_rank(c), x);       // 10 on every rank
           return cc_comm_destroy(c);
       }

   Or, without a launcher, `cc_spawn(4, fn, arg)` forks four ranks that each run fn.

   Compile-time configuration (define before the implementation):

       CC_API            storage class of the public functions (default: extern)
       CC_STATIC         make every function static to the including file
       CC_ASSERT(x)      internal invariant check (default: assert)
       CC_MALLOC(n)      allocator; define CC_FREE(p) too (both or neither)
       CC_NO_SHM         leave out the shared-memory transport
       CC_NO_TCP         leave out the TCP transport (bootstrap of env:// jobs)
       CC_NO_IMPLEMENTATION  declarations only, even where CC_IMPLEMENTATION is defined (to
                         link one compiled implementation into many single-file programs)

   Environment (read once by cc_comm_init; a value in cc_config wins over it; docs/api.md
   gives each in full):

       RANK, WORLD_SIZE, LOCAL_WORLD_SIZE   as torchrun sets them;
           else OMPI_COMM_WORLD_RANK, OMPI_COMM_WORLD_SIZE, OMPI_COMM_WORLD_LOCAL_SIZE,
           PMI_RANK, PMI_SIZE, MPI_LOCALNRANKS, SLURM_PROCID, SLURM_NTASKS
       MASTER_ADDR, MASTER_PORT   rendezvous of jobs not started by ccrun/cc_spawn (default
                         under Slurm: SLURM_JOB_NODELIST's first host, a port from SLURM_JOB_ID)
       CC_JOB_ID         job identity set by ccrun (32 hex digits); ranks of one job
                         meet in shared memory named after it, never on a fixed port
       CC_TIMEOUT        seconds any wait may last without progress (default 600)
       CC_TRANSPORT      auto | shm | tcp
       CC_TOKEN          job secret (at least 128 bits: `ccrun --make-token`) that every TCP
                         connection proves and every byte on it is authenticated with; unset once read
       CC_NET_ENCRYPT    1: encrypt TCP payloads too (needs a token; default 0)
       CC_MAX_UNEXPECTED bytes of messages no receive has taken yet that a communicator
                         holds before it fails the sender (default 1G; K, M, G)
       CC_SOCKET_IFNAME  the interface whose address the ranks listen on (default:
                         the address of the route to MASTER_ADDR)
       CC_DEBUG          WARN | INFO | TRACE: log lines on stderr, prefixed with the rank
       CC_SPIN_US        microseconds a wait polls before it sleeps on a futex (default 50;
                         2 when there are more local ranks than CPUs)
       CC_SHM_CHUNK      bytes of one pipeline stage per rank (default 1M for two
                         ranks, 256K per two ranks beyond, at most 2M)
       CC_SMALL_BYTES    largest message every rank reduces in one phase (16K)
       CC_STREAM_BYTES   messages this large are staged with non-temporal stores, or, when a
                         call only moves data, plain ones if this rank's copies run faster (512K)
       CC_SHM_DIRECT_BYTES  messages this large are read from the peers' buffers
                         directly, with one copy, instead of through the arena (256K)
       CC_SHM_QUEUE_BYTES  broadcasts this small (scatters, gathers: all parts) go
                         queued through the rings: the root returns at once (4K; 0: never)
       CC_SHM_CMA        auto (default): large messages on plain buffers go by cross-memory attach
                         (one copy) or the arena (two), whichever timed faster per collective and
                         size; 1: cross-memory attach wherever allowed; 0: never
       CC_SHM_TUNE_FIRST, CC_SHM_TUNE_MOST, CC_SHM_TUNE_ASK, CC_SHM_TUNE_GAIN, CC_SHM_TUNE_DRIFT
                         how CC_SHM_CMA=auto (and the stores above) choose: calls before the first
                         try of the other way (16) and at most between tries (1024), how often the
                         arena's way asks (16), percent faster a try must be (10), percent slower the
                         way in use may grow before one (50)
       CC_NET_CHUNK      bytes of one pipelined piece over TCP (1M)
       CC_NET_SMALL_BYTES  largest message sent whole to every peer over TCP (64K)
       CC_NET_SOCKBUF    TCP socket buffer bytes (default: the kernel's autotuning)
       CC_SPAWN_GRACE_MS how long cc_spawn lets the other ranks notice a failed rank
                         before it kills them (default 1000)
       CC_WARN_AFTER     seconds a wait lasts before it prints a warning naming the
                         ranks it waits for, again at twice that, ... (default 10; 0: never)
       CC_REFUSED_GRACE  seconds a rendezvous waits for a rank whose connection it refused (a
                         token that differs, another world size) before it fails on every rank
                         (default 5; 0: the whole timeout, as a stranger's hello could be it)
       CC_REQUIRE_LAUNCHER  1: a process without a launcher's variables (RANK,
                         WORLD_SIZE...) fails cc_comm_init instead of being a world of one

   CONTENTS (search for the tag)

       @api          public declarations
       @platform     every system call: time, futex, processes, shared memory, files, sockets
       @crypto       SHA-256, HMAC, HKDF, ChaCha20-Poly1305, AES-256-GCM
       @base         internal types, errors and logging, the settings (read once)
       @reduce       the reduction kernels for every dtype and op
       @plan         what a call means: its identity, its data movement, v counts
       @shm          the shared-memory transport: segments, arena, rings, the bell
       @tcp          TCP connections: handshakes and the accepting state machine
       @engine       messages over every link, the one wait, failures for every rank
       @algo         collectives: arena, message and hierarchical executors
       @bootstrap    init paths, rendezvous, mesh, split
       @comm         the public calls, groups, requests, ops, lifecycle
       @spawn        cc_spawn
       @licence      changelog and licence
*/

#if defined(CC_IMPLEMENTATION) && !defined(CC_NO_IMPLEMENTATION) && !defined(CC__IMPLEMENTED) && !defined(_GNU_SOURCE)
#  define _GNU_SOURCE 1   /* the implementation uses Linux and POSIX interfaces */
#endif

/* ============================================================== @api */
#ifndef CC_H_INCLUDED
#define CC_H_INCLUDED

#include <stddef.h>   /* size_t; nothing else, so that the implementation can still pick its features */

#define CC_VERSION_MAJOR 0
#define CC_VERSION_MINOR 1
#define CC_VERSION_PATCH 0
#define CC_VERSION_STRING "0.1.0"

#ifndef CC_API
#  if defined(CC_STATIC) && (defined(__GNUC__) || defined(__clang__))
#    define CC_API static __attribute__((unused))
#  elif defined(CC_STATIC)
#    define CC_API static
#  else
#    define CC_API extern
#  endif
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* Results. The X-macro keeps the enum and its strings together. */
#define CC__RESULTS(X)                                                              \
  X(CC_OK,               "success")                                                 \
  X(CC_ERR_INVALID_ARG,  "bad pointer, count, rank, root, dtype or op")             \
  X(CC_ERR_MISMATCH,     "ranks disagree: collectives, counts, roots or world size")\
  X(CC_ERR_TIMEOUT,      "a peer did not arrive within the timeout")                \
  X(CC_ERR_PEER_LOST,    "a peer process died or its connection broke")             \
  X(CC_ERR_ABORTED,      "cc_comm_abort was called, or an earlier error")           \
  X(CC_ERR_SYSTEM,       "an operating-system call failed")                         \
  X(CC_ERR_AUTH,         "handshake refused, or data failed its integrity check")   \
  X(CC_ERR_NO_MEMORY,    "out of memory")                                           \
  X(CC_ERR_UNSUPPORTED,  "not built in, or not possible on this platform")

typedef enum cc_result {
#define CC__RESULT_ENUM(name, text) name,
  CC__RESULTS(CC__RESULT_ENUM)
#undef CC__RESULT_ENUM
  CC_RESULT_COUNT
} cc_result;

typedef enum cc_dtype {
  CC_INT8, CC_UINT8, CC_INT32, CC_UINT32, CC_INT64, CC_UINT64,
  CC_FLOAT16, CC_BFLOAT16, CC_FLOAT32, CC_FLOAT64,
  CC_COMPLEX64, CC_COMPLEX128,           /* interleaved (re, im) pairs */
  CC_DTYPE_COUNT
} cc_dtype;

typedef int cc_op;
enum { CC_SUM, CC_PROD, CC_MIN, CC_MAX, CC_AVG, CC_BAND, CC_BOR, CC_BXOR,
       CC_OP_BUILTIN_COUNT };

#define CC_UNDEFINED (-1)

typedef struct cc_comm cc_comm;
typedef struct cc_request cc_request;

typedef struct cc_config {
  int rank;                 /* -1: from the environment                    */
  int world_size;           /* -1: from the environment                    */
  const char *init_method;  /* NULL or "env://", "tcp://HOST:PORT",
                               "file:///PATH"                               */
  int timeout_ms;           /* 0: CC_TIMEOUT (seconds) or 600 s            */
  const char *transport;    /* NULL or "auto", "shm", "tcp"                */
  const char *token;        /* job secret; NULL or "": CC_TOKEN or none;
                               CC_INSECURE_NO_TOKEN: none (see below)      */
} cc_config;

/* cfg.token = CC_INSECURE_NO_TOKEN turns authentication off for this rank whatever
 * CC_TOKEN says (which is still read and removed from the environment): its TCP
 * connections are not authenticated, and cc_comm_init says so on stderr. An empty
 * token means no more than NULL does. */
#define CC_INSECURE_NO_TOKEN "insecure-no-token"

typedef void (*cc_reduce_fn)(void *inout, const void *in, size_t count,
                             cc_dtype dtype, void *user);
typedef int (*cc_main_fn)(cc_comm *c, void *arg);

/* cc_strerror - name and meaning of a result, e.g. "CC_ERR_TIMEOUT: a peer did not ...".
 *   Returns           a static string; never NULL */
CC_API const char *cc_strerror(cc_result r);

/* cc_comm_last_error - detail of the last failure on `c`, naming the rank, the peer
 *   and what was being done, e.g. "all_reduce: rank 3 lost (pid 4711 exited)".
 *   c                 NULL gives the last cc_comm_init / cc_spawn failure of this thread
 *   Returns           a string owned by the communicator; "" when nothing failed */
CC_API const char *cc_comm_last_error(const cc_comm *c);

/* cc_dtype_size - bytes of one element of `t`; 0 for an unknown dtype. */
CC_API size_t cc_dtype_size(cc_dtype t);

/* cc_config_init - fill `cfg` with the defaults: everything from the environment. */
CC_API void cc_config_init(cc_config *cfg);

/* cc_comm_init - join the job and return its world communicator in *out.
 *   cfg               NULL: everything from the environment (see the table above)
 *   Collective        every rank of the job calls it
 *   Returns           CC_OK, or an error (*out NULL, cc_comm_last_error(NULL) says why) */
CC_API cc_result cc_comm_init(cc_comm **out, const cc_config *cfg);

/* cc_unique_id - what every rank of a new job needs to find the others (as ncclUniqueId):
 *   where rank 0 listens, the job's nonce and a fresh random secret that every connection
 *   of the job must prove it knows. Opaque; copy it as bytes. Keep it as private as the
 *   job's data: who has it can join. */
#define CC_UNIQUE_ID_BYTES 128
typedef struct cc_unique_id { char internal[CC_UNIQUE_ID_BYTES]; } cc_unique_id;

/* cc_get_unique_id - make a new job's identity (as ncclGetUniqueId) and start listening
 *   for its rendezvous. Call it in the process that will be rank 0, then give the id to
 *   every rank by your own means (a file, a pipe, a key-value store) for cc_comm_init_rank.
 *   Address           CC_SOCKET_IFNAME's address, else the one of the route to MASTER_ADDR,
 *                     else the first non-loopback IPv4 address of an interface that is
 *                     up, else 127.0.0.1
 *   Returns           CC_OK, or an error with detail in cc_comm_last_error(NULL) */
CC_API cc_result cc_get_unique_id(cc_unique_id *id);

/* cc_comm_init_rank - join the job of `id` as rank `rank` of `nranks` (as ncclCommInitRank).
 *   Rank, size and rendezvous come from the arguments, never from the environment; the
 *   rest of cfg (timeout, transport, a token that replaces the id's secret) applies as in
 *   cc_comm_init. cfg may be NULL.
 *   Collective        every rank of the job calls it, rank 0 in the process that
 *                     called cc_get_unique_id
 *   Returns           as cc_comm_init */
CC_API cc_result cc_comm_init_rank(cc_comm **out, int nranks, const cc_unique_id *id, int rank,
                                   const cc_config *cfg);

/* cc_comm_destroy - finish pending requests and free the communicator, without waiting for
 *   the other ranks: those still waiting for this one fail (CC_ERR_MISMATCH when its last
 *   collective was another call than theirs, else CC_ERR_PEER_LOST).
 *   Returns           CC_OK, or CC_ERR_MISMATCH when it can already see that its last
 *                     collective (a queued one) met another call; it frees c either way */
CC_API cc_result cc_comm_destroy(cc_comm *c);

/* cc_comm_abort - fail the communicator on every rank: pending and later calls
 *   return CC_ERR_ABORTED. Safe to call from another thread or a signal handler. */
CC_API void cc_comm_abort(cc_comm *c);

/* cc_comm_rank, cc_comm_size - this rank's number (0 .. size-1) and the number
 *   of ranks; cc_comm_local_rank, cc_comm_local_size - the same among the ranks
 *   on this host. Never fail: a NULL communicator gives rank -1 and size 0 (so
 *   that `malloc(n * cc_comm_size(c))` is never asked for a huge size). */
CC_API int cc_comm_rank(const cc_comm *c);
CC_API int cc_comm_size(const cc_comm *c);
CC_API int cc_comm_local_rank(const cc_comm *c);
CC_API int cc_comm_local_size(const cc_comm *c);

/* cc_comm_split - as MPI_Comm_split: ranks with the same `color` form a new
 *   communicator, ordered by `key` then by their rank in `c`.
 *   color             >= 0, or CC_UNDEFINED to take part in no new communicator
 *                     (then *out is NULL)
 *   Collective        every rank of `c` calls it */
CC_API cc_result cc_comm_split(cc_comm *c, int color, int key, cc_comm **out);

/* cc_op_create - a user reduction op: fn(inout, in, count, dtype, user) must
 *   combine `in` into `inout`; assumed associative and commutative.
 *   Collective        every rank creates the same ops in the same order
 *   out               the new op, valid on `c` until cc_op_destroy */
CC_API cc_result cc_op_create(cc_comm *c, cc_reduce_fn fn, void *user, cc_op *out);

/* cc_op_create_premul_sum - the sum of (scalar * x), scalar of dtype `t` (each
 *   rank multiplies its own input by its own scalar). Valid for dtype `t` only. */
CC_API cc_result cc_op_create_premul_sum(cc_comm *c, cc_dtype t, const void *scalar,
                                         cc_op *out);
CC_API cc_result cc_op_destroy(cc_comm *c, cc_op op);

/* Collectives. Counts are in elements. In place as NCCL: sendbuf == recvbuf for
 * all_reduce, reduce, broadcast, all_to_all; sendbuf == recvbuf + rank*count for
 * all_gather (and on the root of gather); recvbuf == sendbuf + rank*count for
 * reduce_scatter (and on the root of scatter). Other overlaps are CC_ERR_INVALID_ARG.
 * A count of 0 is valid and buffers may then be NULL. Every rank calls each collective
 * with the same count, dtype, op and root; where the ranks can tell they do not, they
 * return CC_ERR_MISMATCH. Results are bitwise identical on every rank: element i is
 * reduced as ((x0 op x1) op x2) ... in rank order. Returns CC_OK, or an error with
 * detail in cc_comm_last_error. */

/* cc_barrier - return once every rank has entered the barrier. */
CC_API cc_result cc_barrier(cc_comm *c);
/* cc_broadcast - copy `count` elements of `buf` on `root` to `buf` on every rank. */
CC_API cc_result cc_broadcast(cc_comm *c, void *buf, size_t count, cc_dtype t, int root);
/* cc_reduce - combine every rank's `sendbuf` with `op` into `recvbuf` on `root`. */
CC_API cc_result cc_reduce(cc_comm *c, const void *sendbuf, void *recvbuf, size_t count,
                           cc_dtype t, cc_op op, int root);
/* cc_all_reduce - combine every rank's `sendbuf` with `op`; all receive it. */
CC_API cc_result cc_all_reduce(cc_comm *c, const void *sendbuf, void *recvbuf,
                               size_t count, cc_dtype t, cc_op op);
/* cc_gather - rank r's `count` elements land at recvbuf + r*count on `root`. */
CC_API cc_result cc_gather(cc_comm *c, const void *sendbuf, void *recvbuf,
                           size_t count, cc_dtype t, int root);
/* cc_all_gather - rank r's `count` elements land at recvbuf + r*count everywhere. */
CC_API cc_result cc_all_gather(cc_comm *c, const void *sendbuf, void *recvbuf,
                               size_t count, cc_dtype t);
/* cc_scatter - sendbuf + r*count on `root` lands in rank r's `recvbuf`. */
CC_API cc_result cc_scatter(cc_comm *c, const void *sendbuf, void *recvbuf,
                            size_t count, cc_dtype t, int root);
/* cc_reduce_scatter - block r (count elements) of the reduction lands on rank r;
 *   sendbuf holds size*count elements. */
CC_API cc_result cc_reduce_scatter(cc_comm *c, const void *sendbuf, void *recvbuf,
                                   size_t count, cc_dtype t, cc_op op);
/* cc_all_to_all - block j of rank r's sendbuf lands in block r of rank j's recvbuf;
 *   `count` elements per block. */
CC_API cc_result cc_all_to_all(cc_comm *c, const void *sendbuf, void *recvbuf,
                               size_t count, cc_dtype t);

/* Variable sizes: arrays of cc_comm_size(c) entries, counts and displacements in
 * elements. Root-only arrays may be NULL on the other ranks. */
CC_API cc_result cc_gather_v(cc_comm *c, const void *sendbuf, size_t send_count,
                             void *recvbuf, const size_t *recv_counts,
                             const size_t *displs, cc_dtype t, int root);
CC_API cc_result cc_all_gather_v(cc_comm *c, const void *sendbuf, size_t send_count,
                                 void *recvbuf, const size_t *recv_counts,
                                 const size_t *displs, cc_dtype t);
CC_API cc_result cc_scatter_v(cc_comm *c, const void *sendbuf, const size_t *send_counts,
                              const size_t *displs, void *recvbuf, size_t recv_count,
                              cc_dtype t, int root);
CC_API cc_result cc_all_to_all_v(cc_comm *c, const void *sendbuf,
                                 const size_t *send_counts, const size_t *send_displs,
                                 void *recvbuf, const size_t *recv_counts,
                                 const size_t *recv_displs, cc_dtype t);

/* cc_send, cc_recv - point to point. Messages between one pair with one tag arrive
 *   in order; a receive takes the oldest message of its tag. The counts must agree.
 *   peer              0 .. size-1; a rank may send to itself
 *   tag               >= 0
 *   Blocking          outside a group, returns when `buf` may be reused; while a
 *                     send waits for room it takes in what other ranks send, so
 *                     ranks that all send before they receive do not deadlock */
CC_API cc_result cc_send(cc_comm *c, const void *buf, size_t count, cc_dtype t,
                         int peer, int tag);
CC_API cc_result cc_recv(cc_comm *c, void *buf, size_t count, cc_dtype t,
                         int peer, int tag);

/* CC_ANY_SOURCE - the peer of a receive that takes a message from whichever rank sends
 *   one (as MPI_ANY_SOURCE); cc_recv_any also tells which rank sent it. */
#define CC_ANY_SOURCE (-2)

/* cc_recv_any - receive a message of `tag` from any rank, and learn which (as
 *   MPI_Recv with MPI_ANY_SOURCE and a status; docs/api.md gives the details).
 *   Matching          the oldest message of `tag` this rank has taken in, from any rank;
 *                     one rank's messages in the order it sent them, and while several
 *                     ranks have one waiting, each rank's in turn. While it waits it takes
 *                     in what every rank sends (as a waiting send does). Receives match in
 *                     issue order: one from any source issued before a cc_recv from rank r
 *                     may take r's message first. The counts must agree.
 *   source            the sender's rank, written once the receive is complete (the call
 *                     returned; in a group, cc_group_end returned or its request is done);
 *                     CC_UNDEFINED until then and when it did not complete. May be NULL.
 *   Failures          another count: CC_ERR_MISMATCH, naming the sender. A rank that is
 *                     gone cannot be the sender: CC_ERR_PEER_LOST, naming each rank gone,
 *                     once none that could send is left. Nothing from anyone for the
 *                     timeout: CC_ERR_TIMEOUT, naming the tag. */
CC_API cc_result cc_recv_any(cc_comm *c, void *buf, size_t count, cc_dtype t, int tag,
                             int *source);

/* cc_group_begin, cc_group_end - calls in between are queued, not run. The group's
 *   collectives run in issue order, then its sends and receives all progress together
 *   (a ring exchange in one group never deadlocks).
 *   req               NULL: run the group and return when it is done;
 *                     else return at once with a request for cc_wait / cc_test
 *   Groups nest; only the outermost cc_group_end runs the work. */
CC_API cc_result cc_group_begin(cc_comm *c);
CC_API cc_result cc_group_end(cc_comm *c, cc_request **req);

/* cc_wait - wait for the request, free it, and return its result. */
CC_API cc_result cc_wait(cc_request *req);
/* cc_test - *done = 1 when the request has finished; never blocks. */
CC_API cc_result cc_test(cc_request *req, int *done);
/* cc_request_error - once cc_test said done: the detail of the request's own failure
 *   ("" when it succeeded), which a later failure on the communicator does not
 *   overwrite. Valid until cc_wait frees the request; "" before it is done, and for NULL. */
CC_API const char *cc_request_error(const cc_request *req);

/* cc_mem_alloc - memory that every rank of c on this host maps (symmetric memory, the
 *   CPU twin of NCCL's ncclMemAlloc): a collective whose buffers lie in such memory, at
 *   any offset, reads and writes the other ranks' buffers in place instead of copying
 *   through shared memory or the kernel.
 *   bytes             this rank's size (ranks may ask for different sizes); > 0
 *   *ptr              this rank's memory: zeroed, page-aligned
 *   Collective        every rank of c, in the same order as c's collectives; a rank alone
 *                     on its host (or CC_TRANSPORT=tcp) gets plain memory, used as any buffer
 *   Returns           CC_OK; CC_ERR_INVALID_ARG (ptr NULL, bytes 0, in a group); on every rank
 *                     CC_ERR_NO_MEMORY or CC_ERR_SYSTEM when one could not create or map it */
CC_API cc_result cc_mem_alloc(cc_comm *c, size_t bytes, void **ptr);
/* cc_mem_free - free memory from cc_mem_alloc on c (every rank, in the same order;
 *   ranks that free different allocations get CC_ERR_MISMATCH). Refused, with
 *   CC_ERR_INVALID_ARG and the communicator usable, when ptr is not such memory or a
 *   request not yet complete (cc_group_end with a request) uses it. cc_comm_destroy
 *   frees memory not freed. */
CC_API cc_result cc_mem_free(cc_comm *c, void *ptr);

/* cc_spawn - fork `nprocs` ranks on this host (as torch's mp.spawn); each calls fn(c, arg)
 *   with a ready communicator that cc_spawn destroys after fn returns (fn may destroy it
 *   itself, as a main() would: `return cc_comm_destroy(c);`, and then must not use it).
 *   Returns           0 when every rank returned 0; when a rank fails or dies, the others
 *                     are stopped at once and the result is nonzero: that rank's exit status,
 *                     or 128 + its signal. No process and no /dev/shm entry is left behind. */
CC_API int cc_spawn(int nprocs, cc_main_fn fn, void *arg);

#ifdef __cplusplus
}
#endif
#endif /* CC_H_INCLUDED */
/* ====================================================================== */
/* Implementation                                                          */
/* ====================================================================== */
#if defined(CC_IMPLEMENTATION) && !defined(CC_NO_IMPLEMENTATION) && !defined(CC__IMPLEMENTED)
#define CC__IMPLEMENTED

#if defined(__GLIBC__) && !defined(__USE_GNU)
#  error "cc.h: in the file that defines CC_IMPLEMENTATION, include cc.h before any system header (or compile with -D_GNU_SOURCE)"
#endif

#include <errno.h>
#include <stdint.h>
#include <fcntl.h>
#include <float.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <dirent.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/uio.h>
#include <linux/futex.h>
#if defined(__SSE2__)
#  include <emmintrin.h>
#endif
/* @crypto's AES-NI, PCLMULQDQ and AVX2 paths (chosen at run time by CPUID) */
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__)) && !defined(CC_CRYPTO_PORTABLE)
#  define CC__CRYPTO_X86 1
#  include <cpuid.h>
#  include <immintrin.h>
#  include <wmmintrin.h>
#  define CC__TARGET_AVX2 __attribute__((target("avx2")))
#  define CC__TARGET_GCM __attribute__((target("aes,pclmul,sse4.1")))
#  define CC__INLINE_GCM inline __attribute__((always_inline, target("aes,pclmul,sse4.1")))
#  define CC__TARGET_VCLMUL __attribute__((target("aes,pclmul,sse4.1,avx2,vpclmulqdq")))
#  define CC__TARGET_VAES __attribute__((target("aes,pclmul,sse4.1,avx2,vpclmulqdq,vaes")))
#else
#  define CC__CRYPTO_X86 0
#endif
#ifndef CC_NO_TCP
#  include <arpa/inet.h>
#  include <netdb.h>
#  include <netinet/in.h>
#  include <netinet/tcp.h>
#  include <sys/socket.h>
#  include <ifaddrs.h>
#  include <net/if.h>
#endif

#ifndef CC_ASSERT
#  include <assert.h>
#  define CC_ASSERT(x) assert(x)
#endif
/* A seam for the tests, nothing else: CC__TEST_SEAM(where, c) marks the places where a race
   between ranks was fixed, so that a test can stop this rank there while another does what
   the race needs (tests/transport/test_queued.c, queued.race_*). Nothing where not defined. */
#ifndef CC__TEST_SEAM
#  define CC__TEST_SEAM(where, c) ((void)0)
#endif
#if defined(CC_MALLOC) != defined(CC_FREE)
#  error "cc.h: define both CC_MALLOC and CC_FREE, or neither"
#endif
#ifndef CC_MALLOC
#  define CC_MALLOC(n) malloc(n)
#  define CC_FREE(p) free(p)
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* Atomics on plain integers (shared between processes): the GCC/Clang builtins,
   which C99 and C++ accept alike. */
#define CC__LOAD(p)        __atomic_load_n((p), __ATOMIC_ACQUIRE)
#define CC__LOAD_RLX(p)    __atomic_load_n((p), __ATOMIC_RELAXED)
#define CC__STORE(p, v)    __atomic_store_n((p), (v), __ATOMIC_RELEASE)
#define CC__STORE_SC(p, v) __atomic_store_n((p), (v), __ATOMIC_SEQ_CST)
#define CC__ADD(p, v)      __atomic_fetch_add((p), (v), __ATOMIC_SEQ_CST)
/* A rare path (a failure, a mismatch), out of line so that a hot caller's frame stays
   small: on a small call, every instruction between seeing the peer's step and
   publishing the next one is latency. */
#define CC__COLD __attribute__((cold, noinline))
#define CC__NOINLINE __attribute__((noinline))   /* a big callee kept out of its small caller */
#define CC__INLINE inline __attribute__((always_inline))   /* a small dispatcher folded into its caller */

#define CC__MIN(a, b) ((a) < (b) ? (a) : (b))
#define CC__MAX(a, b) ((a) > (b) ? (a) : (b))
#define CC__MS ((uint64_t)1000000)
#define CC__S  1000000000ull

/* The accepting side of the handshakes (@tcp): connections handled at once,
   and how long one may take over each of its messages before a newer one may
   take its place while the table is full. A test may define smaller ones. */
#ifndef CC__PEND_MAX
#  define CC__PEND_MAX 1024
#endif
#ifndef CC__HS_WAIT
#  define CC__HS_WAIT (200 * CC__MS)
#endif

/* ============================================================== @platform */
/* Everything that touches the operating system lives here, behind a small
   static interface: clocks, futex waits, randomness, processes, shared-memory
   segments, files, sockets and poll. No section below makes a system call or
   includes a system header; none but the settings reads the environment.
   Every call that can be interrupted retries EINTR; failures return -1 (or
   NULL) with errno set, and the callers say what was being done.
   With CC_NO_SHM or CC_NO_TCP the functions of that part fail with ENOSYS,
   so the sections above need no #if of their own. */

/* The body of a function that this build leaves out. */
#define CC__NOSYS(ret) do { errno = ENOSYS; return ret; } while (0)

/* ---------------------------------------------------------------- time, CPU */

static uint64_t cc__now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * CC__S + (uint64_t)ts.tv_nsec;
}

static void cc__sleep_ns(uint64_t ns) {
  struct timespec ts;
  ts.tv_sec = (time_t)(ns / CC__S);
  ts.tv_nsec = (long)(ns % CC__S);
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {}
}

static void cc__yield(void) { sched_yield(); }

static void cc__cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  __asm__ __volatile__("yield");
#endif
}

/* Ask for the line at p to be this core's alone, for a write to come: the
   peers that read it last drop their copies now, not when the write comes
   (x86 PREFETCHW, a no-op where the CPU lacks it; a write prefetch elsewhere). */
static void cc__prefetch_write(const void *p) {
#if defined(__x86_64__) || defined(__i386__)
  __asm__ __volatile__("prefetchw %0" : : "m"(*(const char *)p));
#else
  __builtin_prefetch(p, 1, 3);
#endif
}

/* Copy with non-temporal stores (x86 SSE2; memcpy elsewhere): the data goes
   towards memory instead of staying dirty in this core's cache, so that a rank
   on a far core streams it from memory rather than pulling line by line from
   this cache. Ends with a store fence: the data is visible before any later
   store (an arrive) is. */
static void cc__copy_stream(void *dst, const void *src, size_t n) {
#if defined(__SSE2__)
  unsigned char *d = (unsigned char *)dst;
  const unsigned char *s = (const unsigned char *)src;
  size_t head = (16 - ((uintptr_t)d & 15)) & 15;
  if (n < 1024) { memcpy(dst, src, n); return; }
  memcpy(d, s, head);
  d += head; s += head; n -= head;
  for (; n >= 64; n -= 64, d += 64, s += 64) {
    __m128i a = _mm_loadu_si128((const __m128i *)s), b = _mm_loadu_si128((const __m128i *)(s + 16));
    __m128i c = _mm_loadu_si128((const __m128i *)(s + 32)), e = _mm_loadu_si128((const __m128i *)(s + 48));
    _mm_stream_si128((__m128i *)d, a);
    _mm_stream_si128((__m128i *)(d + 16), b);
    _mm_stream_si128((__m128i *)(d + 32), c);
    _mm_stream_si128((__m128i *)(d + 48), e);
  }
  memcpy(d, s, n);
  _mm_sfence();
#else
  memcpy(dst, src, n);
#endif
}

static int cc__ncpus(void) {
  cpu_set_t set;
  long n;
  if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0) return CPU_COUNT(&set);
  n = sysconf(_SC_NPROCESSORS_ONLN);
  return n > 0 ? (int)n : 1;
}

/* Sleep while *addr == val, at most timeout_ns. The word may live in memory
   shared between processes, so the futex is not PRIVATE. */
static void cc__futex_wait(uint32_t *addr, uint32_t val, uint64_t timeout_ns) {
  struct timespec ts;
  ts.tv_sec = (time_t)(timeout_ns / CC__S);
  ts.tv_nsec = (long)(timeout_ns % CC__S);
  syscall(SYS_futex, addr, FUTEX_WAIT, val, &ts, NULL, 0);
}

static void cc__futex_wake(uint32_t *addr) {
  syscall(SYS_futex, addr, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
}

/* The asymmetric fence (Linux's membarrier, global expedited): once every
   process of a group has registered, cc__membar() returns after every
   thread of every registered process has passed a full memory barrier, so
   that their fast paths need no fence of their own. Each returns 0, or -1
   where the kernel lacks it or a filter refuses it. */
#define CC__MEMBAR_QUERY 0
#define CC__MEMBAR_GLOBAL_EXPEDITED 2
#define CC__MEMBAR_REGISTER_GLOBAL_EXPEDITED 4
#ifdef SYS_membarrier
static int cc__membar_register(void) {
  long q = syscall(SYS_membarrier, CC__MEMBAR_QUERY, 0, 0);
  if (q < 0 || !(q & CC__MEMBAR_GLOBAL_EXPEDITED)) return -1;
  return syscall(SYS_membarrier, CC__MEMBAR_REGISTER_GLOBAL_EXPEDITED, 0, 0) == 0 ? 0 : -1;
}

static int cc__membar(void) {
  return syscall(SYS_membarrier, CC__MEMBAR_GLOBAL_EXPEDITED, 0, 0) == 0 ? 0 : -1;
}
#else
static int cc__membar_register(void) { return -1; }
static int cc__membar(void) { return -1; }
#endif

static void cc__strerr(int err, char *buf, size_t len) {
  /* strerror_r comes in two flavours; this form works with both. */
#if defined(__GLIBC__) && defined(_GNU_SOURCE)
  const char *s = strerror_r(err, buf, len);
  if (s != buf) snprintf(buf, len, "%s", s);
#else
  if (strerror_r(err, buf, len) != 0) snprintf(buf, len, "errno %d", err);
#endif
}

/* len random bytes from the kernel: getrandom, else /dev/urandom. 0, or -1
   with errno when neither gives them (a sandbox that blocks both): the
   callers fail then, for a secret, a nonce or a key made of anything else
   (the clock, the pid) could be computed by whoever sees one of them. */
static int cc__random(void *out, size_t len) {
  unsigned char *p = (unsigned char *)out;
  size_t got = 0;
  int fd = -1, e = 0;                    /* fd: /dev/urandom, once getrandom failed */
  while (got < len) {
    long r = fd < 0 ? syscall(SYS_getrandom, p + got, len - got, 0) : (long)read(fd, p + got, len - got);
    if (r > 0) { got += (size_t)r; continue; }
    if (r < 0 && errno == EINTR) continue;
    e = r < 0 ? errno : EIO;
    if (fd >= 0) break;                  /* /dev/urandom failed too */
    if ((fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC)) < 0) { e = errno; break; }   /* no getrandom */
  }
  if (fd >= 0) close(fd);
  if (got < len) { errno = e ? e : EIO; return -1; }
  return 0;
}

/* ---------------------------------------------------------------- processes */

/* Read at most len - 1 bytes of a small file into buf, as a string ("" when
   it cannot be read): how many were read. */
static size_t cc__read_small(const char *path, char *buf, size_t len) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  ssize_t n = fd >= 0 ? read(fd, buf, len - 1) : -1;
  if (fd >= 0) close(fd);
  buf[n > 0 ? n : 0] = 0;
  return n > 0 ? (size_t)n : 0;
}

static int cc__getpid(void) { return (int)getpid(); }

/* 1: process exists and has not exited; 0: gone (exited, even if not yet reaped). */
static int cc__pid_alive(int pid) {
  if (pid <= 0) return 1;
#ifdef SYS_pidfd_open
  {
    int fd = (int)syscall(SYS_pidfd_open, pid, 0);
    if (fd >= 0) {
      struct pollfd p;
      int r;
      p.fd = fd; p.events = POLLIN; p.revents = 0;
      r = poll(&p, 1, 0);
      close(fd);
      return r > 0 ? 0 : 1;
    }
    if (errno == ESRCH) return 0;
  }
#endif
  if (kill(pid, 0) != 0 && errno == ESRCH) return 0;
  {                                     /* a zombie has exited too */
    char path[64], buf[256], *rp;
    snprintf(path, sizeof path, "/proc/%d/stat", pid);
    rp = cc__read_small(path, buf, sizeof buf) ? strrchr(buf, ')') : NULL;
    if (rp && rp[1] == ' ' && (rp[2] == 'Z' || rp[2] == 'X')) return 0;
  }
  return 1;
}

/* A child process (cc_spawn): -1 with errno, 0 in the child, its pid in the parent. */
static int cc__proc_fork(void) {
  fflush(NULL);                         /* or the child prints the parent's buffers again */
  return (int)fork();
}

/* In a child: die with the parent (SIGKILL); 1 when the parent is already gone. */
static int cc__proc_tie_to_parent(int parent) {
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  return getppid() != (pid_t)parent;
}

/* Reap pid without waiting: 1 reaped (*exit_code, or *signo > 0 when killed),
   0 still running, -1 error. */
static int cc__proc_reap(int pid, int *exit_code, int *signo) {
  int st;
  pid_t w;
  do w = waitpid((pid_t)pid, &st, WNOHANG); while (w < 0 && errno == EINTR);
  if (w <= 0) return (int)w;           /* 0 or -1 */
  *signo = WIFSIGNALED(st) ? WTERMSIG(st) : 0;
  *exit_code = WIFEXITED(st) ? WEXITSTATUS(st) : 1;
  return 1;
}

static void cc__proc_kill(int pid) { if (pid > 0) kill((pid_t)pid, SIGKILL); }

static void cc__proc_exit(int code) {
  fflush(NULL);
  _exit(code);
}

static void cc__env_set(const char *name, const char *value) { setenv(name, value, 1); }

/* Raise this process's soft limit of open files toward `want`, as far as the
   hard limit lets it: a rank accepting many connections at once (a flood
   during start-up, a large world over TCP) needs a descriptor for each. The
   soft limit in effect afterwards (LONG_MAX: none), or -1. */
static long cc__fd_limit_raise(long want) {
  struct rlimit rl;
  if (getrlimit(RLIMIT_NOFILE, &rl) != 0) return -1;
  if (rl.rlim_cur != RLIM_INFINITY && want > 0 && (rlim_t)want > rl.rlim_cur) {
    rlim_t old = rl.rlim_cur;
    rl.rlim_cur = rl.rlim_max != RLIM_INFINITY && rl.rlim_max < (rlim_t)want ? rl.rlim_max : (rlim_t)want;
    if (rl.rlim_cur > old && setrlimit(RLIMIT_NOFILE, &rl) != 0) rl.rlim_cur = old;
  }
  return rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur > (rlim_t)LONG_MAX ? LONG_MAX : (long)rl.rlim_cur;
}
static void cc__env_unset(const char *name) { unsetenv(name); }

/* ---------------------------------------------------------------- shared memory */
/* Segments are created mode 0600 with O_EXCL under a random name, and
   unlinked as soon as every rank has mapped them. */

static void *cc__shm_map_anon(size_t bytes) {
  void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  return p == MAP_FAILED ? NULL : p;
}

static void cc__shm_unmap(void *p, size_t bytes) {
  if (p) munmap(p, bytes);
}

/* Which file a segment is, its device and inode (ino 0: none): see
   cc__shm_unlink_same. */
typedef struct cc__shm_id { uint64_t dev, ino; } cc__shm_id;

/* Create name (O_EXCL) of `bytes` and map it; *id (when not NULL) gets which
   file it is. Returns NULL with errno set. */
static void *cc__shm_create_id(const char *name, size_t bytes, cc__shm_id *id) {
#ifdef CC_NO_SHM
  (void)name; (void)bytes; (void)id;
  CC__NOSYS(NULL);
#else
  void *p;
  struct stat st;
  int e, fd = shm_open(name, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) return NULL;
  if (id && fstat(fd, &st) == 0) { id->dev = (uint64_t)st.st_dev; id->ino = (uint64_t)st.st_ino; }
  p = ftruncate(fd, (off_t)bytes) == 0 ? mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0) : MAP_FAILED;
  e = errno;
  close(fd);
  if (p == MAP_FAILED) { shm_unlink(name); errno = e; return NULL; }
  return p;
#endif
}

static __attribute__((unused)) void *cc__shm_create(const char *name, size_t bytes) {
  return cc__shm_create_id(name, bytes, NULL);
}

/* Map an existing segment of at least `min_bytes`; *bytes gets its size.
   Returns NULL with errno ENOENT while it does not exist (yet) or is still
   being sized by its creator, and with EPERM (what is wrong in why) when it
   is not one this user made: another owner, or a mode that lets others in
   (the creator makes them 0600), or not a plain file. Nothing is mapped
   then. *id (when not NULL) gets which file it is. */
static void *cc__shm_open_why(const char *name, size_t min_bytes, size_t *bytes, char *why, size_t whylen,
                              cc__shm_id *id) {
#ifdef CC_NO_SHM
  (void)name; (void)min_bytes; (void)bytes; (void)why; (void)whylen; (void)id;
  CC__NOSYS(NULL);
#else
  struct stat st;
  void *p;
  int e, fd = shm_open(name, O_RDWR | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) return NULL;
  if (fstat(fd, &st) != 0) { close(fd); errno = ENOENT; return NULL; }
  if (!S_ISREG(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & 077)) {
    snprintf(why, whylen, "it belongs to uid %u with mode %04o, and this process runs as uid %u and creates its "
             "segments mode 0600", (unsigned)st.st_uid, (unsigned)(st.st_mode & 07777), (unsigned)geteuid());
    close(fd); errno = EPERM;
    return NULL;
  }
  if ((size_t)st.st_size < min_bytes) { close(fd); errno = ENOENT; return NULL; }
  p = mmap(NULL, (size_t)st.st_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  e = errno;
  close(fd);
  if (p == MAP_FAILED) { errno = e; return NULL; }
  *bytes = (size_t)st.st_size;
  if (id) { id->dev = (uint64_t)st.st_dev; id->ino = (uint64_t)st.st_ino; }
  return p;
#endif
}

/* The same, without the reason (cc_cuda.cuh's pages). */
static __attribute__((unused)) void *cc__shm_open(const char *name, size_t min_bytes, size_t *bytes) {
  char why[160];
  return cc__shm_open_why(name, min_bytes, bytes, why, sizeof why, NULL);
}

/* Without shared memory (CC_NO_SHM) these unlink nothing. */
#ifndef CC_NO_SHM
static void cc__shm_unlink(const char *name) { shm_unlink(name); }

/* Unlink name only while it names segment *id, this user's own: what this
   process created or mapped, never what was planted at the name (root may
   unlink anyone's). Nothing when id is none. */
static void cc__shm_unlink_same(const char *name, const cc__shm_id *id) {
  struct stat st;
  int fd;
  if (!id->ino) return;
  fd = shm_open(name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW, 0);
  if (fd < 0) return;
  if (fstat(fd, &st) == 0 && st.st_uid == geteuid() && (uint64_t)st.st_dev == id->dev &&
      (uint64_t)st.st_ino == id->ino)
    shm_unlink(name);
  close(fd);
}

/* Remove every /dev/shm entry whose name starts with `prefix` (no slash):
   what a rank killed during start-up may leave behind. */
static void cc__shm_unlink_prefix(const char *prefix) {
  DIR *d = opendir("/dev/shm");
  struct dirent *e;
  size_t n = strlen(prefix);
  if (!d) return;
  while ((e = readdir(d)) != NULL) {
    if (strncmp(e->d_name, prefix, n) == 0) {
      char name[300];
      snprintf(name, sizeof name, "/%s", e->d_name);
      shm_unlink(name);
    }
  }
  closedir(d);
}
#else
static void cc__shm_unlink(const char *name) { (void)name; }
static void cc__shm_unlink_same(const char *name, const cc__shm_id *id) { (void)name; (void)id; }
static void cc__shm_unlink_prefix(const char *prefix) { (void)prefix; }
#endif

/* ---------------------------------------------------------------- another process's memory */
/* Cross-memory attach (process_vm_readv, Linux 3.2): copy len bytes at
   remote_src in process pid to dst here, continuing short transfers. 0, or -1
   with errno: EPERM (the ptrace rules forbid it: Yama's ptrace_scope, another
   user, a process that is not dumpable, a container without CAP_SYS_PTRACE),
   ESRCH (the process is gone), EFAULT (an address is not mapped there),
   ENOSYS (CC_NO_SHM, or a kernel without it). Only reads: a process never
   writes into another's private memory, which it may have reused already. */
static int cc__vm_read(int pid, void *dst, const void *remote_src, size_t len) {
#ifdef CC_NO_SHM
  (void)pid; (void)dst; (void)remote_src; (void)len;
  CC__NOSYS(-1);
#else
  unsigned char *d = (unsigned char *)dst;
  uintptr_t src = (uintptr_t)remote_src;
  while (len) {
    struct iovec l, r;
    ssize_t k;
    l.iov_base = d; l.iov_len = len;
    r.iov_base = (void *)src; r.iov_len = len;
    k = process_vm_readv((pid_t)pid, &l, 1, &r, 1, 0);
    if (k < 0 && errno == EINTR) continue;
    if (k < 0) return -1;
    if (k == 0) { errno = EFAULT; return -1; }
    d += k;
    src += (uintptr_t)k;
    len -= (size_t)k;
  }
  return 0;
#endif
}

/* How this process was started (its argv[0], from /proc/self/cmdline), for
   messages; "./prog" when that cannot be read. */
static const char *cc__prog_name(void) {
  static char name[128];
  cc__read_small("/proc/self/cmdline", name, sizeof name);   /* argv[0] ends at its NUL */
  if (!name[0]) snprintf(name, sizeof name, "./prog");
  return name;
}

/* A host identity: ranks with equal ones share /dev/shm and a pid namespace:
   host name | boot id | pid, mount and IPC namespaces, cut to len. */
static void cc__host_id(char *out, size_t len) {
  char boot[64] = "", host[128] = "", ns[3][64];
  const char *nsname[3] = {"/proc/self/ns/pid", "/proc/self/ns/mnt", "/proc/self/ns/ipc"};
  const char *parts[5] = {host, boot, ns[0], ns[1], ns[2]};
  size_t k, used = 0, n = cc__read_small("/proc/sys/kernel/random/boot_id", boot, sizeof boot);
  int i;
  if (n && boot[n - 1] == '\n') boot[n - 1] = 0;
  gethostname(host, sizeof host - 1);
  host[sizeof host - 1] = 0;
  for (i = 0; i < 3; i++) {
    ssize_t m = readlink(nsname[i], ns[i], sizeof ns[i] - 1);
    ns[i][m > 0 ? m : 0] = 0;
  }
  out[0] = 0;
  for (k = 0; k < 5 && used + 1 < len; k++) {
    size_t m = strlen(parts[k]);
    if (k) out[used++] = '|';
    if (m > len - 1 - used) m = len - 1 - used;
    memcpy(out + used, parts[k], m);
    used += m;
    out[used] = 0;
  }
}

/* ---------------------------------------------------------------- files
   The file:// rendezvous: a small file on a shared filesystem, written under
   an fcntl write lock and read under a read lock (locks die with their
   process). */

/* Is the open file fd one this user may trust: a plain file of its own with
   one name? 0, or -1 with errno EPERM and what is wrong in why. */
static int cc__file_trusted(int fd, char *why, size_t whylen) {
  struct stat st;
  if (fstat(fd, &st) != 0) { snprintf(why, whylen, "fstat failed"); return -1; }
  if (!S_ISREG(st.st_mode)) snprintf(why, whylen, "it is not a plain file");
  else if (st.st_uid != geteuid())
    snprintf(why, whylen, "it belongs to uid %u, not to this user (uid %u): whoever owns it could send every rank "
             "to an address of theirs", (unsigned)st.st_uid, (unsigned)geteuid());
  else if (st.st_nlink != 1) snprintf(why, whylen, "it has %lu hard links", (unsigned long)st.st_nlink);
  else return 0;
  errno = EPERM;
  return -1;
}

/* Open the rendezvous file, never through a symbolic link (ELOOP): rank 0
   (create) makes it new (O_EXCL, mode 0600) or opens the one already there, a
   reader opens it; either keeps it only when cc__file_trusted accepts it. -1
   with errno (and why when the file is there but refused). */
static int cc__file_open(const char *path, int create, char *why, size_t whylen) {
  int fd;
  why[0] = 0;
  do fd = open(path, create ? O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC : O_RDONLY | O_NOFOLLOW | O_CLOEXEC, 0600);
  while (fd < 0 && errno == EINTR);
  if (fd < 0 && create && errno == EEXIST)
    do fd = open(path, O_RDWR | O_NOFOLLOW | O_CLOEXEC); while (fd < 0 && errno == EINTR);
  if (fd < 0) {
    if (errno == ELOOP) snprintf(why, whylen, "it is a symbolic link (never followed)");
    return -1;
  }
  if (cc__file_trusted(fd, why, whylen) != 0) { int e = errno; close(fd); errno = e; return -1; }
  return fd;
}

static int cc__file_setlk(int fd, short type) {
  struct flock fl;
  memset(&fl, 0, sizeof fl);
  fl.l_type = type;
  fl.l_whence = SEEK_SET;
  return fcntl(fd, F_SETLK, &fl);
}

static int cc__file_lock(int fd, int write, uint64_t deadline) {
  while (cc__file_setlk(fd, write ? F_WRLCK : F_RDLCK) != 0) {
    if (errno != EACCES && errno != EAGAIN && errno != EINTR) return -1;
    if (cc__now_ns() >= deadline) { errno = ETIMEDOUT; return -1; }
    cc__sleep_ns(2 * CC__MS);
  }
  return 0;
}

static void cc__file_unlock(int fd) { cc__file_setlk(fd, F_UNLCK); }

/* The whole file, as a string (at most len - 1 bytes). -1 with errno. */
static int cc__file_read(int fd, char *buf, size_t len) {
  ssize_t k;
  do k = pread(fd, buf, len - 1, 0); while (k < 0 && errno == EINTR);
  buf[k > 0 ? k : 0] = 0;
  return k < 0 ? -1 : 0;
}

/* Replace the file's content by s. */
static int cc__file_write(int fd, const char *s) {
  size_t n = strlen(s);
  if (ftruncate(fd, 0) != 0) return -1;
  return pwrite(fd, s, n, 0) == (ssize_t)n ? 0 : -1;
}

/* Remove path if it still names the file open as fd (not a file put in its
   place meanwhile). */
static void cc__file_unlink(const char *path, int fd) {
  struct stat a, b;
  if (fstat(fd, &a) == 0 && lstat(path, &b) == 0 && a.st_dev == b.st_dev && a.st_ino == b.st_ino) unlink(path);
}
static void cc__fd_close(int fd) { if (fd >= 0) close(fd); }

/* ---------------------------------------------------------------- sockets
   Addresses travel as text (IPv4 or IPv6 literals); these functions resolve
   and parse them. Sockets are non-blocking; every blocking step is bounded by
   a deadline on the monotonic clock. */

#ifndef CC_NO_TCP
/* Resolve host:port (IPv4 or IPv6). Returns 0 or a getaddrinfo error. */
static int cc__sock_resolve(const char *host, int port, struct sockaddr_storage *sa, socklen_t *salen) {
  struct addrinfo hints, *res = NULL;
  char ps[16];
  int r;
  memset(&hints, 0, sizeof hints);
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  snprintf(ps, sizeof ps, "%d", port);
  r = getaddrinfo(host, ps, &hints, &res);
  if (r != 0) return r;
  memcpy(sa, res->ai_addr, res->ai_addrlen);
  *salen = (socklen_t)res->ai_addrlen;
  freeaddrinfo(res);
  return 0;
}

static void cc__sock_ntop(const struct sockaddr_storage *sa, char *ip, size_t iplen) {
  if (sa->ss_family == AF_INET) inet_ntop(AF_INET, &((const struct sockaddr_in *)(const void *)sa)->sin_addr, ip, (socklen_t)iplen);
  else inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)(const void *)sa)->sin6_addr, ip, (socklen_t)iplen);
}
#endif

/* host (a name or a literal) to an address literal; 0, or a message in why. */
static int cc__sock_lookup(const char *host, char *ip, size_t iplen, char *why, size_t whylen) {
#ifndef CC_NO_TCP
  struct sockaddr_storage sa;
  socklen_t salen;
  int r = cc__sock_resolve(host, 1, &sa, &salen);
  if (r != 0) { snprintf(why, whylen, "%s", gai_strerror(r)); return -1; }
  cc__sock_ntop(&sa, ip, iplen);
  return 0;
#else
  (void)host; (void)ip; (void)iplen;
  snprintf(why, whylen, "this build has no TCP transport (CC_NO_TCP)");
  return -1;
#endif
}

/* 4 or 6 for an IPv4 or IPv6 literal (its 4 or 16 bytes in bin, when not NULL), else 0. */
static int cc__ip_parse(const char *ip, unsigned char *bin) {
#ifndef CC_NO_TCP
  unsigned char a[16];
  if (inet_pton(AF_INET, ip, a) == 1) { if (bin) memcpy(bin, a, 4); return 4; }
  if (inet_pton(AF_INET6, ip, a) == 1) { if (bin) memcpy(bin, a, 16); return 6; }
#else
  (void)ip; (void)bin;
#endif
  return 0;
}

/* 1 when the literal is a loopback address (127/8, ::1, ::ffff:127/104). */
static int cc__ip_is_loopback(const char *ip) {
  unsigned char a[16];
  static const unsigned char v6lo[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};
  static const unsigned char v4map[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
  int f = cc__ip_parse(ip, a);
  if (f == 4) return a[0] == 127;
  if (f == 6) return memcmp(a, v6lo, 16) == 0 || (memcmp(a, v4map, 12) == 0 && a[12] == 127);
  return 0;
}

/* The literal of 4 or 16 bytes; 0, or -1. */
static int cc__ip_format(int family, const unsigned char *bin, char *ip, size_t iplen) {
#ifndef CC_NO_TCP
  return inet_ntop(family == 4 ? AF_INET : AF_INET6, bin, ip, (socklen_t)iplen) ? 0 : -1;
#else
  (void)family; (void)bin; (void)ip; (void)iplen;
  return -1;
#endif
}

/* Listen on ip:port (port 0: the kernel picks; *bound gets it). Never on all
   interfaces. -1 with errno. */
static int cc__sock_listen(const char *ip, int port, int backlog, int *bound) {
#ifndef CC_NO_TCP
  struct sockaddr_storage sa;
  socklen_t salen;
  int one = 1, e, fd;
  if (cc__sock_resolve(ip, port, &sa, &salen) != 0) { errno = EADDRNOTAVAIL; return -1; }
  fd = socket(sa.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) return -1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (bind(fd, (const struct sockaddr *)&sa, salen) != 0 || listen(fd, backlog) != 0) {
    e = errno; close(fd); errno = e;
    return -1;
  }
  if (bound) {
    salen = sizeof sa;
    if (getsockname(fd, (struct sockaddr *)&sa, &salen) != 0) { e = errno; close(fd); errno = e; return -1; }
    *bound = ntohs(sa.ss_family == AF_INET ? ((struct sockaddr_in *)(void *)&sa)->sin_port
                                           : ((struct sockaddr_in6 *)(void *)&sa)->sin6_port);
  }
  return fd;
#else
  (void)ip; (void)port; (void)backlog; (void)bound;
  CC__NOSYS(-1);
#endif
}

/* Wait until fd is ready for `events` (POLLIN, POLLOUT), at most until the
   deadline: 0, or -1 with errno (ETIMEDOUT). */
static int cc__sock_wait(int fd, short events, uint64_t deadline) {
  for (;;) {
    struct pollfd p;
    uint64_t now = cc__now_ns();
    int r, ms;
    if (now >= deadline) { errno = ETIMEDOUT; return -1; }
    ms = (int)CC__MIN((deadline - now) / CC__MS + 1, (uint64_t)1000);
    p.fd = fd; p.events = events; p.revents = 0;
    r = poll(&p, 1, ms);
    if (r > 0) return 0;
    if (r < 0 && errno != EINTR) return -1;
  }
}

/* One connection attempt to ip:port, bounded by the deadline. -1 with errno. */
static int cc__sock_connect(const char *ip, int port, uint64_t deadline) {
#ifndef CC_NO_TCP
  struct sockaddr_storage sa;
  socklen_t salen, elen;
  int one = 1, err = 0, fd;
  if (cc__sock_resolve(ip, port, &sa, &salen) != 0) { errno = EADDRNOTAVAIL; return -1; }
  fd = socket(sa.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) return -1;
  if (connect(fd, (const struct sockaddr *)&sa, salen) != 0) {   /* err: why it failed, or 0 */
    elen = sizeof err;
    if ((errno != EINPROGRESS && errno != EINTR) || cc__sock_wait(fd, POLLOUT, deadline) != 0) err = errno;
    else if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &elen) != 0 && !err) err = ECONNREFUSED;
    if (err) { close(fd); errno = err; return -1; }
  }
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  return fd;
#else
  (void)ip; (void)port; (void)deadline;
  CC__NOSYS(-1);
#endif
}

/* A connection waiting on a listening socket, or -1 (errno EAGAIN: none). */
static int cc__sock_accept(int lfd) {
#ifndef CC_NO_TCP
  int one = 1, fd;
  do fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK); while (fd < 0 && errno == EINTR);
  if (fd >= 0) setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  return fd;
#else
  (void)lfd;
  CC__NOSYS(-1);
#endif
}

/* The address of a connection's other end, as text ("?" when unknown). */
static void cc__sock_peer(int fd, char *ip, size_t iplen) {
  snprintf(ip, iplen, "?");
#ifndef CC_NO_TCP
  {
    struct sockaddr_storage sa;
    socklen_t len = sizeof sa;
    memset(&sa, 0, sizeof sa);
    if (getpeername(fd, (struct sockaddr *)(void *)&sa, &len) == 0 &&
        (sa.ss_family == AF_INET || sa.ss_family == AF_INET6))
      cc__sock_ntop(&sa, ip, iplen);
  }
#else
  (void)fd;
#endif
}

/* Non-blocking send of a, b, then c (a frame's header, payload and tag; an
   empty one is left out): bytes written, or -1 with errno (EAGAIN: the
   socket is full). */
static long cc__sock_send3(int fd, const void *a, size_t alen, const void *b, size_t blen, const void *c, size_t clen) {
#ifndef CC_NO_TCP
  struct iovec iov[3];
  struct msghdr mh;
  ssize_t w;
  int k = 0;
  if (alen) { iov[k].iov_base = (void *)(uintptr_t)a; iov[k++].iov_len = alen; }
  if (blen) { iov[k].iov_base = (void *)(uintptr_t)b; iov[k++].iov_len = blen; }
  if (clen) { iov[k].iov_base = (void *)(uintptr_t)c; iov[k++].iov_len = clen; }
  memset(&mh, 0, sizeof mh);
  mh.msg_iov = iov;
  mh.msg_iovlen = (size_t)k;
  do w = sendmsg(fd, &mh, MSG_NOSIGNAL | MSG_DONTWAIT); while (w < 0 && errno == EINTR);
  return (long)w;
#else
  (void)fd; (void)a; (void)alen; (void)b; (void)blen; (void)c; (void)clen;
  CC__NOSYS(-1);
#endif
}

/* The same with two buffers. */
static long cc__sock_send2(int fd, const void *a, size_t alen, const void *b, size_t blen) {
  return cc__sock_send3(fd, a, alen, b, blen, NULL, 0);
}

/* Non-blocking receive: bytes read, 0 at the end of the stream, or -1 with
   errno (EAGAIN: nothing there). */
static long cc__sock_recv(int fd, void *buf, size_t len) {
#ifndef CC_NO_TCP
  ssize_t k;
  do k = recv(fd, buf, len, MSG_DONTWAIT); while (k < 0 && errno == EINTR);
  return (long)k;
#else
  (void)fd; (void)buf; (void)len;
  CC__NOSYS(-1);
#endif
}

/* All len bytes of buf sent (out) or received, bounded by the deadline: 0,
   or -1 with errno (ECONNRESET when the stream ended before them). */
static int cc__sock_all(int fd, void *buf, size_t len, int out, uint64_t deadline) {
  char *p = (char *)buf;
  while (len > 0) {
    long n = out ? cc__sock_send2(fd, p, len, NULL, 0) : cc__sock_recv(fd, p, len);
    if (n > 0) { p += n; len -= (size_t)n; continue; }
    if (n == 0 && !out) { errno = ECONNRESET; return -1; }
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) && cc__sock_wait(fd, out ? POLLOUT : POLLIN, deadline) == 0)
      continue;
    return -1;
  }
  return 0;
}

static int cc__sock_send_all(int fd, const void *buf, size_t len, uint64_t deadline) {
  return cc__sock_all(fd, (void *)(uintptr_t)buf, len, 1, deadline);
}

static int cc__sock_recv_all(int fd, void *buf, size_t len, uint64_t deadline) {
  return cc__sock_all(fd, buf, len, 0, deadline);
}

/* Into an empty socket buffer: all or nothing. */
static int cc__sock_send_small(int fd, const void *p, size_t n) {
  return cc__sock_send2(fd, p, n, NULL, 0) == (long)n ? 0 : -1;
}

/* Without TCP (CC_NO_TCP) these two do nothing. */
#ifndef CC_NO_TCP
/* No more from this side: the peer sees the end of the stream after what
   was written. The read side stays open (see cc__tcp_linger). */
static void cc__sock_shutdown(int fd) { shutdown(fd, SHUT_WR); }

/* Kernel buffer sizes (0: leave the kernel's autotuning). */
static void cc__sock_bufsize(int fd, size_t bytes) {
  int v = (int)bytes;
  if (!bytes) return;
  setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &v, sizeof v);
  setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &v, sizeof v);
}
#else
static void cc__sock_shutdown(int fd) { (void)fd; }
static void cc__sock_bufsize(int fd, size_t bytes) { (void)fd; (void)bytes; }
#endif

static void cc__sock_close(int fd) {
  if (fd >= 0) { cc__sock_shutdown(fd); cc__fd_close(fd); }
}

/* What poll() says of a socket whose peer closed its side, where it can
   (Linux's POLLRDHUP), else 0: a reader then knows the end is due and asks
   until it reads it. */
#ifdef POLLRDHUP
#define CC__POLL_END POLLRDHUP
#else
#define CC__POLL_END 0
#endif

/* poll() with a timeout in nanoseconds: the number of ready entries, 0, or -1. */
static int cc__poll(struct pollfd *pfd, int n, uint64_t timeout_ns) {
  struct timespec ts;
  int r;
  ts.tv_sec = (time_t)(timeout_ns / CC__S);
  ts.tv_nsec = (long)(timeout_ns % CC__S);
  r = ppoll(pfd, (nfds_t)n, &ts, NULL);
  return r < 0 && errno == EINTR ? 0 : r;
}

/* The address this rank listens on: ifname's (IPv4 first), else the one its
   route to `toward` leaves from, else the first non-loopback IPv4 address of
   an interface that is up (when first_iface), else loopback. 0, or -1 with a
   message in why. */
static int cc__sock_pick_addr(const char *ifname, const char *toward, int first_iface, char *ip, size_t iplen,
                              char *why, size_t whylen) {
  snprintf(ip, iplen, "127.0.0.1");
#ifndef CC_NO_TCP
  if ((ifname && *ifname) || first_iface) {
    struct ifaddrs *ifa = NULL, *i;
    int found = 0, fam, by_name = ifname && *ifname;
    if (getifaddrs(&ifa) != 0) { snprintf(why, whylen, "getifaddrs failed"); return -1; }
    for (i = ifa; i && found < 2; i = i->ifa_next) {
      if (!i->ifa_addr) continue;
      if (by_name ? strcmp(i->ifa_name, ifname) != 0 : (!(i->ifa_flags & IFF_UP) || (i->ifa_flags & IFF_LOOPBACK)))
        continue;
      fam = i->ifa_addr->sa_family;
      if (fam == AF_INET || (fam == AF_INET6 && !found && by_name)) {
        cc__sock_ntop((const struct sockaddr_storage *)(const void *)i->ifa_addr, ip, iplen);
        found = fam == AF_INET ? 2 : 1;
      }
    }
    freeifaddrs(ifa);
    if (!found && by_name) {
      snprintf(why, whylen, "CC_SOCKET_IFNAME=%s: no such interface with an address", ifname);
      return -1;
    }
    return 0;
  }
  if (toward && *toward) {
    struct sockaddr_storage sa, me;
    socklen_t salen, mlen = sizeof me;
    int fd;
    if (cc__sock_resolve(toward, 9, &sa, &salen) != 0) return 0;
    fd = socket(sa.ss_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return 0;
    if (connect(fd, (struct sockaddr *)&sa, salen) == 0 && getsockname(fd, (struct sockaddr *)&me, &mlen) == 0)
      cc__sock_ntop(&me, ip, iplen);
    close(fd);
  }
  return 0;
#else
  (void)ifname; (void)toward; (void)first_iface;
  snprintf(why, whylen, "this build has no TCP transport (CC_NO_TCP)");
  return -1;
#endif
}

#ifdef CC_NO_TCP
#  define CC__HAVE_TCP 0
#else
#  define CC__HAVE_TCP 1
#endif
/* ============================================================== @crypto */
/* SHA-256 (FIPS 180-4) and HMAC-SHA256 (RFC 2104), which authenticate the
   handshakes and name the shared-memory segments; then, for TCP links only
   (compiled out with CC_NO_TCP), HKDF-SHA256 (RFC 5869), which derives each
   connection's keys, and the two AEAD suites that authenticate (and with
   CC_NET_ENCRYPT=1 encrypt) every frame: ChaCha20-Poly1305 (RFC 8439) and
   AES-256-GCM (SP 800-38D). Pure computation: no system call, no allocation.
   The #ifs are on the compiler and the CPU architecture (the x86-64
   intrinsics, unsigned __int128), never on the operating system; the CPU's
   features are read once with CPUID. */

/* Little-endian integers, the one codec of the library: the ciphers' words
   and every integer on the wire (frames, handshakes, records). */
static void cc__put32(unsigned char *p, uint32_t v) {
  p[0] = (unsigned char)v; p[1] = (unsigned char)(v >> 8); p[2] = (unsigned char)(v >> 16); p[3] = (unsigned char)(v >> 24);
}
static uint32_t cc__get32(const unsigned char *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static void cc__put64(unsigned char *p, uint64_t v) { cc__put32(p, (uint32_t)v); cc__put32(p + 4, (uint32_t)(v >> 32)); }
static uint64_t cc__get64(const unsigned char *p) { return (uint64_t)cc__get32(p) | (uint64_t)cc__get32(p + 4) << 32; }

typedef struct cc__sha256 {
  uint32_t h[8];
  uint64_t len;            /* bytes hashed so far */
  unsigned char buf[64];   /* partial block */
  size_t nbuf;
} cc__sha256;

static const uint32_t cc__sha256_k[64] = {
  0x428a2f98u, 0x71374491u, 0xb5c0fbcfu, 0xe9b5dba5u, 0x3956c25bu, 0x59f111f1u, 0x923f82a4u, 0xab1c5ed5u,
  0xd807aa98u, 0x12835b01u, 0x243185beu, 0x550c7dc3u, 0x72be5d74u, 0x80deb1feu, 0x9bdc06a7u, 0xc19bf174u,
  0xe49b69c1u, 0xefbe4786u, 0x0fc19dc6u, 0x240ca1ccu, 0x2de92c6fu, 0x4a7484aau, 0x5cb0a9dcu, 0x76f988dau,
  0x983e5152u, 0xa831c66du, 0xb00327c8u, 0xbf597fc7u, 0xc6e00bf3u, 0xd5a79147u, 0x06ca6351u, 0x14292967u,
  0x27b70a85u, 0x2e1b2138u, 0x4d2c6dfcu, 0x53380d13u, 0x650a7354u, 0x766a0abbu, 0x81c2c92eu, 0x92722c85u,
  0xa2bfe8a1u, 0xa81a664bu, 0xc24b8b70u, 0xc76c51a3u, 0xd192e819u, 0xd6990624u, 0xf40e3585u, 0x106aa070u,
  0x19a4c116u, 0x1e376c08u, 0x2748774cu, 0x34b0bcb5u, 0x391c0cb3u, 0x4ed8aa4au, 0x5b9cca4fu, 0x682e6ff3u,
  0x748f82eeu, 0x78a5636fu, 0x84c87814u, 0x8cc70208u, 0x90befffau, 0xa4506cebu, 0xbef9a3f7u, 0xc67178f2u
};

/* Big-endian, where a standard says so (SHA-256, GCM, the nonces). */
static void cc__st64be(unsigned char *p, uint64_t v) {
  int i;
  for (i = 0; i < 8; i++) p[i] = (unsigned char)(v >> (56 - 8 * i));
}

#define CC__ROR32(x, n) (((x) >> (n)) | ((x) << (32 - (n))))

/* One 64-byte block into the state. */
static void cc__sha256_block(uint32_t h[8], const unsigned char *p) {
  uint32_t w[64], a, b, c, d, e, f, g, hh, t1, t2;
  int i;
  for (i = 0; i < 16; i++)
    w[i] = (uint32_t)p[4 * i] << 24 | (uint32_t)p[4 * i + 1] << 16 |
           (uint32_t)p[4 * i + 2] << 8 | (uint32_t)p[4 * i + 3];
  for (i = 16; i < 64; i++) {
    uint32_t s0 = CC__ROR32(w[i - 15], 7) ^ CC__ROR32(w[i - 15], 18) ^ (w[i - 15] >> 3);
    uint32_t s1 = CC__ROR32(w[i - 2], 17) ^ CC__ROR32(w[i - 2], 19) ^ (w[i - 2] >> 10);
    w[i] = w[i - 16] + s0 + w[i - 7] + s1;
  }
  a = h[0]; b = h[1]; c = h[2]; d = h[3]; e = h[4]; f = h[5]; g = h[6]; hh = h[7];
  for (i = 0; i < 64; i++) {
    t1 = hh + (CC__ROR32(e, 6) ^ CC__ROR32(e, 11) ^ CC__ROR32(e, 25)) +
         ((e & f) ^ (~e & g)) + cc__sha256_k[i] + w[i];
    t2 = (CC__ROR32(a, 2) ^ CC__ROR32(a, 13) ^ CC__ROR32(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));
    hh = g; g = f; f = e; e = d + t1; d = c; c = b; b = a; a = t1 + t2;
  }
  h[0] += a; h[1] += b; h[2] += c; h[3] += d; h[4] += e; h[5] += f; h[6] += g; h[7] += hh;
}

static void cc__sha256_init(cc__sha256 *s) {
  static const uint32_t iv[8] = { 0x6a09e667u, 0xbb67ae85u, 0x3c6ef372u, 0xa54ff53au,
                                  0x510e527fu, 0x9b05688cu, 0x1f83d9abu, 0x5be0cd19u };
  memcpy(s->h, iv, sizeof iv);
  s->len = 0;
  s->nbuf = 0;
}

static void cc__sha256_update(cc__sha256 *s, const void *data, size_t len) {
  const unsigned char *p = (const unsigned char *)data;
  s->len += len;
  if (s->nbuf) {                        /* top up the partial block */
    size_t k = 64 - s->nbuf < len ? 64 - s->nbuf : len;
    memcpy(s->buf + s->nbuf, p, k);
    s->nbuf += k; p += k; len -= k;
    if (s->nbuf < 64) return;
    cc__sha256_block(s->h, s->buf);
    s->nbuf = 0;
  }
  for (; len >= 64; p += 64, len -= 64) cc__sha256_block(s->h, p);
  if (len) { memcpy(s->buf, p, len); s->nbuf = len; }
}

static void cc__sha256_final(cc__sha256 *s, unsigned char out[32]) {
  int i;
  s->buf[s->nbuf++] = 0x80;             /* nbuf < 64 always holds here */
  if (s->nbuf > 56) {
    memset(s->buf + s->nbuf, 0, 64 - s->nbuf);
    cc__sha256_block(s->h, s->buf);
    s->nbuf = 0;
  }
  memset(s->buf + s->nbuf, 0, 56 - s->nbuf);
  cc__st64be(s->buf + 56, s->len * 8);   /* the message's length in bits */
  cc__sha256_block(s->h, s->buf);
  for (i = 0; i < 4; i++) cc__st64be(out + 8 * i, (uint64_t)s->h[2 * i] << 32 | s->h[2 * i + 1]);
}

/* 1 when the n bytes at a and b are equal; time depends on n only. */
static int cc__ct_equal(const void *a, const void *b, size_t n) {
  const volatile unsigned char *x = (const volatile unsigned char *)a;
  const volatile unsigned char *y = (const volatile unsigned char *)b;
  unsigned char d = 0;
  size_t i;
  for (i = 0; i < n; i++) d = (unsigned char)(d | (x[i] ^ y[i]));
  return d == 0;
}

/* Zeroes n bytes in a way the compiler cannot drop as a dead store. */
static void cc__crypto_wipe(void *p, size_t n) {
  memset(p, 0, n);
  __asm__ __volatile__("" : : "r"(p) : "memory");
}

/* HMAC-SHA256 of parts[0] || ... || parts[nparts-1] under key. */
static void cc__hmac_sha256(const void *key, size_t keylen, const void *const *parts,
                            const size_t *lens, int nparts, unsigned char out[32]) {
  unsigned char k0[64], pad[64], inner[32];
  cc__sha256 s;
  int i;
  memset(k0, 0, sizeof k0);
  if (keylen > 64) {                    /* long keys are hashed first */
    cc__sha256_init(&s);
    cc__sha256_update(&s, key, keylen);
    cc__sha256_final(&s, k0);
  } else if (keylen) {
    memcpy(k0, key, keylen);
  }
  for (i = 0; i < 64; i++) pad[i] = (unsigned char)(k0[i] ^ 0x36);
  cc__sha256_init(&s);
  cc__sha256_update(&s, pad, 64);
  for (i = 0; i < nparts; i++) cc__sha256_update(&s, parts[i], lens[i]);
  cc__sha256_final(&s, inner);
  for (i = 0; i < 64; i++) pad[i] = (unsigned char)(k0[i] ^ 0x5c);
  cc__sha256_init(&s);
  cc__sha256_update(&s, pad, 64);
  cc__sha256_update(&s, inner, 32);
  cc__sha256_final(&s, out);
  cc__crypto_wipe(k0, sizeof k0);       /* no copy of the key left on the stack */
  cc__crypto_wipe(pad, sizeof pad);
}

#define CC__AEAD_CHACHA20_POLY1305 1    /* the suites, as the handshake numbers them */
#define CC__AEAD_AES256_GCM        2
/* RFC 8439 section 2.8: P_MAX = (2^32 - 1) * 64 bytes (counter 0 is the
   Poly1305 key). SP 800-38D section 5.2.1.1: len(P) <= 2^39 - 256 bits. AAD
   is held to 2^61 - 1 bytes for both (GCM's 2^64 - 1 bits). */
#define CC__CHACHA_PMAX (((uint64_t)1 << 38) - 64)
#define CC__GCM_PMAX    (((uint64_t)1 << 36) - 32)
#define CC__AEAD_AMAX   (((uint64_t)1 << 61) - 1)

#if CC__HAVE_TCP

/* ------------------------------------------------------------------ crypto */
/* How the TCP transport's ciphers run: ChaCha20 in portable C, also 4 and 8
   blocks at a time with SSE2 and AVX2; AES-256-GCM with AES-NI and PCLMULQDQ
   only (x86-64, GCC/Clang, chosen at run time), wider where the CPU has
   VPCLMULQDQ and VAES. There is deliberately no table-based software AES:
   without the instructions, GCM is unavailable and the caller uses
   ChaCha20-Poly1305. The interface: "AEAD", below.

   Constant time: no branch or memory index depends on a key, a keystream, a
   plaintext or a tag (ChaCha20: add/xor/rotate; Poly1305: fixed carry chains
   and a masked final select; AES and GHASH: AES-NI and carry-less multiply;
   tags compared by cc__ct_equal). Branches depend on lengths and the suite. */

/* out = a ^ b over n bytes (any alignment; out may equal a or b). */
static void cc__xor_bytes(unsigned char *out, const unsigned char *a, const unsigned char *b, size_t n) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    uint64_t x, y;
    memcpy(&x, a + i, 8);
    memcpy(&y, b + i, 8);
    x ^= y;
    memcpy(out + i, &x, 8);
  }
  for (; i < n; i++) out[i] = (unsigned char)(a[i] ^ b[i]);
}

/* -------- CPU features: computed once, then only read. A race between two
   first callers is harmless (both store the same value, atomically). */
#define CC__CPU_SSE2 1                   /* x86-64 baseline: ChaCha20 x4 */
#define CC__CPU_AVX2 2                   /* ChaCha20 x8 */
#define CC__CPU_GCM  4                   /* AES-NI + PCLMULQDQ + SSE4.1: AES-256-GCM */
#define CC__CPU_VCLMUL 8                 /* and AVX2 + VPCLMULQDQ: GHASH 2 blocks per multiply */
#define CC__CPU_VAES 16                  /* and VAES too: AES-CTR 2 blocks per instruction */
static int cc__crypto_cpu_flags = -1;

static int cc__crypto_cpu(void) {
  int f = __atomic_load_n(&cc__crypto_cpu_flags, __ATOMIC_RELAXED);
  if (f < 0) {
    f = 0;
#if CC__CRYPTO_X86
    __builtin_cpu_init();
    f |= CC__CPU_SSE2;
    if (__builtin_cpu_supports("avx2")) f |= CC__CPU_AVX2;
    if (__builtin_cpu_supports("aes") && __builtin_cpu_supports("pclmul") && __builtin_cpu_supports("sse4.1")) {
      unsigned a, b, c, d;
      f |= CC__CPU_GCM;
      /* VPCLMULQDQ: CPUID.(7,0):ECX bit 10 (Clang 14 has no
         __builtin_cpu_supports name for it); "avx2" above includes the OS
         check for the 256-bit registers. */
      if ((f & CC__CPU_AVX2) && __get_cpuid_count(7, 0, &a, &b, &c, &d) && ((c >> 10) & 1)) {
        f |= CC__CPU_VCLMUL;
        if ((c >> 9) & 1) f |= CC__CPU_VAES;            /* VAES: CPUID.(7,0):ECX bit 9 */
      }
    }
#endif
    __atomic_store_n(&cc__crypto_cpu_flags, f, __ATOMIC_RELAXED);
  }
  return f;
}

/* ================================================================ HKDF */
/* RFC 5869 section 2.2: PRK = HMAC-SHA256(salt, IKM). An empty salt is the
   same as 32 zero bytes (HMAC pads keys with zeros). */
static __attribute__((unused)) void cc__hkdf_sha256_extract(const void *salt, size_t saltlen, const void *ikm,
                                                            size_t ikmlen, unsigned char prk[32]) {
  cc__hmac_sha256(salt, saltlen, &ikm, &ikmlen, ikmlen ? 1 : 0, prk);
}

/* RFC 5869 section 2.3: OKM = T(1) | T(2) | ... truncated to outlen, where
   T(i) = HMAC-SHA256(PRK, T(i-1) | info | i). 0, or -1 if outlen > 255*32. */
static __attribute__((unused)) int cc__hkdf_sha256_expand(const unsigned char *prk, size_t prklen, const void *info,
                                                          size_t infolen, unsigned char *out, size_t outlen) {
  unsigned char t[32], ctr = 0;
  size_t done = 0;
  if (outlen > 255 * 32) return -1;
  while (done < outlen) {
    const void *parts[3];
    size_t lens[3], k;
    int n = 0;
    if (ctr) { parts[n] = t; lens[n++] = 32; }
    if (infolen) { parts[n] = info; lens[n++] = infolen; }
    ctr++;
    parts[n] = &ctr; lens[n++] = 1;
    cc__hmac_sha256(prk, prklen, parts, lens, n, t);
    k = CC__MIN((size_t)32, outlen - done);
    memcpy(out + done, t, k);
    done += k;
  }
  cc__crypto_wipe(t, sizeof t);
  return 0;
}

/* ============================================================ ChaCha20 */
#define CC__ROL32(x, n) (((x) << (n)) | ((x) >> (32 - (n))))
/* RFC 8439 section 2.1: the quarter round. */
#define CC__CHACHA_QR(a, b, c, d)                \
  a += b; d ^= a; d = CC__ROL32(d, 16);          \
  c += d; b ^= c; b = CC__ROL32(b, 12);          \
  a += b; d ^= a; d = CC__ROL32(d, 8);           \
  c += d; b ^= c; b = CC__ROL32(b, 7)
/* RFC 8439 section 2.3: the 20 rounds on the state words x[0..15], ten times
   a column round and a diagonal round, with quarter round QR (the scalar one
   above, or one of the vector ones below that run 4 or 8 blocks at once). */
#define CC__CHACHA_ROUNDS(QR, x)                                                         \
  do {                                                                                 \
    int cc__r_;                                                                        \
    for (cc__r_ = 0; cc__r_ < 10; cc__r_++) {                                          \
      QR(x[0], x[4], x[8], x[12]); QR(x[1], x[5], x[9], x[13]);     /* columns */     \
      QR(x[2], x[6], x[10], x[14]); QR(x[3], x[7], x[11], x[15]);                      \
      QR(x[0], x[5], x[10], x[15]); QR(x[1], x[6], x[11], x[12]);   /* diagonals */   \
      QR(x[2], x[7], x[8], x[13]); QR(x[3], x[4], x[9], x[14]);                        \
    }                                                                                  \
  } while (0)

/* RFC 8439 section 2.3: constants, key, block counter, nonce. */
static void cc__chacha20_init(uint32_t st[16], const unsigned char key[32], uint32_t counter,
                              const unsigned char nonce[12]) {
  int i;
  st[0] = 0x61707865u; st[1] = 0x3320646eu; st[2] = 0x79622d32u; st[3] = 0x6b206574u;
  for (i = 0; i < 8; i++) st[4 + i] = cc__get32(key + 4 * i);
  st[12] = counter;
  for (i = 0; i < 3; i++) st[13 + i] = cc__get32(nonce + 4 * i);
}

/* RFC 8439 section 2.3: the 64-byte block for state st (20 rounds, add the
   input, serialize little-endian). */
static void cc__chacha20_block(const uint32_t st[16], unsigned char out[64]) {
  uint32_t x[16];
  int i;
  memcpy(x, st, sizeof x);
  CC__CHACHA_ROUNDS(CC__CHACHA_QR, x);
  for (i = 0; i < 16; i++) cc__put32(out + 4 * i, x[i] + st[i]);
  cc__crypto_wipe(x, sizeof x);
}

#if CC__CRYPTO_X86
/* Four blocks (counters st[12] .. st[12]+3) with SSE2: vector j holds word j
   of the four blocks; a 4x4 transpose per group of four words serializes. */
#define CC__ROTV(x, n) _mm_or_si128(_mm_slli_epi32(x, n), _mm_srli_epi32(x, 32 - (n)))
#define CC__QRV(a, b, c, d)                                                          \
  a = _mm_add_epi32(a, b); d = _mm_xor_si128(d, a); d = CC__ROTV(d, 16);             \
  c = _mm_add_epi32(c, d); b = _mm_xor_si128(b, c); b = CC__ROTV(b, 12);             \
  a = _mm_add_epi32(a, b); d = _mm_xor_si128(d, a); d = CC__ROTV(d, 8);              \
  c = _mm_add_epi32(c, d); b = _mm_xor_si128(b, c); b = CC__ROTV(b, 7)

static void cc__chacha20_x4(const uint32_t st[16], const unsigned char *in, unsigned char *out) {
  __m128i x[16], o[16];
  int i;
  for (i = 0; i < 16; i++) x[i] = o[i] = _mm_set1_epi32((int)st[i]);
  x[12] = o[12] = _mm_add_epi32(o[12], _mm_set_epi32(3, 2, 1, 0));
  CC__CHACHA_ROUNDS(CC__QRV, x);
  for (i = 0; i < 16; i++) x[i] = _mm_add_epi32(x[i], o[i]);
  for (i = 0; i < 4; i++) {               /* words 4i..4i+3 of blocks 0..3 */
    __m128i t0 = _mm_unpacklo_epi32(x[4 * i], x[4 * i + 1]), t1 = _mm_unpackhi_epi32(x[4 * i], x[4 * i + 1]);
    __m128i t2 = _mm_unpacklo_epi32(x[4 * i + 2], x[4 * i + 3]), t3 = _mm_unpackhi_epi32(x[4 * i + 2], x[4 * i + 3]);
    __m128i b[4];
    int j;
    b[0] = _mm_unpacklo_epi64(t0, t2); b[1] = _mm_unpackhi_epi64(t0, t2);
    b[2] = _mm_unpacklo_epi64(t1, t3); b[3] = _mm_unpackhi_epi64(t1, t3);
    for (j = 0; j < 4; j++) {
      const unsigned char *ip = in + 64 * j + 16 * i;
      _mm_storeu_si128((__m128i *)(void *)(out + 64 * j + 16 * i),
                       _mm_xor_si128(_mm_loadu_si128((const __m128i *)(const void *)ip), b[j]));
    }
  }
}

/* Eight blocks with AVX2: lane 0 of each vector holds blocks 0-3, lane 1
   blocks 4-7; the 16- and 8-bit rotations are byte shuffles. */
#define CC__ROTV8(x, n) _mm256_or_si256(_mm256_slli_epi32(x, n), _mm256_srli_epi32(x, 32 - (n)))
#define CC__QRV8(a, b, c, d)                                                                       \
  a = _mm256_add_epi32(a, b); d = _mm256_xor_si256(d, a); d = _mm256_shuffle_epi8(d, r16);         \
  c = _mm256_add_epi32(c, d); b = _mm256_xor_si256(b, c); b = CC__ROTV8(b, 12);                    \
  a = _mm256_add_epi32(a, b); d = _mm256_xor_si256(d, a); d = _mm256_shuffle_epi8(d, r8);          \
  c = _mm256_add_epi32(c, d); b = _mm256_xor_si256(b, c); b = CC__ROTV8(b, 7)

static CC__TARGET_AVX2 void cc__chacha20_x8(const uint32_t st[16], const unsigned char *in, unsigned char *out) {
  const __m256i r16 = _mm256_setr_epi8(2, 3, 0, 1, 6, 7, 4, 5, 10, 11, 8, 9, 14, 15, 12, 13,
                                       2, 3, 0, 1, 6, 7, 4, 5, 10, 11, 8, 9, 14, 15, 12, 13);
  const __m256i r8 = _mm256_setr_epi8(3, 0, 1, 2, 7, 4, 5, 6, 11, 8, 9, 10, 15, 12, 13, 14,
                                      3, 0, 1, 2, 7, 4, 5, 6, 11, 8, 9, 10, 15, 12, 13, 14);
  __m256i x[16], o[16], u[4][4];
  int i;
  for (i = 0; i < 16; i++) x[i] = o[i] = _mm256_set1_epi32((int)st[i]);
  x[12] = o[12] = _mm256_add_epi32(o[12], _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
  CC__CHACHA_ROUNDS(CC__QRV8, x);
  for (i = 0; i < 16; i++) x[i] = _mm256_add_epi32(x[i], o[i]);
  /* u[g][j]: words 4g..4g+3 of block j (lane 0) and block j+4 (lane 1); written
     out so that the indices are constants and the values stay in registers */
#define CC__T8(g)                                                                                              \
  {                                                                                                          \
    __m256i t0 = _mm256_unpacklo_epi32(x[4 * (g)], x[4 * (g) + 1]), t1 = _mm256_unpackhi_epi32(x[4 * (g)], x[4 * (g) + 1]); \
    __m256i t2 = _mm256_unpacklo_epi32(x[4 * (g) + 2], x[4 * (g) + 3]), t3 = _mm256_unpackhi_epi32(x[4 * (g) + 2], x[4 * (g) + 3]); \
    u[g][0] = _mm256_unpacklo_epi64(t0, t2); u[g][1] = _mm256_unpackhi_epi64(t0, t2);                          \
    u[g][2] = _mm256_unpacklo_epi64(t1, t3); u[g][3] = _mm256_unpackhi_epi64(t1, t3);                          \
  }
  CC__T8(0) CC__T8(1) CC__T8(2) CC__T8(3)
#undef CC__T8
#define CC__XS8(off, v)                                                                                        \
  _mm256_storeu_si256((__m256i *)(void *)(out + (off)),                                                        \
                      _mm256_xor_si256(_mm256_loadu_si256((const __m256i *)(const void *)(in + (off))), v));
#define CC__O8(j)                                                                                              \
  CC__XS8(64 * (j), _mm256_permute2x128_si256(u[0][j], u[1][j], 0x20))        /* block j, bytes 0-31 */       \
  CC__XS8(64 * (j) + 32, _mm256_permute2x128_si256(u[2][j], u[3][j], 0x20))   /* block j, bytes 32-63 */      \
  CC__XS8(64 * (j) + 256, _mm256_permute2x128_si256(u[0][j], u[1][j], 0x31))  /* block j+4 */                 \
  CC__XS8(64 * (j) + 288, _mm256_permute2x128_si256(u[2][j], u[3][j], 0x31))
  CC__O8(0) CC__O8(1) CC__O8(2) CC__O8(3)
#undef CC__O8
#undef CC__XS8
}
#endif /* CC__CRYPTO_X86 */

/* XORs nblocks*64 bytes of keystream (blocks st[12], st[12]+1, ...) from in
   into out and advances st[12]. The caller keeps the counter from wrapping. */
static void cc__chacha20_xor_blocks(uint32_t st[16], const unsigned char *in, unsigned char *out, size_t nblocks) {
  unsigned char ks[64];
#if CC__CRYPTO_X86
  int f = cc__crypto_cpu();
  if (f & CC__CPU_AVX2)
    for (; nblocks >= 8; nblocks -= 8, in += 512, out += 512, st[12] += 8) cc__chacha20_x8(st, in, out);
  if (f & CC__CPU_SSE2)
    for (; nblocks >= 4; nblocks -= 4, in += 256, out += 256, st[12] += 4) cc__chacha20_x4(st, in, out);
#endif
  if (!nblocks) return;
  for (; nblocks; nblocks--, in += 64, out += 64, st[12]++) {
    cc__chacha20_block(st, ks);
    cc__xor_bytes(out, in, ks, 64);
  }
  cc__crypto_wipe(ks, sizeof ks);
}

/* ============================================================ Poly1305 */
/* RFC 8439 section 2.5, in radix 2^44 (limbs of 44, 44 and 42 bits, as in
   poly1305-donna's 64-bit version). The 64x64->128 multiplies use unsigned
   __int128 where the compiler has it and a portable 32-bit-halves product
   otherwise (define CC_CRYPTO_NO_INT128 to force the latter). */
#if defined(__SIZEOF_INT128__) && !defined(CC_CRYPTO_NO_INT128)
__extension__ typedef unsigned __int128 cc__u128;
static cc__u128 cc__mul64(uint64_t a, uint64_t b) { return (cc__u128)a * b; }
static cc__u128 cc__add128(cc__u128 a, cc__u128 b) { return a + b; }
static cc__u128 cc__add128_64(cc__u128 a, uint64_t b) { return a + b; }
static uint64_t cc__shr128(cc__u128 a, int s) { return (uint64_t)(a >> s); }
static uint64_t cc__lo128(cc__u128 a) { return (uint64_t)a; }
#else
typedef struct cc__u128 { uint64_t lo, hi; } cc__u128;
static cc__u128 cc__mul64(uint64_t a, uint64_t b) {
  uint64_t a0 = a & 0xffffffffu, a1 = a >> 32, b0 = b & 0xffffffffu, b1 = b >> 32;
  uint64_t p00 = a0 * b0, p01 = a0 * b1, p10 = a1 * b0, p11 = a1 * b1;
  uint64_t mid = (p00 >> 32) + (p01 & 0xffffffffu) + (p10 & 0xffffffffu);
  cc__u128 r;
  r.lo = (mid << 32) | (p00 & 0xffffffffu);
  r.hi = p11 + (p01 >> 32) + (p10 >> 32) + (mid >> 32);
  return r;
}
static cc__u128 cc__add128(cc__u128 a, cc__u128 b) {
  cc__u128 r;
  r.lo = a.lo + b.lo;
  r.hi = a.hi + b.hi + (r.lo < a.lo);
  return r;
}
static cc__u128 cc__add128_64(cc__u128 a, uint64_t b) {
  cc__u128 r;
  r.lo = a.lo + b;
  r.hi = a.hi + (r.lo < a.lo);
  return r;
}
static uint64_t cc__shr128(cc__u128 a, int s) { return (a.lo >> s) | (a.hi << (64 - s)); }   /* 0 < s < 64 */
static uint64_t cc__lo128(cc__u128 a) { return a.lo; }
#endif

#define CC__M44 0xfffffffffffull
#define CC__M42 0x3ffffffffffull

typedef struct cc__poly1305 {
  uint64_t r0, r1, r2;                  /* clamped r */
  uint64_t s1, s2;                      /* 20*r1, 20*r2: 2^132 = 4*2^130 = 4*5 mod p */
  uint64_t q0, q1, q2, t1, t2;          /* r^2 mod p (limbs carried, below 2^44, 2^44+1, 2^42) and 20*q1, 20*q2 */
  uint64_t h0, h1, h2;                  /* accumulator, partially reduced */
  uint64_t pad0, pad1;                  /* s, the second half of the key */
} cc__poly1305;

/* Carries d0, d1, d2 (128-bit column sums) into 44/44/42-bit limbs, folding
   the part above 2^130 back in times 5. */
#define CC__POLY_CARRY(d0, d1, d2, h0, h1, h2)                                   \
  do {                                                                          \
    uint64_t c_;                                                                \
    c_ = cc__shr128(d0, 44); h0 = cc__lo128(d0) & CC__M44;                       \
    d1 = cc__add128_64(d1, c_); c_ = cc__shr128(d1, 44); h1 = cc__lo128(d1) & CC__M44; \
    d2 = cc__add128_64(d2, c_); c_ = cc__shr128(d2, 42); h2 = cc__lo128(d2) & CC__M42; \
    h0 += c_ * 5; c_ = h0 >> 44; h0 &= CC__M44;                                  \
    h1 += c_;                                                                   \
  } while (0)

/* RFC 8439 section 2.5: r = key[0..15] clamped, s = key[16..31]. */
static void cc__poly1305_init(cc__poly1305 *p, const unsigned char key[32]) {
  uint64_t t0 = cc__get64(key), t1 = cc__get64(key + 8);
  p->r0 = t0 & 0xffc0fffffffull;                          /* r &= 0x0ffffffc0ffffffc0ffffffc0fffffff */
  p->r1 = ((t0 >> 44) | (t1 << 20)) & 0xfffffc0ffffull;
  p->r2 = (t1 >> 24) & 0x00ffffffc0full;
  p->s1 = p->r1 * 20;
  p->s2 = p->r2 * 20;
  {                                                       /* r^2, for two blocks per step */
    cc__u128 d0 = cc__add128(cc__add128(cc__mul64(p->r0, p->r0), cc__mul64(p->r1, p->s2)), cc__mul64(p->r2, p->s1));
    cc__u128 d1 = cc__add128(cc__add128(cc__mul64(p->r0, p->r1), cc__mul64(p->r1, p->r0)), cc__mul64(p->r2, p->s2));
    cc__u128 d2 = cc__add128(cc__add128(cc__mul64(p->r0, p->r2), cc__mul64(p->r1, p->r1)), cc__mul64(p->r2, p->r0));
    CC__POLY_CARRY(d0, d1, d2, p->q0, p->q1, p->q2);
    p->t1 = p->q1 * 20;
    p->t2 = p->q2 * 20;
  }
  p->h0 = p->h1 = p->h2 = 0;
  p->pad0 = cc__get64(key + 16);
  p->pad1 = cc__get64(key + 24);
}

/* Acc = ((Acc + block + hibit) * r) mod 2^130-5 for each 16-byte block;
   hibit is 2^128 (1 << 40 in the top limb) for whole blocks, 0 for a final
   short block that the caller padded with 0x01 0x00...
   Two blocks per step as Acc = (Acc + m1)*r^2 + m2*r: the same value, but the
   m2*r products do not wait for the accumulator, which halves the length of
   the dependency chain per block. Bounds: accumulator limbs < 2^45 after the
   add, q and r limbs < 2^44+1, 20*q and 20*r < 2^50, so each of the six
   products per column is < 2^95 and a column sum < 2^98. */
static void cc__poly1305_blocks(cc__poly1305 *p, const unsigned char *m, size_t nblocks, uint64_t hibit) {
  uint64_t r0 = p->r0, r1 = p->r1, r2 = p->r2, s1 = p->s1, s2 = p->s2;
  uint64_t q0 = p->q0, q1 = p->q1, q2 = p->q2, t1 = p->t1, t2 = p->t2;
  uint64_t h0 = p->h0, h1 = p->h1, h2 = p->h2;
  for (; nblocks >= 2; nblocks -= 2, m += 32) {
    uint64_t a0 = cc__get64(m), a1 = cc__get64(m + 8), b0 = cc__get64(m + 16), b1 = cc__get64(m + 24);
    uint64_t g0, g1, g2;
    cc__u128 d0, d1, d2;
    h0 += a0 & CC__M44;
    h1 += ((a0 >> 44) | (a1 << 20)) & CC__M44;
    h2 += ((a1 >> 24) & CC__M42) | hibit;
    g0 = b0 & CC__M44;
    g1 = ((b0 >> 44) | (b1 << 20)) & CC__M44;
    g2 = ((b1 >> 24) & CC__M42) | hibit;
    d0 = cc__add128(cc__add128(cc__add128(cc__mul64(h0, q0), cc__mul64(h1, t2)), cc__mul64(h2, t1)),
                    cc__add128(cc__add128(cc__mul64(g0, r0), cc__mul64(g1, s2)), cc__mul64(g2, s1)));
    d1 = cc__add128(cc__add128(cc__add128(cc__mul64(h0, q1), cc__mul64(h1, q0)), cc__mul64(h2, t2)),
                    cc__add128(cc__add128(cc__mul64(g0, r1), cc__mul64(g1, r0)), cc__mul64(g2, s2)));
    d2 = cc__add128(cc__add128(cc__add128(cc__mul64(h0, q2), cc__mul64(h1, q1)), cc__mul64(h2, q0)),
                    cc__add128(cc__add128(cc__mul64(g0, r2), cc__mul64(g1, r1)), cc__mul64(g2, r0)));
    CC__POLY_CARRY(d0, d1, d2, h0, h1, h2);
  }
  if (nblocks) {
    uint64_t a0 = cc__get64(m), a1 = cc__get64(m + 8);
    cc__u128 d0, d1, d2;
    h0 += a0 & CC__M44;
    h1 += ((a0 >> 44) | (a1 << 20)) & CC__M44;
    h2 += ((a1 >> 24) & CC__M42) | hibit;
    d0 = cc__add128(cc__add128(cc__mul64(h0, r0), cc__mul64(h1, s2)), cc__mul64(h2, s1));
    d1 = cc__add128(cc__add128(cc__mul64(h0, r1), cc__mul64(h1, r0)), cc__mul64(h2, s2));
    d2 = cc__add128(cc__add128(cc__mul64(h0, r2), cc__mul64(h1, r1)), cc__mul64(h2, r0));
    CC__POLY_CARRY(d0, d1, d2, h0, h1, h2);
  }
  p->h0 = h0; p->h1 = h1; p->h2 = h2;
}

/* Full reduction mod 2^130-5 (a masked select, no branch), + s mod 2^128. */
static void cc__poly1305_finish(cc__poly1305 *p, unsigned char tag[16]) {
  uint64_t h0 = p->h0, h1 = p->h1, h2 = p->h2, g0, g1, g2, c;
  c = h1 >> 44; h1 &= CC__M44;
  h2 += c; c = h2 >> 42; h2 &= CC__M42;
  h0 += c * 5; c = h0 >> 44; h0 &= CC__M44;
  h1 += c; c = h1 >> 44; h1 &= CC__M44;
  h2 += c; c = h2 >> 42; h2 &= CC__M42;
  h0 += c * 5; c = h0 >> 44; h0 &= CC__M44;
  h1 += c;
  g0 = h0 + 5; c = g0 >> 44; g0 &= CC__M44;             /* g = h + 5 - 2^130 */
  g1 = h1 + c; c = g1 >> 44; g1 &= CC__M44;
  g2 = h2 + c - ((uint64_t)1 << 42);
  c = (g2 >> 63) - 1;                                     /* all ones when h >= p */
  g0 &= c; g1 &= c; g2 &= c;
  c = ~c;
  h0 = (h0 & c) | g0; h1 = (h1 & c) | g1; h2 = (h2 & c) | g2;
  h0 += p->pad0 & CC__M44; c = h0 >> 44; h0 &= CC__M44;
  h1 += (((p->pad0 >> 44) | (p->pad1 << 20)) & CC__M44) + c; c = h1 >> 44; h1 &= CC__M44;
  h2 += ((p->pad1 >> 24) & CC__M42) + c; h2 &= CC__M42;
  cc__put64(tag, h0 | (h1 << 44));
  cc__put64(tag + 8, (h1 >> 20) | (h2 << 24));
}

/* ========================================================= AES-256-GCM */
#if CC__CRYPTO_X86
/* FIPS 197 section 5.2, AES-256 key expansion with AESKEYGENASSIST: a new
   round key is the running XOR of the one two steps back, XORed with the
   broadcast SubWord(RotWord(w)) ^ Rcon (even steps) or SubWord(w) (odd). */
static CC__TARGET_GCM __m128i cc__aes_kx(__m128i k, __m128i t) {
  __m128i s = _mm_slli_si128(k, 4);
  k = _mm_xor_si128(k, s); s = _mm_slli_si128(s, 4);
  k = _mm_xor_si128(k, s); s = _mm_slli_si128(s, 4);
  k = _mm_xor_si128(k, s);
  return _mm_xor_si128(k, t);
}
#define CC__AES_KX2(i, rcon)                                                                        \
  k[i] = cc__aes_kx(k[(i) - 2], _mm_shuffle_epi32(_mm_aeskeygenassist_si128(k[(i) - 1], rcon), 0xff)); \
  k[(i) + 1] = cc__aes_kx(k[(i) - 1], _mm_shuffle_epi32(_mm_aeskeygenassist_si128(k[i], 0), 0xaa))

static CC__TARGET_GCM void cc__aes256_expand(const unsigned char key[32], unsigned char rk[240]) {
  __m128i k[15];
  int i;
  k[0] = _mm_loadu_si128((const __m128i *)(const void *)key);
  k[1] = _mm_loadu_si128((const __m128i *)(const void *)(key + 16));
  CC__AES_KX2(2, 0x01); CC__AES_KX2(4, 0x02); CC__AES_KX2(6, 0x04); CC__AES_KX2(8, 0x08);
  CC__AES_KX2(10, 0x10); CC__AES_KX2(12, 0x20);
  k[14] = cc__aes_kx(k[12], _mm_shuffle_epi32(_mm_aeskeygenassist_si128(k[13], 0x40), 0xff));
  for (i = 0; i < 15; i++) _mm_storeu_si128((__m128i *)(void *)(rk + 16 * i), k[i]);
  cc__crypto_wipe(k, sizeof k);
}

#define CC__CRY_LD(p) _mm_loadu_si128((const __m128i *)(const void *)(p))
#define CC__CRY_ST(p, v) _mm_storeu_si128((__m128i *)(void *)(p), v)

/* One AES-256 block (FIPS 197 section 5.1): 14 rounds. */
static CC__INLINE_GCM __m128i cc__aes256_block(const unsigned char *rk, __m128i b) {
  int i;
  b = _mm_xor_si128(b, CC__CRY_LD(rk));
  for (i = 1; i < 14; i++) b = _mm_aesenc_si128(b, CC__CRY_LD(rk + 16 * i));
  return _mm_aesenclast_si128(b, CC__CRY_LD(rk + 224));
}

/* GHASH (SP 800-38D section 6.4) in GF(2^128) mod x^128 + x^7 + x^2 + x + 1.
   Blocks are byte-reversed on load, so bit i of a register holds the
   coefficient of x^(127-i): the bit-reflected form. The carry-less product
   of two reflected values is the reflected product shifted right by one
   bit, hence the 1-bit left shift before the reduction (the method of
   Gueron and Kounavis, "Intel Carry-Less Multiplication Instruction and its
   Usage for Computing the GCM Mode", Algorithm 5). */
static CC__INLINE_GCM void cc__clmul_acc(__m128i a, __m128i b, __m128i *lo, __m128i *mid, __m128i *hi) {
  *lo = _mm_xor_si128(*lo, _mm_clmulepi64_si128(a, b, 0x00));
  *hi = _mm_xor_si128(*hi, _mm_clmulepi64_si128(a, b, 0x11));
  *mid = _mm_xor_si128(*mid, _mm_xor_si128(_mm_clmulepi64_si128(a, b, 0x01), _mm_clmulepi64_si128(a, b, 0x10)));
}

/* The same with Karatsuba: 3 multiplies; hk = hi64 ^ lo64 of b (low half).
   mid collects (a.hi^a.lo)(b.hi^b.lo) = cross + lo + hi: the caller XORs lo
   and hi into it before reducing. */
static CC__INLINE_GCM void cc__clmul_acc_k(__m128i a, __m128i b, __m128i hk, __m128i *lo, __m128i *mid, __m128i *hi) {
  *lo = _mm_xor_si128(*lo, _mm_clmulepi64_si128(a, b, 0x00));
  *hi = _mm_xor_si128(*hi, _mm_clmulepi64_si128(a, b, 0x11));
  *mid = _mm_xor_si128(*mid, _mm_clmulepi64_si128(_mm_xor_si128(a, _mm_shuffle_epi32(a, 0x4e)), hk, 0x00));
}

/* (lo + mid*2^64 + hi*2^128), the sum of one or more unreduced products,
   to one reduced reflected field element. */
static CC__INLINE_GCM __m128i cc__gf_reduce(__m128i lo, __m128i mid, __m128i hi) {
  __m128i cl, ch, cx, a, b, c;
  lo = _mm_xor_si128(lo, _mm_slli_si128(mid, 8));
  hi = _mm_xor_si128(hi, _mm_srli_si128(mid, 8));
  cl = _mm_srli_epi32(lo, 31);                   /* shift hi:lo left by one bit */
  ch = _mm_srli_epi32(hi, 31);
  lo = _mm_slli_epi32(lo, 1);
  hi = _mm_slli_epi32(hi, 1);
  cx = _mm_srli_si128(cl, 12);
  cl = _mm_slli_si128(cl, 4);
  ch = _mm_slli_si128(ch, 4);
  lo = _mm_or_si128(lo, cl);
  hi = _mm_or_si128(_mm_or_si128(hi, ch), cx);
  a = _mm_slli_epi32(lo, 31);                    /* fold the low half: x^128 = x^7 + x^2 + x + 1 */
  b = _mm_slli_epi32(lo, 30);
  c = _mm_slli_epi32(lo, 25);
  a = _mm_xor_si128(_mm_xor_si128(a, b), c);
  b = _mm_srli_si128(a, 4);
  a = _mm_slli_si128(a, 12);
  lo = _mm_xor_si128(lo, a);
  c = _mm_xor_si128(_mm_xor_si128(_mm_srli_epi32(lo, 1), _mm_srli_epi32(lo, 2)), _mm_srli_epi32(lo, 7));
  c = _mm_xor_si128(c, b);
  lo = _mm_xor_si128(lo, c);
  return _mm_xor_si128(hi, lo);
}

static CC__INLINE_GCM __m128i cc__gf_mul(__m128i a, __m128i b) {
  __m128i lo = _mm_setzero_si128(), mid = lo, hi = lo;
  cc__clmul_acc(a, b, &lo, &mid, &hi);
  return cc__gf_reduce(lo, mid, hi);
}

static CC__INLINE_GCM __m128i cc__bswap128(__m128i v) {
  return _mm_shuffle_epi8(v, _mm_set_epi8(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15));
}

/* X = (X ^ B1)*H^16 ^ B2*H^15 ^ ... ^ B16*H for each 16 blocks, then the
   same for 8 blocks with H^8..H, then X = (X ^ B)*H per block: one reduction
   per 16 (or 8) blocks, Karatsuba products (3 multiplies a block; their
   throughput is the bound, so fewer reductions a block pay: bench/crypto_bench.c
   measures it). In the 16-block loop the block that carries X is multiplied
   last, so the chain from one reduction to the next is one product long.
   hp holds H^16..H^1 (H^8..H^1 from entry 8, H at entry 15), hk their
   Karatsuba halves. */
#define CC__CRY_X8(S) S(0) S(1) S(2) S(3) S(4) S(5) S(6) S(7)
static CC__TARGET_GCM __m128i cc__ghash_blocks(const unsigned char *hp, const unsigned char *hk, __m128i x,
                                              const unsigned char *p, size_t n) {
  for (; n >= 16; n -= 16, p += 256) {
    __m128i lo = _mm_setzero_si128(), mid = lo, hi = lo;
    int j;
    for (j = 15; j >= 1; j--)
      cc__clmul_acc_k(cc__bswap128(CC__CRY_LD(p + 16 * j)), CC__CRY_LD(hp + 16 * j), CC__CRY_LD(hk + 16 * j), &lo, &mid, &hi);
    cc__clmul_acc_k(_mm_xor_si128(cc__bswap128(CC__CRY_LD(p)), x), CC__CRY_LD(hp), CC__CRY_LD(hk), &lo, &mid, &hi);
    x = cc__gf_reduce(lo, _mm_xor_si128(mid, _mm_xor_si128(lo, hi)), hi);
  }
  for (; n >= 8; n -= 8, p += 128) {
    __m128i lo = _mm_setzero_si128(), mid = lo, hi = lo, b0, b1, b2, b3, b4, b5, b6, b7;
#define CC__H_LOAD(j) b##j = cc__bswap128(CC__CRY_LD(p + 16 * (j)));
#define CC__H_MUL(j) cc__clmul_acc_k(b##j, CC__CRY_LD(hp + 16 * (8 + (j))), CC__CRY_LD(hk + 16 * (8 + (j))), &lo, &mid, &hi);
    CC__CRY_X8(CC__H_LOAD)
    b0 = _mm_xor_si128(b0, x);
    CC__CRY_X8(CC__H_MUL)
#undef CC__H_LOAD
#undef CC__H_MUL
    x = cc__gf_reduce(lo, _mm_xor_si128(mid, _mm_xor_si128(lo, hi)), hi);
  }
  for (; n; n--, p += 16) x = cc__gf_mul(_mm_xor_si128(x, cc__bswap128(CC__CRY_LD(p))), CC__CRY_LD(hp + 240));
  return x;
}

/* 16 blocks per reduction with 256-bit VPCLMULQDQ: register j holds blocks
   2j and 2j+1, multiplied by H^(16-2j) and H^(15-2j), which are adjacent in
   the descending table. The two 128-bit halves are summed before reducing. */
static CC__TARGET_VCLMUL __m128i cc__ghash_blocks16(const unsigned char *hp, const unsigned char *hk, __m128i x,
                                                   const unsigned char *p, size_t n16) {
  const __m256i bs = _mm256_setr_epi8(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0,
                                      15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0);
  for (; n16; n16--, p += 256) {
    __m256i lo = _mm256_setzero_si256(), mid = lo, hi = lo, a0, a1, a2, a3, a4, a5, a6, a7;
    __m128i l, m, h;
#define CC__V_LOAD(j) a##j = _mm256_shuffle_epi8(_mm256_loadu_si256((const __m256i *)(const void *)(p + 32 * (j))), bs);
#define CC__V_MUL(j)                                                                                              \
    {                                                                                                             \
      __m256i hj = _mm256_loadu_si256((const __m256i *)(const void *)(hp + 32 * (j)));                            \
      __m256i kj = _mm256_loadu_si256((const __m256i *)(const void *)(hk + 32 * (j)));                            \
      lo = _mm256_xor_si256(lo, _mm256_clmulepi64_epi128(a##j, hj, 0x00));                                       \
      hi = _mm256_xor_si256(hi, _mm256_clmulepi64_epi128(a##j, hj, 0x11));                                       \
      mid = _mm256_xor_si256(mid, _mm256_clmulepi64_epi128(_mm256_xor_si256(a##j, _mm256_shuffle_epi32(a##j, 0x4e)), kj, 0x00)); \
    }
    CC__CRY_X8(CC__V_LOAD)
    a0 = _mm256_xor_si256(a0, _mm256_set_m128i(_mm_setzero_si128(), x));
    CC__CRY_X8(CC__V_MUL)
#undef CC__V_LOAD
#undef CC__V_MUL
    l = _mm_xor_si128(_mm256_castsi256_si128(lo), _mm256_extracti128_si256(lo, 1));
    m = _mm_xor_si128(_mm256_castsi256_si128(mid), _mm256_extracti128_si256(mid, 1));
    h = _mm_xor_si128(_mm256_castsi256_si128(hi), _mm256_extracti128_si256(hi, 1));
    x = cc__gf_reduce(l, _mm_xor_si128(m, _mm_xor_si128(l, h)), h);
  }
  return x;
}

static CC__TARGET_GCM void cc__ghash_update(unsigned char xs[16], const unsigned char *hp, const unsigned char *hk,
                                            const unsigned char *p, size_t n) {
  __m128i x = CC__CRY_LD(xs);
  if (n >= 16 && (cc__crypto_cpu() & CC__CPU_VCLMUL)) {
    x = cc__ghash_blocks16(hp, hk, x, p, n / 16);
    p += (n & ~(size_t)15) * 16;
    n &= 15;
  }
  CC__CRY_ST(xs, cc__ghash_blocks(hp, hk, x, p, n));
}

/* The counter block: the 12 bytes of nonce, then ctr big-endian; the base
   is the one with ctr 0. */
static CC__INLINE_GCM __m128i cc__gcm_base(const unsigned char nonce[12]) {
  unsigned char nb[16];
  memcpy(nb, nonce, 12);
  memset(nb + 12, 0, 4);
  return CC__CRY_LD(nb);
}

static CC__INLINE_GCM __m128i cc__gcm_ctr(__m128i base, uint32_t ctr) {
  return _mm_insert_epi32(base, (int)__builtin_bswap32(ctr), 3);
}

/* CTR keystream XOR + GHASH of the ciphertext over nblocks whole blocks,
   8 at a time: E(K, nonce||ctr), E(K, nonce||ctr+1), ... (inc32). All loads of
   a group come before its stores, so in == out is fine. Returns the new X.
   The 8 lanes are written out (CC__CRY_X8) so that they stay in registers. */
static CC__TARGET_GCM __m128i cc__gcm_crypt_blocks(const unsigned char *rk, const unsigned char *hp,
                                                  const unsigned char *hk, __m128i x,
                                                  const unsigned char nonce[12], uint32_t ctr,
                                                  const unsigned char *in, unsigned char *out, size_t nblocks,
                                                  int enc) {
  __m128i base = cc__gcm_base(nonce);
  for (; nblocks >= 8; nblocks -= 8, in += 128, out += 128, ctr += 8) {
    __m128i b0, b1, b2, b3, b4, b5, b6, b7, d0, d1, d2, d3, d4, d5, d6, d7, lo, mid, hi, k;
    int r;
    k = CC__CRY_LD(rk);
#define CC__G_CTR(j) b##j = _mm_xor_si128(cc__gcm_ctr(base, ctr + (uint32_t)(j)), k);
#define CC__G_ENC(j) b##j = _mm_aesenc_si128(b##j, k);
#define CC__G_LAST(j) d##j = CC__CRY_LD(in + 16 * (j)); b##j = _mm_xor_si128(_mm_aesenclast_si128(b##j, k), d##j);
#define CC__G_STORE(j) CC__CRY_ST(out + 16 * (j), b##j);
#define CC__G_HASH(j) \
    cc__clmul_acc_k(cc__bswap128(enc ? b##j : d##j), CC__CRY_LD(hp + 16 * (8 + (j))), CC__CRY_LD(hk + 16 * (8 + (j))), &lo, &mid, &hi);
    CC__CRY_X8(CC__G_CTR)
    for (r = 1; r < 14; r++) {
      k = CC__CRY_LD(rk + 16 * r);
      CC__CRY_X8(CC__G_ENC)
    }
    k = CC__CRY_LD(rk + 224);
    CC__CRY_X8(CC__G_LAST)                                        /* b: the output blocks */
    CC__CRY_X8(CC__G_STORE)
    lo = mid = hi = _mm_setzero_si128();
    if (enc) b0 = _mm_xor_si128(b0, cc__bswap128(x));          /* GHASH runs over the ciphertext */
    else d0 = _mm_xor_si128(d0, cc__bswap128(x));
    CC__CRY_X8(CC__G_HASH)
    x = cc__gf_reduce(lo, _mm_xor_si128(mid, _mm_xor_si128(lo, hi)), hi);
#undef CC__G_CTR
#undef CC__G_ENC
#undef CC__G_LAST
#undef CC__G_STORE
#undef CC__G_HASH
  }
  for (; nblocks; nblocks--, in += 16, out += 16, ctr++) {
    __m128i d = CC__CRY_LD(in), o = _mm_xor_si128(cc__aes256_block(rk, cc__gcm_ctr(base, ctr)), d);
    CC__CRY_ST(out, o);
    x = cc__gf_mul(_mm_xor_si128(x, cc__bswap128(enc ? o : d)), CC__CRY_LD(hp + 240));
  }
  return x;
}

/* The same, 16 blocks per step with 256-bit VAES and VPCLMULQDQ: register j
   holds counter blocks ctr+2j and ctr+2j+1 (the counter kept as host-order
   32-bit lanes, incremented mod 2^32 as inc32 wants, and byte-swapped into
   place), then the 16 ciphertext blocks are hashed as in cc__ghash_blocks16. */
static CC__TARGET_VAES __m128i cc__gcm_crypt16(const unsigned char *rk, const unsigned char *hp,
                                              const unsigned char *hk, __m128i x, const unsigned char nonce[12],
                                              uint32_t ctr, const unsigned char *in, unsigned char *out, size_t n16,
                                              int enc) {
  const __m256i bs = _mm256_setr_epi8(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0,
                                      15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0);
  const __m256i cswap = _mm256_setr_epi8(-1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, 15, 14, 13, 12,
                                         -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, 15, 14, 13, 12);
  const __m256i two = _mm256_setr_epi32(0, 0, 0, 2, 0, 0, 0, 2);
  __m256i base = _mm256_broadcastsi128_si256(cc__gcm_base(nonce));
  __m256i cv = _mm256_setr_epi32(0, 0, 0, (int)ctr, 0, 0, 0, (int)(ctr + 1));
  for (; n16; n16--, in += 256, out += 256) {
    __m256i b0, b1, b2, b3, b4, b5, b6, b7, d0, d1, d2, d3, d4, d5, d6, d7, k;
    __m256i lo = _mm256_setzero_si256(), mid = lo, hi = lo;
    __m128i l, m, h;
    int r;
    k = _mm256_broadcastsi128_si256(CC__CRY_LD(rk));
#define CC__W_CTR(j) b##j = _mm256_xor_si256(_mm256_or_si256(base, _mm256_shuffle_epi8(cv, cswap)), k); cv = _mm256_add_epi32(cv, two);
#define CC__W_ENC(j) b##j = _mm256_aesenc_epi128(b##j, k);
#define CC__W_LAST(j)                                                                                          \
    d##j = _mm256_loadu_si256((const __m256i *)(const void *)(in + 32 * (j)));                                   \
    b##j = _mm256_xor_si256(_mm256_aesenclast_epi128(b##j, k), d##j);
#define CC__W_STORE(j) _mm256_storeu_si256((__m256i *)(void *)(out + 32 * (j)), b##j);
#define CC__W_HASH(j)                                                                                          \
    {                                                                                                          \
      __m256i a_ = _mm256_shuffle_epi8(enc ? b##j : d##j, bs);                                                 \
      __m256i hj = _mm256_loadu_si256((const __m256i *)(const void *)(hp + 32 * (j)));                         \
      __m256i kj = _mm256_loadu_si256((const __m256i *)(const void *)(hk + 32 * (j)));                         \
      if ((j) == 0) a_ = _mm256_xor_si256(a_, _mm256_set_m128i(_mm_setzero_si128(), x));                       \
      lo = _mm256_xor_si256(lo, _mm256_clmulepi64_epi128(a_, hj, 0x00));                                       \
      hi = _mm256_xor_si256(hi, _mm256_clmulepi64_epi128(a_, hj, 0x11));                                       \
      mid = _mm256_xor_si256(mid, _mm256_clmulepi64_epi128(_mm256_xor_si256(a_, _mm256_shuffle_epi32(a_, 0x4e)), kj, 0x00)); \
    }
    CC__CRY_X8(CC__W_CTR)
    for (r = 1; r < 14; r++) {
      k = _mm256_broadcastsi128_si256(CC__CRY_LD(rk + 16 * r));
      CC__CRY_X8(CC__W_ENC)
    }
    k = _mm256_broadcastsi128_si256(CC__CRY_LD(rk + 224));
    CC__CRY_X8(CC__W_LAST)
    CC__CRY_X8(CC__W_STORE)
    CC__CRY_X8(CC__W_HASH)
#undef CC__W_CTR
#undef CC__W_ENC
#undef CC__W_LAST
#undef CC__W_STORE
#undef CC__W_HASH
    l = _mm_xor_si128(_mm256_castsi256_si128(lo), _mm256_extracti128_si256(lo, 1));
    m = _mm_xor_si128(_mm256_castsi256_si128(mid), _mm256_extracti128_si256(mid, 1));
    h = _mm_xor_si128(_mm256_castsi256_si128(hi), _mm256_extracti128_si256(hi, 1));
    x = cc__gf_reduce(l, _mm_xor_si128(m, _mm_xor_si128(l, h)), h);
  }
  return x;
}

static CC__TARGET_GCM void cc__gcm_crypt(const unsigned char *rk, const unsigned char *hp, const unsigned char *hk,
                                         unsigned char xs[16],
                                         const unsigned char nonce[12], uint32_t ctr, const unsigned char *in,
                                         unsigned char *out, size_t nblocks, int enc) {
  __m128i x = CC__CRY_LD(xs);
  if (nblocks >= 16 && (cc__crypto_cpu() & (CC__CPU_VAES | CC__CPU_VCLMUL)) == (CC__CPU_VAES | CC__CPU_VCLMUL)) {
    size_t n16 = nblocks / 16;
    x = cc__gcm_crypt16(rk, hp, hk, x, nonce, ctr, in, out, n16, enc);
    ctr += (uint32_t)(n16 * 16);
    in += n16 * 256; out += n16 * 256; nblocks -= n16 * 16;
  }
  CC__CRY_ST(xs, cc__gcm_crypt_blocks(rk, hp, hk, x, nonce, ctr, in, out, nblocks, enc));
}

/* One keystream block E(K, nonce||ctr) into out. */
static CC__TARGET_GCM void cc__gcm_keystream(const unsigned char *rk, const unsigned char nonce[12], uint32_t ctr,
                                             unsigned char out[16]) {
  CC__CRY_ST(out, cc__aes256_block(rk, cc__gcm_ctr(cc__gcm_base(nonce), ctr)));
}

#endif /* CC__CRYPTO_X86 */

/* ================================================================ AEAD
   One streaming interface covers both suites: cc__aead_setkey once per key;
   per message cc__aead_begin, cc__aead_aad any number of times (first), then
   cc__aead_encrypt or cc__aead_decrypt (in == out allowed, no other overlap),
   then cc__aead_final or cc__aead_verify. Each returns 0, or -1 on misuse, an
   over-long message, an unavailable suite or a wrong tag; after a -1 the
   message refuses everything until the next begin. Any split of the AAD and
   of the payload gives the same output and tag as one call. Integrity only =
   all data as AAD, no payload (GMAC for GCM; for ChaCha20-Poly1305 the
   Poly1305 pass under the per-message key).
   The transport reaches the suites only through these, and cc__aead_suite_of
   maps the handshake's suite numbers to implementations. A build that would
   rather use a system library for a suite (OpenSSL's EVP, the kernel's crypto
   API) fills a cc__aead_suite with its own functions, keeps its state behind
   the key's and the message's impl pointers, and has cc__aead_suite_of return
   it: nothing else changes. */
typedef struct cc__aead_suite cc__aead_suite;

typedef struct cc__aead_key {
  int suite;                             /* CC__AEAD_*; 0 before setkey */
  const cc__aead_suite *ops;             /* its implementation; NULL before setkey */
  void *impl;                            /* a plugged-in implementation's key state */
  unsigned char key[32];                 /* ChaCha20-Poly1305: the key */
  unsigned char rk[240];                 /* AES-256-GCM: the 15 round keys */
  unsigned char hp[256];                 /* AES-256-GCM: H^16, H^15, ..., H^1, reflected */
  unsigned char hk[256];                 /* AES-256-GCM: hi64 ^ lo64 of each, for Karatsuba */
} cc__aead_key;

typedef struct cc__aead {
  const cc__aead_key *key;
  int phase;                             /* 0 AAD, 1 payload, 2 finished, 3 failed */
  void *impl;                            /* a plugged-in implementation's message state */
  unsigned nmac, nks;                    /* bytes in mbuf; unused bytes at the end of ks */
  uint64_t aadlen, msglen;
  unsigned char mbuf[16];                /* partial MAC block */
  unsigned char ks[64];                  /* keystream of the current partial block */
  /* ChaCha20-Poly1305 */
  uint32_t cst[16];                      /* ChaCha20 state; word 12 is the next block */
  cc__poly1305 poly;
  /* AES-256-GCM */
  uint32_t ctr;                          /* next counter */
  unsigned char nonce[12];               /* the first 96 bits of J0 */
  unsigned char ekj0[16];                /* E(K, J0), which masks the tag */
  unsigned char x[16];                   /* GHASH accumulator, reflected */
} cc__aead;

/* One suite. Each function returns 0, or -1 (then phase 3: the message refuses
   everything until the next begin). setkey gets k zeroed but for suite and
   ops; begin gets s zeroed but for key; aad, crypt and final get a message in
   phase 0 or 1 (cc__aead_usable); final leaves the state wiped (phase 2). */
struct cc__aead_suite {
  int (*available)(void);                /* 1 when this CPU and build run it */
  int (*setkey)(cc__aead_key *k, const unsigned char key[32]);
  int (*begin)(cc__aead *s, const unsigned char nonce[12]);
  int (*aad)(cc__aead *s, const void *aad, size_t n);               /* phase 0 only */
  int (*crypt)(cc__aead *s, const void *in, void *out, size_t n, int enc);   /* in == out allowed */
  int (*final)(cc__aead *s, unsigned char tag[16]);
};

static int cc__chapo_available(void) { return 1; }

static int cc__chapo_setkey(cc__aead_key *k, const unsigned char key[32]) {
  memcpy(k->key, key, 32);
  return 0;
}

/* Starts a message under nonce (12 bytes; never twice under one key). */
static int cc__chapo_begin(cc__aead *s, const unsigned char nonce[12]) {
  unsigned char otk[64];
  cc__chacha20_init(s->cst, s->key->key, 0, nonce);      /* RFC 8439 section 2.6: block 0 keys Poly1305 */
  cc__chacha20_block(s->cst, otk);
  cc__poly1305_init(&s->poly, otk);
  cc__crypto_wipe(otk, sizeof otk);
  s->cst[12] = 1;                                       /* the payload starts at block 1 */
  return 0;
}

#if CC__CRYPTO_X86
static int cc__gcm_available(void) { return (cc__crypto_cpu() & CC__CPU_GCM) != 0; }

/* Round keys, then H = E(K, 0^128) and its powers H^1..H^16, reflected. */
static CC__TARGET_GCM int cc__gcm_setkey(cc__aead_key *k, const unsigned char key[32]) {
  __m128i h, p = _mm_setzero_si128();
  int i;
  cc__aes256_expand(key, k->rk);
  h = cc__bswap128(cc__aes256_block(k->rk, _mm_setzero_si128()));
  for (i = 1; i <= 16; i++) {                            /* H^i at entry 16 - i */
    p = i > 1 ? cc__gf_mul(p, h) : h;
    CC__CRY_ST(k->hp + 16 * (16 - i), p);
    CC__CRY_ST(k->hk + 16 * (16 - i), _mm_xor_si128(p, _mm_shuffle_epi32(p, 0x4e)));
  }
  return 0;
}

static int cc__gcm_begin(cc__aead *s, const unsigned char nonce[12]) {   /* SP 800-38D section 7.1 */
  memcpy(s->nonce, nonce, 12);
  cc__gcm_keystream(s->key->rk, s->nonce, 1, s->ekj0);  /* E(K, J0), J0 = nonce || 1 */
  s->ctr = 2;                                           /* inc32(J0) */
  return 0;
}
#endif

static void cc__aead_fail(cc__aead *s) {
  const cc__aead_key *k = s->key;
  cc__crypto_wipe(s, sizeof *s);
  s->key = k;
  s->phase = 3;
}

/* Whole 16-byte blocks into the MAC. */
static void cc__aead_mac_blocks(cc__aead *s, const unsigned char *p, size_t nblocks) {
  if (s->key->suite == CC__AEAD_CHACHA20_POLY1305) {
    cc__poly1305_blocks(&s->poly, p, nblocks, (uint64_t)1 << 40);
    return;
  }
#if CC__CRYPTO_X86
  cc__ghash_update(s->x, s->key->hp, s->key->hk, p, nblocks);
#endif
}

/* Any bytes into the MAC, buffering a partial block. */
static void cc__aead_mac(cc__aead *s, const unsigned char *p, size_t n) {
  if (!n) return;
  if (s->nmac) {
    size_t k = CC__MIN((size_t)(16 - s->nmac), n);
    memcpy(s->mbuf + s->nmac, p, k);
    s->nmac += (unsigned)k; p += k; n -= k;
    if (s->nmac < 16) return;
    cc__aead_mac_blocks(s, s->mbuf, 1);
    s->nmac = 0;
  }
  if (n >= 16) {
    cc__aead_mac_blocks(s, p, n / 16);
    p += n & ~(size_t)15;
    n &= 15;
  }
  if (n) { memcpy(s->mbuf, p, n); s->nmac = (unsigned)n; }
}

/* Zero-pads a partial MAC block (RFC 8439 padding1/padding2; GCM's 0^v, 0^u). */
static void cc__aead_mac_pad(cc__aead *s) {
  if (!s->nmac) return;
  memset(s->mbuf + s->nmac, 0, 16 - s->nmac);
  cc__aead_mac_blocks(s, s->mbuf, 1);
  s->nmac = 0;
}

/* More associated data: only before any payload. */
static int cc__aead_builtin_aad(cc__aead *s, const void *aad, size_t n) {
  if (s->phase != 0 || (uint64_t)n > CC__AEAD_AMAX - s->aadlen) { cc__aead_fail(s); return -1; }
  s->aadlen += n;
  cc__aead_mac(s, (const unsigned char *)aad, n);
  return 0;
}

/* Uses up to n bytes of the keystream left over from the last partial block. */
static size_t cc__aead_leftover(cc__aead *s, const unsigned char *in, unsigned char *out, size_t n, int enc,
                                size_t bsize) {
  size_t take = CC__MIN(n, (size_t)s->nks);
  if (!take) return 0;
  if (!enc) cc__aead_mac(s, in, take);                    /* the MAC reads the ciphertext before in == out is overwritten */
  cc__xor_bytes(out, in, s->ks + (bsize - s->nks), take);
  if (enc) cc__aead_mac(s, out, take);
  s->nks -= (unsigned)take;
  return take;
}

/* Whole keystream blocks; for ChaCha20 4 KiB at a time so that the MAC reads
   the bytes while they are in L1. */
static void cc__aead_bulk(cc__aead *s, const unsigned char *in, unsigned char *out, size_t nblocks, int enc) {
  if (s->key->suite == CC__AEAD_CHACHA20_POLY1305) {
    while (nblocks) {
      size_t m = CC__MIN(nblocks, (size_t)64);
      if (!enc) cc__aead_mac(s, in, m * 64);
      cc__chacha20_xor_blocks(s->cst, in, out, m);
      if (enc) cc__aead_mac(s, out, m * 64);
      in += m * 64; out += m * 64; nblocks -= m;
    }
    return;
  }
#if CC__CRYPTO_X86
  cc__gcm_crypt(s->key->rk, s->key->hp, s->key->hk, s->x, s->nonce, s->ctr, in, out, nblocks, enc);
  s->ctr += (uint32_t)nblocks;
#endif
}

static int cc__aead_builtin_crypt(cc__aead *s, const void *inv, void *outv, size_t n, int enc) {
  const unsigned char *in = (const unsigned char *)inv;
  unsigned char *out = (unsigned char *)outv;
  int chacha = s->key->suite == CC__AEAD_CHACHA20_POLY1305;
  size_t bsize = chacha ? 64 : 16, t;
  uint64_t pmax = chacha ? CC__CHACHA_PMAX : CC__GCM_PMAX;
  if ((uint64_t)n > pmax - s->msglen) { cc__aead_fail(s); return -1; }
  if (s->phase == 0) { cc__aead_mac_pad(s); s->phase = 1; }
  if (!n) return 0;
  s->msglen += n;
  t = cc__aead_leftover(s, in, out, n, enc, bsize);
  in += t; out += t; n -= t;
  if (n >= bsize) {
    size_t nb = n / bsize;
    cc__aead_bulk(s, in, out, nb, enc);
    in += nb * bsize; out += nb * bsize; n -= nb * bsize;
  }
  if (n) {                                                /* a partial block: keep its keystream */
    if (chacha) {
      cc__chacha20_block(s->cst, s->ks);
      s->cst[12]++;
    }
#if CC__CRYPTO_X86
    else cc__gcm_keystream(s->key->rk, s->nonce, s->ctr++, s->ks);
#endif
    s->nks = (unsigned)bsize;
    cc__aead_leftover(s, in, out, n, enc, bsize);
  }
  return 0;
}

/* The 16-byte tag; the state is wiped (a new message needs a new begin). */
static int cc__aead_builtin_final(cc__aead *s, unsigned char tag[16]) {
  unsigned char lb[16];
  int i;
  cc__aead_mac_pad(s);
  if (s->key->suite == CC__AEAD_CHACHA20_POLY1305) {      /* RFC 8439 section 2.8: le64(aad) le64(ct) */
    cc__put64(lb, s->aadlen);
    cc__put64(lb + 8, s->msglen);
    cc__poly1305_blocks(&s->poly, lb, 1, (uint64_t)1 << 40);
    cc__poly1305_finish(&s->poly, tag);
  } else {                                                /* SP 800-38D: [len(A)]64 [len(C)]64 in bits */
    cc__st64be(lb, s->aadlen * 8);
    cc__st64be(lb + 8, s->msglen * 8);
    cc__aead_mac_blocks(s, lb, 1);
    for (i = 0; i < 16; i++) tag[i] = (unsigned char)(s->x[15 - i] ^ s->ekj0[i]);
  }
  cc__crypto_wipe(s, sizeof *s);
  s->phase = 2;
  return 0;
}

static const cc__aead_suite cc__aead_chapo = {
  cc__chapo_available, cc__chapo_setkey, cc__chapo_begin, cc__aead_builtin_aad, cc__aead_builtin_crypt,
  cc__aead_builtin_final
};
#if CC__CRYPTO_X86
static const cc__aead_suite cc__aead_gcm = {
  cc__gcm_available, cc__gcm_setkey, cc__gcm_begin, cc__aead_builtin_aad, cc__aead_builtin_crypt,
  cc__aead_builtin_final
};
#endif

/* The implementation of suite id where this CPU and build run it, else NULL. */
static const cc__aead_suite *cc__aead_suite_of(int id) {
  const cc__aead_suite *a = NULL;
  if (id == CC__AEAD_CHACHA20_POLY1305) a = &cc__aead_chapo;
#if CC__CRYPTO_X86
  else if (id == CC__AEAD_AES256_GCM) a = &cc__aead_gcm;
#endif
  return a && a->available() ? a : NULL;
}

/* ---- the interface the transport uses (described above) */

/* 1 when this CPU (and this build) can run AES-256-GCM. */
static int cc__aead_have_gcm(void) { return cc__aead_suite_of(CC__AEAD_AES256_GCM) != NULL; }

/* Expands a 32-byte key for suite. 0, or -1 (k zeroed) for an unknown suite
   or one this CPU does not run (AES-256-GCM without AES-NI/PCLMULQDQ). */
static int cc__aead_setkey(cc__aead_key *k, int suite, const unsigned char key[32]) {
  const cc__aead_suite *a = cc__aead_suite_of(suite);
  memset(k, 0, sizeof *k);
  if (!a) return -1;
  k->suite = suite;
  k->ops = a;
  if (a->setkey(k, key) != 0) { cc__crypto_wipe(k, sizeof *k); return -1; }
  return 0;
}

static int cc__aead_begin(cc__aead *s, const cc__aead_key *k, const unsigned char nonce[12]) {
  memset(s, 0, sizeof *s);
  s->key = k;
  if (!k->ops) { s->phase = 3; return -1; }
  return k->ops->begin(s, nonce);
}

/* A message finished (its key wiped with it) or failed refuses everything. */
static int cc__aead_usable(cc__aead *s) {
  if (s->key && s->key->ops && s->phase <= 1) return 1;
  cc__aead_fail(s);
  return 0;
}

static int cc__aead_aad(cc__aead *s, const void *aad, size_t n) {
  return cc__aead_usable(s) ? s->key->ops->aad(s, aad, n) : -1;
}

static int cc__aead_encrypt(cc__aead *s, const void *in, void *out, size_t n) {
  return cc__aead_usable(s) ? s->key->ops->crypt(s, in, out, n, 1) : -1;
}

/* The plaintext is not authentic until cc__aead_verify says so. */
static int cc__aead_decrypt(cc__aead *s, const void *in, void *out, size_t n) {
  return cc__aead_usable(s) ? s->key->ops->crypt(s, in, out, n, 0) : -1;
}

static int cc__aead_final(cc__aead *s, unsigned char tag[16]) {
  return cc__aead_usable(s) ? s->key->ops->final(s, tag) : -1;
}

/* 0 when tag (16 bytes) is the message's tag, compared in constant time;
   -1 otherwise. The state is wiped either way. */
static int cc__aead_verify(cc__aead *s, const unsigned char tag[16]) {
  unsigned char t[16];
  int ok;
  if (cc__aead_final(s, t) != 0) return -1;
  ok = cc__ct_equal(t, tag, 16);
  cc__crypto_wipe(t, sizeof t);
  return ok ? 0 : -1;
}

#else /* !CC__HAVE_TCP */
/* CC_NO_TCP: no connection ever opens, so there are no keys and no ciphers.
   What @tcp and @engine name compiles to nothing that runs, and leaves no
   symbol behind. */
typedef struct cc__aead_key { int suite; } cc__aead_key;
typedef struct cc__aead { int phase; } cc__aead;
#define cc__aead_have_gcm() 0
#define cc__aead_setkey(k, suite, key) ((void)(k), (void)(suite), (void)(key), -1)
#define cc__aead_begin(s, k, nonce) ((void)(s), (void)(k), (void)(nonce), -1)
#define cc__aead_aad(s, p, n) ((void)(s), (void)(p), (void)(n), -1)
#define cc__aead_encrypt(s, in, out, n) ((void)(s), (void)(in), (void)(out), (void)(n), -1)
#define cc__aead_decrypt(s, in, out, n) ((void)(s), (void)(in), (void)(out), (void)(n), -1)
#define cc__aead_final(s, tag) ((void)(s), (void)(tag), -1)
#define cc__aead_verify(s, tag) ((void)(s), (void)(tag), -1)
#define cc__hkdf_sha256_extract(salt, saltlen, ikm, ikmlen, prk) \
  ((void)(salt), (void)(saltlen), (void)(ikm), (void)(ikmlen), cc__crypto_wipe((prk), 32))
#define cc__hkdf_sha256_expand(prk, prklen, info, infolen, out, outlen) \
  ((void)(prk), (void)(prklen), (void)(info), (void)(infolen), (void)(out), (void)(outlen), -1)
#endif /* CC__HAVE_TCP */

/* ============================================================== @base */
/* What every section above the platform shares: the internal types (the
   communicator, a call, the shared-memory structures, messages and links) and
   the enums that name them, errors and logging (cc__fail), and the settings,
   read once from cc_config and the environment (cc__settings_read). */

/* A function the companion headers (cc_cuda.cuh) call, maybe nothing here. */
#if defined(__GNUC__) || defined(__clang__)
#  define CC__COMPANION static __attribute__((unused))
#else
#  define CC__COMPANION static
#endif

#define CC__LINE          64
#define CC__DESC_BYTES    56                   /* call descriptor at the head of a half */
#define CC__OP_FIRST_USER CC_OP_BUILTIN_COUNT
#define CC__MAX_LOCAL     256                  /* ranks of one communicator on one host */
#define CC__QUEUE_RANKS   16                   /* queued calls (@algo) up to this many ranks: a root sends n-1 frames */
#define CC__FRAME         48                   /* a message's header on every link */
#define CC__TAG           16                   /* an AEAD tag (TCP links with a token) */
#define CC__ABORT_MAX     300                  /* an abort frame's payload, at most */
#define CC__ERR_BYTES     320

/* The calls. A rank's descriptor carries its call, so that ranks whose calls
   disagree can tell (CC_ERR_MISMATCH). */
enum {
  CC__NONE, CC__BARRIER, CC__BROADCAST, CC__REDUCE, CC__ALL_REDUCE, CC__GATHER,
  CC__ALL_GATHER, CC__SCATTER, CC__REDUCE_SCATTER, CC__ALL_TO_ALL, CC__GATHER_V,
  CC__ALL_GATHER_V, CC__SCATTER_V, CC__ALL_TO_ALL_V, CC__SEND, CC__RECV,
  CC__SPLIT, CC__INIT, CC__MEM_ALLOC, CC__MEM_FREE, CC__COLL_COUNT
};
static const char *const cc__coll_names[CC__COLL_COUNT] = {
  "?", "barrier", "broadcast", "reduce", "all_reduce", "gather", "all_gather",
  "scatter", "reduce_scatter", "all_to_all", "gather_v", "all_gather_v",
  "scatter_v", "all_to_all_v", "send", "recv", "comm_split", "comm_init", "mem_alloc", "mem_free"
};

static const char *cc__coll_name(int coll) {
  return coll > 0 && coll < CC__COLL_COUNT ? cc__coll_names[coll] : "?";
}

typedef enum cc__opkind { CC__OPK_FREE, CC__OPK_USER, CC__OPK_PREMUL } cc__opkind;

/* How bytes reach a peer: itself, a ring in the host's shared segment, TCP. */
typedef enum cc__link { CC__LINK_NONE, CC__LINK_SELF, CC__LINK_SHM, CC__LINK_TCP } cc__link;

typedef enum cc__transport { CC__TR_AUTO, CC__TR_SHM, CC__TR_TCP } cc__transport;

enum { CC__LOG_OFF, CC__LOG_WARN, CC__LOG_INFO, CC__LOG_TRACE };
#define CC__CMA_AUTO 2                 /* CC_SHM_CMA=auto: cross-memory attach where measured faster */
#define CC__LOG_ALWAYS CC__LOG_OFF     /* a warning shown whatever CC_DEBUG says */

/* Message tags: >= 0 the user's; these below carry the library's own. */
#define CC__TAG_COLL  (-2)                     /* a collective's data */
#define CC__TAG_ABORT (-3)                     /* a failure, for every rank */
#define CC__TAG_BYE   (-4)                     /* leaving: the number and identity of its last collective */

/* ---------------------------------------------------------------- settings */

typedef struct cc__settings {
  int rank, size, local_size;          /* -1: not given */
  const char *rank_var, *size_var;     /* where they came from, for messages */
  char master_addr[256];               /* "": none */
  int master_port;                     /* 0: none */
  char master_err[160];                /* what is malformed about them, or "" */
  char job_id[40];                     /* CC_JOB_ID: "" when not under ccrun */
  int transport;                       /* cc__transport */
  char token[256];                     /* "": none */
  const char *token_from;              /* "CC_TOKEN" or "cfg.token" (messages) */
  int net_encrypt;                     /* CC_NET_ENCRYPT=1: TCP payloads encrypted too */
  size_t max_unexpected;               /* CC_MAX_UNEXPECTED: bytes of unexpected messages a communicator holds */
  uint64_t timeout_ns;
  int debug;
  long spin_us, small_bytes;           /* -1: the default for the oversubscription */
  size_t shm_chunk;                    /* 0: the default for the number of ranks */
  size_t stream_bytes, net_chunk, net_small_bytes, net_sockbuf;
  int shm_cma;                         /* CC_SHM_CMA: cross-memory attach 0 never, 1 where allowed, CC__CMA_AUTO */
  uint32_t tune_first, tune_most, tune_ask;   /* CC_SHM_TUNE_*: CC_SHM_CMA=auto's runs between tries */
  uint32_t tune_gain, tune_drift;      /* ... and its margins, in percent (cc__tune_step) */
  size_t direct_bytes;                 /* CC_SHM_DIRECT_BYTES: from this size, read peers' buffers directly */
  size_t queue_bytes;                  /* CC_SHM_QUEUE_BYTES: broadcasts up to this (scatters, gathers: all parts) go queued */
  char ifname[64];
  uint64_t spawn_grace_ns;
  uint64_t warn_ns;                    /* a wait this long prints a warning (0: never) */
  uint64_t refused_grace_ns;           /* CC_REFUSED_GRACE: a refused rank this long absent fails the rendezvous (0: never) */
  int require_launcher;                /* no launcher's variables is an error */
  int no_launcher;                     /* none were set: a world of one */
} cc__settings;

/* ---------------------------------------------------------------- shared memory */

/* What the ranks' calls must agree on, compared whole (never a hash that might collide). */
typedef struct cc__ident {
  uint64_t count;             /* non-v: the count; v: this rank's own count */
  int32_t op;                 /* reducing calls only, else 0 */
  int32_t root;               /* rooted calls only, else 0 */
  uint8_t coll, dtype;
} cc__ident;

/* A call's descriptor, heading a rank's half (a small message's data shares its line). */
#define CC__AUX_DIRECT (~(uint64_t)0)   /* cc__desc.aux of a direct call's first phase (cc__first_end) */
typedef struct cc__desc {
  uint64_t step;              /* the phase it belongs to, stored last: the first phase's wait */
  uint64_t count;             /* as cc__ident */
  uint64_t aux;               /* v: largest block this rank sends, in bytes; CC__AUX_DIRECT: a direct first phase */
  uint64_t qhist;             /* the digest of this rank's queued calls so far (@algo) */
  unsigned char scal[16];     /* premul_sum: this rank's scalar */
  int32_t op;
  int16_t root;               /* ranks on one host are at most CC__MAX_LOCAL */
  uint8_t coll, dtype;
} cc__desc;

/* The segment: one page of header, a control block per rank, two halves of
   arena per rank, then one channel per ordered pair of ranks (docs/shm.md). */
typedef struct cc__hdr {
  uint64_t magic;                      /* written last by the creator */
  uint32_t version, nranks;
  uint64_t half_bytes, chan_bytes, seg_bytes;
  uint32_t mapped;                     /* ranks that mapped it; the last unlinks */
  uint32_t membar;                     /* ranks registered for the asymmetric fence (cc__comm_ready) */
  char pad1[CC__LINE - 44];
  uint32_t fail_code;                  /* first failure posted by any rank */
  int32_t fail_rank;
  uint32_t fail_ready;
  uint32_t pad2;
  char fail_msg[CC__LINE * 3 - 16];
  uint32_t bell;                       /* futex word: bumped when a sleeper may wake */
  char pad3[CC__LINE - 4];
  uint32_t sleepers;                   /* ranks asleep on bell */
  char pad4[CC__LINE - 4];
} cc__hdr;

typedef struct cc__ctl {
  uint64_t arrive;                     /* last phase this rank arrived at */
  char pad0[CC__LINE - 8];
  int32_t pid;
  uint32_t departed;                   /* called cc_comm_destroy */
  uint64_t call;                       /* the last collective it entered: cc__call_word */
  uint64_t probe_at;                   /* where probe lies in this rank's address space */
  uint64_t probe;                      /* a random word peers read there (cross-memory attach allowed?) */
  char pad1[CC__LINE - 32];
} cc__ctl;
/* Two whole lines: what a rank stores on every phase (arrive) and on every
   call (call) never shares a line with another rank's. */
typedef char cc__ctl_lines[sizeof(cc__ctl) == 2 * CC__LINE ? 1 : -1];

typedef struct cc__chan {              /* single producer, single consumer byte ring */
  uint64_t head;                       /* bytes written, by the sender */
  char pad0[CC__LINE - 8];
  uint64_t tail;                       /* bytes consumed, by the receiver */
  char pad1[CC__LINE - 8];
} cc__chan;

/* Memory from cc_mem_alloc: one segment per allocation, mapped whole by every
   rank of the host; rank r's part at base + r * slot (alone: plain memory). */
typedef struct cc__mem {
  struct cc__mem *next;
  uint32_t id;                         /* the same on every rank: allocations are collective */
  unsigned char *base;                 /* this rank's mapping */
  size_t map_bytes, slot;
  size_t *bytes;                       /* per rank of the host: what it asked for */
  int nranks, me;
  int mapped;                          /* 1: base maps every rank's part (shared memory) */
} cc__mem;

/* Where rank j's buffers of the call running are (arena, direct mode). */
typedef struct cc__pbuf {
  uint64_t sa, ra;                     /* sendbuf and recvbuf in rank j's address space */
  const unsigned char *s;              /* j's sendbuf mapped here (cc_mem_alloc), else NULL */
  unsigned char *r;                    /* j's recvbuf mapped here, else NULL */
  size_t s_max, r_max;                 /* bytes from s and r inside j's allocation */
  int pid;
} cc__pbuf;

/* A choice between two ways by measuring (@algo, cc__tune_step): CC_SHM_CMA=auto's, per
   collective and size class (0 the arena's two copies, 1 cross-memory attach; rank 0 measures,
   every rank follows), and each rank's own of its stores per size class (0 streaming, 1 plain). */
#define CC__TUNE_KEEP 4                /* calls kept each way: a try's (at most), the last three's median */
typedef struct cc__tune {
  uint32_t wait;                       /* every rank alike: calls that go through the arena without asking rank 0 */
  uint8_t way;                         /* the way in use */
  uint8_t trying;                      /* calls of the other way so far in a try of it */
  uint8_t tries;                       /* calls a try takes (0: one), judged by the slowest but the first */
  uint8_t want, ran;                   /* the way this call was to go, and went (2: neither, buffers mapped) */
  uint8_t nsamp[2];                    /* calls timed each way (at most CC__TUNE_KEEP) */
  uint32_t every, left;                /* calls between tries of the other way (0: still learning), until the next */
  float ref;                           /* the way's ns per byte when last chosen or confirmed */
  float ns[2][CC__TUNE_KEEP];          /* ns per byte of the last calls each way, the newest first */
} cc__tune;
#define CC__TUNE_COLLS 6               /* the collectives cross-memory attach serves (cc__tune_coll) */
#define CC__TUNE_SIZES 24              /* size classes: [1 KiB << i, 2 KiB << i) */

/* ---------------------------------------------------------------- messages */

/* A frame's header, decoded (see @tcp for the bytes). */
typedef struct cc__frame {
  int tag;
  uint64_t bytes;
  uint64_t seq;                        /* collectives: the number of the sender's call, else 0 */
  cc__ident id;                        /* collectives: the sender's call */
} cc__frame;

typedef struct cc__umsg {              /* a message received before its receive */
  struct cc__umsg *next;
  cc__frame f;
  unsigned char *data;
  size_t cap;                          /* bytes allocated so far (grows as they arrive) */
  size_t cost;                         /* what it counts against CC_MAX_UNEXPECTED */
  uint64_t stamp;                      /* when it joined its queue (c->eng.uq_stamp): receives from any source take the oldest */
} cc__umsg;

typedef struct cc__msg {               /* one send or receive in flight */
  int is_send, peer, tag;
  int live;                            /* 0: not yet (a callback makes it live) */
  int started, done, matched;          /* matched: a receive whose frame is arriving */
  int any;                             /* from any source: peer is CC_ANY_SOURCE until matched, then the sender */
  unsigned char *buf;
  size_t bytes, moved;
  size_t hdr_sent, hdr_len;            /* send: bytes of hdr written, of hdr_len */
  unsigned char hdr[CC__FRAME + CC__TAG];   /* send: the frame header (and its tag on an authenticated link) */
  /* a send on an authenticated TCP link (@engine, cc__sec_write) */
  int sealed;                          /* the header's tag is made, the frame's counters taken */
  size_t tag_left;                     /* bytes of the payload's tag still to write */
  size_t macd;                         /* payload bytes through the AEAD (MACed, or encrypted into the stage) */
  size_t st_off;                       /* encryption: the payload offset of the stage's first byte */
} cc__msg;

/* The connectors' state for one peer: each connector (@engine) keeps its link's here. */
typedef struct cc__ring_link {         /* shared-memory rings in the host's segment */
  int ch;                              /* the peer's index in the host segment */
  uint64_t seen_tail, seen_head;       /* the short way: the ring's tail (out) and head (in) when last read */
  uint64_t rx_lag;                     /* (c->shm's peers) bytes the short way took, not given back: the tail lags */
} cc__ring_link;

typedef struct cc__tcp_link {          /* a TCP connection */
  int fd;
  int eof;                             /* the peer closed its side */
  int drained;                         /* the last read emptied the socket: wait for poll() (cc__rx_pull_ready) */
  int ending;                          /* poll() said the peer closed its side: read to the end */
  int abort_owed;                      /* the abort frame waits for a partly written frame's end (cc__run_settle) */
  struct cc__sec *sec;                 /* with a token: the connection's keys and counters (@tcp) */
  unsigned char *stage;                /* bytes read ahead of the parser */
  size_t st_beg, st_end;
  int bye;                             /* its farewell frame came (it destroyed its communicator) ... */
  uint64_t bye_seq;                    /* ... after this many collectives, */
  cc__ident bye_id;                    /* ... the last of them this one */
} cc__tcp_link;

typedef struct cc__peer {              /* the link to one rank, and what arrives on it */
  int link;                            /* cc__link: which connector */
  int tx_mid;                          /* a frame to it is partly written */
  int rx_state;                        /* 0: reading a header, 1: a payload, 2: its tag */
  int rx_dead;                         /* its stream stopped making sense: nothing more is read from it */
  size_t rx_hdr_got;                   /* bytes of the header (or of the tag) read */
  unsigned char rx_hdr[CC__FRAME + CC__TAG];   /* the header, and its tag on an authenticated link */
  unsigned char rx_tag[CC__TAG];       /* the payload's tag */
  cc__frame rx;                        /* the header of the frame being read */
  uint64_t rx_done;                    /* its payload bytes read so far */
  cc__msg *rx_target;                  /* the receive it fills, or ... */
  cc__umsg *rx_unexp;                  /* ... the unexpected message (an abort too) */
  cc__umsg *uq_head, *uq_tail;         /* complete unexpected messages, oldest first */
  cc__ring_link ring;                  /* CC__LINK_SHM */
  cc__tcp_link tcp;                    /* CC__LINK_TCP */
} cc__peer;

/* ---------------------------------------------------------------- calls */

typedef struct cc__opinfo {
  int kind;                            /* cc__opkind */
  cc_reduce_fn fn;
  void *user;
  cc_dtype dtype;
  unsigned char scal[16];
} cc__opinfo;

/* A call, as the API made it, queued by a group or an asynchronous request. */
typedef struct cc__call {
  int coll;
  const void *sbuf;
  void *rbuf;
  size_t count, scount, rcount;
  cc_dtype t;
  cc_op op;
  int root, peer, tag;
  int *src;                            /* a receive from any source: where the sender's rank goes (cc_recv_any) */
  size_t *sc, *sd, *rc, *rd;           /* v arrays (owned copies when queued) */
} cc__call;

/* A call of kind coll: every field not named here is 0. */
static void cc__call_init(cc__call *k, int coll, const void *sb, void *rb, size_t count, cc_dtype t, cc_op op, int root) {
  memset(k, 0, sizeof *k);
  k->coll = coll; k->sbuf = sb; k->rbuf = rb; k->count = count; k->t = t; k->op = op; k->root = root;
}

typedef struct cc__batch {
  cc__call *calls;
  int n, cap;
} cc__batch;

struct cc_request {
  struct cc_request *next;
  cc_comm *comm;
  cc__batch batch;
  cc_result result;
  uint32_t done;
  char err[CC__ERR_BYTES];
};

/* Ranks on several hosts (or TCP only): each host's ranks form a group; `local`
   is this group's shared-memory communicator (NULL when alone). */
typedef struct cc__net {
  int ngroups;
  int *grp;                            /* per rank: its group */
  int *lrank;                          /* per rank: its rank in the group */
  int *gfirst, *gsize;                 /* per group: lowest rank, ranks */
  cc_comm *local;
  cc__hdr own_hdr;                     /* the failure word when there is no local */
  int propagated;                      /* the failure went to every peer */
  unsigned char abort_f[CC__FRAME + CC__ABORT_MAX];   /* ... as this abort frame (header, payload) */
  size_t abort_len;
  int tcp_only;                        /* CC_TRANSPORT=tcp: every rank its own group */
  unsigned char *tmp, *tmp2;           /* scratch of the algorithms, kept between calls */
  size_t tmp_bytes, tmp2_bytes;
  char ip[64];                         /* where this rank listens (for splits) */
} cc__net;

/* The arena executor's state: this rank's phase, and the scratch of one call's fold. */
typedef struct cc__arena {
  uint64_t step;                       /* last phase this rank arrived at */
  uint64_t seen_all;                   /* every rank is known to have arrived here */
  const void **srcs;                   /* size entries: reduction sources */
  const void **scals;
  unsigned char *scalbuf;              /* size x 16: the call's premul scalars, copied */
  size_t *blk;                         /* size x 2: where each rank's block of a reduction starts, its length, */
  cc__call blk_of;                     /* for this call (its coll, count, dtype and root), */
  int blk_want;                        /* and whether this rank keeps the result */
  cc__tune st[CC__TUNE_SIZES];         /* the stores of large stagings that only move data */
} cc__arena;

/* Direct access to peers' buffers on one host: cross-memory attach, cc_mem_alloc. */
typedef struct cc__direct {
  int cma;                             /* cross-memory attach to every rank: -1 not known yet, 0 no, 1 yes */
  int cma_mine;                        /* this rank may read every rank's memory: -1 not probed yet */
  cc__pbuf *pb;                        /* size entries: the ranks' buffers of the call (direct mode) */
  cc__tune *tune;                      /* CC_SHM_CMA=auto: CC__TUNE_COLLS x CC__TUNE_SIZES, once used */
  cc__mem *mem;                        /* cc_mem_alloc'd, not yet freed */
  int nmem;
  uint32_t mem_seq;                    /* allocations so far (their ids) */
} cc__direct;

/* A communicator's shared segment as this rank mapped it (@shm, cc__layout). */
typedef struct cc__seg {
  unsigned char *base;
  size_t bytes;
  cc__shm_id id;                       /* its file, while it may still have a name (cc__shm_forget) */
  cc__ctl *ctl;
  unsigned char *regions;
  size_t half;                         /* bytes of one half, descriptor included */
  unsigned char *chans;
  size_t chan_bytes;
  int asym;                            /* every rank has the asymmetric fence: see cc__publish */
} cc__seg;

/* The message engine's own state (@engine): scratch, polling, unexpected messages. */
typedef struct cc__engine {
  cc__msg *one;                        /* scratch of single-message runs */
  int one_cap;
  struct pollfd *pfd;                  /* one per TCP peer, and the rank each is */
  int *pfd_rank;
  int rx_lagged;                       /* (the segment's own comm) some ring's tail lags: cc__rings_give_back */
  size_t uq_bytes;                     /* unexpected messages held, with their overhead (CC_MAX_UNEXPECTED) */
  uint64_t uq_stamp;                   /* unexpected messages queued so far: each one's stamp */
  int any_next;                        /* receives from any source read the links from this rank on (each in turn) */
} cc__engine;

/* The worker thread of asynchronous requests (@comm), running them in issue order. */
typedef struct cc__worker {
  pthread_t thread;
  int started, stop;
  pthread_mutex_t lock;
  pthread_cond_t cond;
  cc_request *head, *tail;             /* queued; head runs */
} cc__worker;

struct cc_comm {
  int rank, size, local_rank, local_size;
  cc__settings set;                    /* as read at init (a split inherits them); read there, never copied */
  /* what the settings and the world give together (a split inherits them) */
  uint64_t spin_ns;                    /* CC_SPIN_US, or by oversubscription */
  uint64_t settle_ns;                  /* a failed run finishes a frame partly written for at most this long */
  int oversub;                         /* more ranks than CPUs */
  size_t small_bytes;                  /* arena: largest message every rank reduces in one phase */
  char jobid[40];
  uint64_t seq;                        /* collectives run so far: the number of the current one */
  uint64_t qhist;                      /* a digest of the queued calls so far: their numbers, kinds and roots */
  uint64_t call_word;                  /* the collective under way (cc__algo_run), 0 between them */
  cc__ident cur;                       /* the collective running (its frames carry it) */
  cc__hdr *hdr;                        /* the failure word: the segment's, or net's own */
  cc__seg seg;                         /* this communicator's shared segment, where it has one */
  cc__arena arena;                     /* the arena executor's state (@algo) */
  cc__direct direct;                   /* direct reads of peers' buffers, cc_mem_alloc (@algo) */
  /* messages */
  cc__peer *peers;                     /* per rank */
  cc_comm *shm;                        /* whose segment holds this rank's rings: itself, net->local or NULL */
  cc__net *net;                        /* ranks on several hosts, or TCP only */
  cc__engine eng;                      /* the message engine's scratch and counters */
  /* ops */
  cc__opinfo *ops;
  int nops;
  /* groups and requests */
  int group_depth;
  cc__batch group;
  cc__worker async;                    /* the thread that runs asynchronous requests */
  /* failure */
  cc_result failed;                    /* sticky: later calls return ABORTED */
  uint32_t abort_flag;
  unsigned char shmkey[32];            /* names this job's segments unguessably (cc__seg_name) */
  int has_shmkey;
  char err[CC__ERR_BYTES];
};

/* ---------------------------------------------------------------- small helpers */

static size_t cc__align(size_t x, size_t a) { return (x + a - 1) / a * a; }

static void cc__hex(const unsigned char *in, size_t n, char *out) {   /* out: 2n + 1 bytes */
  static const char digits[] = "0123456789abcdef";
  size_t i;
  for (i = 0; i < n; i++) { out[2 * i] = digits[in[i] >> 4]; out[2 * i + 1] = digits[in[i] & 15]; }
  out[2 * n] = 0;
}

/* nhex random hex digits (nhex even, at most 128) into out (nhex + 1 bytes):
   0, or -1 with errno ("" in out) as cc__random. */
static int cc__random_hex(char *out, size_t nhex) {
  unsigned char raw[64];
  if (nhex > 128) nhex = 128;
  out[0] = 0;
  if (cc__random(raw, nhex / 2) != 0) return -1;
  cc__hex(raw, nhex / 2, out);
  return 0;
}

static int cc__is_jobid(const char *s) {
  size_t i;
  if (!s) return 0;
  for (i = 0; s[i]; i++)
    if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')) || i >= 32) return 0;
  return i >= 16;
}

/* ---------------------------------------------------------------- errors and logging */

static const char *const cc__result_text[CC_RESULT_COUNT] = {
#define CC__RESULT_TEXT(name, text) #name ": " text,
  CC__RESULTS(CC__RESULT_TEXT)
#undef CC__RESULT_TEXT
};

CC_API const char *cc_strerror(cc_result r) {
  if ((int)r < 0 || (int)r >= (int)CC_RESULT_COUNT) return "CC_ERR_?: unknown result code";
  return cc__result_text[r];
}

static __thread char cc__tls_err[CC__ERR_BYTES];   /* cc_comm_init / cc_spawn failures */
static int cc__log_level;                          /* CC_DEBUG of the last init (NULL communicator) */

CC_API const char *cc_comm_last_error(const cc_comm *c) {
  return c ? c->err : cc__tls_err;
}

static void cc__log(const cc_comm *c, int level, const char *fmt, ...) {
  static const char *const names[4] = {"", "WARN", "INFO", "TRACE"};
  char line[512];
  va_list ap;
  int lv = c ? c->set.debug : __atomic_load_n(&cc__log_level, __ATOMIC_RELAXED);
  if (level > lv || level < 0 || level > 3) return;
  if (level == CC__LOG_ALWAYS) level = CC__LOG_WARN;
  va_start(ap, fmt);
  vsnprintf(line, sizeof line, fmt, ap);
  va_end(ap);
  if (c) fprintf(stderr, "[cc rank %d] %s %s\n", c->rank, names[level], line);
  else   fprintf(stderr, "[cc pid %d] %s %s\n", cc__getpid(), names[level], line);
}

/* The one way to fail locally: set the message (c NULL: the thread's) and
   return the code; any but CC_ERR_INVALID_ARG leaves the communicator failed.
   cc__fail_all (@engine) also tells every other rank. */
static cc_result cc__fail(cc_comm *c, cc_result code, const char *fmt, ...) {
  char *buf = c ? c->err : cc__tls_err;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, CC__ERR_BYTES, fmt, ap);
  va_end(ap);
  if (c && code != CC_ERR_INVALID_ARG && code != CC_OK && !c->failed) c->failed = code;
  cc__log(c, CC__LOG_WARN, "%s (%s)", buf, cc_strerror(code));
  return code;
}

#define CC__TRY(x) do { cc_result cc__r_ = (x); if (cc__r_ != CC_OK) return cc__r_; } while (0)

/* cc__random failed (errno says how) making `what` for `call`. Nothing else is
   random enough for a secret, a nonce or a segment's name: no fallback. */
static CC__COLD cc_result cc__no_random(cc_comm *c, const char *call, const char *what) {
  char e[96], who[32] = "";
  cc__strerr(errno, e, sizeof e);
  if (c) snprintf(who, sizeof who, "rank %d: ", c->rank);
  return cc__fail(c, CC_ERR_SYSTEM, "%s: %scannot make %s: the kernel gave no random bytes (getrandom, then "
                  "/dev/urandom: %s), and nothing else is unguessable; allow getrandom or /dev/urandom in the sandbox",
                  call, who, what, e);
}

/* ---------------------------------------------------------------- Slurm host lists */
/* Grammar: list = entry {"," entry}; entry = 1*(char | "[" range {"," range} "]");
   range = digits ["-" digits] with lo <= hi; char = printable, not "[],".
   The first host: the first entry with each bracket group as its first
   number, padding kept. */

/* Compares two decimal digit strings by value: <0, 0, >0. */
static int cc__decimal_cmp(const char *a, size_t na, const char *b, size_t nb) {
  while (na > 1 && *a == '0') { a++; na--; }
  while (nb > 1 && *b == '0') { b++; nb--; }
  if (na != nb) return na < nb ? -1 : 1;
  return memcmp(a, b, na);
}

/* Appends n bytes to out (keeping room for the NUL); -1 if they do not fit. */
static int cc__hostlist_put(char *out, size_t outlen, size_t *pos, const char *s, size_t n) {
  if (n >= outlen - *pos) return -1;
  memcpy(out + *pos, s, n);
  *pos += n;
  return 0;
}

/* First host of a Slurm node list ("node[01-04,7],gpu[2-3]" -> "node01") into
   out, checking the whole list; 0, or -1 (out "") if malformed or too long. */
static int cc__hostlist_first(const char *p, char *out, size_t outlen) {
  size_t pos = 0;
  int entry = 0, nonempty = 0;
  if (!out || outlen == 0) return -1;
  if (!p) goto bad;
  for (;;) {
    unsigned char c = (unsigned char)*p;
    if (c == ',' || c == 0) {
      if (!nonempty) goto bad;          /* empty entry */
      if (c == 0) break;
      entry++; nonempty = 0; p++;
      continue;
    }
    nonempty = 1;
    if (c == '[') {
      int first = 1;
      p++;
      for (;;) {                        /* range {"," range} "]" */
        const char *lo = p, *hi;
        size_t nlo, nhi;
        while (*p >= '0' && *p <= '9') p++;
        nlo = (size_t)(p - lo);
        if (nlo == 0) goto bad;
        hi = lo; nhi = nlo;
        if (*p == '-') {
          hi = ++p;
          while (*p >= '0' && *p <= '9') p++;
          nhi = (size_t)(p - hi);
          if (nhi == 0 || cc__decimal_cmp(lo, nlo, hi, nhi) > 0) goto bad;
        }
        if (first && entry == 0 && cc__hostlist_put(out, outlen, &pos, lo, nlo) != 0) goto bad;
        first = 0;
        if (*p == ',') { p++; continue; }
        if (*p == ']') { p++; break; }
        goto bad;                       /* junk or end of string inside brackets */
      }
      continue;
    }
    if (c == ']' || c <= ' ' || c >= 0x7f) goto bad;
    if (entry == 0 && cc__hostlist_put(out, outlen, &pos, p, 1) != 0) goto bad;
    p++;
  }
  out[pos] = 0;
  return 0;
bad:
  out[0] = 0;
  return -1;
}

/* ---------------------------------------------------------------- tokens */

/* Forget the secret. */
static void cc__settings_clear(cc__settings *s) {
  cc__crypto_wipe(s->token, sizeof s->token);
}

/* log2(x) for x >= 1 in units of 2^-16, without libm: the integer part from
   the highest bit, the fraction bit by bit by squaring the mantissa. */
static uint32_t cc__log2_q16(uint32_t x) {
  uint32_t r = 0, bit;
  uint64_t y;
  while (x >> (r + 1)) r++;
  y = ((uint64_t)x << 30) >> r;        /* x / 2^r in [1, 2), 30 fraction bits */
  r <<= 16;
  for (bit = 1u << 15; bit; bit >>= 1) {
    y = (y * y) >> 30;
    if (y >= (2ull << 30)) { y >>= 1; r |= bit; }
  }
  return r;
}

#define CC__TOKEN_MIN_BITS 128          /* what a token must have */
#define CC__TOKEN_PATTERN  7            /* characters a pattern must explain to count */

/* A character's place in "0123456789abcdefghijklmnopqrstuvwxyz" (either case). */
static int cc__token_ord(unsigned char ch) {
  if (ch >= '0' && ch <= '9') return ch - '0';
  if (ch >= 'a' && ch <= 'z') return ch - 'a' + 10;
  if (ch >= 'A' && ch <= 'Z') return ch - 'A' + 10;
  return 100 + ch;
}

/* How many characters from t[i] on one pattern explains: each a copy of the
   one d places back (d = 1: a run, "aaaa"; more: a word or a period again,
   "abcabc", "deadbeefdeadbeef"), or each the step of the ones p and 2p
   places back taken once more (p = 1: a sequence, "1234", "fedc", "aceg";
   p = 2..4: sequences interleaved, "0f1e2d3c"). */
static size_t cc__token_pattern(const unsigned char *t, size_t n, size_t i) {
  size_t best = 0, d, p, k;
  for (d = 1; d <= i; d++) {
    for (k = 0; i + k < n && t[i + k] == t[i + k - d]; k++) {}
    best = CC__MAX(best, k);
  }
  for (p = 1; p <= 4 && 2 * p <= i; p++) {
    for (k = 0; i + k < n; k++) {
      int a = cc__token_ord(t[i + k - 2 * p]), b = cc__token_ord(t[i + k - p]);
      if (cc__token_ord(t[i + k]) - b != b - a) break;
    }
    best = CC__MAX(best, k);
  }
  return best;
}

/* 0 when token s is strong enough, else -1 and why says how weak (cc_comm_init and
   ccrun). Its strength is an estimate of its entropy in bits, as docs/security.md,
   "Tokens", describes it; an upper bound, which cannot tell a random string from
   words, hence `ccrun --make-token` in the messages. The classes: 26 lower, 26
   upper, 10 digits, 33 others. */
static int cc__token_check(const char *s, char *why, size_t whylen) {
  const unsigned char *t = (const unsigned char *)s;
  int lower = 0, upper = 0, digit = 0, other = 0, hex = 1, distinct = 0, seen[256], alpha, bits, patterned = 0;
  size_t i, k, n = strlen(s);
  uint64_t q = 0, lit, ref;
  memset(seen, 0, sizeof seen);
  for (i = 0; i < n; i++) {
    unsigned char ch = t[i];
    if (!seen[ch]) { seen[ch] = 1; distinct++; }
    if (ch >= 'a' && ch <= 'z') lower = 1;
    else if (ch >= 'A' && ch <= 'Z') upper = 1;
    else if (ch >= '0' && ch <= '9') digit = 1;
    else other = 1;
    if (!((ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'f') || (ch >= 'A' && ch <= 'F'))) hex = 0;
  }
  alpha = hex ? 16 : 26 * lower + 26 * upper + 10 * digit + 33 * other;
  if (alpha > 4 * distinct) alpha = 4 * distinct;
  lit = cc__log2_q16((uint32_t)alpha);                 /* a character, in 2^-16 bits */
  ref = 2 * (uint64_t)cc__log2_q16((uint32_t)n + 1);   /* a pattern: where and how long */
  for (i = 0; alpha >= 2 && i < n; i += k) {           /* fewer than 2 symbols: no bits */
    k = cc__token_pattern(t, n, i);
    if (k >= CC__TOKEN_PATTERN) { q += ref; patterned = 1; }
    else { k = 1; q += lit; }
  }
  bits = (int)(q >> 16);
  if (bits >= CC__TOKEN_MIN_BITS) return 0;
  snprintf(why, whylen, "about %d bits of entropy%s", bits, patterned ? " (it repeats itself, or runs or counts: "
           "'aaaa', 'abcabc', '1234')" : "");
  return -1;
}

/* ---------------------------------------------------------------- settings
   The only reader of the environment: the table at the top lists its every
   variable (tests/unit/test_header.sh checks). cc_config wins over it. */

/* An integer variable: 0 unset, 1 ok, -1 not a number. */
static int cc__env_long(const char *name, long *out) {
  const char *s = getenv(name);
  char *end;
  long v;
  if (!s || !*s) return 0;
  errno = 0;
  v = strtol(s, &end, 10);
  if (errno || *end || end == s) return -1;
  *out = v;
  return 1;
}

/* CC_TOKEN into out ("" when unset): read once per process, then zeroed and
   removed from the environment, so that no process this one starts inherits
   it; later reads (a second cc_comm_init, cc_spawn's ranks) take this copy. */
static char cc__token_kept[256];
static int cc__token_too_long;
static pthread_mutex_t cc__token_lock = PTHREAD_MUTEX_INITIALIZER;

static int cc__env_token(char *out, size_t len) {   /* 0, or -1 when it is too long */
  char *e;
  int r = 0;
  pthread_mutex_lock(&cc__token_lock);
  e = getenv("CC_TOKEN");
  if (e && *e) {
    size_t i, n = strlen(e);
    volatile char *v = e;
    cc__token_too_long = n >= sizeof cc__token_kept;
    snprintf(cc__token_kept, sizeof cc__token_kept, "%s", cc__token_too_long ? "" : e);
    for (i = 0; i < n; i++) v[i] = 0;  /* the string itself too: /proc/PID/environ shows the original block */
    cc__env_unset("CC_TOKEN");
  }
  if (cc__token_too_long) r = -1;
  else snprintf(out, len, "%s", cc__token_kept);
  pthread_mutex_unlock(&cc__token_lock);
  return r;
}

/* The first of several variables that is set: 1 found, 0 none, -1 garbage
   (with the thread's message set). */
static int cc__env_first(const char *const *names, long *out, const char **which) {
  int i;
  for (i = 0; names[i]; i++) {
    int r = cc__env_long(names[i], out);
    if (r == 0) continue;
    *which = names[i];
    if (r < 0) cc__fail(NULL, CC_ERR_INVALID_ARG, "comm_init: %s='%.40s' is not a number", names[i], getenv(names[i]));
    return r;
  }
  return 0;
}

/* A size with an optional K or M suffix, clamped to [lo, hi]; def when unset. */
static size_t cc__env_size(const char *name, size_t def, size_t lo, size_t hi) {
  const char *s = getenv(name);
  char *end;
  unsigned long long v;
  if (!s || !*s) return def;
  v = strtoull(s, &end, 10);
  if (*end == 'K' || *end == 'k') v <<= 10;
  else if (*end == 'M' || *end == 'm') v <<= 20;
  else if (*end == 'G' || *end == 'g') v <<= 30;
  if (v < lo) v = lo;
  if (v > hi) v = hi;
  return (size_t)v;
}

static long cc__env_size_or(const char *name, long unset, size_t lo, size_t hi) {
  const char *s = getenv(name);
  return s && *s ? (long)cc__env_size(name, 0, lo, hi) : unset;
}

static int cc__debug_parse(const char *s) {
  if (!s || !*s) return CC__LOG_OFF;
  if (!strcmp(s, "WARN") || !strcmp(s, "warn") || !strcmp(s, "1")) return CC__LOG_WARN;
  if (!strcmp(s, "INFO") || !strcmp(s, "info") || !strcmp(s, "2")) return CC__LOG_INFO;
  if (!strcmp(s, "TRACE") || !strcmp(s, "trace") || !strcmp(s, "3")) return CC__LOG_TRACE;
  return CC__LOG_WARN;
}

/* Rank and size: cc_config, else the launchers' variables, else a world of one. */
static cc_result cc__settings_ranks(const cc_config *cfg, cc__settings *s) {
  static const char *const rk[] = {"RANK", "OMPI_COMM_WORLD_RANK", "PMI_RANK", "SLURM_PROCID", NULL};
  static const char *const sz[] = {"WORLD_SIZE", "OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "SLURM_NTASKS", NULL};
  static const char *const ls[] = {"LOCAL_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS", NULL};
  long r = -1, n = -1, l = -1;
  const char *ln = "LOCAL_WORLD_SIZE";
  int hr, hs, hl = 0;
  s->rank_var = "RANK";
  s->size_var = "WORLD_SIZE";
  if (cfg && cfg->rank >= 0) { r = cfg->rank; s->rank_var = "cfg.rank"; hr = 1; }
  else if ((hr = cc__env_first(rk, &r, &s->rank_var)) < 0) return CC_ERR_INVALID_ARG;
  if (cfg && cfg->world_size > 0) { n = cfg->world_size; s->size_var = "cfg.world_size"; hs = 1; }
  else if ((hs = cc__env_first(sz, &n, &s->size_var)) < 0) return CC_ERR_INVALID_ARG;
  /* both given in cc_config: the environment's job is not this one */
  if (!(cfg && cfg->rank >= 0 && cfg->world_size > 0) && (hl = cc__env_first(ls, &l, &ln)) < 0) return CC_ERR_INVALID_ARG;
  if (!hr && !hs) { r = 0; n = 1; s->no_launcher = 1; }   /* a plain process: a world of one */
  else if (!hr && n == 1) r = 0;       /* a world of one, asked for: its one rank */
  else if (!hr)
    return cc__fail(NULL, CC_ERR_INVALID_ARG, "comm_init: %s=%ld is set but RANK is not", s->size_var, n);
  else if (!hs)
    return cc__fail(NULL, CC_ERR_INVALID_ARG, "comm_init: %s=%ld is set but WORLD_SIZE is not", s->rank_var, r);
  if (n < 1 || n > INT_MAX)
    return cc__fail(NULL, CC_ERR_INVALID_ARG, "comm_init: %s=%ld must be at least 1", s->size_var, n);
  if (r < 0 || r >= n)
    return cc__fail(NULL, CC_ERR_INVALID_ARG, "comm_init: %s=%ld is out of range for %s=%ld", s->rank_var, r,
                    s->size_var, n);
  if (hl && (l < 1 || l > n))
    return cc__fail(NULL, CC_ERR_INVALID_ARG, "comm_init: %s=%ld is inconsistent with %s=%ld", ln, l, s->size_var, n);
  s->rank = (int)r;
  s->size = (int)n;
  s->local_size = hl ? (int)l : -1;
  return CC_OK;
}

/* Where an env:// rendezvous meets: MASTER_ADDR/MASTER_PORT, else under Slurm the
   job's first host and a port from its id; master_err keeps what is malformed. */
static void cc__settings_master(cc__settings *s) {
  const char *ma = getenv("MASTER_ADDR"), *mp = getenv("MASTER_PORT"), *nl = getenv("SLURM_JOB_NODELIST");
  long p;
  int have;
  if (ma && *ma) snprintf(s->master_addr, sizeof s->master_addr, "%s", ma);
  else if (nl && *nl) {
    if (cc__hostlist_first(nl, s->master_addr, sizeof s->master_addr) != 0)
      snprintf(s->master_err, sizeof s->master_err, "SLURM_JOB_NODELIST='%.100s' is not a host list", nl);
  }
  have = cc__env_long("MASTER_PORT", &p);
  if (have < 0 || (have > 0 && (p <= 0 || p > 65535)))
    snprintf(s->master_err, sizeof s->master_err, "MASTER_PORT='%.40s' is not a port", mp);
  else if (have > 0) s->master_port = (int)p;
  else if (s->master_addr[0] && cc__env_long("SLURM_JOB_ID", &p) > 0 && p >= 0)
    s->master_port = 20000 + (int)(p % 20000);   /* the same on every host of the job */
}

/* The library's settings (all but rank and size): CC_OK, or CC_ERR_INVALID_ARG. */
static cc_result cc__settings_lib(const cc_config *cfg, cc__settings *s) {
  const char *t = getenv("CC_TIMEOUT"), *tr = cfg && cfg->transport ? cfg->transport : getenv("CC_TRANSPORT");
  const char *tok = cfg && cfg->token && cfg->token[0] ? cfg->token : NULL, *ifn = getenv("CC_SOCKET_IFNAME");
  const char *jid = getenv("CC_JOB_ID"), *cma = getenv("CC_SHM_CMA");
  long enc = 0;
  char weak[160];
  int env_long;
  memset(s, 0, sizeof *s);
  s->rank = s->size = s->local_size = -1;
  s->debug = cc__debug_parse(getenv("CC_DEBUG"));
  __atomic_store_n(&cc__log_level, s->debug, __ATOMIC_RELAXED);
  if (jid && *jid) snprintf(s->job_id, sizeof s->job_id, "%.39s", jid);
  if (ifn && *ifn) snprintf(s->ifname, sizeof s->ifname, "%.63s", ifn);
  s->spin_us = cc__env_size_or("CC_SPIN_US", -1, 0, 10000000);
  s->small_bytes = cc__env_size_or("CC_SMALL_BYTES", -1, 0, 64u << 20);
  s->shm_chunk = cc__env_size("CC_SHM_CHUNK", 0, 16 << 10, 64 << 20);
  s->stream_bytes = cc__env_size("CC_STREAM_BYTES", 512u << 10, 0, (size_t)1 << 40);
  s->shm_cma = !cma || !*cma || !strcmp(cma, "auto") ? CC__CMA_AUTO : (int)cc__env_size("CC_SHM_CMA", 0, 0, 1);
  s->tune_first = (uint32_t)cc__env_size("CC_SHM_TUNE_FIRST", 16, 1, 1u << 20);
  s->tune_most = (uint32_t)cc__env_size("CC_SHM_TUNE_MOST", 1024, s->tune_first, 1u << 24);
  s->tune_ask = (uint32_t)cc__env_size("CC_SHM_TUNE_ASK", 16, 1, 1u << 20);
  s->tune_gain = (uint32_t)cc__env_size("CC_SHM_TUNE_GAIN", 10, 0, 99);
  s->tune_drift = (uint32_t)cc__env_size("CC_SHM_TUNE_DRIFT", 50, 0, 1000);
  s->direct_bytes = cc__env_size("CC_SHM_DIRECT_BYTES", 256u << 10, 0, (size_t)1 << 40);
  s->queue_bytes = cc__env_size("CC_SHM_QUEUE_BYTES", 4096, 0, 1u << 20);
  s->net_chunk = cc__env_size("CC_NET_CHUNK", 1u << 20, 4096, (size_t)1 << 30);
  s->net_small_bytes = cc__env_size("CC_NET_SMALL_BYTES", 64u << 10, 0, (size_t)1 << 40);
  s->net_sockbuf = cc__env_size("CC_NET_SOCKBUF", 0, 0, 1u << 30);
  s->spawn_grace_ns = (uint64_t)cc__env_size("CC_SPAWN_GRACE_MS", 1000, 0, 60000) * CC__MS;
  s->warn_ns = (uint64_t)cc__env_size("CC_WARN_AFTER", 10, 0, 1u << 30) * CC__S;
  s->refused_grace_ns = (uint64_t)cc__env_size("CC_REFUSED_GRACE", 5, 0, 1u << 30) * CC__S;
  s->require_launcher = cc__env_size("CC_REQUIRE_LAUNCHER", 0, 0, 1) != 0;
  s->max_unexpected = cc__env_size("CC_MAX_UNEXPECTED", (size_t)1 << 30, 4096, (size_t)1 << 62);
  if (cc__env_long("CC_NET_ENCRYPT", &enc) < 0 || enc < 0 || enc > 1)
    return cc__fail(NULL, CC_ERR_INVALID_ARG, "comm_init: CC_NET_ENCRYPT='%.40s' is not 0 or 1", getenv("CC_NET_ENCRYPT"));
  s->net_encrypt = (int)enc;
  s->timeout_ns = 600 * CC__S;
  cc__settings_master(s);
  if (cfg && (cfg->rank < -1 || cfg->world_size == 0 || cfg->world_size < -1 || cfg->timeout_ms < 0))
    return cc__fail(NULL, CC_ERR_INVALID_ARG, "comm_init: %s %d is invalid (-1 takes it from the environment; "
                    "cc_config_init sets the defaults)", cfg->rank < -1 ? "cfg.rank" :
                    cfg->timeout_ms < 0 ? "cfg.timeout_ms" : "cfg.world_size",
                    cfg->rank < -1 ? cfg->rank : cfg->timeout_ms < 0 ? cfg->timeout_ms : cfg->world_size);
  if (cfg && cfg->timeout_ms > 0) s->timeout_ns = (uint64_t)cfg->timeout_ms * CC__MS;
  else if (t && *t) {
    char *end;
    double v = strtod(t, &end);
    if (v <= 0 || *end || end == t)
      return cc__fail(NULL, CC_ERR_INVALID_ARG, "comm_init: CC_TIMEOUT='%.40s' is not a positive number of seconds", t);
    s->timeout_ns = (uint64_t)(v * 1e9);
  }
  if (!tr || !*tr || !strcmp(tr, "auto")) s->transport = CC__TR_AUTO;
  else if (!strcmp(tr, "shm")) s->transport = CC__TR_SHM;
  else if (!strcmp(tr, "tcp")) s->transport = CC__TR_TCP;
  else return cc__fail(NULL, CC_ERR_INVALID_ARG, "comm_init: transport '%.40s' is not auto, shm or tcp", tr);
  s->token_from = tok ? "cfg.token" : "CC_TOKEN";
  env_long = cc__env_token(s->token, sizeof s->token) != 0;   /* whatever wins: read, and gone from the environment */
  if (tok) {
    int had = s->token[0] != 0;
    cc__settings_clear(s);
    if (!strcmp(tok, CC_INSECURE_NO_TOKEN)) {
      tok = "";
      cc__log(NULL, CC__LOG_ALWAYS, "comm_init: cfg.token is CC_INSECURE_NO_TOKEN%s: this rank's TCP "
              "connections are not authenticated; anyone who can reach the job's ports during start-up can join it "
              "and read or change its data", had ? " (CC_TOKEN, which is set, is not used)" : "");
    }
  }
  if (tok ? strlen(tok) >= sizeof s->token : env_long)
    return cc__fail(NULL, CC_ERR_INVALID_ARG, "comm_init: the token (%s) is longer than %d bytes", s->token_from,
                    (int)sizeof s->token - 1);
  if (tok) snprintf(s->token, sizeof s->token, "%s", tok);
  if (s->token[0] && cc__token_check(s->token, weak, sizeof weak) != 0) {
    cc__settings_clear(s);
    return cc__fail(NULL, CC_ERR_INVALID_ARG, "comm_init: the token (%s) is too weak: %s, and a token needs at "
                    "least %d (a guessable one lets a stranger in); make one with `ccrun --make-token` or "
                    "`head -c 16 /dev/urandom | xxd -p`", s->token_from, weak, CC__TOKEN_MIN_BITS);
  }
  if (s->net_encrypt && !s->token[0])
    return cc__fail(NULL, CC_ERR_INVALID_ARG, "comm_init: CC_NET_ENCRYPT=1 needs a token (CC_TOKEN or cfg.token): "
                    "the keys are derived from it");
  return CC_OK;
}

/* Every setting, once; and that the kernel gives random bytes. */
static cc_result cc__settings_read(const cc_config *cfg, cc__settings *s) {
  unsigned char b[16];
  CC__TRY(cc__settings_lib(cfg, s));
  if (cc__random(b, sizeof b) != 0) {  /* every init draws nonces, keys or names: fail now, not in a handshake */
    cc__settings_clear(s);
    return cc__no_random(NULL, "comm_init", "nonces, keys and segment names");
  }
  return cc__settings_ranks(cfg, s);
}

/* ============================================================== @reduce */
/* The reduction kernels: names and sizes of the dtypes, which (dtype, op) pairs
   are allowed, float16/bfloat16 conversions, and cc__reduce_n, the n-ary fold
   that every reducing collective ends in.

   cc__reduce_n(dst, srcs, nsrc, count, t, op, scal) computes, for every i,
       dst[i] = ((srcs[0][i] op srcs[1][i]) op srcs[2][i]) ... op srcs[nsrc-1][i]
   a left fold in source order. How it runs: the count is cut into blocks of
   CC__BLK elements; the first source's block is copied into an accumulator
   block on the stack and every further source is folded into it by a loop of
   constant length that the compiler vectorizes. A short last block runs the
   same expressions over its own length only (so that a 2-element all_reduce
   costs 2 element operations, not a block's worth): the bits of element i
   depend neither on the block size nor on where i falls in a block.

   The rules of the results (accumulator precision, integer wrapping, NaN and
   signed zeros in MIN/MAX, premul_sum, rounded products, canonical NaN):
   docs/api.md, "Data types and reduction ops". In the code: integer sums and
   products run in the unsigned type, where wrapping is defined; AVG is the SUM
   fold divided by nsrc once, in the accumulator's precision; each product gets
   a statement of its own, so that no compiler fuses a multiply-add in one;
   premul_sum's scal[k] points to one value of dtype t (2 bytes for the half
   types). A pair refused by cc__op_check, nsrc < 1, or premul_sum without
   scalars leaves dst untouched: the callers check the pair first. */

#define CC__OP_PREMUL 8    /* internal op code for premul_sum */
#define CC__OP_SCALE (-1)  /* acc = scalar * acc: premul_sum's first source */
#define CC__BLK 512        /* elements per block: 2 to 8 KiB of stack per array */

/* dtype, its name, its size, its class (INT, FLT or CPX: which ops it refuses) */
#define CC__DTYPES(X)                                                              \
  X(CC_INT8, "int8", 1, INT)           X(CC_UINT8, "uint8", 1, INT)                \
  X(CC_INT32, "int32", 4, INT)         X(CC_UINT32, "uint32", 4, INT)              \
  X(CC_INT64, "int64", 8, INT)         X(CC_UINT64, "uint64", 8, INT)              \
  X(CC_FLOAT16, "float16", 2, FLT)     X(CC_BFLOAT16, "bfloat16", 2, FLT)          \
  X(CC_FLOAT32, "float32", 4, FLT)     X(CC_FLOAT64, "float64", 8, FLT)            \
  X(CC_COMPLEX64, "complex64", 8, CPX) X(CC_COMPLEX128, "complex128", 16, CPX)

static const char *cc__dtype_name(cc_dtype t) {
  switch (t) {
#define CC__DT_NAME(e, name, size, cls) case e: return name;
    CC__DTYPES(CC__DT_NAME)
#undef CC__DT_NAME
    default: return "?";
  }
}

static size_t cc__dtype_bytes(cc_dtype t) {
  switch (t) {
#define CC__DT_BYTES(e, name, size, cls) case e: return size;
    CC__DTYPES(CC__DT_BYTES)
#undef CC__DT_BYTES
    default: return 0;
  }
}

static const char *cc__op_name(int op) {
  static const char *const names[CC__OP_PREMUL + 1] = {
    "sum", "prod", "min", "max", "avg", "band", "bor", "bxor", "premul_sum"};
  return op >= 0 && op <= CC__OP_PREMUL ? names[op] : "?";
}

/* The refusals, one literal per pair so that the message names both. */
#define CC__REFUSE(o, name, dt, why) if (op == o) return "op " name " is not defined for dtype " dt " (" why ")";
#define CC__REFUSE_INT(dt) CC__REFUSE(CC_AVG, "avg", dt, "avg is for floating and complex types")
#define CC__REFUSE_FLT(dt)                                                         \
  CC__REFUSE(CC_BAND, "band", dt, "bitwise ops are for integer types")              \
  CC__REFUSE(CC_BOR, "bor", dt, "bitwise ops are for integer types")                \
  CC__REFUSE(CC_BXOR, "bxor", dt, "bitwise ops are for integer types")
#define CC__REFUSE_CPX(dt)                                                         \
  CC__REFUSE_FLT(dt)                                                               \
  CC__REFUSE(CC_MIN, "min", dt, "min and max are not defined for complex types")    \
  CC__REFUSE(CC_MAX, "max", dt, "min and max are not defined for complex types")

static const char *cc__op_check(cc_dtype t, int op) {
  if (op < 0 || op > CC__OP_PREMUL) return "unknown reduction op (not a built-in op)";
  switch (t) {
#define CC__DT_CHECK(e, name, size, cls) case e: CC__REFUSE_##cls(name) return NULL;
    CC__DTYPES(CC__DT_CHECK)
#undef CC__DT_CHECK
    default: return "unknown dtype (not a cc_dtype)";
  }
}

/* CC__HD: the conversions below are also compiled for the GPU when nvcc builds
   the implementation (cc_cuda.cuh's kernels use them, bit for bit the same). */
#ifdef __CUDACC__
#  define CC__HD __host__ __device__
#else
#  define CC__HD
#endif

/* ---- float16 / bfloat16 <-> float32. Branch-free, so that the block loops that
   call them vectorize; round to nearest even; NaN stays NaN and becomes quiet. */
static inline CC__HD float cc__f32_from_bits(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }
static inline CC__HD uint32_t cc__f32_bits(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }
static inline CC__HD double cc__f64_from_bits(uint64_t u) { double d; memcpy(&d, &u, 8); return d; }

/* CC__MASK(c): all ones when c, else 0; the selects below use it so that no
   branch is left for the vectorizer to give up on. Lanes that a select drops are
   masked before any float arithmetic, so that they raise no FP exception flags. */
#define CC__MASK(c) (0u - (uint32_t)(c))

static inline CC__HD float cc__half_to_float(uint16_t h) {
  uint32_t em = h & 0x7fffu, sign = (uint32_t)(h & 0x8000u) << 16;
  uint32_t special = CC__MASK(em >= 0x7c00u), nan = CC__MASK(em > 0x7c00u), sub = CC__MASK(em < 0x400u);
  /* normal: exponent bias 15 -> 127; inf and NaN: to exponent 255, NaN made quiet */
  uint32_t bits = ((em << 13) + (112u << 23) + (special & (112u << 23))) | (nan & 0x400000u);
  /* subnormal: 2^-14 * (1 + em/1024) - 2^-14 = em * 2^-24, exactly */
  uint32_t tiny = cc__f32_bits(cc__f32_from_bits(((em & sub) << 13) + (113u << 23)) - 6.103515625e-05f);
  return cc__f32_from_bits(((bits & ~sub) | (tiny & sub)) | sign);
}

static inline CC__HD uint16_t cc__float_to_half(float f) {
  uint32_t x = cc__f32_bits(f), a = x & 0x7fffffffu;
  uint32_t sub = CC__MASK(a < 0x38800000u), inf = CC__MASK(a >= 0x477ff000u), nan = CC__MASK(a > 0x7f800000u);
  /* every case is formed 13 bits up, in 32 bits, and shifted down once at the end
     (narrowing each case on its own costs GCC's vectorizer a lot of shuffles).
     Normal half: rebias, add just under half an ulp plus the kept lsb. */
  uint32_t r = a - (112u << 23) + 0xfffu + ((a >> 13) & 1u);
  /* below 2^-14: adding 0.5 (ulp 2^-24) rounds to a whole number of subnormal
     steps, 0x400 (the least normal) included */
  uint32_t tiny = (cc__f32_bits(cc__f32_from_bits(a & sub) + 0.5f) - 0x3f000000u) << 13;
  r = (r & ~sub) | (tiny & sub);
  r = (r & ~inf) | ((0x7c00u << 13) & inf);                      /* 65520 and up: inf */
  r = (r & ~nan) | (((0x7e00u << 13) | (a & 0x7fffffu)) & nan);  /* NaN, quiet */
  return (uint16_t)((r >> 13) | ((x >> 16) & 0x8000u));
}

static inline CC__HD float cc__bf16_to_float(uint16_t h) {
  uint32_t x = (uint32_t)h << 16;
  return cc__f32_from_bits(x | (CC__MASK((x & 0x7fffffffu) > 0x7f800000u) & 0x400000u));   /* NaN, quiet */
}

static inline CC__HD uint16_t cc__float_to_bf16(float f) {
  uint32_t x = cc__f32_bits(f);
  uint32_t nan = CC__MASK((x & 0x7fffffffu) > 0x7f800000u);
  uint32_t r = x + 0x7fffu + ((x >> 16) & 1u);
  return (uint16_t)(((r & ~nan) | ((x | 0x400000u) & nan)) >> 16);   /* NaN, quiet */
}

/* ---- the fold loops, over the block's first lim elements. Each expects in
   scope: T acc[CC__BLK], const T *s (this source's block), T m[1] (this
   source's scalar), size_t j and lim. */
#define CC__FOR(e) for (j = 0; j < lim; j++) acc[j] = (e)
#define CC__SINT_CASES(T)                                                          \
  case CC_MIN: CC__FOR(s[j] < acc[j] ? s[j] : acc[j]); break;                      \
  case CC_MAX: CC__FOR(s[j] > acc[j] ? s[j] : acc[j]); break;
/* 1u * x: unsigned arithmetic even where T promotes to int */
#define CC__UINT_CASES(T)                                                          \
  CC__SINT_CASES(T)                                                                \
  case CC_SUM: CC__FOR((T)(1u * acc[j] + s[j])); break;                            \
  case CC_PROD: CC__FOR((T)(1u * acc[j] * s[j])); break;                           \
  case CC_BAND: CC__FOR((T)(acc[j] & s[j])); break;                                \
  case CC_BOR: CC__FOR((T)(acc[j] | s[j])); break;                                 \
  case CC_BXOR: CC__FOR((T)(acc[j] ^ s[j])); break;                                \
  case CC__OP_SCALE: CC__FOR((T)(1u * m[0] * acc[j])); break;                      \
  case CC__OP_PREMUL: CC__FOR((T)(acc[j] + 1u * m[0] * s[j])); break;
/* acc != acc: a NaN accumulator takes the source, as fmin/fmax do */
#define CC__FLOAT_CASES(T)                                                         \
  case CC_MIN: CC__FOR(s[j] < acc[j] || acc[j] != acc[j] ? s[j] : acc[j]); break;  \
  case CC_MAX: CC__FOR(s[j] > acc[j] || acc[j] != acc[j] ? s[j] : acc[j]); break;  \
  case CC_SUM: case CC_AVG: CC__FOR(acc[j] + s[j]); break;                         \
  case CC_PROD: CC__FOR(acc[j] * s[j]); break;                                     \
  case CC__OP_SCALE: CC__FOR(m[0] * acc[j]); break;                                \
  case CC__OP_PREMUL:                                                              \
    for (j = 0; j < lim; j++) { T p_ = m[0] * s[j]; acc[j] = acc[j] + p_; }         \
    break;
/* after the fold, the store of the block to `out`: integers as they are; floats
   divided by nsrc for AVG and with any NaN made canonical, in the same pass */
#define CC__STORE_INT(T, qnan) memcpy(out, acc, lim * sizeof(T));
#define CC__STORE_FLOAT(T, qnan)                                                   \
  { const T q_ = (qnan);                                                           \
    if (op == CC_AVG) CC__FOR(acc[j] / (T)nsrc);                                   \
    for (j = 0; j < lim; j++) out[j] = acc[j] != acc[j] ? q_ : acc[j]; }

/* cc__fold_<sfx> folds the block of `lim` elements at `off`. Always inlined, so
   that a full block's loops get CC__BLK as a constant trip count to vectorize. */
#if defined(__GNUC__) || defined(__clang__)
#  define CC__FOLD_INLINE static inline __attribute__((always_inline))
#else
#  define CC__FOLD_INLINE static inline
#endif

/* cc__reduce_<sfx>: cc__fold_<sfx> over the full blocks, then the short one;
   w: the T values per element. */
#define CC__DEF_BLOCKS(sfx, T, w)                                                  \
static void cc__reduce_##sfx(void *dst, const void *const *srcs, int nsrc,         \
                             size_t count, int op, const void *const *scal) {      \
  size_t off = 0;                                                                  \
  for (; off + CC__BLK <= count; off += CC__BLK)                                   \
    cc__fold_##sfx((T *)dst + w * off, srcs, off, CC__BLK, nsrc, op, scal);        \
  if (off < count) cc__fold_##sfx((T *)dst + w * off, srcs, off, count - off, nsrc, op, scal); \
}

/* cc__reduce_<sfx>: the fold for a real type T. */
#define CC__DEF_REDUCE(sfx, T, CASES, STORE, qnan)                                   \
CC__FOLD_INLINE void cc__fold_##sfx(T *out, const void *const *srcs, size_t off,    \
                                    size_t lim, int nsrc, int op,                   \
                                    const void *const *scal) {                      \
  T acc[CC__BLK], m[1] = {0};                                                      \
  const T *s;                                                                      \
  size_t j;                                                                        \
  int k;                                                                           \
  memcpy(acc, (const T *)srcs[0] + off, lim * sizeof(T));                          \
  for (k = op == CC__OP_PREMUL ? 0 : 1; k < nsrc; k++) {                           \
    s = (const T *)srcs[k] + off;                                                  \
    if (op == CC__OP_PREMUL) memcpy(m, scal[k], sizeof(T));                        \
    switch (k ? op : CC__OP_SCALE) { CASES(T) default: break; }                    \
  }                                                                                \
  STORE(T, qnan)                                                                   \
}                                                                                  \
CC__DEF_BLOCKS(sfx, T, 1)

CC__DEF_REDUCE(u8, uint8_t, CC__UINT_CASES, CC__STORE_INT, 0)
CC__DEF_REDUCE(u32, uint32_t, CC__UINT_CASES, CC__STORE_INT, 0)
CC__DEF_REDUCE(u64, uint64_t, CC__UINT_CASES, CC__STORE_INT, 0)
CC__DEF_REDUCE(i8, int8_t, CC__SINT_CASES, CC__STORE_INT, 0)
CC__DEF_REDUCE(i32, int32_t, CC__SINT_CASES, CC__STORE_INT, 0)
CC__DEF_REDUCE(i64, int64_t, CC__SINT_CASES, CC__STORE_INT, 0)
CC__DEF_REDUCE(f32, float, CC__FLOAT_CASES, CC__STORE_FLOAT, cc__f32_from_bits(0x7fc00000u))
CC__DEF_REDUCE(f64, double, CC__FLOAT_CASES, CC__STORE_FLOAT, cc__f64_from_bits(0x7ff8000000000000u))

/* (a + bi)(c + di) into re, im: one rounded product per statement */
#define CC__CMUL(T, re, im, a, b, c, d)                                            \
  { T ac_ = (a) * (c), bd_ = (b) * (d), ad_ = (a) * (d), bc_ = (b) * (c);           \
    re = ac_ - bd_; im = ad_ + bc_; }

/* cc__reduce_c<bits>: complex prod and premul_sum (sum and avg go through the real
   kernels). The accumulator is split into re[] and im[]: kept interleaved, GCC
   turns the (ac - bd, ad + bc) pair into fused vfmaddsub on FMA targets, even
   under -ffp-contract=off. */
#define CC__DEF_CPLX(sfx, T, qnan)                                                 \
CC__FOLD_INLINE void cc__fold_##sfx(T *dst, const void *const *srcs, size_t off,    \
                                    size_t lim, int nsrc, int op,                   \
                                    const void *const *scal) {                      \
  T re[CC__BLK], im[CC__BLK], m[2] = {0, 0}, pr, pi;                               \
  const T q_ = (qnan);                                                             \
  const T *s;                                                                      \
  size_t j;                                                                        \
  int k;                                                                           \
  for (k = 0; k < nsrc; k++) {                                                     \
    s = (const T *)srcs[k] + 2 * off;                                              \
    if (op == CC__OP_PREMUL) memcpy(m, scal[k], sizeof m);                         \
    if (k == 0 && op == CC__OP_PREMUL)                                             \
      for (j = 0; j < lim; j++) CC__CMUL(T, re[j], im[j], m[0], m[1], s[2*j], s[2*j+1]) \
    else if (k == 0)                                                               \
      for (j = 0; j < lim; j++) { re[j] = s[2*j]; im[j] = s[2*j+1]; }              \
    else if (op == CC_PROD)                                                        \
      for (j = 0; j < lim; j++) CC__CMUL(T, re[j], im[j], re[j], im[j], s[2*j], s[2*j+1]) \
    else                                                                           \
      for (j = 0; j < lim; j++) {                                                  \
        CC__CMUL(T, pr, pi, m[0], m[1], s[2*j], s[2*j+1])                          \
        re[j] = re[j] + pr; im[j] = im[j] + pi;                                    \
      }                                                                            \
  }                                                                                \
  for (j = 0; j < lim; j++) {                                                      \
    dst[2*j] = re[j] != re[j] ? q_ : re[j];                                        \
    dst[2*j+1] = im[j] != im[j] ? q_ : im[j];                                      \
  }                                                                                \
}                                                                                  \
CC__DEF_BLOCKS(sfx, T, 2)

CC__DEF_CPLX(c64, float, cc__f32_from_bits(0x7fc00000u))
CC__DEF_CPLX(c128, double, cc__f64_from_bits(0x7ff8000000000000u))

CC__FOLD_INLINE void cc__fold_half(uint16_t *out, const void *const *srcs, size_t off, size_t lim,
                                   int nsrc, int op, const void *const *scal, int bf) {
  float acc[CC__BLK], blk[CC__BLK], m[1] = {0}, qnan = cc__f32_from_bits(0x7fc00000u);
  const uint16_t *h;
  const float *s = blk;
  size_t j;
  int k;
  for (k = 0; k < nsrc; k++) {
    float *to = k ? blk : acc;
    h = (const uint16_t *)srcs[k] + off;
    if (bf) for (j = 0; j < lim; j++) to[j] = cc__bf16_to_float(h[j]);
    else    for (j = 0; j < lim; j++) to[j] = cc__half_to_float(h[j]);
    if (op == CC__OP_PREMUL) {
      uint16_t sc;
      memcpy(&sc, scal[k], 2);
      m[0] = bf ? cc__bf16_to_float(sc) : cc__half_to_float(sc);
    }
    if (k == 0 && op != CC__OP_PREMUL) continue;
    switch (k ? op : CC__OP_SCALE) { CC__FLOAT_CASES(float) default: break; }
  }
  if (op == CC_AVG) CC__FOR(acc[j] / (float)nsrc);
  CC__FOR(acc[j] != acc[j] ? qnan : acc[j]);
  if (bf) for (j = 0; j < lim; j++) out[j] = cc__float_to_bf16(acc[j]);
  else    for (j = 0; j < lim; j++) out[j] = cc__float_to_half(acc[j]);
}

/* float16 (bf == 0) and bfloat16 (bf == 1): every source block is widened into
   float32 scratch, folded with the float32 loops, rounded once on the way out. */
static void cc__reduce_half(void *dst, const void *const *srcs, int nsrc, size_t count,
                            int op, const void *const *scal, int bf) {
  size_t off = 0;
  for (; off + CC__BLK <= count; off += CC__BLK)
    cc__fold_half((uint16_t *)dst + off, srcs, off, CC__BLK, nsrc, op, scal, bf);
  if (off < count) cc__fold_half((uint16_t *)dst + off, srcs, off, count - off, nsrc, op, scal, bf);
}

static void cc__reduce_n(void *dst, const void *const *srcs, int nsrc, size_t count,
                         cc_dtype t, int op, const void *const *scal) {
  int mm = op == CC_MIN || op == CC_MAX, sum = op == CC_SUM || op == CC_AVG;
  if (nsrc < 1 || cc__op_check(t, op) || (op == CC__OP_PREMUL && !scal)) return;
  switch (t) {
    case CC_INT8:   (mm ? cc__reduce_i8 : cc__reduce_u8)(dst, srcs, nsrc, count, op, scal); break;
    case CC_INT32:  (mm ? cc__reduce_i32 : cc__reduce_u32)(dst, srcs, nsrc, count, op, scal); break;
    case CC_INT64:  (mm ? cc__reduce_i64 : cc__reduce_u64)(dst, srcs, nsrc, count, op, scal); break;
    case CC_UINT8:  cc__reduce_u8(dst, srcs, nsrc, count, op, scal); break;
    case CC_UINT32: cc__reduce_u32(dst, srcs, nsrc, count, op, scal); break;
    case CC_UINT64: cc__reduce_u64(dst, srcs, nsrc, count, op, scal); break;
    case CC_FLOAT16:  cc__reduce_half(dst, srcs, nsrc, count, op, scal, 0); break;
    case CC_BFLOAT16: cc__reduce_half(dst, srcs, nsrc, count, op, scal, 1); break;
    case CC_FLOAT32: cc__reduce_f32(dst, srcs, nsrc, count, op, scal); break;
    case CC_FLOAT64: cc__reduce_f64(dst, srcs, nsrc, count, op, scal); break;
    /* complex sum and avg are the real ones over (re, im) as two scalars */
    case CC_COMPLEX64:
      if (sum) cc__reduce_f32(dst, srcs, nsrc, 2 * count, op, scal);
      else     cc__reduce_c64(dst, srcs, nsrc, count, op, scal);
      break;
    case CC_COMPLEX128:
      if (sum) cc__reduce_f64(dst, srcs, nsrc, 2 * count, op, scal);
      else     cc__reduce_c128(dst, srcs, nsrc, count, op, scal);
      break;
    default: break;
  }
}

/* ============================================================== @plan */
/* What a call means, whatever runs it (the arena, the message engine over
   rings and TCP, cc_cuda.cuh): the call's identity (cc__ident), compared
   whole, and the messages that say how two calls differ; which bytes of
   sendbuf go to each rank and where they land (cc__plan_move, with the API's
   in-place rules); each rank's step of broadcast and the reductions
   (cc__plan_step); shares (cc__part) and how partial results combine
   (cc__wire_op). docs/design.md, "Where each collective's bytes are moved". */

static int cc__is_v(int coll) {
  return coll == CC__GATHER_V || coll == CC__ALL_GATHER_V || coll == CC__SCATTER_V || coll == CC__ALL_TO_ALL_V;
}

static int cc__reduces(int coll) {
  return coll == CC__REDUCE || coll == CC__ALL_REDUCE || coll == CC__REDUCE_SCATTER;
}

static int cc__rooted(int coll) {
  return coll == CC__BROADCAST || coll == CC__REDUCE || coll == CC__GATHER || coll == CC__SCATTER ||
         coll == CC__GATHER_V || coll == CC__SCATTER_V;
}

static size_t cc__part(size_t m, int n, int r) {     /* start of rank r's share of m */
  return (m / (size_t)n) * (size_t)r + CC__MIN((size_t)r, m % (size_t)n);
}

/* ---------------------------------------------------------------- ops */

static const cc__opinfo *cc__opinfo_of(const cc_comm *c, cc_op op) {
  return op >= CC__OP_FIRST_USER && op - CC__OP_FIRST_USER < c->nops ? &c->ops[op - CC__OP_FIRST_USER] : NULL;
}

static int cc__is_premul(const cc_comm *c, cc_op op) {
  const cc__opinfo *o = cc__opinfo_of(c, op);
  return o && o->kind == CC__OPK_PREMUL;
}

/* What partial results combine with: avg sums (divided once at the end),
   premul_sum sums inputs that each rank scaled first. */
static int cc__wire_op(const cc_comm *c, cc_op op) {
  return op == CC_AVG || cc__is_premul(c, op) ? CC_SUM : op;
}

/* ---------------------------------------------------------------- identity */

/* The parts of call k's identity (cc__ident) as this rank makes it. */
static uint64_t cc__ident_count(const cc__call *k) {
  switch (k->coll) {
  case CC__GATHER_V: case CC__ALL_GATHER_V: return k->scount;
  case CC__SCATTER_V: return k->rcount;
  case CC__ALL_TO_ALL_V: case CC__BARRIER: case CC__SPLIT: case CC__INIT: case CC__MEM_ALLOC: return 0;
  default: return k->count;
  }
}
static int32_t cc__ident_op(const cc__call *k) { return cc__reduces(k->coll) ? (int32_t)k->op : 0; }
static int32_t cc__ident_root(const cc__call *k) { return cc__rooted(k->coll) ? (int32_t)k->root : 0; }

/* Call k as this rank makes it. */
static void cc__ident_of(const cc__call *k, cc__ident *id) {
  memset(id, 0, sizeof *id);
  id->coll = (uint8_t)k->coll;
  id->dtype = (uint8_t)k->t;
  id->op = cc__ident_op(k);
  id->root = cc__ident_root(k);
  id->count = cc__ident_count(k);
}

static void cc__ident_str(const cc__ident *d, char *buf, size_t len) {
  const char *cn = cc__coll_name(d->coll), *dt = cc__dtype_name((cc_dtype)d->dtype);
  const char *op = d->op < CC_OP_BUILTIN_COUNT ? cc__op_name(d->op) : "user";
  unsigned long long n = (unsigned long long)d->count;
  switch (d->coll) {
  case CC__BARRIER: case CC__INIT: case CC__SPLIT: case CC__MEM_ALLOC:
    snprintf(buf, len, "%s", cn); break;
  case CC__MEM_FREE:
    snprintf(buf, len, "%s(allocation #%llu)", cn, n); break;
  case CC__REDUCE:
    snprintf(buf, len, "%s(count %llu, %s, op %s, root %d)", cn, n, dt, op, (int)d->root); break;
  case CC__ALL_REDUCE: case CC__REDUCE_SCATTER:
    snprintf(buf, len, "%s(count %llu, %s, op %s)", cn, n, dt, op); break;
  case CC__ALL_GATHER: case CC__ALL_TO_ALL:
    snprintf(buf, len, "%s(count %llu, %s)", cn, n, dt); break;
  case CC__ALL_GATHER_V: case CC__ALL_TO_ALL_V:
    snprintf(buf, len, "%s(%s)", cn, dt); break;
  case CC__GATHER_V: case CC__SCATTER_V:
    snprintf(buf, len, "%s(%s, root %d)", cn, dt, (int)d->root); break;
  default:
    snprintf(buf, len, "%s(count %llu, %s, root %d)", cn, n, dt, (int)d->root);
  }
}

/* Are two ranks' calls the same call? The rule every transport applies: the
   whole identity, but a v call's own count. */
static CC__INLINE int cc__ident_same(const cc__ident *a, const cc__ident *b) {
  return a->coll == b->coll && a->dtype == b->dtype && a->root == b->root && a->op == b->op &&
         (cc__is_v(a->coll) || a->count == b->count);
}

/* Do this rank's call and rank j's agree? CC_ERR_MISMATCH naming both, else CC_OK. */
static CC__COLD cc_result cc__ident_agree(cc_comm *c, const char *what, const cc__ident *mine, const cc__ident *theirs, int j) {
  char a[128], b[128];
  if (cc__ident_same(mine, theirs)) return CC_OK;
  cc__ident_str(theirs, a, sizeof a);
  cc__ident_str(mine, b, sizeof b);
  return cc__fail(c, CC_ERR_MISMATCH, "%s: rank %d: rank %d called %s while this rank called %s", what, c->rank, j, a, b);
}

/* v counts: rank `from` sends `have` elements to rank `to`, which expects `want`. */
static cc_result cc__vcount_mismatch(cc_comm *c, const char *what, int from, int to, uint64_t have, uint64_t want) {
  return cc__fail(c, CC_ERR_MISMATCH, "%s: rank %d: rank %d sends %llu elements to rank %d, which expects %llu",
                  what, c->rank, from, (unsigned long long)have, to, (unsigned long long)want);
}

/* ---------------------------------------------------------------- data movement */

typedef struct cc__plan {
  int one_piece;                       /* every reader gets the same bytes (broadcast, gather, all_gather) */
  int writer, reader;                  /* -1: every rank; else only that rank sends / receives */
  const cc__call *k;                   /* the call: each rank's piece is computed from it when asked */
  int me;
  size_t es, bytes;                    /* the element's size; a regular form's block */
} cc__plan;

/* The plan of data-movement call k on this rank, from what this rank knows
   (its own arguments). It holds no arrays: the pieces below are computed
   from the call when asked, so no plan overwrites another. A rank's own
   piece goes from sendbuf + soff(me) to recvbuf + roff(me), rlen(me) bytes;
   in place, both are the same bytes and nothing moves. What this rank does
   not know (another rank's v counts) is 0. */
static void cc__plan_move(const cc_comm *c, const cc__call *k, cc__plan *p) {
  p->k = k;
  p->me = c->rank;
  p->es = cc__dtype_bytes(k->t);
  p->bytes = k->count * p->es;
  p->writer = p->reader = -1;
  p->one_piece = 0;
  switch (k->coll) {
  case CC__BROADCAST: p->writer = k->root; p->one_piece = 1; break;
  case CC__GATHER: case CC__GATHER_V: p->reader = k->root; p->one_piece = 1; break;
  case CC__ALL_GATHER: case CC__ALL_GATHER_V: p->one_piece = 1; break;
  case CC__SCATTER: case CC__SCATTER_V: p->writer = k->root; break;
  default: break;
  }
}

/* Bytes of sendbuf this rank sends to rank j: from soff(j), slen(j) of them. */
static CC__INLINE size_t cc__plan_soff(const cc__plan *p, int j) {
  const cc__call *k = p->k;
  switch (k->coll) {
  case CC__SCATTER: return p->me == k->root ? (size_t)j * p->bytes : 0;
  case CC__ALL_TO_ALL: return (size_t)j * p->bytes;
  case CC__SCATTER_V: return p->me == k->root ? k->sd[j] * p->es : 0;
  case CC__ALL_TO_ALL_V: return k->sd[j] * p->es;
  default: return 0;                   /* broadcast, gather, all_gather: one piece from the start */
  }
}

static CC__INLINE size_t cc__plan_slen(const cc__plan *p, int j) {
  const cc__call *k = p->k;
  switch (k->coll) {
  case CC__GATHER: case CC__ALL_GATHER: case CC__ALL_TO_ALL: return p->bytes;
  case CC__BROADCAST: case CC__SCATTER: return p->me == k->root ? p->bytes : 0;
  case CC__GATHER_V: case CC__ALL_GATHER_V: return k->scount * p->es;
  case CC__SCATTER_V: return p->me == k->root ? k->sc[j] * p->es : 0;
  case CC__ALL_TO_ALL_V: return k->sc[j] * p->es;
  default: return 0;
  }
}

/* Where in recvbuf the bytes from rank j land: from roff(j), rlen(j) of them. */
static CC__INLINE size_t cc__plan_roff(const cc__plan *p, int j) {
  const cc__call *k = p->k;
  switch (k->coll) {
  case CC__GATHER: case CC__ALL_GATHER: case CC__ALL_TO_ALL: return (size_t)j * p->bytes;
  case CC__GATHER_V: case CC__ALL_GATHER_V: return k->rc ? k->rd[j] * p->es : 0;
  case CC__ALL_TO_ALL_V: return k->rd[j] * p->es;
  default: return 0;                   /* broadcast, scatter: its one piece at the start */
  }
}

static CC__INLINE size_t cc__plan_rlen(const cc__plan *p, int j) {
  const cc__call *k = p->k;
  switch (k->coll) {
  case CC__GATHER: return p->me == k->root ? p->bytes : 0;
  case CC__ALL_GATHER: case CC__ALL_TO_ALL: return p->bytes;
  case CC__BROADCAST: case CC__SCATTER: return j == k->root ? p->bytes : 0;
  case CC__GATHER_V: case CC__ALL_GATHER_V: return k->rc ? k->rc[j] * p->es : 0;
  case CC__SCATTER_V: return j == k->root ? k->rcount * p->es : 0;
  case CC__ALL_TO_ALL_V: return k->rc[j] * p->es;
  default: return 0;
  }
}

/* This rank's own piece, once every other rank has read what it needed of
   sendbuf (in place it is already where it belongs). */
static void cc__plan_own(cc_comm *c, const cc__call *k, const cc__plan *p) {
  const unsigned char *src = (const unsigned char *)k->sbuf + cc__plan_soff(p, c->rank);
  unsigned char *dst = (unsigned char *)k->rbuf + cc__plan_roff(p, c->rank);
  size_t len = cc__plan_rlen(p, c->rank);
  if (len && (p->reader < 0 || p->reader == c->rank) && src != dst) memmove(dst, src, len);
}

/* Where in rank p's sendbuf the bytes it sends this rank start, when the call
   alone says so (every form but scatter_v and all_to_all_v, whose senders'
   displacements only they know): (size_t)-1 then. cc_cuda.cuh reads peers'
   buffers in place with it. */
CC__COMPANION size_t cc__plan_src_off(const cc_comm *c, const cc__call *k, int p) {
  (void)p;
  switch (k->coll) {
  case CC__BROADCAST: case CC__GATHER: case CC__ALL_GATHER: case CC__GATHER_V: case CC__ALL_GATHER_V: return 0;
  case CC__SCATTER: case CC__ALL_TO_ALL: return (size_t)c->rank * k->count * cc__dtype_bytes(k->t);
  default: return (size_t)-1;
  }
}

/* The largest byte after which call k's buffer `side` (0 send, 1 receive) is
   not touched on this rank: what must be valid (cc_cuda.cuh stages this much). */
CC__COMPANION size_t cc__plan_extent(cc_comm *c, const cc__call *k, int side) {
  size_t es = cc__dtype_bytes(k->t), one = k->count * es, all = one * (size_t)c->size, e = 0;
  int root = c->rank == k->root, j;
  cc__plan p;
  switch (k->coll) {
  case CC__BARRIER: return 0;
  case CC__BROADCAST: case CC__ALL_REDUCE: return one;
  case CC__REDUCE: return side == 0 || root ? one : 0;
  case CC__REDUCE_SCATTER: return side == 0 ? all : one;
  case CC__SEND: return side == 0 ? one : 0;
  case CC__RECV: return side == 1 ? one : 0;
  default: break;
  }
  cc__plan_move(c, k, &p);
  for (j = 0; j < c->size; j++) {
    if (side == 0 && cc__plan_slen(&p, j)) e = CC__MAX(e, cc__plan_soff(&p, j) + cc__plan_slen(&p, j));
    if (side == 1 && cc__plan_rlen(&p, j)) e = CC__MAX(e, cc__plan_roff(&p, j) + cc__plan_rlen(&p, j));
  }
  return e;
}
/* ---------------------------------------------------------------- shares and steps

   Broadcast and the reductions, one step a rank, which every executor that
   divides them takes: the arena's blocks, the direct run's reads and writes
   of each other's buffers in place (@algo; cc_cuda.cuh over CUDA IPC), the
   message run's exchange. A step copies elements [lo, hi) from the root's
   buffer (broadcast) or folds them from every rank's sendbuf in rank order
   (the same bits wherever an element is kept), and the result belongs in
   the recvbufs `to` names. Who takes which elements is the shape:
   CC__WHOLE, each rank that keeps a result makes all of it; CC__SHARES,
   each rank its share; CC__OTHERS, each rank but a rooted call's root its
   share, so that the root's link carries only its own traffic.
   reduce_scatter folds each rank's own block in every shape. */

enum { CC__WHOLE, CC__SHARES, CC__OTHERS };          /* shapes */
enum { CC__TO_SELF, CC__TO_ALL, CC__TO_ROOT, CC__TO_NONROOT };   /* whose recvbufs a step's result belongs in */

typedef struct cc__step {
  size_t lo, hi;                       /* elements of the result; lo == hi: nothing for this rank */
  size_t src;                          /* bytes: where element 0 lies in every buffer read */
  int from;                            /* a broadcast's root, whose buffer is copied; -1: fold every sendbuf */
  int to, me, root;
} cc__step;

/* Rank j's share of count elements among m ranks, in whole units of q
   elements (the last unit may be short): [*lo, *hi). */
static void cc__share(size_t count, size_t q, int m, int j, size_t *lo, size_t *hi) {
  size_t units = (count + q - 1) / q;
  *lo = CC__MIN(count, cc__part(units, m, j) * q);
  *hi = CC__MIN(count, cc__part(units, m, j + 1) * q);
}

/* Rank me's step (of n ranks) of broadcast or reduction k in `shape`, shares
   in units of q elements. */
static CC__INLINE void cc__plan_step(const cc__call *k, int n, int me, int shape, size_t q, cc__step *s) {
  int bcast = k->coll == CC__BROADCAST;
  s->lo = s->hi = s->src = 0;
  s->me = me;
  s->root = bcast || k->coll == CC__REDUCE ? k->root : -1;
  s->from = bcast ? k->root : -1;
  s->to = CC__TO_SELF;
  if (k->coll == CC__REDUCE_SCATTER) {
    s->hi = k->count;
    s->src = (size_t)me * k->count * cc__dtype_bytes(k->t);
  } else if (shape == CC__WHOLE) {
    if (s->root < 0 || (bcast ? me != s->root : me == s->root)) s->hi = k->count;
  } else if (s->root >= 0 && shape == CC__OTHERS) {
    if (me != s->root) cc__share(k->count, q, n - 1, (me - s->root - 1 + n) % n, &s->lo, &s->hi);
    s->to = bcast ? CC__TO_NONROOT : CC__TO_ROOT;
  } else {
    cc__share(k->count, q, n, me, &s->lo, &s->hi);
    s->to = s->root < 0 ? CC__TO_ALL : bcast ? CC__TO_NONROOT : CC__TO_ROOT;
  }
}

/* Does step s's result belong in rank p's recvbuf? */
static CC__INLINE int cc__step_to(const cc__step *s, int p) {
  switch (s->to) {
  case CC__TO_ALL: return 1;
  case CC__TO_ROOT: return p == s->root;
  case CC__TO_NONROOT: return p != s->root;
  default: return p == s->me;
  }
}

/* ============================================================== @shm */
/* The shared-memory transport: one segment per communicator of ranks on one
   host,

     | header | ctl[0..n) | arena: rank 0 half 0, half 1 | rank 1 ... | rings src x dst |

   the header with the failure word and the bell, each rank's control block
   (ctl), the arena executor's halves (@algo), and a byte ring per ordered
   pair of ranks (the engine's links, @engine). This section maps and lays
   out segments and offers their primitives; the waits and the protocols
   live above it. What each part holds: docs/shm.md, "Segment layout". */

#define CC__SHM_MAGIC   0x31306d6873636300ull   /* "\0ccshm01" */
#define CC__SHM_VERSION 3u

typedef struct cc__layout { size_t ctl, regions, chans, total; } cc__layout;

static void cc__layout_of(int n, size_t half, size_t chan, cc__layout *L) {
  L->ctl = cc__align(sizeof(cc__hdr), 4096);
  L->regions = cc__align(L->ctl + (size_t)n * sizeof(cc__ctl), 4096);
  L->chans = cc__align(L->regions + (size_t)n * 2 * half, 4096);
  L->total = cc__align(L->chans + (size_t)n * (size_t)n * (sizeof(cc__chan) + chan), 4096);
}

/* Bytes of one half and of one ring for n ranks; chunk: CC_SHM_CHUNK (0: the
   default). Two ranks: 1 MiB of data per rank and phase (a large call in fewer
   phases, each waited for once; docs/shm.md). More ranks: 256 KiB per two ranks,
   so that the pieces of scatter, reduce_scatter and all_to_all (a half split n
   ways) do not shrink; at most 2 MiB. */
static void cc__seg_sizes(int n, size_t chunk, size_t *half, size_t *chan) {
  size_t def = n <= 2 ? (size_t)(1u << 20) : (size_t)(256u << 10) * (size_t)((n + 1) / 2);
  size_t h = chunk ? chunk : CC__MIN(def, (size_t)(2u << 20));
  size_t ch = (size_t)(8u << 20) / ((size_t)n * (size_t)n);
  *half = cc__align(h + CC__DESC_BYTES, 4096);   /* the descriptor, then a whole chunk of data */
  *chan = cc__align(CC__MAX(CC__MIN(ch, (size_t)(64u << 10)), (size_t)4096), 64);
}

/* Fill a fresh (zeroed) segment's header; the magic goes last. */
static void cc__seg_init(unsigned char *seg, int n, size_t half, size_t chan, size_t total) {
  cc__hdr *h = (cc__hdr *)seg;
  h->version = CC__SHM_VERSION;
  h->nranks = (uint32_t)n;
  h->half_bytes = half;
  h->chan_bytes = chan;
  h->seg_bytes = total;
  CC__STORE(&h->magic, CC__SHM_MAGIC);
}

/* A fresh anonymous segment for n ranks (a world of one, cc_spawn). */
static unsigned char *cc__seg_anon(int n, size_t chunk, size_t *bytes) {
  size_t half, chan;
  cc__layout L;
  unsigned char *seg;
  cc__seg_sizes(n, chunk, &half, &chan);
  cc__layout_of(n, half, chan, &L);
  seg = (unsigned char *)cc__shm_map_anon(L.total);
  if (seg) cc__seg_init(seg, n, half, chan, L.total);
  *bytes = L.total;
  return seg;
}

/* Point the communicator at a mapped, initialised segment. */
static cc_result cc__seg_attach(cc_comm *c, unsigned char *seg, size_t bytes, const char *what) {
  cc__hdr *h = (cc__hdr *)seg;
  cc__ctl *me;
  cc__layout L;
  if (CC__LOAD(&h->magic) != CC__SHM_MAGIC || h->version != CC__SHM_VERSION ||
      h->nranks != (uint32_t)c->size || h->seg_bytes > bytes)
    return cc__fail(c, CC_ERR_SYSTEM, "%s: rank %d: shared segment has the wrong layout "
                    "(version %u, %u ranks, expected %d)", what, c->rank, h->version, h->nranks, c->size);
  cc__layout_of(c->size, (size_t)h->half_bytes, (size_t)h->chan_bytes, &L);
  if (L.total != h->seg_bytes)
    return cc__fail(c, CC_ERR_SYSTEM, "%s: rank %d: shared segment size mismatch", what, c->rank);
  c->seg.base = seg;
  c->seg.bytes = bytes;
  c->hdr = h;
  c->seg.ctl = (cc__ctl *)(seg + L.ctl);
  c->seg.regions = seg + L.regions;
  c->seg.half = (size_t)h->half_bytes;
  c->seg.chans = seg + L.chans;
  c->seg.chan_bytes = (size_t)h->chan_bytes;
  c->shm = c;
  me = &c->seg.ctl[c->rank];           /* probe: what peers read to learn whether cross-memory attach works */
  if (cc__random(&me->probe, sizeof me->probe) != 0)   /* no secret: any word this process wrote will do */
    me->probe = cc__now_ns() ^ (uint64_t)cc__getpid() << 32;
  me->probe_at = (uint64_t)(uintptr_t)&me->probe;
  CC__STORE(&me->pid, (int32_t)cc__getpid());
  return CC_OK;
}

/* The name of a segment whose base name is `base`: base and a suffix that
   only the job's ranks can compute (16 hex digits of HMAC(shmkey, base)), so
   that nobody who sees one name in /dev/shm can make the next one before the
   job does. Without a key (a CC_JOB_ID given with no token), base alone. */
static void cc__seg_name(const cc_comm *c, const char *base, char *out, size_t len) {
  unsigned char mac[32];
  char hex[17];
  const void *part = base;
  size_t plen = strlen(base);
  if (!c->has_shmkey) { snprintf(out, len, "%s", base); return; }
  cc__hmac_sha256(c->shmkey, sizeof c->shmkey, &part, &plen, 1, mac);
  cc__hex(mac, 8, hex);
  snprintf(out, len, "%s-%s", base, hex);
}

/* Remove the segment of base name `base` while the name is still this rank's
   segment (cc__shm_unlink_same: a refusing rank leaves a planted one alone). */
static void cc__shm_forget(const cc_comm *c, const char *base) {
  char name[160];
  cc__seg_name(c, base, name, sizeof name);
  cc__shm_unlink_same(name, &c->seg.id);
}

/* Create (creator) or open the segment of base name `base` and attach, within
   the communicator's timeout; the last rank to map it unlinks the name. One
   that is there but not this user's own (another owner, or open to others:
   someone else made it first) is refused at once. */
static cc_result cc__shm_join(cc_comm *c, const char *base, int creator, const char *what) {
  uint64_t deadline = cc__now_ns() + c->set.timeout_ns, pause = 100000;
  unsigned char *seg = NULL;
  size_t half, chan, bytes = 0;
  char why[200], name[160];
  cc__layout L;
  cc_result r;
  cc__seg_name(c, base, name, sizeof name);
  cc__seg_sizes(c->size, c->set.shm_chunk, &half, &chan);
  cc__layout_of(c->size, half, chan, &L);
  if (creator) {
    seg = (unsigned char *)cc__shm_create_id(name, L.total, &c->seg.id);
    if (!seg) {
      cc__strerr(errno, why, sizeof why);
      return cc__fail(c, CC_ERR_SYSTEM, "%s: rank %d: cannot create shared memory /dev/shm%s (%zu bytes): %s",
                      what, c->rank, name, L.total, why);
    }
    cc__seg_init(seg, c->size, half, chan, L.total);
    bytes = L.total;
  } else {
    for (;;) {
      seg = (unsigned char *)cc__shm_open_why(name, sizeof(cc__hdr), &bytes, why, sizeof why, &c->seg.id);
      if (seg && CC__LOAD(&((cc__hdr *)seg)->magic) == CC__SHM_MAGIC) break;
      if (seg) { cc__shm_unmap(seg, bytes); seg = NULL; memset(&c->seg.id, 0, sizeof c->seg.id); }   /* not yet */
      else if (errno == EPERM)
        return cc__fail(c, CC_ERR_SYSTEM, "%s: rank %d: refusing shared memory /dev/shm%s: %s", what, c->rank, name, why);
      else if (errno != ENOENT) {
        cc__strerr(errno, why, sizeof why);
        return cc__fail(c, CC_ERR_SYSTEM, "%s: rank %d: cannot open shared memory /dev/shm%s: %s",
                        what, c->rank, name, why);
      }
      if (cc__now_ns() >= deadline)
        return cc__fail(c, CC_ERR_TIMEOUT, "%s: rank %d: rank 0 did not create shared memory /dev/shm%s "
                        "within the timeout", what, c->rank, name);
      cc__sleep_ns(pause);
      pause = CC__MIN(pause * 2, 10 * CC__MS);
    }
  }
  if ((r = cc__seg_attach(c, seg, bytes, what)) != CC_OK) {   /* it set nothing in c */
    cc__shm_unmap(seg, bytes);
    return r;
  }
  if (CC__ADD(&c->hdr->mapped, 1u) + 1 == (uint32_t)c->size) cc__shm_unlink_same(name, &c->seg.id);
  return CC_OK;
}

/* ---------------------------------------------------------------- the bell, failures, liveness */

/* Publish a counter a rank may sleep on (then cc__notify). A waiter that
   goes to sleep adds itself to `sleepers` and checks the counters again; a
   publisher stores, then reads `sleepers`: one of the two must see the
   other's store, which takes a full fence on each side -- or, where every
   rank of the segment registered for the asymmetric fence (c->seg.asym), a
   plain release store here and cc__membar() on the sleeper's side, so that
   the calls that run ahead (a broadcast's root) do not wait for their
   stores to drain on every call. */
static CC__INLINE void cc__publish(const cc_comm *c, uint64_t *p, uint64_t v) {
  if (c->seg.asym) CC__STORE(p, v);
  else CC__STORE_SC(p, v);
}

/* Wake the sleepers, if any. */
static void cc__notify(cc_comm *c) {
  if (CC__LOAD(&c->hdr->sleepers)) {
    CC__ADD(&c->hdr->bell, 1u);
    cc__futex_wake(&c->hdr->bell);
  }
}

/* Post a failure for every rank of the segment (the first one wins) and ring.
   Async-signal-safe (cc_comm_abort). */
static void cc__post_fail(cc__hdr *h, cc_result code, int who, const char *msg) {
  uint32_t zero = 0;
  if (__atomic_compare_exchange_n(&h->fail_code, &zero, (uint32_t)code, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST)) {
    size_t i, n = sizeof h->fail_msg - 1;
    h->fail_rank = who;
    for (i = 0; i < n && msg[i]; i++) h->fail_msg[i] = msg[i];
    h->fail_msg[i] = 0;
    CC__STORE(&h->fail_ready, 1u);
  }
  CC__ADD(&h->bell, 1u);
  cc__futex_wake(&h->bell);
}

/* Has rank r of the segment gone? 0 no; 1 yes, with the reason in why. */
static int cc__shm_gone(cc_comm *c, int r, char *why, size_t len) {
  int pid;
  if (r < 0 || r == c->rank || !c->seg.ctl) return 0;
  pid = CC__LOAD(&c->seg.ctl[r].pid);
  if (CC__LOAD(&c->seg.ctl[r].departed)) { snprintf(why, len, "left (it destroyed its communicator)"); return 1; }
  if (pid > 0 && !cc__pid_alive(pid)) { snprintf(why, len, "lost (pid %d exited)", pid); return 1; }
  return 0;
}

/* ---------------------------------------------------------------- the arena */

/* Rank r's half for phase `step`: descriptor, then data. */
static unsigned char *cc__half(cc_comm *c, int r, uint64_t step) {
  return c->seg.regions + (size_t)r * 2 * c->seg.half + (size_t)(step & 1) * c->seg.half;
}
#define CC__DATA(p) ((p) + CC__DESC_BYTES)
typedef char cc__desc_fits[sizeof(cc__desc) <= CC__DESC_BYTES ? 1 : -1];

static cc__desc *cc__desc_at(cc_comm *c, int r, uint64_t step) {
  return (cc__desc *)cc__half(c, r, step);
}

static CC__INLINE void cc__ident_of_desc(const cc__desc *d, cc__ident *id) {
  memset(id, 0, sizeof *id);
  id->count = d->count;
  id->op = d->op;
  id->root = d->root;
  id->coll = d->coll;
  id->dtype = d->dtype;
}

/* Pending predicates of the arena's waits: -1 once done, else a rank waited for. */
typedef struct cc__arr_arg { int who; uint64_t step; } cc__arr_arg;

static int cc__pending_arrive(cc_comm *c, const void *arg) {
  const cc__arr_arg *a = (const cc__arr_arg *)arg;
  int r;
  if (a->who >= 0) return CC__LOAD(&c->seg.ctl[a->who].arrive) >= a->step ? -1 : a->who;
  for (r = 0; r < c->size; r++)
    if (CC__LOAD(&c->seg.ctl[r].arrive) < a->step) return r;
  return -1;
}

/* The first phase waits on the descriptors themselves: a rank's step, its
   descriptor and a small message's data share one cache line, so a waiter
   pulls one line per peer. */
static int cc__pending_first(cc_comm *c, const void *arg) {
  uint64_t s = *(const uint64_t *)arg;
  int r;
  for (r = 0; r < c->size; r++)
    if (CC__LOAD(&cc__desc_at(c, r, s)->step) < s) return r;
  return -1;
}

/* The ranks those waits still wait for, as "1, 3". */
static void cc__awaited_arrive(cc_comm *c, const void *arg, char *buf, size_t len) {
  const cc__arr_arg *a = (const cc__arr_arg *)arg;
  size_t used = 0;
  int r;
  buf[0] = 0;
  for (r = 0; r < c->size && used + 12 < len; r++)
    if ((a->who < 0 || a->who == r) && CC__LOAD(&c->seg.ctl[r].arrive) < a->step)
      used += (size_t)snprintf(buf + used, len - used, "%s%d", used ? ", " : "", r);
}

static void cc__awaited_first(cc_comm *c, const void *arg, char *buf, size_t len) {
  uint64_t s = *(const uint64_t *)arg;
  size_t used = 0;
  int r;
  buf[0] = 0;
  for (r = 0; r < c->size && used + 12 < len; r++)
    if (CC__LOAD(&cc__desc_at(c, r, s)->step) < s) used += (size_t)snprintf(buf + used, len - used, "%s%d", used ? ", " : "", r);
}

/* ---------------------------------------------------------------- cc_mem_alloc's memory */

/* Unmap an allocation and forget it. */
static void cc__mem_drop(cc__mem *m) {
  cc__shm_unmap(m->base, m->map_bytes);
  CC_FREE(m->bytes);
  CC_FREE(m);
}

/* Every allocation of a communicator being freed. */
static void cc__mem_drop_all(cc_comm *c) {
  while (c->direct.mem) {
    cc__mem *m = c->direct.mem;
    c->direct.mem = m->next;
    cc__mem_drop(m);
  }
  c->direct.nmem = 0;
}

/* ---------------------------------------------------------------- rings */

static cc__chan *cc__chan_at(cc_comm *c, int src, int dst) {
  return (cc__chan *)(c->seg.chans + ((size_t)src * (size_t)c->size + (size_t)dst) *
                                 (sizeof(cc__chan) + c->seg.chan_bytes));
}

static void cc__ring_put(cc_comm *c, cc__chan *ch, uint64_t pos, const void *src, size_t len) {
  unsigned char *d = (unsigned char *)(ch + 1);
  size_t off = (size_t)(pos % c->seg.chan_bytes), first = CC__MIN(len, c->seg.chan_bytes - off);
  memcpy(d + off, src, first);
  if (len > first) memcpy(d, (const unsigned char *)src + first, len - first);
}

static void cc__ring_get(cc_comm *c, cc__chan *ch, uint64_t pos, void *dst, size_t len) {
  const unsigned char *s = (const unsigned char *)(ch + 1);
  size_t off = (size_t)(pos % c->seg.chan_bytes), first = CC__MIN(len, c->seg.chan_bytes - off);
  memcpy(dst, s + off, first);
  if (len > first) memcpy((unsigned char *)dst + first, s, len - first);
}
/* ============================================================== @tcp */
/* How a TCP connection, for the rendezvous or for data, is made and authenticated: docs/design.md, "What each
   section owns". */

/* ---------------------------------------------------------------- handshake
   hello, chal, resp, verdict: docs/tcp.md, "Handshake and authentication"; the threats: docs/security.md. */

#define CC__HS_MAGIC   0x31486363u      /* "ccH1": a handshake */
#define CC__NET_VERSION 4u
#define CC__HELLO 96
#define CC__CHAL  48
#define CC__RESP  40
#define CC__VERD  40
#define CC__REC   256                   /* a rank's record: host id, address, port */
#define CC__HS_TOKEN   1u               /* flags */
#define CC__HS_ENCRYPT 2u
#define CC__HS_GCM     4u
#define CC__SEC_STAGE  (256u << 10)     /* encryption: ciphertext staged per connection */

typedef enum cc__hello_kind { CC__HELLO_RDV = 1, CC__HELLO_DATA = 2 } cc__hello_kind;

typedef struct cc__hello_t {
  uint32_t kind, world;                /* cc__hello_kind */
  int32_t from, to;
  char job[40];
  unsigned char nonce[16];
  uint32_t flags;                      /* CC__HS_* */
} cc__hello_t;

static void cc__hello_encode(unsigned char *p, const cc__hello_t *h) {
  memset(p, 0, CC__HELLO);
  cc__put32(p, CC__HS_MAGIC);
  cc__put32(p + 4, CC__NET_VERSION);
  cc__put32(p + 8, h->kind);
  cc__put32(p + 12, h->world);
  cc__put32(p + 16, (uint32_t)h->from);
  cc__put32(p + 20, (uint32_t)h->to);
  memcpy(p + 24, h->job, 40);
  memcpy(p + 64, h->nonce, 16);
  cc__put32(p + 80, h->flags);
}

/* A hello from the wire: 0, or -1 when it is not a well-formed one. */
static int cc__hello_decode(const unsigned char *p, cc__hello_t *h) {
  int i;
  if (cc__get32(p) != CC__HS_MAGIC || cc__get32(p + 4) != CC__NET_VERSION) return -1;
  h->kind = cc__get32(p + 8);
  h->world = cc__get32(p + 12);
  h->from = (int32_t)cc__get32(p + 16);
  h->to = (int32_t)cc__get32(p + 20);
  memcpy(h->job, p + 24, 40);
  memcpy(h->nonce, p + 64, 16);
  h->flags = cc__get32(p + 80);
  if ((h->kind != CC__HELLO_RDV && h->kind != CC__HELLO_DATA) || h->world < 1 || h->world > (1u << 24)) return -1;
  if (h->from < 0 || (uint32_t)h->from >= h->world || h->to < 0 || (uint32_t)h->to >= h->world || h->from == h->to) return -1;
  if (h->flags & ~(CC__HS_TOKEN | CC__HS_ENCRYPT | CC__HS_GCM)) return -1;
  for (i = 84; i < CC__HELLO; i++) if (p[i]) return -1;
  for (i = 0; i < 40 && h->job[i]; i++)
    if (!((h->job[i] >= '0' && h->job[i] <= '9') || (h->job[i] >= 'a' && h->job[i] <= 'f'))) return -1;
  return i < 40 ? 0 : -1;
}

/* HMAC(token, side || hello || chal [|| resp]). */
static void cc__hs_mac(const char *token, const char *side, const unsigned char *hello, const unsigned char *chal,
                       const unsigned char *resp, unsigned char *out) {
  const void *parts[4] = {side, hello, chal, resp};
  size_t lens[4] = {4, CC__HELLO, CC__CHAL, CC__RESP};
  cc__hmac_sha256(token, strlen(token), parts, lens, resp ? 4 : 3, out);
}

/* ---------------------------------------------------------------- connection keys */

/* A connection's keys and counters (TCP with a token). */
typedef struct cc__sec {
  int suite, encrypt;                  /* CC__AEAD_*; CC_NET_ENCRYPT=1 */
  cc__aead_key tx, rx;                 /* this side's sending and receiving keys */
  uint64_t tx_n, rx_n;                 /* AEAD messages sent, received: the next nonce's number */
  unsigned tx_dir, rx_dir;             /* 0: client to server, 1: server to client */
  cc__aead txs, rxs;                   /* the message being written, being read */
  unsigned char tx_tag[CC__TAG];       /* the tag of the payload being written */
  unsigned char *stage;                /* encryption: ciphertext waiting for the socket (CC__SEC_STAGE) */
} cc__sec;

static void cc__sec_free(cc__sec *s) {
  if (!s) return;
  CC_FREE(s->stage);
  cc__crypto_wipe(s, sizeof *s);
  CC_FREE(s);
}

/* Start the next AEAD message of the sending (tx) or receiving direction,
   whose nonce is the direction (4 bytes) and its number (8), big endian. */
static void cc__sec_begin(cc__sec *s, int tx) {
  unsigned char n[12];
  memset(n, 0, 4);
  n[3] = (unsigned char)(tx ? s->tx_dir : s->rx_dir);
  cc__st64be(n + 4, tx ? s->tx_n++ : s->rx_n++);
  (void)cc__aead_begin(tx ? &s->txs : &s->rxs, tx ? &s->tx : &s->rx, n);
}

/* The keys of a connection whose handshake (these four messages) succeeded
   with a token; NULL when out of memory. */
static cc__sec *cc__sec_derive(const char *token, int client, int suite, int encrypt, const unsigned char *hello,
                               const unsigned char *chal, const unsigned char *resp, const unsigned char *verd) {
  cc__sec *s = (cc__sec *)CC_MALLOC(sizeof(cc__sec));
  unsigned char salt[40], th[32], info[38], prk[32], k[32];
  cc__sha256 sh;
  int bad;
  if (!s) return NULL;
  memset(s, 0, sizeof *s);
  s->suite = suite;
  s->encrypt = encrypt;
  s->tx_dir = client ? 0u : 1u;
  s->rx_dir = client ? 1u : 0u;
  if (encrypt && !(s->stage = (unsigned char *)CC_MALLOC(CC__SEC_STAGE))) { CC_FREE(s); return NULL; }
  cc__sha256_init(&sh);
  cc__sha256_update(&sh, hello, CC__HELLO);
  cc__sha256_update(&sh, chal, CC__CHAL);
  cc__sha256_update(&sh, resp, CC__RESP);
  cc__sha256_update(&sh, verd, CC__VERD);
  cc__sha256_final(&sh, th);
  memcpy(salt, "cc-net-4", 8);
  memcpy(salt + 8, hello + 64, 16);
  memcpy(salt + 24, chal + 16, 16);
  cc__hkdf_sha256_extract(salt, sizeof salt, token, strlen(token), prk);
  memcpy(info + 6, th, 32);
  memcpy(info, client ? "cc c2s" : "cc s2c", 6);
  (void)cc__hkdf_sha256_expand(prk, 32, info, sizeof info, k, 32);
  bad = cc__aead_setkey(&s->tx, suite, k);
  memcpy(info, client ? "cc s2c" : "cc c2s", 6);
  (void)cc__hkdf_sha256_expand(prk, 32, info, sizeof info, k, 32);
  bad |= cc__aead_setkey(&s->rx, suite, k);
  cc__crypto_wipe(prk, sizeof prk);
  cc__crypto_wipe(k, sizeof k);
  if (bad) { cc__sec_free(s); return NULL; }
  return s;
}

/* One whole message of n bytes at p, sealed into out (n + CC__TAG bytes):
   the bytes themselves or their ciphertext, then the tag. */
static void cc__sec_seal(cc__sec *s, const unsigned char *p, size_t n, unsigned char *out) {
  cc__sec_begin(s, 1);
  if (s->encrypt) (void)cc__aead_encrypt(&s->txs, p, out, n);
  else { memmove(out, p, n); (void)cc__aead_aad(&s->txs, out, n); }
  (void)cc__aead_final(&s->txs, out + n);
}

/* The reverse, in place (p: n bytes, then the tag): 0, or -1 when the
   message is not authentic. */
static int cc__sec_open(cc__sec *s, unsigned char *p, size_t n) {
  cc__sec_begin(s, 0);
  if (s->encrypt) (void)cc__aead_decrypt(&s->rxs, p, p, n);
  else (void)cc__aead_aad(&s->rxs, p, n);
  return cc__aead_verify(&s->rxs, p + n);
}

/* ---------------------------------------------------------------- the connecting side */

/* A failed handshake: the reason in why, the code returned. */
static cc_result cc__hs_why(cc_result code, char *why, size_t whylen, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(why, whylen, fmt, ap);
  va_end(ap);
  return code;
}

/* Shake hands on fd as h's sender. CC_OK, with *sec the connection's keys
   when there is a token; or a code with the reason in why: CC_ERR_AUTH is
   final (a token that differs, or not a cc rank of this protocol version);
   CC_ERR_MISMATCH (refused: another job or world size), CC_ERR_INVALID_ARG
   (a stale file:// rendezvous), CC_ERR_PEER_LOST (closed) and CC_ERR_TIMEOUT
   may be retried: a refusal carries no proof, a stranger could send it;
   CC_ERR_SYSTEM (no random bytes for the nonce) is final too. h's nonce is
   drawn here, fresh for every connection. */
static cc_result cc__hs_client(int fd, const cc__hello_t *h, const char *token, int encrypt, uint64_t deadline,
                               cc__sec **sec, char *why, size_t whylen) {
  unsigned char hello[CC__HELLO], chal[CC__CHAL], resp[CC__RESP], verd[CC__VERD], mac[32];
  uint32_t status, flags, suite, mine, theirs;
  int gcm = cc__aead_have_gcm();
  cc__hello_t hh = *h;
  *sec = NULL;
  if (cc__random(hh.nonce, sizeof hh.nonce) != 0) {
    char e[64];
    cc__strerr(errno, e, sizeof e);
    return cc__hs_why(CC_ERR_SYSTEM, why, whylen, "no random bytes for the handshake's nonce (getrandom, then "
                      "/dev/urandom: %s)", e);
  }
  mine = (token ? CC__HS_TOKEN : 0) | (encrypt ? CC__HS_ENCRYPT : 0);
  hh.flags = mine | (gcm ? CC__HS_GCM : 0);
  cc__hello_encode(hello, &hh);
  if (cc__sock_send_all(fd, hello, sizeof hello, deadline) != 0 || cc__sock_recv_all(fd, chal, sizeof chal, deadline) != 0)
    return cc__hs_why(errno == ETIMEDOUT ? CC_ERR_TIMEOUT : CC_ERR_PEER_LOST, why, whylen, errno == ETIMEDOUT ?
                      "no answer to the handshake" : "it closed the connection during the handshake");
  if (cc__get32(chal) != CC__HS_MAGIC || cc__get32(chal + 4) != CC__NET_VERSION)
    return cc__hs_why(CC_ERR_AUTH, why, whylen, "it is not a cc rank of this protocol version (bad handshake)");
  status = cc__get32(chal + 8);
  flags = cc__get32(chal + 12);
  suite = cc__get32(chal + 32);
  theirs = cc__get32(chal + 36);
  if (!(flags & CC__HS_TOKEN) != !token)
    return cc__hs_why(CC_ERR_AUTH, why, whylen, token ? "it has no token (CC_TOKEN) and this rank has one"
                                                      : "it requires a token (CC_TOKEN) and this rank has none");
  if ((flags & CC__HS_ENCRYPT) != (mine & CC__HS_ENCRYPT))
    return cc__hs_why(CC_ERR_AUTH, why, whylen, "it has CC_NET_ENCRYPT=%d and this rank CC_NET_ENCRYPT=%d",
                      (flags & CC__HS_ENCRYPT) ? 1 : 0, encrypt ? 1 : 0);
  if (status == (uint32_t)CC_ERR_MISMATCH && theirs && theirs != h->world)
    return cc__hs_why(CC_ERR_MISMATCH, why, whylen, "it says the world has %u ranks, this rank says %u (the hosts "
                      "were started with different sizes)", theirs, h->world);
  if (status != 0)
    return cc__hs_why(status == (uint32_t)CC_ERR_INVALID_ARG ? CC_ERR_INVALID_ARG : CC_ERR_MISMATCH, why, whylen,
                      "it refused the connection: %s", status == (uint32_t)CC_ERR_INVALID_ARG ?
                      "a stale rendezvous (another job)" : "another world size or job");
  if (token ? !(suite == CC__AEAD_CHACHA20_POLY1305 || (suite == CC__AEAD_AES256_GCM && gcm)) : suite != 0)
    return cc__hs_why(CC_ERR_AUTH, why, whylen, "it is not a cc rank of this protocol version (it chose cipher "
                      "suite %u)", suite);
  memset(resp, 0, sizeof resp);
  cc__put32(resp, CC__HS_MAGIC);
  if (token) cc__hs_mac(token, "cc-c", hello, chal, NULL, resp + 8);
  if (cc__sock_send_all(fd, resp, sizeof resp, deadline) != 0 || cc__sock_recv_all(fd, verd, sizeof verd, deadline) != 0)
    return cc__hs_why(errno == ETIMEDOUT ? CC_ERR_TIMEOUT : CC_ERR_PEER_LOST, why, whylen, errno == ETIMEDOUT ?
                      "no answer to the handshake" : "it closed the connection during the handshake");
  if (cc__get32(verd) != CC__HS_MAGIC || cc__get32(verd + 4) != 0)
    return cc__hs_why(CC_ERR_AUTH, why, whylen, cc__get32(verd) == CC__HS_MAGIC ? "it refused this rank's token "
                      "(CC_TOKEN differs)" : "it is not a cc rank of this protocol version (bad handshake)");
  if (token) {
    int ok;
    cc__hs_mac(token, "cc-s", hello, chal, resp, mac);
    ok = cc__ct_equal(mac, verd + 8, 32);
    cc__crypto_wipe(mac, sizeof mac);
    if (!ok) return cc__hs_why(CC_ERR_AUTH, why, whylen, "it does not know this job's token (CC_TOKEN differs)");
    if (!(*sec = cc__sec_derive(token, 1, (int)suite, encrypt, hello, chal, resp, verd)))
      return cc__hs_why(CC_ERR_NO_MEMORY, why, whylen, "out of memory for the connection's keys");
  }
  return CC_OK;
}

/* ---------------------------------------------------------------- the accepting side
   A state machine per connection (hello, response, then the record when with_rec), all polled together in a
   table of CC__PEND_MAX; one that has had CC__HS_WAIT for its current message makes room for a newer one
   (docs/tcp.md, "Handshake and authentication"). take(ctx, hello, fd, rec, sec) keeps the connection (1: fd
   and sec are its now) or refuses it (0). */

#define CC__BACKLOG 4096               /* listen(): the kernel caps it at net.core.somaxconn */

typedef struct cc__pend {
  int fd, state;                       /* 0: hello, 1: response, 2: record */
  size_t got;
  uint64_t since;                      /* when the server began waiting for this message */
  cc__hello_t h;
  cc__sec *sec;
  unsigned char hello[CC__HELLO], chal[CC__CHAL], resp[CC__RESP], in[CC__REC + CC__TAG];
} cc__pend;

typedef int (*cc__take_fn)(void *ctx, const cc__hello_t *h, int fd, const unsigned char *rec, cc__sec *sec);

/* Why a connection with a well-formed hello was refused (TOKEN to ENCRYPT:
   CC_ERR_AUTH). The reply of a failed rendezvous carries it (@bootstrap), so
   keep the numbers. */
enum { CC__REF_NONE, CC__REF_TOKEN, CC__REF_NO_TOKEN, CC__REF_HAS_TOKEN, CC__REF_ENCRYPT, CC__REF_WORLD,
       CC__REF_OTHER, CC__REF_STALE, CC__REF_COUNT };

/* The first refusal of a connection claiming one rank. */
typedef struct cc__refusal {
  int reason;                          /* CC__REF_*; NONE: none yet */
  int rank;                            /* the rank it claimed */
  uint32_t world;                      /* the world size it claimed */
  unsigned count;                      /* refusals of connections claiming that rank */
  uint64_t first;                      /* when the first came */
  char addr[64];                       /* where it came from */
} cc__refusal;

/* What a refusal means, from the side of rank `me` (world size `world`),
   e.g. "its CC_TOKEN differs from rank 0's". */
static void cc__refusal_text(const cc__refusal *f, int me, uint32_t world, char *buf, size_t len) {
  switch (f->reason) {
  case CC__REF_TOKEN: snprintf(buf, len, "its CC_TOKEN differs from rank %d's", me); break;
  case CC__REF_NO_TOKEN: snprintf(buf, len, "it has no CC_TOKEN, while rank %d has one", me); break;
  case CC__REF_HAS_TOKEN: snprintf(buf, len, "it has a CC_TOKEN, while rank %d has none", me); break;
  case CC__REF_ENCRYPT: snprintf(buf, len, "its CC_NET_ENCRYPT differs from rank %d's", me); break;
  case CC__REF_WORLD:
    snprintf(buf, len, "it says the world has %u ranks, rank %d says %u (the hosts were started with different "
             "sizes)", f->world, me, world);
    break;
  case CC__REF_STALE: snprintf(buf, len, "it came for another rendezvous (a stale file:// rendezvous)"); break;
  default: snprintf(buf, len, "it belongs to another job, or named another rank"); break;
  }
}

/* A serve's log of refusals: one WARN line per (address, rank, reason),
   whatever CC_DEBUG, at most CC__REF_LOGGED of them; the rest at TRACE. */
#define CC__REF_LOGGED 16
typedef struct cc__hs_log {
  unsigned warned;
  char seen[CC__REF_LOGGED][80];
} cc__hs_log;

typedef struct cc__hs_srv {            /* what every connection of one cc__hs_serve is checked against */
  cc_comm *c;
  uint32_t kind, world;
  int me;                              /* the rank connections must name */
  const char *job, *token;
  int encrypt, with_rec;
  cc__take_fn take;
  void *ctx;
  cc__refusal *refs;                   /* NULL, or world + 1: the first refusal claiming each rank; [world]: claiming one beyond */
  int (*give_up)(void *ctx);           /* NULL, or nonzero: stop serving (cc__hs_serve returns -2) */
  cc__hs_log *log;                     /* cc__hs_serve's own */
} cc__hs_srv;

/* Connection q is refused for `reason`: log it (rate limited), and record it
   against the rank it claims (the rendezvous' rule, @bootstrap). */
static void cc__hs_refused(const cc__hs_srv *v, const cc__pend *q, int reason) {
  cc_comm *c = v->c;
  cc__refusal f, *slot = NULL;
  char key[80], what[200];
  unsigned i;
  int level = CC__LOG_WARN;            /* printed whatever CC_DEBUG (CC__LOG_ALWAYS) */
  memset(&f, 0, sizeof f);
  f.reason = reason; f.rank = (int)q->h.from; f.world = q->h.world; f.first = cc__now_ns();
  cc__sock_peer(q->fd, f.addr, sizeof f.addr);
  cc__refusal_text(&f, c->rank, v->world, what, sizeof what);
  snprintf(key, sizeof key, "%.63s %d %d", f.addr, f.rank, reason);
  for (i = 0; i < v->log->warned && i < CC__REF_LOGGED; i++) if (strcmp(v->log->seen[i], key) == 0) level = CC__LOG_TRACE;
  if (level == CC__LOG_WARN && v->log->warned > CC__REF_LOGGED) level = CC__LOG_TRACE;
  if (level == CC__LOG_WARN && v->log->warned == CC__REF_LOGGED) {
    cc__log(c, CC__LOG_ALWAYS, "comm_init: rank %d: more connections refused: logged at CC_DEBUG=TRACE only", c->rank);
    v->log->warned++;
    level = CC__LOG_TRACE;
  }
  if (level == CC__LOG_WARN) { memcpy(v->log->seen[v->log->warned++], key, sizeof key); level = CC__LOG_ALWAYS; }
  cc__log(c, level, "comm_init: rank %d: refused a connection from %s claiming to be rank %d of %u: %s", c->rank,
          f.addr, f.rank, f.world, what);
  if (!v->refs || q->h.to != v->me || q->h.from == v->me) return;
  slot = (uint32_t)q->h.from < v->world ? &v->refs[q->h.from] : &v->refs[v->world];
  if (!slot->count) *slot = f;
  slot->count++;
}

/* One step of connection q after its current message arrived: 0 go on,
   1 kept, -1 drop. */
static int cc__pend_step(const cc__hs_srv *v, cc__pend *q) {
  cc_comm *c = v->c;
  if (q->state == 0) {
    uint32_t status, suite = 0;
    int reason = CC__REF_NONE;
    memcpy(q->hello, q->in, CC__HELLO);
    if (cc__hello_decode(q->hello, &q->h) != 0) {
      char addr[64];
      cc__sock_peer(q->fd, addr, sizeof addr);
      if (cc__get32(q->hello) == CC__HS_MAGIC && cc__get32(q->hello + 4) != CC__NET_VERSION)
        cc__log(c, CC__LOG_WARN, "comm_init: rank %d: refused a connection from %s: it speaks cc protocol version %u, "
                "this rank %u (another version of cc.h)", c->rank, addr, cc__get32(q->hello + 4), CC__NET_VERSION);
      else
        cc__log(c, CC__LOG_INFO, "comm_init: rank %d: dropped a connection from %s that is not a cc rank (no "
                "well-formed hello)", c->rank, addr);
      return -1;
    }
    if (q->h.world != v->world) reason = CC__REF_WORLD;
    else if (q->h.kind != v->kind || q->h.to != v->me) reason = CC__REF_OTHER;
    else if (strncmp(q->h.job, v->job, 40) != 0) reason = v->kind == CC__HELLO_DATA ? CC__REF_OTHER : CC__REF_STALE;
    else if (!(q->h.flags & CC__HS_TOKEN) != !v->token) reason = v->token ? CC__REF_NO_TOKEN : CC__REF_HAS_TOKEN;
    else if (!(q->h.flags & CC__HS_ENCRYPT) != !v->encrypt) reason = CC__REF_ENCRYPT;
    status = (uint32_t)(reason == CC__REF_NONE ? CC_OK : reason <= CC__REF_ENCRYPT ? CC_ERR_AUTH
                        : reason == CC__REF_STALE ? CC_ERR_INVALID_ARG : CC_ERR_MISMATCH);
    if (v->token) suite = (q->h.flags & CC__HS_GCM) && cc__aead_have_gcm() ? CC__AEAD_AES256_GCM : CC__AEAD_CHACHA20_POLY1305;
    memset(q->chal, 0, sizeof q->chal);
    cc__put32(q->chal, CC__HS_MAGIC);
    cc__put32(q->chal + 4, CC__NET_VERSION);
    cc__put32(q->chal + 8, status);
    cc__put32(q->chal + 12, (v->token ? CC__HS_TOKEN : 0) | (v->encrypt ? CC__HS_ENCRYPT : 0));
    if (cc__random(q->chal + 16, 16) != 0) {   /* (cc__settings_read checked that the kernel gives them) */
      cc__log(c, CC__LOG_WARN, "comm_init: rank %d: dropped a connection: no random bytes for its challenge "
              "(getrandom, then /dev/urandom: errno %d)", c->rank, errno);
      return -1;
    }
    cc__put32(q->chal + 32, suite);
    if (reason == CC__REF_WORLD) cc__put32(q->chal + 36, v->world);   /* a refusal for the world size says this one */
    if (status != 0) cc__hs_refused(v, q, reason);
    if (cc__sock_send_small(q->fd, q->chal, sizeof q->chal) != 0 || status != 0) return -1;
    q->state = 1;
    q->since = cc__now_ns();
    return 0;
  }
  if (q->state == 1) {
    unsigned char verd[CC__VERD], mac[32];
    memcpy(q->resp, q->in, CC__RESP);
    if (cc__get32(q->resp) != CC__HS_MAGIC || cc__get32(q->resp + 4) != 0) return -1;   /* no MAC covers the zero */
    memset(verd, 0, sizeof verd);
    cc__put32(verd, CC__HS_MAGIC);
    if (v->token) {
      int ok;
      cc__hs_mac(v->token, "cc-c", q->hello, q->chal, NULL, mac);
      ok = cc__ct_equal(mac, q->resp + 8, 32);
      cc__crypto_wipe(mac, sizeof mac);
      if (!ok) {
        cc__put32(verd + 4, (uint32_t)CC_ERR_AUTH);
        cc__hs_refused(v, q, CC__REF_TOKEN);
        (void)cc__sock_send_small(q->fd, verd, sizeof verd);
        return -1;
      }
      cc__hs_mac(v->token, "cc-s", q->hello, q->chal, q->resp, verd + 8);
      q->sec = cc__sec_derive(v->token, 0, (int)cc__get32(q->chal + 32), v->encrypt, q->hello, q->chal, q->resp, verd);
      if (!q->sec) return -1;
    }
    if (cc__sock_send_small(q->fd, verd, sizeof verd) != 0) return -1;
    if (v->with_rec) { q->state = 2; q->since = cc__now_ns(); return 0; }
  } else if (q->sec && cc__sec_open(q->sec, q->in, CC__REC) != 0) {   /* the record */
    cc__log(c, CC__LOG_WARN, "comm_init: rank %d: dropped rank %d's connection: its record failed its integrity check",
            c->rank, (int)q->h.from);
    return -1;
  }
  return v->take(v->ctx, &q->h, q->fd, q->state == 2 ? q->in : NULL, q->sec) ? 1 : -1;
}

static void cc__pend_drop(cc__pend *pend, int *np, int i) {
  cc__fd_close(pend[i].fd);
  cc__sec_free(pend[i].sec);
  pend[i] = pend[--*np];
}

/* Read what connection i of the table (pend[0..*np)) has and step it: one
   kept leaves the table (counted in *kept), one dropped is closed. */
static void cc__pend_pump(const cc__hs_srv *v, cc__pend *pend, int *np, int i, int *kept) {
  cc__pend *q = &pend[i];
  int st = 0;
  while (!st) {
    size_t need = q->state == 0 ? CC__HELLO : q->state == 1 ? CC__RESP : CC__REC + (q->sec ? CC__TAG : 0);
    long k = cc__sock_recv(q->fd, q->in + q->got, need - q->got);
    if (k == 0 || (k < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) st = -1;
    else if (k < 0) return;
    else if ((q->got += (size_t)k) == need) { q->got = 0; st = cc__pend_step(v, q); }
  }
  if (st == 1) { ++*kept; pend[i] = pend[--*np]; }
  else cc__pend_drop(pend, np, i);
}

/* The connection to drop for a newer one: of those that have waited
   CC__HS_WAIT or longer for their current message, the one waiting longest;
   else -1 and *when the time the first will have. */
static int cc__pend_victim(const cc__pend *pend, int np, uint64_t now, uint64_t *when) {
  int i, best = -1;
  *when = UINT64_MAX;
  for (i = 0; i < np; i++) {
    uint64_t t = pend[i].since + CC__HS_WAIT;
    if (t <= now && (best < 0 || pend[i].since < pend[best].since)) best = i;
    if (t > now) *when = CC__MIN(*when, t);
  }
  return best;
}

/* Accept what waits on lfd while there is room, or a connection too slow to
   drop for it (counted in *evicted): 0, or -1 when accepting failed for want
   of file descriptors (then *cap shrinks to what the table holds, and grows
   back one at a time as accepts succeed again). New connections are pumped
   at once: a cc rank's hello is usually there already. */
static int cc__pend_accept(const cc__hs_srv *v, int lfd, cc__pend *pend, int *np, int *cap, int want, int *kept,
                           unsigned long *evicted) {
  uint64_t when;
  while (*kept < want) {
    int fd;
    if (*np >= *cap) {
      int victim = cc__pend_victim(pend, *np, cc__now_ns(), &when);
      if (victim < 0) return 0;        /* every one still in time: the rest waits in the kernel's queue */
      cc__pend_drop(pend, np, victim);
      ++*evicted;
    }
    if ((fd = cc__sock_accept(lfd)) < 0) {
      if (errno != EMFILE && errno != ENFILE) return 0;
      *cap = CC__MAX(*np, 1);
      return -1;
    }
    memset(&pend[*np], 0, sizeof pend[*np]);
    pend[*np].fd = fd;
    pend[*np].since = cc__now_ns();
    if (++*np >= *cap && *cap < CC__PEND_MAX) ++*cap;   /* descriptors came back: try one more */
    cc__pend_pump(v, pend, np, *np - 1, kept);
  }
  return 0;
}

/* Serve until `want` connections were kept (0), the deadline (-1), or until
   give_up says so (-2); -3: out of memory. */
static int cc__hs_serve(const cc__hs_srv *vv, int lfd, int want, uint64_t deadline) {
  cc_comm *c = vv->c;
  cc__pend *pend = (cc__pend *)CC_MALLOC(sizeof(cc__pend) * CC__PEND_MAX);
  struct pollfd *pf = (struct pollfd *)CC_MALLOC(sizeof(struct pollfd) * (CC__PEND_MAX + 1));
  int np = 0, kept = 0, i, gave_up = 0, cap = CC__PEND_MAX, nofd = 0;
  unsigned long evicted = 0;
  uint64_t pause = 0;
  cc__hs_log log;
  cc__hs_srv sv = *vv, *v = &sv;
  memset(&log, 0, sizeof log);
  sv.log = &log;
  if (!pend || !pf) { CC_FREE(pend); CC_FREE(pf); return -3; }
  /* a descriptor for each connection of the table and of the world, and some */
  (void)cc__fd_limit_raise((long)CC__PEND_MAX + (long)CC__MIN(v->world, 1u << 20) + 64);
  while (kept < want) {
    uint64_t now = cc__now_ns(), next = deadline, when;
    int nf = 0, lis, victim = -1;
    if (now >= deadline) break;
    if (v->give_up && v->give_up(v->ctx)) { gave_up = 1; break; }
    if (np >= cap && (victim = cc__pend_victim(pend, np, now, &when)) < 0) next = CC__MIN(next, when);
    lis = (np < cap || victim >= 0) && now >= pause;   /* pf[0] is the listener then */
    if (now < pause) next = CC__MIN(next, pause);
    if (lis) { pf[nf].fd = lfd; pf[nf].events = POLLIN; pf[nf++].revents = 0; }
    for (i = 0; i < np; i++) { pf[nf].fd = pend[i].fd; pf[nf].events = POLLIN; pf[nf++].revents = 0; }
    if (cc__poll(pf, nf, CC__MIN(next - now, 100 * CC__MS) + 1000) <= 0) continue;
    for (i = np - 1; i >= 0; i--)      /* the pending ones (pf index: i + listener slot) */
      if (pf[i + lis].revents) cc__pend_pump(v, pend, &np, i, &kept);
    if (!lis || !(pf[0].revents & POLLIN)) continue;
    if (cc__pend_accept(v, lfd, pend, &np, &cap, want, &kept, &evicted) != 0 && np == 0) {
      pause = cc__now_ns() + 10 * CC__MS;   /* not one descriptor: the connections wait in the kernel's queue */
      if (!nofd++)
        cc__log(c, CC__LOG_WARN, "comm_init: rank %d: cannot accept connections: no file descriptor left (the "
                "open-files limit, ulimit -n)", c->rank);
    }
  }
  if (evicted)
    cc__log(c, CC__LOG_WARN, "comm_init: rank %d: dropped %lu connection%s that had not sent a handshake message "
            "within %.1f s, for newer ones (a flood of connections?)", c->rank, evicted, evicted == 1 ? "" : "s",
            (double)CC__HS_WAIT / 1e9);
  while (np) cc__pend_drop(pend, &np, np - 1);
  CC_FREE(pend);
  CC_FREE(pf);
  return kept >= want ? 0 : gave_up ? -2 : -1;
}

/* ---------------------------------------------------------------- sealed messages to many, from one */

/* One connection of cc__send_many. */
typedef struct cc__out {
  int fd;                              /* < 0: skipped */
  int ok;                              /* 1 all sent, 0 not yet, -1 failed (or not done by the deadline) */
  cc__sec *sec;                        /* NULL: the bytes as they are */
  size_t pos;                          /* bytes of the message sent (no sec) or sealed into buf */
  size_t boff, blen;                   /* sec: buf's bytes sent, held */
  int fin;                             /* sec: the tag is in buf */
  unsigned char buf[4096 + CC__TAG];
} cc__out;

/* Write what out o's socket takes: 1 all sent, 0 not yet, -1 failed. */
static int cc__out_pump(cc__out *o, const unsigned char *msg, size_t len) {
  for (;;) {
    const unsigned char *p;
    size_t m;
    long w;
    if (!o->sec) { p = msg + o->pos; m = len - o->pos; }
    else {
      if (o->boff == o->blen) {
        size_t k;
        if (o->fin) return 1;
        k = CC__MIN((size_t)4096, len - o->pos);
        if (o->sec->encrypt) (void)cc__aead_encrypt(&o->sec->txs, msg + o->pos, o->buf, k);
        else { memcpy(o->buf, msg + o->pos, k); (void)cc__aead_aad(&o->sec->txs, o->buf, k); }
        o->pos += k;
        o->boff = 0;
        o->blen = k;
        if (o->pos == len) { (void)cc__aead_final(&o->sec->txs, o->buf + k); o->blen += CC__TAG; o->fin = 1; }
      }
      p = o->buf + o->boff; m = o->blen - o->boff;
    }
    if (!m) return 1;
    w = cc__sock_send2(o->fd, p, m, NULL, 0);
    if (w > 0) { if (o->sec) o->boff += (size_t)w; else o->pos += (size_t)w; continue; }
    return w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) ? 0 : -1;
  }
}

/* Send one message (len bytes at msg) to n connections at once, each sealed
   as one AEAD message with its own keys where it has them, all bounded by one
   deadline: a slow or silent reader delays nobody else. Sets each out's ok;
   returns how many did not take it all (0, or -1 when out of memory). */
static int cc__send_many(cc__out *o, int n, const unsigned char *msg, size_t len, uint64_t deadline) {
  struct pollfd *pf = (struct pollfd *)CC_MALLOC(sizeof(struct pollfd) * (size_t)(n > 0 ? n : 1));
  int i, bad = 0;
  if (!pf) return -1;
  for (i = 0; i < n; i++) {
    o[i].ok = o[i].fd < 0 ? 1 : 0;
    o[i].pos = o[i].boff = o[i].blen = 0;
    o[i].fin = 0;
    if (o[i].fd >= 0 && o[i].sec) cc__sec_begin(o[i].sec, 1);
  }
  for (;;) {
    int np = 0;
    uint64_t now;
    for (i = 0; i < n; i++) {
      if (o[i].ok) continue;
      o[i].ok = cc__out_pump(&o[i], msg, len);
      if (o[i].ok) continue;
      pf[np].fd = o[i].fd; pf[np].events = POLLOUT; pf[np++].revents = 0;
    }
    if (!np) break;
    now = cc__now_ns();
    if (now >= deadline) {
      for (i = 0; i < n; i++) if (!o[i].ok) o[i].ok = -1;
      break;
    }
    (void)cc__poll(pf, np, CC__MIN(deadline - now, 100 * CC__MS) + 1000);
  }
  for (i = 0; i < n; i++) bad += o[i].ok < 0;
  CC_FREE(pf);
  return bad;
}

/* Read n bytes of a sealed message from fd (sec NULL: as they are): the
   message's first piece when begin, its last (then its tag is read and
   checked) when end. 0; -1 with errno (ETIMEDOUT, ECONNRESET); -2 when the
   message is not authentic. */
static int cc__recv_sealed(int fd, cc__sec *sec, unsigned char *p, size_t n, int begin, int end, uint64_t deadline) {
  unsigned char tag[CC__TAG];
  if (cc__sock_recv_all(fd, p, n, deadline) != 0) return -1;
  if (!sec) return 0;
  if (begin) cc__sec_begin(sec, 0);
  if (sec->encrypt) (void)cc__aead_decrypt(&sec->rxs, p, p, n);
  else (void)cc__aead_aad(&sec->rxs, p, n);
  if (!end) return 0;
  if (cc__sock_recv_all(fd, tag, sizeof tag, deadline) != 0) return -1;
  return cc__aead_verify(&sec->rxs, tag) == 0 ? 0 : -2;
}

/* ---------------------------------------------------------------- records */

typedef struct cc__rec {
  char host[176];                      /* host identity (cc__host_id) */
  char ip[64];                         /* where this rank's data port listens */
  uint32_t port;
  char extra[12];                      /* split: a name for the group's segment */
} cc__rec;

static void cc__rec_encode(unsigned char *p, const cc__rec *r) {
  memset(p, 0, CC__REC);
  memcpy(p, r->host, 176);
  memcpy(p + 176, r->ip, 64);
  cc__put32(p + 240, r->port);
  memcpy(p + 244, r->extra, 12);
}

/* A record from the wire: 0, or -1 when malformed. */
static int cc__rec_decode(const unsigned char *p, cc__rec *r) {
  memcpy(r->host, p, 176);
  memcpy(r->ip, p + 176, 64);
  r->port = cc__get32(p + 240);
  memcpy(r->extra, p + 244, 12);
  if (!memchr(r->host, 0, 176) || !memchr(r->ip, 0, 64) || !memchr(r->extra, 0, 12) || !r->host[0]) return -1;
  return r->port == 0 || r->port > 65535 || !cc__ip_parse(r->ip, NULL) ? -1 : 0;
}

/* ============================================================== @engine */
/* Messages between ranks, over every link: the one point-to-point engine of
   the library. cc_send/cc_recv, groups, and every collective that is not an
   arena run (the ranks span hosts, or CC_TRANSPORT=tcp) move their bytes here,
   as frames (a 48-byte header, then the payload) over a ring of the host's
   segment, a TCP connection, or the queue of messages to oneself. A receive
   takes the oldest message of its (peer, tag); a collective's frames carry
   its call, which the receiver compares whole with its own. cc__wait is the
   one wait of the library (the arena's phases use it too), and cc__fail_all
   fails the communicator on every rank. How frames move: docs/tcp.md,
   "Messages". */

#define CC__FRAME_MAGIC 0x32466363u          /* "ccF2" */
#define CC__MAX_FRAME   ((uint64_t)1 << 44)  /* 16 TiB: larger is corrupt */
#define CC__STAGE       (64u << 10)

/* ---------------------------------------------------------------- frames
   0 magic u32 | 4 tag i32 | 8 bytes u64 | 16 seq u64 | 24 count u64 |
   32 op i32 | 36 root i32 | 40 coll u8 | 41 dtype u8 | 42 zero u16 | 44 zero u32
   (little endian). seq and the identity are zero in user messages. */

static void cc__frame_encode(unsigned char *p, const cc__frame *f) {
  memset(p, 0, CC__FRAME);
  cc__put32(p, CC__FRAME_MAGIC);
  cc__put32(p + 4, (uint32_t)f->tag);
  cc__put64(p + 8, f->bytes);
  cc__put64(p + 16, f->seq);
  cc__put64(p + 24, f->id.count);
  cc__put32(p + 32, (uint32_t)f->id.op);
  cc__put32(p + 36, (uint32_t)f->id.root);
  p[40] = f->id.coll;
  p[41] = f->id.dtype;
}

/* The header of a frame of `bytes` with `tag`: of collective #seq, call id,
   or with seq 0 and id NULL, of no collective. */
static void cc__frame_head(unsigned char *p, int tag, uint64_t bytes, uint64_t seq, const cc__ident *id) {
  cc__frame f;
  memset(&f, 0, sizeof f);
  f.tag = tag;
  f.bytes = bytes;
  f.seq = seq;
  if (id) f.id = *id;
  cc__frame_encode(p, &f);
}

/* A frame header from a link: 0, or -1 when it is not one of ours. */
static int cc__frame_decode(const unsigned char *p, cc__frame *f) {
  memset(f, 0, sizeof *f);
  if (cc__get32(p) != CC__FRAME_MAGIC || p[42] || p[43] || cc__get32(p + 44)) return -1;
  f->tag = (int32_t)cc__get32(p + 4);
  f->bytes = cc__get64(p + 8);
  f->seq = cc__get64(p + 16);
  f->id.count = cc__get64(p + 24);
  f->id.op = (int32_t)cc__get32(p + 32);
  f->id.root = (int32_t)cc__get32(p + 36);
  f->id.coll = p[40];
  f->id.dtype = p[41];
  if (f->bytes > CC__MAX_FRAME) return -1;
  if (f->tag == CC__TAG_COLL)
    return f->seq && f->id.coll > 0 && f->id.coll < CC__COLL_COUNT && f->id.dtype < CC_DTYPE_COUNT ? 0 : -1;
  if (f->tag == CC__TAG_BYE)           /* no payload; the last collective's number and identity, if any */
    return !f->bytes && (f->seq ? f->id.coll > 0 && f->id.coll < CC__COLL_COUNT && f->id.dtype < CC_DTYPE_COUNT
                                : !f->id.count && !f->id.op && !f->id.root && !f->id.coll && !f->id.dtype) ? 0 : -1;
  if (f->seq || f->id.count || f->id.op || f->id.root || f->id.coll || f->id.dtype) return -1;
  if (f->tag == CC__TAG_ABORT) return f->bytes >= 8 && f->bytes <= CC__ABORT_MAX ? 0 : -1;
  return f->tag >= 0 ? 0 : -1;
}

/* An abort frame's payload: the code, the rank it names, a message. */
static size_t cc__abort_encode(unsigned char *p, cc_result code, int who, const char *msg) {
  size_t len = CC__MIN(strlen(msg), (size_t)CC__ABORT_MAX - 9);
  cc__put32(p, (uint32_t)code);
  cc__put32(p + 4, (uint32_t)who);
  memcpy(p + 8, msg, len);
  p[8 + len] = 0;
  return 9 + len;
}

static int cc__abort_decode(const unsigned char *p, size_t len, cc_result *code, int *who, char *msg, size_t msglen) {
  uint32_t cd;
  size_t i, n;
  if (len < 8 || len > CC__ABORT_MAX || msglen == 0) return -1;
  cd = cc__get32(p);
  if (cd == 0 || cd == (uint32_t)CC_ERR_INVALID_ARG || cd >= (uint32_t)CC_RESULT_COUNT) return -1;
  *code = (cc_result)cd;
  *who = (int32_t)cc__get32(p + 4);
  n = CC__MIN(len - 8, msglen - 1);
  for (i = 0; i < n && p[8 + i]; i++) msg[i] = (char)(p[8 + i] >= 32 && p[8 + i] < 127 ? p[8 + i] : '?');
  msg[i] = 0;
  return 0;
}

/* ---------------------------------------------------------------- authenticated frames
   On a TCP link with a token (peer->tcp.sec) a frame is two AEAD messages of
   the connection, header | its tag | payload | its tag (none without a
   payload); the header's tag is checked before the header is used, the
   payload's before its receive completes. docs/tcp.md, "Messages". */

/* The last frame to p over TCP, f (its header, then len bytes: an abort or a
   farewell), sent at once where its stream is between frames (sealed where
   the link has keys); then the connection's end. */
static void cc__send_last(cc__peer *p, const unsigned char *f, size_t len) {
  unsigned char g[CC__FRAME + CC__ABORT_MAX + 2 * CC__TAG];
  cc__sec *s = p->tcp.sec;
  if (!p->tx_mid && !s) (void)cc__sock_send_small(p->tcp.fd, f, CC__FRAME + len);
  else if (!p->tx_mid) {
    memcpy(g, f, CC__FRAME);
    cc__sec_begin(s, 1);
    (void)cc__aead_aad(&s->txs, g, CC__FRAME);
    (void)cc__aead_final(&s->txs, g + CC__FRAME);
    if (len) cc__sec_seal(s, f + CC__FRAME, len, g + CC__FRAME + CC__TAG);
    (void)cc__sock_send_small(p->tcp.fd, g, CC__FRAME + CC__TAG + (len ? len + CC__TAG : 0));
  }
  cc__sock_shutdown(p->tcp.fd);
}

/* The most a frame's payload may be on this link. */
static uint64_t cc__sec_limit(const cc__sec *s) {
  if (!s || !s->encrypt) return CC__MAX_FRAME;
  return s->suite == CC__AEAD_AES256_GCM ? CC__GCM_PMAX : CC__CHACHA_PMAX;
}

/* ---------------------------------------------------------------- connectors

   A peer's link is one connector: the rings of the host's segment
   (CC__LINK_SHM) or a TCP connection (CC__LINK_TCP), each with its state in
   its own part of cc__peer (ring, tcp). The engine reaches a link only
   through these; adding a transport is adding a row to cc__connectors. */

typedef struct cc__connector {
  const char *name;
  /* Bytes from rank p into dst, at most max: how many (0: none now), or -1
     when the link ended (errno says how; 0: the peer closed it). */
  long (*read)(cc_comm *c, int p, void *dst, size_t max);
  /* Write what the link to m->peer takes of send m (its header, then its
     payload): bytes written, or -1 when the link broke (errno). */
  long (*write)(cc_comm *c, cc__msg *m);
  /* Is anything from rank p already here to be read without waiting? */
  int (*has_bytes)(cc_comm *c, int p);
  /* Is rank p gone (why says how)? A question only: nothing is posted. */
  int (*gone)(cc_comm *c, int p, char *why, size_t len);
} cc__connector;

/* Has send m written all of its frame? */
static int cc__sent_all(const cc__msg *m) {
  return m->hdr_sent == m->hdr_len && m->moved == m->bytes && !m->tag_left;
}

/* Send m moved w bytes: its header first, then its payload. */
static long cc__sent(cc__peer *pe, cc__msg *m, long w) {
  if (w > 0) {
    size_t h = CC__MIN((size_t)w, m->hdr_len - m->hdr_sent);
    m->hdr_sent += h;
    m->moved += (size_t)w - h;
    pe->tx_mid = !cc__sent_all(m);
  }
  return w;
}

/* ---- rings: the host's segment (@shm) */

/* The ring from rank `from` to this rank, and the one to rank `to`. */
static cc__chan *cc__ring_in(cc_comm *c, int from) { return cc__chan_at(c->shm, c->peers[from].ring.ch, c->shm->rank); }
static cc__chan *cc__ring_out(cc_comm *c, int to) { return cc__chan_at(c->shm, c->shm->rank, c->peers[to].ring.ch); }

static long cc__ring_read(cc_comm *c, int p, void *dst, size_t max) {
  cc__chan *ch = cc__ring_in(c, p);
  uint64_t tail = ch->tail, head = CC__LOAD(&ch->head);
  size_t n = CC__MIN((size_t)(head - tail), max);
  if (!n) return 0;
  cc__ring_get(c->shm, ch, tail, dst, n);
  cc__publish(c->shm, &ch->tail, tail + n);
  cc__notify(c->shm);
  return (long)n;
}

static long cc__ring_write(cc_comm *c, cc__msg *m) {
  cc__chan *ch = cc__ring_out(c, m->peer);
  uint64_t head = ch->head, tail = CC__LOAD(&ch->tail);
  size_t space = c->shm->seg.chan_bytes - (size_t)(head - tail), a = CC__MIN(space, m->hdr_len - m->hdr_sent), b;
  long w;
  if (a) cc__ring_put(c->shm, ch, head, m->hdr + m->hdr_sent, a);
  b = CC__MIN(space - a, m->bytes - m->moved);
  if (b) cc__ring_put(c->shm, ch, head + a, m->buf + m->moved, b);
  w = (long)(a + b);
  if (w) {
    cc__publish(c->shm, &ch->head, head + (uint64_t)w);
    cc__notify(c->shm);
  }
  return cc__sent(&c->peers[m->peer], m, w);
}

static int cc__ring_has_bytes(cc_comm *c, int p) {
  cc__chan *ch = cc__ring_in(c, p);
  return CC__LOAD(&ch->head) != ch->tail;
}

static int cc__ring_gone(cc_comm *c, int p, char *why, size_t len) {
  return cc__shm_gone(c->shm, c->peers[p].ring.ch, why, len);
}

/* ---- TCP connections (@tcp) */

static long cc__tcp_read(cc_comm *c, int p, void *dst, size_t max) {
  cc__tcp_link *t = &c->peers[p].tcp;
  size_t ask;
  long k;
  if (t->st_beg < t->st_end) {         /* what was read ahead first */
    size_t n = CC__MIN(t->st_end - t->st_beg, max);
    memcpy(dst, t->stage + t->st_beg, n);
    t->st_beg += n;
    if (t->st_beg == t->st_end) t->st_beg = t->st_end = 0;
    return (long)n;
  }
  if (t->eof) { errno = 0; return -1; }
  if (t->drained) return 0;            /* a read now would only say EAGAIN */
  ask = max >= 4096 ? CC__MIN(max, (size_t)1 << 30) : CC__STAGE;   /* a large payload: straight to its place */
  k = cc__sock_recv(t->fd, max >= 4096 ? dst : t->stage, ask);
  if (k > 0 && (size_t)k < ask && !t->ending) t->drained = 1;
  if (k > 0 && max < 4096) {           /* a small one through the stage: the rest is read ahead */
    size_t n = CC__MIN((size_t)k, max);
    memcpy(dst, t->stage, n);
    if (n < (size_t)k) { t->st_beg = n; t->st_end = (size_t)k; }
    return (long)n;
  }
  if (k > 0) return k;
  if (k == 0) { t->eof = 1; errno = 0; return -1; }
  if (errno == EAGAIN || errno == EWOULDBLOCK) { t->drained = !t->ending; return 0; }
  t->eof = 1;
  return -1;
}

/* A send on an authenticated TCP link: the header's tag and the frame's two
   nonces are taken at its first write; a small payload is MACed (or
   encrypted) at once, so that the whole frame goes in one sendmsg; a large
   one is MACed just after the socket took it, at most CC__SEC_STAGE bytes a
   write so that the bytes are still in the cache (the receiver reads as much
   at a time, for the same reason), or encrypted a stage at a time into the
   connection's stage. Bytes written, or -1 (errno). */
static long cc__sec_write(cc__peer *pe, cc__msg *m) {
  cc__sec *s = pe->tcp.sec;
  const unsigned char *pay;
  size_t plen, hleft, tlen = 0, k;
  long w;
  if (!m->sealed) {
    cc__sec_begin(s, 1);
    (void)cc__aead_aad(&s->txs, m->hdr, CC__FRAME);
    (void)cc__aead_final(&s->txs, m->hdr + CC__FRAME);
    m->hdr_len = CC__FRAME + CC__TAG;
    m->sealed = 1;
    pe->tx_mid = 1;                    /* its numbers are taken: nothing else may go first (an abort frame) */
    m->macd = m->st_off = 0;
    m->tag_left = m->bytes ? CC__TAG : 0;
    if (m->bytes) {
      cc__sec_begin(s, 1);
      if (!s->encrypt && m->bytes <= CC__STAGE) {
        (void)cc__aead_aad(&s->txs, m->buf, m->bytes);
        (void)cc__aead_final(&s->txs, s->tx_tag);
        m->macd = m->bytes;
      }
    }
  }
  if (s->encrypt && m->moved == m->macd && m->macd < m->bytes) {   /* the stage is empty: fill it */
    k = CC__MIN(m->bytes - m->macd, (size_t)CC__SEC_STAGE);
    (void)cc__aead_encrypt(&s->txs, m->buf + m->macd, s->stage, k);
    m->st_off = m->macd;
    m->macd += k;
    if (m->macd == m->bytes) (void)cc__aead_final(&s->txs, s->tx_tag);
  }
  hleft = m->hdr_len - m->hdr_sent;
  if (s->encrypt) { pay = s->stage + (m->moved - m->st_off); plen = m->macd - m->moved; }
  else { pay = m->buf + m->moved; plen = CC__MIN(m->bytes - m->moved, (size_t)CC__SEC_STAGE); }
  if (m->tag_left && m->macd == m->bytes && m->moved + plen == m->bytes) tlen = m->tag_left;
  w = cc__sock_send3(pe->tcp.fd, m->hdr + m->hdr_sent, hleft, pay, plen, s->tx_tag + CC__TAG - m->tag_left, tlen);
  if (w < 0) return errno == EAGAIN || errno == EWOULDBLOCK ? 0 : -1;
  k = (size_t)w;
  m->hdr_sent += CC__MIN(k, hleft);
  k -= CC__MIN(k, hleft);
  m->moved += CC__MIN(k, plen);
  k -= CC__MIN(k, plen);
  m->tag_left -= k;
  if (!s->encrypt && m->moved > m->macd) {   /* MAC what the socket just took */
    (void)cc__aead_aad(&s->txs, m->buf + m->macd, m->moved - m->macd);
    m->macd = m->moved;
    if (m->macd == m->bytes) (void)cc__aead_final(&s->txs, s->tx_tag);
  }
  pe->tx_mid = !cc__sent_all(m);
  return w;
}

static long cc__tcp_write(cc_comm *c, cc__msg *m) {
  cc__peer *pe = &c->peers[m->peer];
  long w;
  if (pe->tcp.sec) return cc__sec_write(pe, m);
  w = cc__sock_send2(pe->tcp.fd, m->hdr + m->hdr_sent, m->hdr_len - m->hdr_sent, m->buf + m->moved,
                     CC__MIN(m->bytes - m->moved, (size_t)1 << 30));
  if (w < 0) return errno == EAGAIN || errno == EWOULDBLOCK ? 0 : -1;
  return cc__sent(pe, m, w);
}

static int cc__tcp_has_bytes(cc_comm *c, int p) {
  const cc__tcp_link *t = &c->peers[p].tcp;
  return t->st_beg < t->st_end;
}

static int cc__tcp_gone(cc_comm *c, int p, char *why, size_t len) {
  if (!c->peers[p].tcp.eof) return 0;
  snprintf(why, len, "closed its connection");
  return 1;
}

/* ---- no link (this rank itself, or none yet) */

static long cc__none_read(cc_comm *c, int p, void *dst, size_t max) { (void)c; (void)p; (void)dst; (void)max; return 0; }
static long cc__none_write(cc_comm *c, cc__msg *m) { (void)c; (void)m; return 0; }
static int cc__none_has_bytes(cc_comm *c, int p) { (void)c; (void)p; return 0; }
static int cc__none_gone(cc_comm *c, int p, char *why, size_t len) { (void)c; (void)p; (void)why; (void)len; return 0; }

/* By cc__link. */
static const cc__connector cc__connectors[] = {
  {"none", cc__none_read, cc__none_write, cc__none_has_bytes, cc__none_gone},
  {"self", cc__none_read, cc__none_write, cc__none_has_bytes, cc__none_gone},
  {"shared memory", cc__ring_read, cc__ring_write, cc__ring_has_bytes, cc__ring_gone},
  {"tcp", cc__tcp_read, cc__tcp_write, cc__tcp_has_bytes, cc__tcp_gone},
};

static CC__INLINE const cc__connector *cc__conn(const cc_comm *c, int p) { return &cc__connectors[c->peers[p].link]; }

static long cc__link_read(cc_comm *c, int p, void *dst, size_t max) {
  return max ? cc__conn(c, p)->read(c, p, dst, max) : 0;
}
static long cc__link_write(cc_comm *c, cc__msg *m) { return cc__conn(c, m->peer)->write(c, m); }
static int cc__link_has_bytes(cc_comm *c, int p) { return cc__conn(c, p)->has_bytes(c, p); }

/* ---------------------------------------------------------------- failures */

/* The communicator failed: tell every rank on another host, with an abort
   frame, then shut every connection, so that no peer waits for this rank.
   Where a frame is partly written the abort cannot go first: the message
   engine finishes that frame when its run ends (cc__run_settle), then sends
   it, so that the peer learns why rather than only that the stream broke. */
static void cc__propagate(cc_comm *c, cc_result code, int who, const char *msg) {
  int r;
  if (!c->net || c->net->propagated) return;
  c->net->propagated = 1;
  c->net->abort_len = cc__abort_encode(c->net->abort_f + CC__FRAME, code, who, msg);
  cc__frame_head(c->net->abort_f, CC__TAG_ABORT, c->net->abort_len, 0, NULL);
  for (r = 0; r < c->size; r++) {
    cc__peer *p = &c->peers[r];
    if (p->link != CC__LINK_TCP || p->tcp.fd < 0) continue;
    if (p->tx_mid) p->tcp.abort_owed = 1;
    else cc__send_last(p, c->net->abort_f, c->net->abort_len);
  }
}

/* Fail the communicator on every rank: post the failure to this host's ranks,
   send it to the others, fail here. The message says what happened; each rank
   puts the call and itself in front. */
static cc_result cc__fail_all(cc_comm *c, cc_result code, int who, const char *what, const char *fmt, ...) {
  char msg[256];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  cc__post_fail(c->hdr, code, who, msg);
  cc__propagate(c, code, who, msg);
  if (c->failed) return code;
  return cc__fail(c, code, "%s: rank %d: %s", what, c->rank, msg);
}

/* A mismatch this rank has just found and failed with (c->err says it),
   posted to every rank as well: a rank still waiting on this one for
   something else would otherwise see it leave, untold why, and report it
   lost. */
static CC__COLD cc_result cc__post_mismatch(cc_comm *c, const char *what) {
  return cc__fail_all(c, CC_ERR_MISMATCH, c->rank, what, "%s", c->err);
}

/* The message of the failure posted in h (its code is set): the poster
   writes it right after the code, so wait up to 20 ms for it. */
static const char *cc__posted_msg(cc__hdr *h) {
  uint64_t until = 0;
  while (!CC__LOAD(&h->fail_ready)) {
    uint64_t now = cc__now_ns();
    if (!until) until = now + 20 * CC__MS;
    else if (now >= until) break;
    cc__yield();
  }
  return CC__LOAD(&h->fail_ready) ? h->fail_msg : "the communicator failed";
}

/* A failure that another rank posted (or cc_comm_abort): take it, pass it on. */
static cc_result cc__take_fail(cc_comm *c, const char *what) {
  cc__hdr *h = c->hdr;
  uint32_t code = CC__LOAD(&h->fail_code);
  const char *msg = cc__posted_msg(h);
  cc__propagate(c, (cc_result)code, h->fail_rank, msg);
  if (c->failed) return CC_ERR_ABORTED;
  return cc__fail(c, (cc_result)code, "%s: rank %d: %s", what, c->rank, msg);
}

/* Leaving (cc_comm_destroy) without a failure: a farewell frame to every
   rank over TCP, with the number and identity of this rank's last
   collective (cc__left tells a mismatch from a loss by it), then
   the end of the stream. */
static void cc__say_bye(cc_comm *c) {
  unsigned char f[CC__FRAME];
  int r;
  if (!c->net || c->net->propagated) return;
  cc__frame_head(f, CC__TAG_BYE, 0, c->seq, c->seq ? &c->cur : NULL);
  for (r = 0; r < c->size; r++) {
    cc__peer *p = &c->peers[r];
    if (p->link != CC__LINK_TCP || p->tcp.fd < 0 || p->tx_mid || p->rx_dead) continue;
    cc__send_last(p, f, 0);
  }
}

/* Leaving (cc_comm_destroy): a failure posted here that no call of this
   rank took, a cc_comm_abort just before, say, still goes to the ranks on
   other hosts before the connections end, so that they get it (as this
   host's ranks do from the failure word) rather than the end of a stream. */
static void cc__propagate_posted(cc_comm *c) {
  uint32_t code;
  if (!c->net || c->net->propagated || !c->hdr || !(code = CC__LOAD(&c->hdr->fail_code))) return;
  cc__propagate(c, (cc_result)code, c->hdr->fail_rank, cc__posted_msg(c->hdr));
}

/* Post a failure to the failure word only: the waits of this rank (and of
   the ranks of its host) take it when they can no longer complete. */
static void cc__post_fail_msg(cc_comm *c, cc_result code, int who, const char *fmt, ...) {
  char msg[CC__ERR_BYTES];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  cc__post_fail(c->hdr, code, who, msg);
}

/* Rank r, in its collective #seq (call a), is in another call than this
   rank's (b), or went past it without doing what this rank waits for:
   CC_ERR_MISMATCH naming both calls, for every rank; `then` ends the
   message. */
static cc_result cc__call_mismatch(cc_comm *c, int r, const char *what, uint64_t seq, const char *a, const char *b,
                                   const char *then) {
  if (seq == c->seq)
    return cc__fail_all(c, CC_ERR_MISMATCH, r, what, "rank %d called %s as collective #%llu while this rank called "
                        "%s%s", r, a, (unsigned long long)c->seq, b, then);
  return cc__fail_all(c, CC_ERR_MISMATCH, r, what, "rank %d went on to its collective #%llu, %s, without what this "
                      "rank waits for from it in #%llu, %s%s", r, (unsigned long long)seq, a,
                      (unsigned long long)c->seq, b, then);
}

/* Rank r over TCP ended its stream after its farewell: a mismatch, not a
   loss, when it said farewell from another call than this rank's collective
   c->seq (docs/design.md, "How a call flows"); else, when it left from this
   very call or before it, CC_ERR_PEER_LOST. */
static cc_result cc__left(cc_comm *c, int r, const char *what) {
  const cc__peer *p = &c->peers[r];
  char a[128], b[128];
  if (c->call_word && p->tcp.bye_seq >= c->seq &&
      !(p->tcp.bye_seq == c->seq && cc__ident_same(&p->tcp.bye_id, &c->cur))) {
    cc__ident_str(&p->tcp.bye_id, a, sizeof a);
    cc__ident_str(&c->cur, b, sizeof b);
    return cc__call_mismatch(c, r, what, p->tcp.bye_seq, a, b, ", then left (it destroyed its communicator)");
  }
  return cc__fail_all(c, CC_ERR_PEER_LOST, r, what, "rank %d left (it destroyed its communicator) after its "
                      "collective #%llu", r, (unsigned long long)p->tcp.bye_seq);
}

/* Is rank r gone (why says how)? A question only: nothing is posted. */
static int cc__peer_gone(cc_comm *c, int r, char *why, size_t len) {
  if (r < 0 || r >= c->size || r == c->rank) return 0;
  return cc__conn(c, r)->gone(c, r, why, len);
}

/* Is rank r gone? Posts CC_ERR_PEER_LOST naming it when it is (a mismatch
   when it left from another call than this one: cc__left). */
static cc_result cc__check_peer(cc_comm *c, int r, const char *what) {
  char why[96];
  const cc__peer *p;
  if (!cc__peer_gone(c, r, why, sizeof why)) return CC_OK;
  p = &c->peers[r];
  if (p->link == CC__LINK_SHM) return cc__fail_all(c, CC_ERR_PEER_LOST, r, what, "rank %d %s", r, why);
  if (p->tcp.bye) return cc__left(c, r, what);
  return cc__fail_all(c, CC_ERR_PEER_LOST, r, what, "rank %d closed its connection: it exited, was killed or "
                      "destroyed its communicator", r);
}

/* ---------------------------------------------------------------- the wait */

/* -1 once the wait is over, else the rank being waited for. */
typedef int (*cc__pending_fn)(cc_comm *c, const void *arg);
/* CC_OK while every rank waited for lives, else CC_ERR_PEER_LOST: posted
   (the failure, for every rank), or with probe set only said (a question:
   cc__wait_alive asks it first, then asks again to fail). */
typedef cc_result (*cc__alive_fn)(cc_comm *c, const void *arg, const char *what, int probe);

/* The ranks a wait still waits for, as text ("1, 3"). */
typedef void (*cc__awaited_fn)(cc_comm *c, const void *arg, char *buf, size_t len);
/* Outside a collective (point to point): what the wait waits for from rank
   who ("the receive of 4 bytes from rank 0 with tag 5"), and what came from
   it instead ("from rank 0, messages no receive took: tag 0 (4 bytes)"). */
typedef void (*cc__says_fn)(cc_comm *c, const void *arg, int who, char *buf, size_t len, char *more, size_t mlen);

typedef struct cc__waitfor {
  cc__pending_fn pending;
  cc__alive_fn alive;                  /* NULL: cc__check_peer of the rank pending names */
  cc__awaited_fn awaited;              /* NULL: the rank pending names */
  cc__says_fn says;                    /* NULL: only collectives wait here */
  const void *arg;
  struct pollfd *pfd;                  /* sockets whose readiness ends the wait too */
  int npfd;
  int shm;                             /* shared memory may end it (rings, the arena) */
} cc__waitfor;

/* Append to buf (a list being built). */
static void cc__cat(char *buf, size_t len, const char *fmt, ...) {
  size_t used = strlen(buf);
  va_list ap;
  if (used + 1 >= len) return;
  va_start(ap, fmt);
  vsnprintf(buf + used, len - used, fmt, ap);
  va_end(ap);
}

/* A rank's collective as one word in its control block, stored when it
   enters the call: its number, queued or not (@algo), kind and root. */
static uint64_t cc__call_word(uint64_t seq, int queued, int coll, int root) {
  return seq << 24 | (uint64_t)(queued != 0) << 23 | (uint64_t)(coll & 0x7f) << 16 | (uint64_t)(root & 0xffff);
}

static void cc__call_word_str(uint64_t w, char *buf, size_t len) {
  int coll = (int)(w >> 16 & 0x7f), q = (int)(w >> 23 & 1);
  snprintf(buf, len, "%s", cc__coll_name(coll));
  if (cc__rooted(coll)) cc__cat(buf, len, "(root %d%s)", (int)(w & 0xffff), q ? ", queued" : "");
  else if (q) cc__cat(buf, len, "(queued)");
}

/* In a collective on one host, the rank waited for, `who`, is in another
   call, or past this one without doing what this rank waits for: the two
   can never meet (a queued call against an arena one, say). Checked when the
   wait has lasted; `pending` is asked again after the other's word was read,
   since what it did before moving on is visible then. */
static cc_result cc__check_call(cc_comm *c, const cc__waitfor *w, int who, const char *what) {
  uint64_t theirs;
  char a[96], b[96];
  if (!c->call_word || c->net || !c->seg.ctl || who < 0 || who >= c->size || who == c->rank) return CC_OK;
  theirs = CC__LOAD(&c->seg.ctl[who].call);
  if (theirs >> 24 < c->seq || theirs == c->call_word || w->pending(c, w->arg) < 0) return CC_OK;
  cc__call_word_str(theirs, a, sizeof a);
  cc__call_word_str(c->call_word, b, sizeof b);
  return cc__call_mismatch(c, who, what, theirs >> 24, a, b, "");
}

/* Does every rank the wait waits for live? A rank that did what this one
   waits for and then left is no failure: once it is seen gone, `pending` is
   asked again, and sees what it did before it left (*done: the wait is
   over). Nor is its leaving the failure when it failed first: the failure
   word is read again too (a mismatch stays a mismatch). */
static cc_result cc__wait_alive(cc_comm *c, const cc__waitfor *w, int who, const char *what, int *done) {
  char why[96];
  cc_result r = w->alive ? w->alive(c, w->arg, what, 1)
                         : cc__peer_gone(c, who, why, sizeof why) ? CC_ERR_PEER_LOST : CC_OK;
  if (r == CC_OK) return cc__check_call(c, w, who, what);
  if (w->pending(c, w->arg) < 0) { *done = 1; return CC_OK; }
  if (CC__LOAD(&c->hdr->fail_code)) return cc__take_fail(c, what);
  /* a rank that left from another call than this one left a mismatch, not a
     loss: its control block still says which call it was in */
  if (!c->net && c->seg.ctl && who >= 0 && who < c->size && CC__LOAD(&c->seg.ctl[who].departed))
    CC__TRY(cc__check_call(c, w, who, what));
  CC__TRY(w->alive ? w->alive(c, w->arg, what, 0) : cc__check_peer(c, who, what));
  return cc__check_call(c, w, who, what);
}

/* Where the ranks are: the collective each last entered, as far as this rank
   can see (itself, and the ranks that share its segment). */
static void cc__where(cc_comm *c, char *buf, size_t len) {
  int j, away = 0;
  buf[0] = 0;
  for (j = 0; j < c->size; j++) {
    const cc__peer *p = &c->peers[j];
    uint64_t seq;
    int coll;
    if (j == c->rank) { seq = c->seq; coll = c->cur.coll; }
    else if (c->shm && p->link == CC__LINK_SHM) {
      uint64_t call = __atomic_load_n(&c->shm->seg.ctl[p->ring.ch].call, __ATOMIC_RELAXED);
      seq = call >> 24;
      coll = (int)(call >> 16 & 0x7f);
    } else { away++; continue; }
    if (seq) cc__cat(buf, len, "%srank %d in %s #%llu", buf[0] ? ", " : "", j, cc__coll_name(coll), (unsigned long long)seq);
    else cc__cat(buf, len, "%srank %d in no collective yet", buf[0] ? ", " : "", j);
  }
  if (away) cc__cat(buf, len, "%s%d rank%s over TCP not visible from here", buf[0] ? "; " : "", away, away == 1 ? "" : "s");
}

/* A wait that lasts: one line now, another at twice the time, and so on;
   at the timeout (over set), CC_ERR_TIMEOUT naming the rank. */
static cc_result cc__wait_late(cc_comm *c, const cc__waitfor *w, int who, const char *what, uint64_t waited, int over) {
  char awaited[160], where[400];
  if (w->says && !c->call_word) {      /* point to point: the message, and what came instead */
    w->says(c, w->arg, who, awaited, sizeof awaited, where, sizeof where);
    if (over)
      return cc__fail_all(c, CC_ERR_TIMEOUT, who, what, "waited %.1f s for %s (timeout); %s", (double)waited / 1e9,
                          awaited, where);
    cc__log(c, CC__LOG_ALWAYS, "%s: rank %d: %s has waited %.0f s (the timeout is %g s); %s", what, c->rank, awaited,
            (double)waited / 1e9, (double)c->set.timeout_ns / 1e9, where);
    return CC_OK;
  }
  cc__where(c, where, sizeof where);
  if (over) {
    cc__log(c, CC__LOG_ALWAYS, "%s: rank %d: timeout in collective #%llu; where the ranks are: %s", what, c->rank,
            (unsigned long long)c->seq, where);
    return cc__fail_all(c, CC_ERR_TIMEOUT, who, what, "waited %.1f s for rank %d (timeout; %.150s)",
                        (double)waited / 1e9, who, where);
  }
  if (w->awaited) w->awaited(c, w->arg, awaited, sizeof awaited);
  else snprintf(awaited, sizeof awaited, "%d", who);
  cc__log(c, CC__LOG_ALWAYS, "%s: rank %d: collective #%llu has waited %.0f s for rank%s %s (the timeout is %g s); "
          "where the ranks are: %s", what, c->rank, (unsigned long long)c->seq, (double)waited / 1e9,
          strchr(awaited, ',') ? "s" : "", awaited, (double)c->set.timeout_ns / 1e9, where);
  return CC_OK;
}

/* The short way (cc__ring_recv_now) gives the bytes it read back to the
   sender (moves the ring's tail) a quarter of the ring at a time, so that
   the tail's line stays in the sender's cache. Every run of the engine and
   every wait gives back first: a sender waiting for room never waits on
   bytes already read (docs/shm.md, "Small broadcasts, scatters and gathers"). */
static void cc__ring_give(const cc_comm *s, cc__chan *ch, cc__peer *lp) {   /* lp: its entry in s's peers */
  cc__publish(s, &ch->tail, ch->tail + lp->ring.rx_lag);
  lp->ring.rx_lag = 0;
}

static void cc__rings_give_back(cc_comm *s) {
  int i;
  for (i = 0; i < s->size; i++)
    if (s->peers[i].ring.rx_lag) cc__ring_give(s, cc__chan_at(s, i, s->rank), &s->peers[i]);
  s->eng.rx_lagged = 0;
  cc__notify(s);
}

/* Wait until w->pending says done or a socket is ready. Spins for spin_ns,
   yielding the CPU when ranks outnumber CPUs or the spin lasts (the rank
   waited for may share this CPU) and asking sockets with a poll() that does
   not sleep (a wake-up from a sleeping one costs a trip through the
   scheduler a hop); then sleeps on the bell when only shared memory can end
   the wait, else in poll() (with short timeouts while shared memory can
   too). Checks the failure word every few spins and on every wake-up, the
   peer's life every 100 ms; fails with CC_ERR_TIMEOUT naming the rank. */
static cc_result cc__wait(cc_comm *c, const cc__waitfor *w, const char *what) {
  cc__hdr *bellh = c->shm ? c->shm->hdr : NULL;
  uint64_t t0, now, next_check, next_warn, deadline, nap = 20000;
  unsigned i;
  int who;
  cc_result r;
  if (c->shm && c->shm->eng.rx_lagged) cc__rings_give_back(c->shm);
  who = w->pending(c, w->arg);
  if (who < 0) return CC_OK;
  t0 = cc__now_ns();
  deadline = t0 + c->set.timeout_ns;
  if (w->shm || w->npfd) {             /* sockets alone: poll() without sleeping, as long */
    for (i = 1;; i++) {
      uint64_t spent;
      if (c->oversub || i > 256) cc__yield();
      else { cc__cpu_relax(); cc__cpu_relax(); cc__cpu_relax(); cc__cpu_relax(); }
      if (w->shm && (who = w->pending(c, w->arg)) < 0) return CC_OK;
      if ((i & 15) == 0 || i > 256 || !w->shm) {
        if (CC__LOAD_RLX(&c->hdr->fail_code)) return cc__take_fail(c, what);
        if (w->npfd && cc__poll(w->pfd, w->npfd, 0) > 0) return CC_OK;
        spent = cc__now_ns() - t0;
        if (spent >= c->spin_ns || spent >= c->set.timeout_ns) break;
        if (i < 256 && spent > 2000) i = 256;
      }
    }
  }
  next_check = cc__now_ns() + 20 * CC__MS;
  next_warn = c->set.warn_ns ? t0 + c->set.warn_ns : 0;
  for (;;) {
    if (w->npfd) {
      uint64_t left;
      now = cc__now_ns();
      left = deadline > now ? deadline - now : 0;
      if (cc__poll(w->pfd, w->npfd, w->shm ? CC__MIN(nap, left) : CC__MIN(100 * CC__MS, left) + 1000) > 0) return CC_OK;
      if (w->shm) nap = CC__MIN(nap * 2, (uint64_t)CC__MS);
    } else if (bellh) {
      uint32_t bell = CC__LOAD(&bellh->bell);
      uint64_t cap = 50 * CC__MS;
      CC__ADD(&bellh->sleepers, 1u);   /* seq_cst: ordered before the re-check below */
      if (c->shm->seg.asym && cc__membar() != 0) cap = CC__MS;   /* and the publishers' stores (cc__publish); */
      who = w->pending(c, w->arg);                              /* unordered, a short nap */
      if (who >= 0 && !CC__LOAD(&c->hdr->fail_code)) {
        now = cc__now_ns();
        cc__futex_wait(&bellh->bell, bell, CC__MIN(deadline > now ? deadline - now : 0, cap) + 1000);
      }
      CC__ADD(&bellh->sleepers, (uint32_t)-1);
    } else {
      cc__sleep_ns(CC__MS);
    }
    if ((who = w->pending(c, w->arg)) < 0) return CC_OK;
    if (CC__LOAD(&c->hdr->fail_code)) return cc__take_fail(c, what);
    now = cc__now_ns();
    if (now >= next_check) {
      int done = 0;
      /* the race: the rank waited for may do its part and leave, or post a
         failure and leave, between the checks above and this one */
      CC__TEST_SEAM(wait_alive, c);
      if ((r = cc__wait_alive(c, w, who, what, &done)) != CC_OK || done) return r;
      next_check = now + 100 * CC__MS;
    }
    if (now >= deadline) return cc__wait_late(c, w, who, what, now - t0, 1);
    if (next_warn && now >= next_warn) {
      cc__wait_late(c, w, who, what, now - t0, 0);
      next_warn = t0 + 2 * (next_warn - t0);
    }
  }
}

/* ---------------------------------------------------------------- the short way
   A whole small frame straight into a ring, or out of one, without a run of
   the engine (the queued collectives of @algo; docs/shm.md); else 0, and the
   caller runs the engine. Each reads the other side's counter only when the
   value it read last shows too little room (a send) or not the whole frame
   (a receive): a root far ahead, or a receiver far behind, then moves many
   frames without pulling that cache line across. */

/* Are two frame headers the same, byte for byte? */
static int cc__hdr_same(const unsigned char *a, const unsigned char *b) {
  uint64_t x = 0, u, v;
  int i;
  for (i = 0; i < CC__FRAME; i += 8) {
    memcpy(&u, a + i, 8);
    memcpy(&v, b + i, 8);
    x |= u ^ v;
  }
  return x == 0;
}

/* Send a collective frame of this rank's call `id` (number c->seq) to rank
   `to`: 1 when all of it is in the ring. A frame that does not wrap is
   written in place, in one piece (the usual case: a few stores). */
static int cc__ring_send_now(cc_comm *c, int to, const cc__ident *id, const void *buf, size_t bytes) {
  cc__peer *pe = &c->peers[to];
  cc__chan *ch;
  unsigned char hdr[CC__FRAME], *d;
  uint64_t head;
  size_t chan = c->shm->seg.chan_bytes, off;
  if (pe->link != CC__LINK_SHM || pe->tx_mid || CC__LOAD(&c->shm->hdr->fail_code)) return 0;
  ch = cc__ring_out(c, to);
  head = ch->head;
  if (CC__FRAME + bytes > chan) return 0;
  if (head - pe->ring.seen_tail > chan - CC__FRAME - bytes) {  /* the tail only grows: read it again */
    pe->ring.seen_tail = CC__LOAD(&ch->tail);
    if (head - pe->ring.seen_tail > chan - CC__FRAME - bytes) return 0;
  }
  off = (size_t)(head % chan);
  d = (unsigned char *)(ch + 1) + off;
  if (off + CC__FRAME + bytes <= chan) {
    cc__frame_head(d, CC__TAG_COLL, bytes, c->seq, id);
    if (bytes) memcpy(d + CC__FRAME, buf, bytes);
  } else {
    cc__frame_head(hdr, CC__TAG_COLL, bytes, c->seq, id);
    cc__ring_put(c->shm, ch, head, hdr, CC__FRAME);
    if (bytes) cc__ring_put(c->shm, ch, head + CC__FRAME, buf, bytes);
  }
  cc__publish(c->shm, &ch->head, head + CC__FRAME + bytes);
  cc__notify(c->shm);
  return 1;
}

/* Receive from rank `from` the collective frame of call `id` (number c->seq)
   into buf: 1 when it was next in the ring, whole, and fits exactly. The
   header must be the one this rank would have sent, byte for byte: the
   same checks as cc__frame_decode and a comparison of every field, in six
   words; any other frame is left to the engine, which says what is wrong. */
static int cc__ring_recv_now(cc_comm *c, int from, const cc__ident *id, void *buf, size_t bytes) {
  cc__peer *pe = &c->peers[from];
  cc__chan *ch;
  cc__peer *lp;
  unsigned char want[CC__FRAME], hdr[CC__FRAME];
  const unsigned char *s;
  uint64_t tail;
  size_t chan = c->shm->seg.chan_bytes, off;
  if (pe->link != CC__LINK_SHM || pe->rx_state || pe->rx_hdr_got || pe->uq_head || pe->rx_unexp ||
      CC__LOAD(&c->shm->hdr->fail_code))
    return 0;
  ch = cc__ring_in(c, from);
  lp = &c->shm->peers[pe->ring.ch];
  tail = ch->tail + lp->ring.rx_lag;
  if (pe->ring.seen_head < tail || (size_t)(pe->ring.seen_head - tail) < CC__FRAME + bytes) {
    pe->ring.seen_head = CC__LOAD(&ch->head);
    if ((size_t)(pe->ring.seen_head - tail) < CC__FRAME + bytes) return 0;
  }
  cc__frame_head(want, CC__TAG_COLL, bytes, c->seq, id);
  off = (size_t)(tail % chan);
  s = (const unsigned char *)(ch + 1) + off;
  if (off + CC__FRAME + bytes <= chan) {
    if (!cc__hdr_same(s, want)) return 0;
    if (bytes) memcpy(buf, s + CC__FRAME, bytes);
  } else {
    cc__ring_get(c->shm, ch, tail, hdr, CC__FRAME);
    if (!cc__hdr_same(hdr, want)) return 0;
    if (bytes) cc__ring_get(c->shm, ch, tail + CC__FRAME, buf, bytes);
  }
  lp->ring.rx_lag += CC__FRAME + bytes;
  if (lp->ring.rx_lag >= chan / 4) {
    cc__ring_give(c->shm, ch, lp);
    cc__notify(c->shm);
  } else {
    c->shm->eng.rx_lagged = 1;
  }
  return 1;
}

/* After cc__ring_recv_now found no frame: the same again as soon as the
   ring's head moves, for up to 2 us (not on an oversubscribed host, where
   this rank's spinning would hold back the sender): a receiver a little
   ahead of its root takes the short way instead of a run of the engine. */
static CC__NOINLINE int cc__ring_recv_watch(cc_comm *c, int from, const cc__ident *id, void *buf, size_t bytes) {
  cc__peer *pe = &c->peers[from];
  const cc__chan *ch;
  uint64_t t0 = 0, head;
  unsigned i;
  if (c->oversub || pe->link != CC__LINK_SHM) return 0;
  ch = cc__ring_in(c, from);
  head = pe->ring.seen_head;
  for (i = 1;; i++) {
    cc__cpu_relax(); cc__cpu_relax();
    if (CC__LOAD(&ch->head) != head) return cc__ring_recv_now(c, from, id, buf, bytes);
    if ((i & 15) == 0) {
      uint64_t now = cc__now_ns();
      if (!t0) t0 = now;
      else if (now - t0 > 2000) return 0;
    }
  }
}

/* ---------------------------------------------------------------- the engine's run */

typedef cc_result (*cc__done_fn)(void *ctx, cc__msg *m, int i);

typedef struct cc__run {               /* one run of the engine */
  cc_comm *c;
  cc__msg *m;
  int n;
  cc__done_fn cb;                      /* called when a receive completes; may make messages live */
  void *ctx;
  const char *what;
  const cc__ident *id;                 /* collectives: this rank's call (its number is c->seq) */
  uint64_t *seen;                      /* the rings' positions when the run last went idle */
  /* a run with a receive from any source waits in slices (cc__run_idle) */
  int rotate;                          /* such a receive just took a frame: on to the next peer (cc__rx_pull) */
  uint64_t idle_t0;                    /* when the run last moved nothing, since it last made progress; 0: it did */
  uint64_t warn_at, slice_end;         /* its next warning; when its current slice ends */
} cc__run;

static void cc__umsg_free(cc__umsg *u) {
  if (u) { CC_FREE(u->data); CC_FREE(u); }
}

/* A queued message of frame f, with room for cap bytes and `cost` counted
   against CC_MAX_UNEXPECTED; NULL, the cost uncounted, when out of memory. */
static cc__umsg *cc__umsg_new(cc_comm *c, const cc__frame *f, size_t cap, size_t cost) {
  cc__umsg *u = (cc__umsg *)CC_MALLOC(sizeof *u);
  if (u && !(u->data = (unsigned char *)CC_MALLOC(cap ? cap : 1))) { CC_FREE(u); u = NULL; }
  if (!u) { c->eng.uq_bytes -= cost; return NULL; }
  u->next = NULL; u->f = *f; u->cap = cap; u->cost = cost;
  return u;
}

/* What a queued message costs against CC_MAX_UNEXPECTED beyond its bytes
   (its record and the allocator's), so that empty frames count too. */
#define CC__UQ_OVERHEAD 128

/* Count a message of `bytes` from rank p (itself: a send to itself) against
   CC_MAX_UNEXPECTED; *cost what it counts. Over the limit the communicator
   fails everywhere, naming p: a rank that keeps sending what nobody receives
   ends in an error, not in this rank's memory growing without bound. */
static cc_result cc__uq_charge(cc__run *x, int p, uint64_t bytes, size_t *cost) {
  cc_comm *c = x->c;
  uint64_t k = bytes + CC__UQ_OVERHEAD, lim = c->set.max_unexpected;
  if (k > lim || (uint64_t)c->eng.uq_bytes > lim - k)
    return cc__fail_all(c, CC_ERR_NO_MEMORY, p, x->what, "rank %d sent more than this rank holds of messages that no "
                        "receive has taken yet: %zu bytes are held and a message of %llu more would pass "
                        "CC_MAX_UNEXPECTED (%llu bytes; raise it if the program means to)", p, c->eng.uq_bytes,
                        (unsigned long long)bytes, (unsigned long long)lim);
  c->eng.uq_bytes += (size_t)k;
  *cost = (size_t)k;
  return CC_OK;
}

/* The peer closed or broke the link this run needs. */
static cc_result cc__lost(cc__run *x, int p, int err) {
  char why[96];
  if (!err && x->c->peers[p].tcp.bye) return cc__left(x->c, p, x->what);
  if (err) cc__strerr(err, why, sizeof why); else snprintf(why, sizeof why, "connection closed");
  return cc__fail_all(x->c, CC_ERR_PEER_LOST, p, x->what, "lost its connection to rank %d (%s): rank %d exited, "
                      "was killed or destroyed its communicator", p, why, p);
}

/* A frame from rank p failed its tag: its bytes were changed on the way,
   or do not come from rank p. The communicator fails everywhere and every
   connection ends (this one's stream cannot be trusted any more). */
static cc_result cc__auth_fail(cc__run *x, int p, const char *part) {
  return cc__fail_all(x->c, CC_ERR_AUTH, p, x->what, "%s from rank %d failed its integrity check: its bytes were "
                      "changed on the way, or it was not sent by rank %d (with this job's token); connection closed",
                      part, p, p);
}

/* Does frame f fit receive m? CC_OK, or the mismatch (failed everywhere). */
static cc_result cc__frame_fits(cc__run *x, int p, const cc__frame *f, const cc__msg *m) {
  cc_comm *c = x->c;
  if (f->tag == CC__TAG_COLL && x->id) {
    if (f->seq != c->seq) {
      char a[128], b[128];
      cc__ident_str(&f->id, a, sizeof a);
      cc__ident_str(x->id, b, sizeof b);
      cc__fail(c, CC_ERR_MISMATCH, "%s: rank %d: rank %d sent data of its collective #%llu, %s, while this rank is in "
               "#%llu, %s", x->what, c->rank, p, (unsigned long long)f->seq, a, (unsigned long long)c->seq, b);
      return cc__post_mismatch(c, x->what);
    }
    if (cc__ident_agree(c, x->what, x->id, &f->id, p) != CC_OK) return cc__post_mismatch(c, x->what);
  }
  if (f->bytes != m->bytes) {
    size_t es = cc__dtype_bytes((cc_dtype)f->id.dtype);
    if (f->tag == CC__TAG_COLL && cc__is_v(f->id.coll) && es)
      cc__vcount_mismatch(c, x->what, p, c->rank, f->bytes / es, m->bytes / es);
    else
      cc__fail(c, CC_ERR_MISMATCH, "%s: rank %d: the message from rank %d with tag %d has %llu bytes, the receive "
               "expects %zu", x->what, c->rank, p, f->tag, (unsigned long long)f->bytes, m->bytes);
    return cc__post_mismatch(c, x->what);
  }
  return CC_OK;
}

/* A receive from any source not yet matched to a frame. */
#define CC__ANY(m) ((m)->peer == CC_ANY_SOURCE)

/* Take the oldest queued message of receive m's tag, if one is there: from
   m's peer, or, for a receive from any source, the one queued first of the
   oldest of each peer (so a peer's messages still go in their order). */
static cc_result cc__take_unexp(cc__run *x, cc__msg *m) {
  cc_comm *c = x->c;
  cc__umsg *u, *prev, *best = NULL, *bprev = NULL;
  int p, from = m->peer, lo = m->peer, hi = m->peer;
  cc__peer *pe;
  if (CC__ANY(m)) { lo = 0; hi = c->size - 1; }
  for (p = lo; p <= hi; p++)
    for (prev = NULL, u = c->peers[p].uq_head; u; prev = u, u = u->next)
      if (u->f.tag == m->tag) {
        if (!best || u->stamp < best->stamp) { best = u; bprev = prev; from = p; }
        break;
      }
  if (!best) return CC_OK;
  CC__TRY(cc__frame_fits(x, from, &best->f, m));
  pe = &c->peers[from];
  if (m->bytes) memcpy(m->buf, best->data, m->bytes);
  c->eng.uq_bytes -= best->cost;
  if (bprev) bprev->next = best->next; else pe->uq_head = best->next;
  if (pe->uq_tail == best) pe->uq_tail = bprev;
  cc__umsg_free(best);
  if (CC__ANY(m)) { m->peer = from; c->eng.any_next = (from + 1) % c->size; }
  m->done = 1;
  m->moved = m->bytes;
  return CC_OK;
}

static void cc__uq_append(cc_comm *c, cc__peer *pe, cc__umsg *u) {
  u->next = NULL;
  u->stamp = ++c->eng.uq_stamp;
  if (pe->uq_tail) pe->uq_tail->next = u; else pe->uq_head = u;
  pe->uq_tail = u;
}

/* A message joined rank p's queue: the first waiting receive of its tag takes it. */
static cc_result cc__deliver_queued(cc__run *x, int p, int tag, int *progress) {
  int i;
  for (i = 0; i < x->n; i++) {
    cc__msg *m = &x->m[i];
    if (m->is_send || !m->live || !m->started || m->done || m->matched || (m->peer != p && !CC__ANY(m)) ||
        m->tag != tag)
      continue;
    CC__TRY(cc__take_unexp(x, m));
    if (m->done) { *progress = 1; if (x->cb) CC__TRY(x->cb(x->ctx, x->m, i)); }
    break;
  }
  return CC_OK;
}

/* Start the messages that became live: a send builds its header (to itself:
   a copy joins the own queue at once); a receive looks at the queue first. */
static cc_result cc__start(cc__run *x, int *progress) {
  cc_comm *c = x->c;
  int i, again = 1;
  while (again) {                      /* a callback may make more messages live */
    again = 0;
    for (i = 0; i < x->n; i++) {
      cc__msg *m = &x->m[i];
      if (!m->live || m->started) continue;
      m->started = 1;
      m->done = m->matched = m->sealed = 0;
      m->moved = m->hdr_sent = m->tag_left = 0;
      m->hdr_len = CC__FRAME;
      if (m->any) m->peer = CC_ANY_SOURCE;
      if (m->is_send) {
        cc__frame f;
        const cc__sec *s = c->peers[m->peer].link == CC__LINK_TCP ? c->peers[m->peer].tcp.sec : NULL;
        memset(&f, 0, sizeof f);
        f.tag = m->tag;
        f.bytes = m->bytes;
        if (m->tag == CC__TAG_COLL && x->id) { f.seq = c->seq; f.id = *x->id; }
        cc__frame_encode(m->hdr, &f);
        if ((uint64_t)m->bytes > cc__sec_limit(s))
          return cc__fail_all(c, CC_ERR_UNSUPPORTED, c->rank, x->what, "a message of %zu bytes to rank %d is larger than "
                              "one encrypted frame may be (%llu bytes with %s): send it in pieces, or without "
                              "CC_NET_ENCRYPT=1", m->bytes, m->peer, (unsigned long long)cc__sec_limit(s),
                              s->suite == CC__AEAD_AES256_GCM ? "AES-256-GCM" : "ChaCha20-Poly1305");
        if (m->peer == c->rank) {      /* to itself: queue a copy */
          size_t cost = 0;
          cc__umsg *u;
          CC__TRY(cc__uq_charge(x, c->rank, m->bytes, &cost));
          if (!(u = cc__umsg_new(c, &f, m->bytes, cost)))
            return cc__fail(c, CC_ERR_NO_MEMORY, "%s: rank %d: no memory to send %zu bytes to itself", x->what,
                            c->rank, m->bytes);
          if (m->bytes) memcpy(u->data, m->buf, m->bytes);
          cc__uq_append(c, &c->peers[c->rank], u);
          m->done = 1;
          m->moved = m->bytes;
          m->hdr_sent = CC__FRAME;
          *progress = again = 1;
          CC__TRY(cc__deliver_queued(x, c->rank, m->tag, progress));
        }
        continue;
      }
      CC__TRY(cc__take_unexp(x, m));
      if (m->done) { *progress = again = 1; if (x->cb) CC__TRY(x->cb(x->ctx, x->m, i)); }
    }
  }
  return CC_OK;
}

static int cc__sending(const cc__run *x);

/* Does the run want the next frame from rank p? When a receive waits for
   it, or while a send of the run waits (ranks that all send before they
   receive must take in each other's messages, or they would wait forever).
   Else the frame stays in the ring, or its payload in the socket
   (cc__rx_place): that is the flow control. */
static int cc__rx_wanted(const cc__run *x, int p, int sending) {
  int i;
  if (sending) return 1;
  for (i = 0; i < x->n; i++) {
    const cc__msg *m = &x->m[i];
    if (!m->is_send && m->live && m->started && !m->done && (m->peer == p || CC__ANY(m))) return 1;
  }
  return 0;
}

/* The frame whose header came from rank p goes into the first receive of the
   run that waits for it, if any (pe->rx_target). */
static cc_result cc__rx_match(cc__run *x, int p) {
  cc_comm *c = x->c;
  cc__peer *pe = &c->peers[p];
  int i;
  for (i = 0; i < x->n && pe->rx.tag != CC__TAG_ABORT; i++) {
    cc__msg *m = &x->m[i];
    if (m->is_send || !m->live || !m->started || m->done || m->matched || (m->peer != p && !CC__ANY(m)) ||
        m->tag != pe->rx.tag)
      continue;
    /* an older message of this tag, queued while this receive waited, goes first */
    CC__TRY(cc__take_unexp(x, m));
    if (m->done) { if (x->cb) CC__TRY(x->cb(x->ctx, x->m, i)); continue; }
    CC__TRY(cc__frame_fits(x, p, &pe->rx, m));
    if (CC__ANY(m)) { m->peer = p; c->eng.any_next = (p + 1) % c->size; }
    pe->rx_target = m;
    m->matched = 1;
    m->moved = 0;
    return CC_OK;
  }
  return CC_OK;
}

/* The frame from rank p is unexpected: room for it (pe->rx_unexp), to be
   queued when complete. What its header claims counts against
   CC_MAX_UNEXPECTED at once, and is allocated as it arrives (from 1 MiB,
   doubling), so a corrupt length cannot reserve memory ahead of the bytes. */
static cc_result cc__rx_keep(cc__run *x, int p) {
  cc_comm *c = x->c;
  cc__peer *pe = &c->peers[p];
  size_t cap = (size_t)CC__MIN(pe->rx.bytes, (uint64_t)1 << 20), cost = 0;
  if (pe->rx.tag != CC__TAG_ABORT && pe->rx.tag != CC__TAG_BYE) CC__TRY(cc__uq_charge(x, p, pe->rx.bytes, &cost));
  if (!(pe->rx_unexp = cc__umsg_new(c, &pe->rx, cap, cost)))
    return cc__fail_all(c, CC_ERR_NO_MEMORY, c->rank, x->what, "no memory for a message of %llu bytes from rank %d",
                        (unsigned long long)pe->rx.bytes, p);
  return CC_OK;
}

/* Is rank p's frame parked: its header read, its payload left in the
   socket until a receive wants it? */
static int cc__rx_parked(const cc__peer *pe) {
  return pe->rx_state == 1 && !pe->rx_target && !pe->rx_unexp;
}

/* Where the payload of rank p's frame goes, once its header is read (and
   again while it is parked): into a receive; else, over TCP while the run
   does not want p's frames (cc__rx_wanted) and p has not closed its side,
   nowhere yet: it stays parked in the socket, for a later run's receive to
   read in place without a copy (docs/tcp.md, "Messages"); else room as an
   unexpected message. */
static cc_result cc__rx_place(cc__run *x, int p) {
  cc__peer *pe = &x->c->peers[p];
  CC__TRY(cc__rx_match(x, p));
  if (pe->rx_target) return CC_OK;
  if (pe->link == CC__LINK_TCP && pe->rx.tag != CC__TAG_ABORT && pe->rx.bytes && !pe->rx_done && !pe->tcp.ending &&
      !cc__rx_wanted(x, p, cc__sending(x)))
    return CC_OK;
  return cc__rx_keep(x, p);
}

/* A frame header arrived from rank p: match it to a receive, queue it, or
   leave it parked (cc__rx_place); its payload is read next. */
static cc_result cc__rx_begin(cc__run *x, int p) {
  cc_comm *c = x->c;
  cc__peer *pe = &c->peers[p];
  if (cc__frame_decode(pe->rx_hdr, &pe->rx) != 0)
    return cc__fail_all(c, CC_ERR_SYSTEM, p, x->what, "corrupt data from rank %d (not a cc frame)", p);
  pe->rx_done = 0;
  pe->rx_target = NULL;
  pe->rx_unexp = NULL;
  CC__TRY(cc__rx_place(x, p));
  pe->rx_state = 1;
  return CC_OK;
}

/* The frame from rank p is complete. A failure report (an abort frame) goes
   to the failure word: it ends the run unless the data the run needs has all
   arrived (from every link, whatever order they are read in), and else the
   next call. So a rank one call behind does not fail a call whose data is in,
   and no call waits once a rank has failed. */
static cc_result cc__rx_end(cc__run *x, int p) {
  cc_comm *c = x->c;
  cc__peer *pe = &c->peers[p];
  cc__umsg *u = pe->rx_unexp;          /* the frame as an unexpected message (NULL: a receive took it) */
  int dummy = 0;
  pe->rx_state = 0;
  pe->rx_hdr_got = 0;
  if (pe->rx_target) {
    cc__msg *m = pe->rx_target;
    pe->rx_target = NULL;
    x->rotate |= m->any;
    m->done = 1;
    m->moved = m->bytes;
    return x->cb ? x->cb(x->ctx, x->m, (int)(m - x->m)) : CC_OK;
  }
  pe->rx_unexp = NULL;
  if (pe->rx.tag == CC__TAG_ABORT) {
    cc_result code;
    int who;
    char msg[CC__ABORT_MAX];
    int bad = cc__abort_decode(u->data, (size_t)pe->rx.bytes, &code, &who, msg, sizeof msg);
    cc__umsg_free(u);
    if (bad) {                         /* as after a corrupt header: what follows is not read */
      pe->rx_dead = 1;
      return cc__fail_all(c, CC_ERR_SYSTEM, p, x->what, "corrupt abort message from rank %d", p);
    }
    cc__post_fail_msg(c, code, who, "%.*s (reported by rank %d)", CC__ABORT_MAX - 1, msg, p);
    return CC_OK;
  }
  if (pe->rx.tag == CC__TAG_BYE) {     /* kept for cc__left when its stream ends */
    cc__umsg_free(u);
    pe->tcp.bye = 1;
    pe->tcp.bye_seq = pe->rx.seq;
    pe->tcp.bye_id = pe->rx.id;
    return CC_OK;
  }
  cc__uq_append(c, pe, u);
  return cc__deliver_queued(x, p, pe->rx.tag, &dummy);
}

/* Room for more of the unexpected message being read: double its buffer
   when it is full (up to the length its header claimed). */
static cc_result cc__umsg_room(cc__run *x, int p) {
  cc__peer *pe = &x->c->peers[p];
  cc__umsg *u = pe->rx_unexp;
  size_t cap;
  unsigned char *d;
  if (u->cap > (size_t)pe->rx_done || u->cap >= (size_t)pe->rx.bytes) return CC_OK;
  cap = u->cap > (size_t)pe->rx.bytes / 2 ? (size_t)pe->rx.bytes : 2 * u->cap;
  d = (unsigned char *)CC_MALLOC(cap);
  if (!d)
    return cc__fail_all(x->c, CC_ERR_NO_MEMORY, x->c->rank, x->what, "no memory for a message of %llu bytes from rank %d",
                        (unsigned long long)pe->rx.bytes, p);
  memcpy(d, u->data, (size_t)pe->rx_done);
  CC_FREE(u->data);
  u->data = d;
  u->cap = cap;
  return CC_OK;
}

/* Rank p's stream ended inside a frame: posted, so that the next call (or
   this one, if it waits for p) fails. */
static CC__COLD cc_result cc__cut_short(cc_comm *c, int p) {
  cc__post_fail_msg(c, CC_ERR_PEER_LOST, p, "rank %d closed its connection in the middle of a message: it failed, "
                    "exited or was killed", p);
  return CC_OK;
}

/* Read what rank p sent: into receives, the queue or an abort. *progress
   when bytes moved. */
static cc_result cc__rx_pull(cc__run *x, int p, int *progress) {
  cc_comm *c = x->c;
  cc__peer *pe = &c->peers[p];
  cc__sec *s = pe->link == CC__LINK_TCP ? pe->tcp.sec : NULL;
  size_t hlen = s ? CC__FRAME + CC__TAG : CC__FRAME;
  int sending = cc__sending(x);
  if (pe->rx_dead) return CC_OK;
  for (;;) {
    long k;
    if (pe->link == CC__LINK_SHM && pe->rx_state == 0 && pe->rx_hdr_got == 0 && !cc__rx_wanted(x, p, sending))
      return CC_OK;
    if (pe->rx_state == 0) {
      k = cc__link_read(c, p, pe->rx_hdr + pe->rx_hdr_got, hlen - pe->rx_hdr_got);
      /* the end: between frames, lost only if needed (cc__run_check) */
      if (k < 0) return pe->rx_hdr_got ? cc__cut_short(c, p) : CC_OK;
      if (k == 0) return CC_OK;
      *progress = 1;
      pe->rx_hdr_got += (size_t)k;
      if (pe->rx_hdr_got < hlen) continue;
      if (s) {                         /* the header is acted on only once its tag is right */
        cc__sec_begin(s, 0);
        (void)cc__aead_aad(&s->rxs, pe->rx_hdr, CC__FRAME);
        if (cc__aead_verify(&s->rxs, pe->rx_hdr + CC__FRAME) != 0) return cc__auth_fail(x, p, "a frame header");
      }
      CC__TRY(cc__rx_begin(x, p));     /* (rx_state 1 now) */
      if (s && pe->rx.bytes) cc__sec_begin(s, 0);
    }
    if (pe->rx_state == 2) {           /* the payload's tag */
      k = cc__link_read(c, p, pe->rx_tag + pe->rx_hdr_got, CC__TAG - pe->rx_hdr_got);
      if (k < 0 && !pe->rx_target) return cc__cut_short(c, p);
      if (k < 0) return cc__lost(x, p, errno);
      if (k == 0) return CC_OK;
      *progress = 1;
      if ((pe->rx_hdr_got += (size_t)k) < CC__TAG) continue;
      if (cc__aead_verify(&s->rxs, pe->rx_tag) != 0) return cc__auth_fail(x, p, "a message");
      CC__TRY(cc__rx_end(x, p));
      if (x->rotate) { x->rotate = 0; return CC_OK; }   /* a receive from any source took it: the next peer's turn */
      continue;
    }
    if (cc__rx_parked(pe)) {           /* parked: a receive of this run may want it now */
      CC__TRY(cc__rx_place(x, p));
      if (cc__rx_parked(pe)) return CC_OK;
    }
    if (pe->rx_done == pe->rx.bytes) {
      if (s && pe->rx.bytes) { pe->rx_state = 2; pe->rx_hdr_got = 0; continue; }
      CC__TRY(cc__rx_end(x, p));
      if (x->rotate) { x->rotate = 0; return CC_OK; }
      continue;
    }
    {
      unsigned char *dst;
      size_t want = (size_t)(pe->rx.bytes - pe->rx_done);
      if (pe->rx_target) dst = pe->rx_target->buf;
      else {
        CC__TRY(cc__umsg_room(x, p));
        dst = pe->rx_unexp->data;
        want = CC__MIN(want, pe->rx_unexp->cap - (size_t)pe->rx_done);
      }
      if (s) want = CC__MIN(want, (size_t)CC__SEC_STAGE);   /* MACed while the cache still holds it */
      k = cc__link_read(c, p, dst + pe->rx_done, want);
      if (k < 0 && !pe->rx_target) return cc__cut_short(c, p);   /* in a frame nobody waits for yet */
      if (k < 0) return cc__lost(x, p, errno);
      if (k == 0) return CC_OK;
      *progress = 1;
      if (s && s->encrypt) (void)cc__aead_decrypt(&s->rxs, dst + pe->rx_done, dst + pe->rx_done, (size_t)k);
      else if (s) (void)cc__aead_aad(&s->rxs, dst + pe->rx_done, (size_t)k);
      pe->rx_done += (uint64_t)k;
      if (pe->rx_target) pe->rx_target->moved = (size_t)pe->rx_done;
    }
  }
}

/* cc__rx_pull once poll() said rank p's socket is readable, with what it
   said (revents): its reads ask the socket again (a read that took less than
   it asked for took all there was: the next waits for poll()), and read on
   to the end of the stream when the peer closed its side. */
static cc_result cc__rx_pull_ready(cc__run *x, int p, int revents, int *progress) {
  cc__peer *pe = &x->c->peers[p];
  pe->tcp.drained = 0;
  if (revents & (POLLHUP | POLLERR | CC__POLL_END)) pe->tcp.ending = 1;
  return cc__rx_pull(x, p, progress);
}

/* Watch rank p's socket in the next poll() of c->eng.pfd[0..*np). */
static CC__INLINE void cc__pfd_add(cc_comm *c, int *np, int p, short events) {
  c->eng.pfd[*np].fd = c->peers[p].tcp.fd;
  c->eng.pfd[*np].events = events;
  c->eng.pfd[*np].revents = 0;
  c->eng.pfd_rank[(*np)++] = p;
}

/* The run's first unfinished send to rank p (sends to one peer go in order), or NULL. */
static cc__msg *cc__send_to(const cc__run *x, int p) {
  int j;
  for (j = 0; j < x->n; j++) {
    cc__msg *o = &x->m[j];
    if (o->live && o->started && o->is_send && !o->done && o->peer == p) return o;
  }
  return NULL;
}

/* Is some send of the run still waiting? */
static int cc__sending(const cc__run *x) {
  int i;
  for (i = 0; i < x->n; i++)
    if (x->m[i].live && x->m[i].started && x->m[i].is_send && !x->m[i].done) return 1;
  return 0;
}

/* The wait of an idle run: -1 once a ring it uses moved (room in a send's
   ring, bytes from a receive's peer, and while a send waits, bytes from any
   peer on this host), else a peer it waits for. seen: per message its ring's
   position, then per rank the head of the ring from it. */
static int cc__pending_run(cc_comm *c, const void *arg) {
  const cc__run *x = (const cc__run *)arg;
  int i, who = -1, sending = cc__sending(x);
  if (x->slice_end && cc__now_ns() >= x->slice_end) return -1;   /* the slice is over (cc__any_slice) */
  for (i = 0; i < x->n; i++) {
    const cc__msg *m = &x->m[i];
    if (!m->live || !m->started || m->done) continue;
    if (CC__ANY(m)) {                  /* from any source: every ring counts, as for a waiting send */
      sending = 1;
      if (who < 0) who = c->rank;
      continue;
    }
    if (who < 0) who = m->peer;
    if (c->peers[m->peer].link != CC__LINK_SHM) continue;
    if (m->is_send ? CC__LOAD(&cc__ring_out(c, m->peer)->tail) != x->seen[i]
                   : CC__LOAD(&cc__ring_in(c, m->peer)->head) != x->seen[i]) return -1;
  }
  for (i = 0; sending && i < c->size; i++)
    if (c->peers[i].link == CC__LINK_SHM && CC__LOAD(&cc__ring_in(c, i)->head) != x->seen[x->n + i]) return -1;
  return who < 0 ? -1 : who;
}

/* The peers an idle run waits for (receives from any source: see cc__awaited_text). */
static void cc__awaited_run(cc_comm *c, const void *arg, char *buf, size_t len) {
  const cc__run *x = (const cc__run *)arg;
  int i, j, dup;
  (void)c;
  buf[0] = 0;
  for (i = 0; i < x->n; i++) {
    const cc__msg *m = &x->m[i];
    if (!m->live || !m->started || m->done || CC__ANY(m)) continue;
    for (j = 0, dup = 0; j < i; j++)
      dup |= x->m[j].live && x->m[j].started && !x->m[j].done && x->m[j].peer == m->peer;
    if (!dup) cc__cat(buf, len, "%s%d", buf[0] ? ", " : "", m->peer);
  }
}

/* Point to point: the run's first message still waiting on rank who (a
   receive, else a send), and the messages from who that no receive took
   (the usual cause: another tag, or another size). */
static void cc__says_run(cc_comm *c, const void *arg, int who, char *buf, size_t len, char *more, size_t mlen) {
  const cc__run *x = (const cc__run *)arg;
  const cc__msg *w = NULL;
  const cc__umsg *u;
  const cc__peer *pe = &c->peers[who];
  int i, k = 0;
  for (i = 0; i < x->n; i++) {
    const cc__msg *m = &x->m[i];
    if (m->live && m->started && !m->done && m->peer == who && (!w || (w->is_send && !m->is_send))) w = m;
  }
  more[0] = 0;
  if (!w) { snprintf(buf, len, "rank %d", who); return; }
  snprintf(buf, len, "the %s of %zu bytes %s rank %d with tag %d", w->is_send ? "send" : "receive", w->bytes,
           w->is_send ? "to" : "from", who, w->tag);
  if (w->is_send) { snprintf(more, mlen, "rank %d has not taken it (it calls no receive that matches)", who); return; }
  snprintf(more, mlen, "from rank %d, messages no receive took:", who);
  for (u = pe->uq_head; u; u = u->next)
    if (u->f.tag >= 0 && k++ < 6)
      cc__cat(more, mlen, "%s tag %d (%llu bytes)", k == 1 ? "" : ",", (int)u->f.tag, (unsigned long long)u->f.bytes);
  if (cc__rx_parked(pe) && pe->rx.tag >= 0 && k++ < 6)
    cc__cat(more, mlen, "%s tag %d (%llu bytes)", k == 1 ? "" : ",", (int)pe->rx.tag, (unsigned long long)pe->rx.bytes);
  if (k > 6) cc__cat(more, mlen, " and %d more", k - 6);
  if (!k) snprintf(more, mlen, "nothing has come from rank %d that no receive took", who);
}

/* What a run with a receive from any source waits for, in words: "rank 2
   and a message of tag 5 from any rank". */
static void cc__awaited_text(const cc__run *x, char *buf, size_t len) {
  char ranks[120];
  int i, j, dup;
  cc__awaited_run(x->c, x, ranks, sizeof ranks);
  buf[0] = 0;
  if (ranks[0]) cc__cat(buf, len, "rank%s %s", strchr(ranks, ',') ? "s" : "", ranks);
  for (i = 0; i < x->n; i++) {
    const cc__msg *m = &x->m[i];
    if (!m->live || !m->started || m->done || !CC__ANY(m)) continue;
    for (j = 0, dup = 0; j < i; j++)
      dup |= x->m[j].live && x->m[j].started && !x->m[j].done && CC__ANY(&x->m[j]) && x->m[j].tag == m->tag;
    if (!dup) cc__cat(buf, len, "%sa message of tag %d from any rank", buf[0] ? " and " : "", m->tag);
  }
}

/* Can some rank still send what a receive from any source waits for? CC_OK
   while another rank lives (a rank that is gone cannot be the sender); else
   CC_ERR_PEER_LOST naming every one, posted as cc__check_peer posts it
   (with probe set, only said). */
static cc_result cc__any_alive(cc_comm *c, const char *what, int probe) {
  char gone[240], why[96];
  int r, last = -1;
  if (c->size < 2) return CC_OK;
  gone[0] = 0;
  for (r = 0; r < c->size; r++) {
    const cc__peer *p = &c->peers[r];
    if (r == c->rank) continue;
    if (p->link == CC__LINK_SHM && cc__shm_gone(c->shm, p->ring.ch, why, sizeof why))
      cc__cat(gone, sizeof gone, "%srank %d %s", gone[0] ? ", " : "", r, why);
    else if (p->link == CC__LINK_TCP && p->tcp.eof && !p->rx_state && !p->rx_hdr_got && !cc__link_has_bytes(c, r))
      cc__cat(gone, sizeof gone, "%srank %d closed its connection", gone[0] ? ", " : "", r);
    else
      return CC_OK;
    last = r;
  }
  if (probe) return CC_ERR_PEER_LOST;
  return cc__fail_all(c, CC_ERR_PEER_LOST, last, what, "no rank that could send what this rank waits for from any "
                      "source is left: %s", gone);
}

/* Every shared-memory peer the run waits on lives (from any source: one at least). */
static cc_result cc__alive_run(cc_comm *c, const void *arg, const char *what, int probe) {
  const cc__run *x = (const cc__run *)arg;
  char why[96];
  int i;
  for (i = 0; i < x->n; i++) {
    const cc__msg *m = &x->m[i];
    if (!m->live || !m->started || m->done) continue;
    if (CC__ANY(m)) CC__TRY(cc__any_alive(c, what, probe));
    else if (probe && cc__peer_gone(c, m->peer, why, sizeof why)) return CC_ERR_PEER_LOST;
    else if (!probe) CC__TRY(cc__check_peer(c, m->peer, what));
  }
  return CC_OK;
}

/* Does a receive of the run wait for a message from any source? */
static int cc__any_waits(const cc__run *x) {
  int i;
  for (i = 0; i < x->n; i++)
    if (x->m[i].live && x->m[i].started && !x->m[i].done && CC__ANY(&x->m[i])) return 1;
  return 0;
}

/* A run with a receive from any source waits in slices of at most a second
   (cc__pending_run ends each) and keeps the time since its last progress
   itself, so that its warnings and its timeout say what it waits for, a tag
   from any rank, where a wait names one rank. Called before each slice. */
static cc_result cc__any_slice(cc__run *x) {
  cc_comm *c = x->c;
  uint64_t now = cc__now_ns(), slice = CC__MAX(CC__MIN(CC__S, c->set.timeout_ns / 4), CC__MS), end;
  char awaited[240], where[400];
  if (!x->idle_t0) {
    x->idle_t0 = now;
    x->warn_at = c->set.warn_ns ? now + c->set.warn_ns : 0;
  }
  if (now - x->idle_t0 >= c->set.timeout_ns) {
    cc__awaited_text(x, awaited, sizeof awaited);
    cc__where(c, where, sizeof where);
    return cc__fail_all(c, CC_ERR_TIMEOUT, c->rank, x->what, "waited %.1f s for %s (timeout; %.150s)",
                        (double)(now - x->idle_t0) / 1e9, awaited, where);
  }
  if (x->warn_at && now >= x->warn_at) {
    cc__awaited_text(x, awaited, sizeof awaited);
    cc__log(c, CC__LOG_ALWAYS, "%s: rank %d: has waited %.0f s for %s (the timeout is %.0f s)", x->what, c->rank,
            (double)(now - x->idle_t0) / 1e9, awaited, (double)c->set.timeout_ns / 1e9);
    x->warn_at = x->idle_t0 + 2 * (x->warn_at - x->idle_t0);
  }
  if (c->set.warn_ns) slice = CC__MIN(slice, CC__MAX(c->set.warn_ns / 2, CC__MS));
  end = x->idle_t0 + c->set.timeout_ns;
  if (x->warn_at) end = CC__MIN(end, x->warn_at);
  x->slice_end = CC__MAX(CC__MIN(now + slice, end), now + 1);
  return CC_OK;
}

/* A send to rank p found its connection closed or broken: p may have failed
   and said why before it closed: read that first, and report it if so. */
static cc_result cc__lost_send(cc__run *x, int p, int err) {
  int progress = 0;
  CC__TRY(cc__rx_pull_ready(x, p, POLLHUP, &progress));
  if (CC__LOAD_RLX(&x->c->hdr->fail_code)) return cc__take_fail(x->c, x->what);
  return cc__lost(x, p, err);
}

/* Sends: write what the links take of the first unfinished send per peer. */
static cc_result cc__run_send(cc__run *x, int *progress) {
  cc_comm *c = x->c;
  int i;
  for (i = 0; i < x->n; i++) {
    cc__msg *s = &x->m[i];
    long w;
    if (!s->live || !s->started || !s->is_send || s->done || cc__send_to(x, s->peer) != s) continue;
    if (c->peers[s->peer].link == CC__LINK_TCP && c->peers[s->peer].tcp.eof) return cc__lost_send(x, s->peer, 0);
    if ((w = cc__link_write(c, s)) < 0) return cc__lost_send(x, s->peer, errno);
    if (w > 0) *progress = 1;
    if (cc__sent_all(s)) s->done = 1;
  }
  return CC_OK;
}

/* Is some message of the run not done? */
static int cc__run_pending(const cc__run *x) {
  int i;
  for (i = 0; i < x->n; i++)
    if (x->m[i].live && !x->m[i].done) return 1;
  return 0;
}

/* cc__run_recv for a run with a receive from any source: one poll, then
   every link in a single pass, in turn from the peer after the one such a
   receive last took from (c->eng.any_next), so that no peer's frames are
   always read first. */
static cc_result cc__run_recv_any(cc__run *x, int sending, int *progress, int *np) {
  cc_comm *c = x->c;
  int i, k, j = 0, polled, start = c->eng.any_next;
  *np = 0;
  for (k = 0; k < c->size; k++) {
    cc__peer *pe = &c->peers[i = (start + k) % c->size];
    if (pe->link == CC__LINK_TCP && pe->tcp.fd >= 0 && !pe->tcp.eof) cc__pfd_add(c, np, i, POLLIN | CC__POLL_END);
  }
  polled = *np && cc__poll(c->eng.pfd, *np, 0) > 0;
  for (k = 0; k < c->size; k++) {
    cc__peer *pe = &c->peers[i = (start + k) % c->size];
    if (pe->link == CC__LINK_SHM) {
      if (pe->rx_state || pe->rx_hdr_got || cc__rx_wanted(x, i, 0) || (sending && cc__link_has_bytes(c, i)))
        CC__TRY(cc__rx_pull(x, i, progress));
    } else if (pe->link == CC__LINK_TCP && pe->tcp.fd >= 0) {
      if (cc__link_has_bytes(c, i)) CC__TRY(cc__rx_pull(x, i, progress));
      if (j < *np && c->eng.pfd_rank[j] == i) {
        if (polled && (c->eng.pfd[j].revents & (POLLIN | POLLHUP | POLLERR | CC__POLL_END)))
          CC__TRY(cc__rx_pull_ready(x, i, c->eng.pfd[j].revents, progress));
        j++;
      }
    }
  }
  return CC_OK;
}

/* Receives: pull what the run wants from this host's rings, and from the TCP
   links that poll() says have something (their fds in c->eng.pfd[0..*np),
   which an idle wait watches too: a failure report wakes it). poll() is
   asked only while a message of the run is not done: a run whose sends are
   all written (a root's broadcast) ends without another system call. */
static cc_result cc__run_recv(cc__run *x, int sending, int *progress, int *np) {
  cc_comm *c = x->c;
  int i;
  if (cc__any_waits(x)) return cc__run_recv_any(x, sending, progress, np);
  *np = 0;
  for (i = 0; i < c->size; i++) {
    cc__peer *pe = &c->peers[i];
    int busy = pe->rx_state || pe->rx_hdr_got;
    if (pe->link == CC__LINK_SHM) {
      if (busy || cc__rx_wanted(x, i, 0) || (sending && cc__link_has_bytes(c, i))) CC__TRY(cc__rx_pull(x, i, progress));
    } else if (pe->link == CC__LINK_TCP && pe->tcp.fd >= 0) {
      if (cc__link_has_bytes(c, i)) CC__TRY(cc__rx_pull(x, i, progress));   /* a read-ahead may hold whole frames */
      if (!pe->tcp.eof) cc__pfd_add(c, np, i, POLLIN | CC__POLL_END);
    }
  }
  if (*np && cc__run_pending(x) && cc__poll(c->eng.pfd, *np, 0) > 0)
    for (i = 0; i < *np; i++)
      if (c->eng.pfd[i].revents & (POLLIN | POLLHUP | POLLERR | CC__POLL_END))
        CC__TRY(cc__rx_pull_ready(x, c->eng.pfd_rank[i], c->eng.pfd[i].revents, progress));
  return CC_OK;
}

/* All done? Else a failure some rank reported ends the run; else a message
   still waiting on a TCP peer whose stream ended is lost. */
static cc_result cc__run_check(cc__run *x, int *all) {
  cc_comm *c = x->c;
  int i, lost = -1;
  *all = 1;
  for (i = 0; i < x->n; i++) {
    const cc__msg *m = &x->m[i];
    const cc__peer *pe;
    if (!m->live || m->done) continue;
    *all = 0;
    if (CC__ANY(m)) continue;          /* (the wait asks cc__any_alive) */
    pe = &c->peers[m->peer];
    if (m->started && pe->link == CC__LINK_TCP && pe->tcp.eof && !pe->rx_state && !pe->rx_hdr_got &&
        !cc__link_has_bytes(c, m->peer))
      lost = m->peer;                  /* (one made live by a callback starts first: it may be queued) */
  }
  if (*all) return CC_OK;
  if (CC__LOAD_RLX(&c->hdr->fail_code)) return cc__take_fail(c, x->what);
  return lost >= 0 ? cc__lost(x, lost, 0) : CC_OK;
}

/* Nothing moved: note where the rings stand, look once more (what moved
   before the note must not be missed), then wait for a ring to move or a
   socket to be ready (c->eng.pfd[0..np); a waiting send also wants POLLOUT). */
static cc_result cc__run_idle(cc__run *x, int np, int sending) {
  cc_comm *c = x->c;
  cc__msg *m = x->m;
  uint64_t *seen = x->seen;
  cc__waitfor w;
  cc_result r;
  int i, k, shm = 0, n = x->n, any = cc__any_waits(x);
  for (i = 0; i < n; i++) {
    seen[i] = 0;
    if (!m[i].live || !m[i].started || m[i].done || CC__ANY(&m[i]) || c->peers[m[i].peer].link != CC__LINK_SHM) continue;
    shm = 1;
    seen[i] = m[i].is_send ? CC__LOAD(&cc__ring_out(c, m[i].peer)->tail) : CC__LOAD(&cc__ring_in(c, m[i].peer)->head);
    if (m[i].is_send ? c->shm->seg.chan_bytes - (size_t)(cc__ring_out(c, m[i].peer)->head - seen[i]) > 0
                     : seen[i] != cc__ring_in(c, m[i].peer)->tail)
      return CC_OK;
  }
  for (i = 0; i < c->size; i++) {
    seen[n + i] = c->peers[i].link == CC__LINK_SHM ? CC__LOAD(&cc__ring_in(c, i)->head) : 0;
    if (c->peers[i].link != CC__LINK_SHM) continue;
    if ((sending || any) && seen[n + i] != cc__ring_in(c, i)->tail) return CC_OK;
    shm |= any;                        /* from any source: a frame on any ring ends the wait */
  }
  for (i = 0; i < np; i++) {          /* a parked frame: only the peer's end wakes this wait */
    const cc__peer *pe = &c->peers[c->eng.pfd_rank[i]];
    c->eng.pfd[i].events = (short)(cc__rx_parked(pe) && !cc__rx_wanted(x, c->eng.pfd_rank[i], sending) ? CC__POLL_END : POLLIN);
    c->eng.pfd[i].revents = 0;
  }
  for (i = 0; i < n && np; i++) {
    if (!m[i].live || !m[i].started || !m[i].is_send || m[i].done) continue;
    for (k = 0; k < np; k++) if (c->eng.pfd_rank[k] == m[i].peer) c->eng.pfd[k].events |= POLLOUT;
  }
  w.pending = cc__pending_run; w.alive = cc__alive_run; w.awaited = cc__awaited_run; w.says = cc__says_run; w.arg = x;
  w.pfd = c->eng.pfd; w.npfd = np; w.shm = shm;
  if (any) CC__TRY(cc__any_slice(x));
  r = cc__wait(c, &w, x->what);
  x->slice_end = 0;
  return r;
}

/* Take in what the TCP links hold before a call: messages of the call join
   their queues, and a failure some rank reported meanwhile reaches the
   failure word, so that the call fails at once (cc__ready). */
static cc_result cc__engine_poll(cc_comm *c, const char *what) {
  cc__run x;
  int i, np = 0, progress = 0;
  memset(&x, 0, sizeof x);
  x.c = c; x.what = what;
  for (i = 0; i < c->size; i++) {
    cc__peer *pe = &c->peers[i];
    if (pe->link != CC__LINK_TCP || pe->tcp.fd < 0 || pe->tcp.eof) continue;
    if (cc__link_has_bytes(c, i)) CC__TRY(cc__rx_pull(&x, i, &progress));
    cc__pfd_add(c, &np, i, POLLIN | CC__POLL_END);
  }
  if (np && cc__poll(c->eng.pfd, np, 0) > 0)
    for (i = 0; i < np; i++)
      if (c->eng.pfd[i].revents & (POLLIN | POLLHUP | POLLERR | CC__POLL_END))
        CC__TRY(cc__rx_pull_ready(&x, c->eng.pfd_rank[i], c->eng.pfd[i].revents, &progress));
  return CC_OK;
}

/* The run failed while frames to some peers were partly written (their
   abort frames are owed, see cc__propagate): write the rest of each (the
   caller's bytes are valid inside the call), reading meanwhile what those
   peers send, for at most c->settle_ns; then the abort frames and the
   connections' ends. Why: docs/tcp.md, "Failures". */
static void cc__run_settle(cc__run *x) {
  cc_comm *c = x->c;
  uint64_t until = cc__now_ns() + c->settle_ns;
  int i, p, np, progress;
  x->cb = NULL;                        /* nothing more starts */
  for (;;) {
    np = 0;
    for (p = 0; p < c->size; p++) {
      cc__peer *pe = &c->peers[p];
      cc__msg *m;
      if (!pe->tcp.abort_owed) continue;
      m = cc__send_to(x, p);
      if (m && pe->tx_mid && !pe->tcp.eof && cc__now_ns() < until) {
        long w = cc__link_write(c, m);
        if (w >= 0 && !cc__sent_all(m)) { cc__pfd_add(c, &np, p, POLLIN | POLLOUT | CC__POLL_END); continue; }
        if (w >= 0) m->done = 1;
      }
      pe->tcp.abort_owed = 0;          /* (after a broken write or past the time: the end alone) */
      cc__send_last(pe, c->net->abort_f, c->net->abort_len);
    }
    if (!np) return;
    if (cc__poll(c->eng.pfd, np, CC__MS) > 0)
      for (i = 0; i < np; i++)
        if (c->eng.pfd[i].revents & (POLLIN | POLLHUP | POLLERR | CC__POLL_END)) {
          progress = 0;
          (void)cc__rx_pull_ready(x, c->eng.pfd_rank[i], c->eng.pfd[i].revents, &progress);
        }
  }
}

/* Run the live messages until all are done. cb (if any) is called when a
   receive completes and may make more messages live. id: the collective this
   run belongs to (its frames carry it), or NULL for the user's messages. */
static cc_result cc__engine_run(cc_comm *c, cc__msg *m, int n, cc__done_fn cb, void *ctx, const cc__ident *id,
                                const char *what) {
  cc__run x;
  int i, all = 0;
  cc_result r = CC_OK;
  x.c = c; x.m = m; x.n = n; x.cb = cb; x.ctx = ctx; x.what = what; x.id = id; x.seen = NULL;
  x.rotate = 0; x.idle_t0 = x.warn_at = x.slice_end = 0;
  if (c->shm && c->shm->eng.rx_lagged) cc__rings_give_back(c->shm);
  for (i = 0; i < n; i++) m[i].started = 0;
  while (r == CC_OK) {
    int progress = 0, np = 0, sending;
    if ((r = cc__start(&x, &progress)) != CC_OK || (r = cc__run_send(&x, &progress)) != CC_OK) break;
    sending = cc__sending(&x);
    if ((r = cc__run_recv(&x, sending, &progress, &np)) != CC_OK) break;
    /* what the receives' callbacks made live starts now: its message may be queued already */
    if ((r = cc__start(&x, &progress)) != CC_OK || (r = cc__run_check(&x, &all)) != CC_OK || all) break;
    if (progress) { x.idle_t0 = 0; continue; }
    if (!x.seen && !(x.seen = (uint64_t *)CC_MALLOC(sizeof(uint64_t) * ((size_t)n + (size_t)c->size)))) {
      r = cc__fail_all(c, CC_ERR_NO_MEMORY, c->rank, what, "out of memory");
      break;
    }
    r = cc__run_idle(&x, np, sending);
  }
  if (r != CC_OK && c->net) cc__run_settle(&x);
  CC_FREE(x.seen);
  return r;
}

/* One message of a run. A receive's buffer is written, never read, so it is
   taken as void * (a const parameter would tell the compiler it is read). */
static void cc__msg_set(cc__msg *m, int is_send, int peer, int tag, void *buf, size_t bytes) {
  memset(m, 0, sizeof *m);
  m->is_send = is_send;
  m->peer = peer;
  m->tag = tag;
  m->buf = (unsigned char *)buf;
  m->bytes = bytes;
  m->live = 1;
  m->any = !is_send && peer == CC_ANY_SOURCE;
}
static void cc__msg_send(cc__msg *m, int peer, int tag, const void *buf, size_t bytes) {
  cc__msg_set(m, 1, peer, tag, (void *)(uintptr_t)buf, bytes);
}
static void cc__msg_recv(cc__msg *m, int peer, int tag, void *buf, size_t bytes) {
  cc__msg_set(m, 0, peer, tag, buf, bytes);
}
/* ============================================================== @algo */
/* The collectives, in three executors driven by @plan (cc__algo_run picks; docs/design.md,
   "How a call flows"): the arena executor (cc__arena_*: every rank on one host, phases over
   the segment's arena), the message executor (cc__msg_*: any ranks, over @engine) and
   hierarchical runs (cc__hier_run: an arena run on each host, a message run between hosts).
   The reduction of element i is always ((x0 op x1) op x2) ... in rank order
   (across hosts: each host's ranks in order, then the hosts in order), done by
   one rank, or by every rank on the same inputs: the same bits, run after run. */

/* ---------------------------------------------------------------- arena: phases */

/* Wait on the arena until `pending` finds no rank missing. */
static cc_result cc__arena_wait(cc_comm *c, cc__pending_fn pending, cc__awaited_fn awaited, const void *arg,
                                const char *what) {
  cc__waitfor w;
  memset(&w, 0, sizeof w);
  w.pending = pending;
  w.awaited = awaited;
  w.arg = arg;
  w.shm = 1;
  return cc__wait(c, &w, what);
}

/* Wait until rank `who` (-1: every rank) has arrived at `step`. */
static cc_result cc__ph_wait_at(cc_comm *c, int who, uint64_t step, const char *what) {
  cc__arr_arg a;
  cc_result r;
  if (who < 0 && c->arena.seen_all >= step) return CC_OK;
  a.who = who;
  a.step = step;
  r = cc__arena_wait(c, cc__pending_arrive, cc__awaited_arrive, &a, what);
  if (r == CC_OK && who < 0) c->arena.seen_all = step;
  return r;
}

/* Begin the next phase: returns this rank's half once it is free to write. */
static CC__INLINE cc_result cc__ph_begin(cc_comm *c, unsigned char **mine, const char *what) {
  uint64_t s = c->arena.step + 1;
  if (s >= 2 && c->arena.seen_all < s - 1) CC__TRY(cc__ph_wait_at(c, -1, s - 1, what));
  *mine = cc__half(c, c->rank, s);
  return CC_OK;
}

/* The line at byte `off` of this rank's next half, made this core's once all
   ranks have read that half: the peers' copies go now, not when a store waits
   for them (it helps cores sharing no cache: dev/same_pair.sh). */
static void cc__ph_prefetch(cc_comm *c, size_t off) {
  if (c->arena.seen_all >= c->arena.step) cc__prefetch_write(cc__half(c, c->rank, c->arena.step + 1) + off);
}

static void cc__ph_arrive(cc_comm *c) {
  c->arena.step++;
  cc__publish(c, &c->seg.ctl[c->rank].arrive, c->arena.step);
  cc__notify(c);
}

static cc_result cc__ph_wait(cc_comm *c, int who, const char *what) {
  return cc__ph_wait_at(c, who, c->arena.step, what);
}

/* ---------------------------------------------------------------- arena: collectives */

/* First phase of a call: the descriptor (all but its step) heads this rank's
   half, the caller's data may follow; cc__first_end publishes the step. */
static cc_result cc__first_begin(cc_comm *c, const cc__call *k, uint64_t count, uint64_t aux,
                                 unsigned char **mine) {
  cc__desc d;
  const cc__opinfo *o = cc__opinfo_of(c, k->op);
  cc_result r = cc__ph_begin(c, mine, cc__coll_name(k->coll));
  if (r != CC_OK) return r;
  memset(&d, 0, sizeof d);             /* the fields of cc__ident_of(k), but the count */
  d.coll = (uint8_t)k->coll;
  d.dtype = (uint8_t)k->t;
  d.op = cc__ident_op(k);
  d.root = (int16_t)cc__ident_root(k);
  d.count = count;
  d.aux = aux;
  d.qhist = c->qhist;
  if (cc__reduces(k->coll) && o && o->kind == CC__OPK_PREMUL) memcpy(d.scal, o->scal, sizeof d.scal);
  memcpy(*mine + sizeof d.step, (const unsigned char *)&d + sizeof d.step, sizeof d - sizeof d.step);
  return CC_OK;
}

static const cc__desc *cc__desc_of(cc_comm *c, int r) {
  return cc__desc_at(c, r, c->arena.step);
}

/* Publish, wait for every rank (one that published phase s has read s-1, as
   the reuse of halves needs: seen_all), and compare the ranks' calls. */
static cc_result cc__first_end(cc_comm *c, const cc__call *k) {
  const char *what = cc__coll_name(k->coll);
  cc__ident me, them;
  const cc__desc *mine;
  uint64_t s = c->arena.step + 1;
  int j, v;
  cc__publish(c, &cc__desc_at(c, c->rank, s)->step, s);
  cc__ph_arrive(c);
  for (j = c->oversub ? 64 : 0; j < 64 && cc__pending_first(c, &s) >= 0; j++) {   /* the usual case, */
    cc__cpu_relax(); cc__cpu_relax(); cc__cpu_relax(); cc__cpu_relax();            /* spun here */
  }
  if (j == 64) CC__TRY(cc__arena_wait(c, cc__pending_first, cc__awaited_first, &s, what));
  if (c->arena.seen_all < s) c->arena.seen_all = s;
  mine = cc__desc_of(c, c->rank);
  v = cc__is_v(mine->coll);
  cc__ident_of_desc(mine, &me);
  for (j = 0; j < c->size; j++) {
    const cc__desc *d = cc__desc_of(c, j);
    cc__ident_of_desc(d, &them);
    if (!cc__ident_same(&me, &them) && cc__ident_agree(c, what, &me, &them, j) != CC_OK)
      return cc__post_mismatch(c, what);
    if (!v && d->aux != mine->aux) {
      cc__fail(c, CC_ERR_MISMATCH, "%s: rank %d: rank %d began this call %s, this rank %s: CC_SHM_CMA or "
               "CC_SHM_DIRECT_BYTES differ between the ranks", what, c->rank, j,
               mine->aux == CC__AUX_DIRECT ? "through the arena" : "reading the peers' buffers",
               mine->aux == CC__AUX_DIRECT ? "reading the peers' buffers" : "through the arena");
      return cc__post_mismatch(c, what);
    }
    if (d->qhist != c->qhist) {
      cc__fail(c, CC_ERR_MISMATCH, "%s: rank %d: rank %d's last queued calls (small broadcast, gather, "
               "scatter) differ from this rank's: a root, a kind or their order was not the same on every rank",
               what, c->rank, j);
      return cc__post_mismatch(c, what);
    }
    if (k->op >= CC__OP_FIRST_USER) {    /* premul scalars: the halves are reused later */
      memcpy(c->arena.scalbuf + 16 * (size_t)j, d->scal, 16);
      c->arena.scals[j] = c->arena.scalbuf + 16 * (size_t)j;
    }
  }
  cc__ph_prefetch(c, 0);               /* the next call's descriptor and first bytes */
  return CC_OK;
}

/* dst = srcs[0] op srcs[1] op ... op srcs[m-1], a left fold in rank order, the
   one every executor uses: a built-in op in one pass (cc__reduce_n); premul_sum
   scaling each source by its rank's scalar (scals[j]); a user op pair by pair,
   through a copy where dst is a later source (no memory: fails, never wrong). */
static cc_result cc__fold(cc_comm *c, int op, cc_dtype t, void *dst, const void *const *srcs, const void *const *scals,
                          int m, size_t count, const char *what) {
  size_t es = cc__dtype_bytes(t);
  const cc__opinfo *o;
  unsigned char *acc;
  int j, alias = 0;
  if (!count) return CC_OK;
  if (op < CC_OP_BUILTIN_COUNT) {
    cc__reduce_n(dst, srcs, m, count, t, op, NULL);
    return CC_OK;
  }
  o = &c->ops[op - CC__OP_FIRST_USER];
  if (o->kind == CC__OPK_PREMUL) {
    cc__reduce_n(dst, srcs, m, count, t, CC__OP_PREMUL, scals);
    return CC_OK;
  }
  for (j = 1; j < m; j++) if (srcs[j] == dst) alias = 1;
  acc = alias ? (unsigned char *)CC_MALLOC(count * es) : (unsigned char *)dst;
  if (!acc) return cc__fail_all(c, CC_ERR_NO_MEMORY, c->rank, what, "out of memory (%zu bytes to fold into)", count * es);
  if (acc != srcs[0]) memcpy(acc, srcs[0], count * es);
  for (j = 1; j < m; j++) o->fn(acc, srcs[j], count, t, o->user);
  if (alias) { memcpy(dst, acc, count * es); CC_FREE(acc); }
  return CC_OK;
}

/* The arena's fold of c->arena.srcs (scalars c->arena.scals) into dst. */
static CC__INLINE cc_result cc__apply(cc_comm *c, const cc__call *k, void *dst, size_t count) {
  return cc__fold(c, k->op, k->t, dst, c->arena.srcs, c->arena.scals, c->size, count, cc__coll_name(k->coll));
}

/* The size class of `bytes`: [1 KiB << i, 2 KiB << i). */
static int cc__tune_size(size_t bytes) {
  int i = 0;
  for (bytes >>= 11; bytes && i < CC__TUNE_SIZES - 1; bytes >>= 1) i++;
  return i;
}

/* ---------------------------------------------------------------- choosing between two ways by measuring */

/* What a call one way costs: the median of its last three calls (the least while it has fewer). */
static float cc__tune_est(const cc__tune *t, int way) {
  const float *v = t->ns[way];
  if (t->nsamp[way] < 3) return t->nsamp[way] > 1 ? CC__MIN(v[0], v[1]) : v[0];
  return CC__MAX(CC__MIN(v[0], v[1]), CC__MIN(CC__MAX(v[0], v[1]), v[2]));
}

static void cc__tune_push(cc__tune *t, int way, float ns) {
  int i;
  for (i = CC__TUNE_KEEP - 1; i > 0; i--) t->ns[way][i] = t->ns[way][i - 1];
  t->ns[way][0] = ns;
  if (t->nsamp[way] < CC__TUNE_KEEP) t->nsamp[way]++;
}

/* The call of t's class just done went t->ran (2: neither way, its buffers
   were mapped) in ns nanoseconds per byte. A call that could not go the way
   it was to (an in-place all_to_all) counts as endless that way. */
static void cc__tune_note(cc__tune *t, float ns) {
  if (t->ran > 1) return;
  if (t->ran != t->want) cc__tune_push(t, t->want, 1e30f);
  cc__tune_push(t, t->ran, ns);
}

/* Asked by a call of t's class: the way it goes; t->way and t->wait become
   the class's state after it. prior: the way to learn first. *chose: 1 when
   t->way was decided or changed. Both ways are timed twice, the faster kept;
   every t->every calls (doubling while it stays) a try of the other way takes
   over if it is CC_SHM_TUNE_GAIN percent faster, and one comes at once when
   the way in use gets CC_SHM_TUNE_DRIFT percent slower. docs/shm.md. */
static int cc__tune_step(const cc__settings *s, cc__tune *t, int prior, int *chose) {
  int use;
  *chose = 0;
  if (t->wait) {                       /* asked although waiting (mapped memory; the stores ask at every staging) */
    t->wait--;
    return t->way;
  }
  if (!t->every && !t->nsamp[0] && !t->nsamp[1]) t->way = (uint8_t)prior;
  if (!t->every && (t->nsamp[t->way] < 2 || t->nsamp[!t->way] < 2))
    return t->nsamp[t->way] < 2 ? t->way : !t->way;     /* learning: every call asks */
  if (!t->every) {
    t->way = cc__tune_est(t, 1) < cc__tune_est(t, 0);
    t->every = t->left = s->tune_first;
    t->ref = cc__tune_est(t, t->way);
    *chose = 1;
  } else if (t->trying) {
    float tried = 0;
    int i, n = CC__MAX(t->tries, 1);
    if (t->trying < n) {               /* the try goes on */
      t->trying++;
      return !t->way;
    }
    for (i = 0; i < CC__MAX(n - 1, 1); i++) tried = CC__MAX(tried, t->ns[!t->way][i]);
    t->trying = 0;
    if (tried * 100.0f < (float)(100 - s->tune_gain) * cc__tune_est(t, t->way)) {
      t->way = !t->way;
      t->every = s->tune_first;
      t->ref = tried;
      *chose = 1;
    } else {
      t->every = CC__MIN(2 * t->every, s->tune_most);
      t->ref = cc__tune_est(t, t->way);
    }
    t->left = t->every;
  } else if (t->nsamp[t->way] >= 3 &&
             cc__tune_est(t, t->way) * 100.0f > (float)(100 + s->tune_drift) * t->ref) {
    t->left = 0;                       /* the way in use got slower: try the other now */
  }
  if (!t->left) {
    t->trying = 1;
    return !t->way;                    /* wait stays 0: the next call asks, and is compared */
  }
  use = t->way;
  if (use) {
    t->left--;                         /* way 1: every call asks (cross-memory attach's do anyway) */
  } else {                             /* way 0: the next `wait` calls need not ask (the arena's skip a phase) */
    uint32_t run = CC__MIN(t->left, s->tune_ask);
    t->wait = run - 1;
    t->left -= run;
  }
  return use;
}

/* A large staging of a call that only moves data: plain stores unless this
   rank's own stagings of its size run more than twice as fast streamed (far
   readers), chosen per size class as CC_SHM_CMA=auto chooses, plain first; a
   try is CC__STAGE_TRY stagings. Reductions always stream (docs/shm.md,
   "Large messages: streaming or plain stores"). */
#define CC__PLAIN_CREDIT 2.0f
#define CC__STAGE_TRY 4u

static CC__NOINLINE void cc__stage_pick(cc_comm *c, void *dst, const void *src, size_t n, size_t total) {
  int sz = cc__tune_size(total), chose;
  cc__tune *t = &c->arena.st[sz];
  uint64_t t0;
  if (!t->tries) {                     /* plain first: a class's first stagings find its pages cold */
    t->tries = CC__STAGE_TRY;
    t->way = 1;
    t->every = t->left = c->set.tune_first;
    t->ref = 1e30f;                    /* the first try comes after CC_SHM_TUNE_FIRST stagings, not before */
  }
  t->want = t->ran = (uint8_t)cc__tune_step(&c->set, t, 1, &chose);
  if (chose)
    cc__log(c, CC__LOG_INFO, "shm: rank %d stages data-movement messages of %zu KiB to %zu KiB with %s stores "
            "(%.2f GB/s against %.2f, plain stores' figures doubled)", c->rank, (size_t)1 << sz, (size_t)2 << sz,
            t->way ? "plain" : "streaming", 1.0 / (double)t->ref, 1.0 / (double)cc__tune_est(t, !t->way));
  t0 = cc__now_ns();
  if (t->ran) memcpy(dst, src, n);
  else cc__copy_stream(dst, src, n);
  cc__tune_note(t, (float)(cc__now_ns() - t0 + 1) / (float)n / (t->ran ? CC__PLAIN_CREDIT : 1.0f));
}

/* Stage `n` bytes of a message of `total` into this rank's half: large ones
   streamed (`pick`: cc__stage_pick), unless ranks outnumber CPUs: two ranks
   sharing a core would fetch back from memory what their core's cache held. */
static void cc__stage(cc_comm *c, void *half_data, const void *src, size_t n, size_t total, int pick) {
  if (total < c->set.stream_bytes || c->oversub) memcpy(half_data, src, n);
  else if (pick) cc__stage_pick(c, half_data, src, n, total);
  else cc__copy_stream(half_data, src, n);
}

static cc_result cc__run_barrier(cc_comm *c, const cc__call *k) {
  unsigned char *mine;
  cc_result r = cc__first_begin(c, k, 0, 0, &mine);
  return r != CC_OK ? r : cc__first_end(c, k);
}

/* A small all_to_all or reduce_scatter (a rank's pieces this many bytes or
   fewer) stages them side by side after the descriptor, in lines readers read
   anyway; larger ones give each piece a line-aligned n-th of the half. */
#define CC__PACKED_BYTES 64u

/* Bytes between a rank's pieces in its half, for pieces of `bytes` each. */
static size_t cc__piece_cap(const cc_comm *c, size_t bytes) {
  if (bytes && bytes * (size_t)c->size <= CC__PACKED_BYTES) return bytes;
  return ((c->seg.half - CC__DESC_BYTES) / (size_t)c->size) & ~(size_t)63;
}

/* Begin phase `first` (the call's first: its descriptor) or a later one. */
static CC__INLINE cc_result cc__phase_begin(cc_comm *c, const cc__call *k, int first, unsigned char **mine) {
  return first ? cc__first_begin(c, k, k->count, 0, mine) : cc__ph_begin(c, mine, cc__coll_name(k->coll));
}

/* End it: publish, and wait for every rank when `wait` (a first phase always does). */
static CC__INLINE cc_result cc__phase_end(cc_comm *c, const cc__call *k, int first, int wait) {
  if (first) return cc__first_end(c, k);
  cc__ph_arrive(c);
  return wait ? cc__ph_wait(c, -1, cc__coll_name(k->coll)) : CC_OK;
}

/* reduce (root >= 0) and all_reduce (root < 0), small or on two ranks: one phase per chunk. */
static cc_result cc__run_reduce_one(cc_comm *c, const cc__call *k, int root) {
  size_t es = cc__dtype_bytes(k->t), bytes = k->count * es, chunk = (c->seg.half - CC__DESC_BYTES) / es, off = 0, m;
  const unsigned char *sb = (const unsigned char *)k->sbuf;
  unsigned char *rb = (unsigned char *)k->rbuf, *mine;
  int j, want = root < 0 || c->rank == root;
  do {
    m = CC__MIN(chunk, k->count - off);
    CC__TRY(cc__phase_begin(c, k, off == 0, &mine));
    if (m) cc__stage(c, CC__DATA(mine), sb + off * es, m * es, bytes, 0);
    CC__TRY(cc__phase_end(c, k, off == 0, want));
    if (want) {
      for (j = 0; j < c->size; j++) c->arena.srcs[j] = CC__DATA(cc__half(c, j, c->arena.step));
      CC__TRY(cc__apply(c, k, rb + off * es, m));
    }
    off += m;
  } while (off < k->count);
  return CC_OK;
}

/* reduce_scatter, and larger reduces and all_reduces: block j is rank j's
   step (cc__plan_step, in shares), taken once a call. Per phase, every rank
   stages the next piece of each block; rank r folds piece r of every half
   into its recvbuf (reduce_scatter), else into its next half, from which the
   ranks the step names (every rank, or the root) copy it one phase later. */
static CC__NOINLINE cc_result cc__run_reduce_blocks(cc_comm *c, const cc__call *k) {
  const char *what = cc__coll_name(k->coll);
  int n = c->size, me = c->rank, j, rs = k->coll == CC__REDUCE_SCATTER;
  size_t es = cc__dtype_bytes(k->t), total = k->count * es * (size_t)(rs ? n : 1), off = 0, big = 0, m;
  size_t pcap = cc__piece_cap(c, rs ? k->count * es : 0), *at = c->arena.blk, *len = at + n;
  const unsigned char *sb = (const unsigned char *)k->sbuf;
  unsigned char *rb = (unsigned char *)k->rbuf, *mine;
  cc__call *o = &c->arena.blk_of;
  if (o->coll != k->coll || o->count != k->count || o->t != k->t || o->root != k->root) {   /* else as last call */
    for (j = 0; j < n; j++) {
      cc__step st;
      cc__plan_step(k, n, j, CC__SHARES, 1, &st);
      at[j] = st.src + st.lo * es;
      len[j] = (st.hi - st.lo) * es;
      if (j == me) c->arena.blk_want = cc__step_to(&st, me);   /* it keeps the result: every rank, or the root */
    }
    *o = *k;
  }
  for (j = 0; j < n; j++) big = CC__MAX(big, len[j]);
  do {
    CC__TRY(cc__phase_begin(c, k, off == 0, &mine));
    for (j = 0; j < n; j++)
      if (len[j] > off) cc__stage(c, CC__DATA(mine) + (size_t)j * pcap, sb + at[j] + off, CC__MIN(pcap, len[j] - off), total, 0);
    CC__TRY(cc__phase_end(c, k, off == 0, 1));
    m = len[me] > off ? CC__MIN(pcap, len[me] - off) : 0;
    for (j = 0; j < n; j++) c->arena.srcs[j] = CC__DATA(cc__half(c, j, c->arena.step)) + (size_t)me * pcap;
    if (rs) {
      CC__TRY(cc__apply(c, k, rb + off, m / es));
    } else {
      CC__TRY(cc__ph_begin(c, &mine, what));
      CC__TRY(cc__apply(c, k, CC__DATA(mine), m / es));
      CC__TRY(cc__phase_end(c, k, 0, c->arena.blk_want));
      for (j = 0; c->arena.blk_want && j < n; j++)
        if (len[j] > off) memcpy(rb + at[j] + off, CC__DATA(cc__half(c, j, c->arena.step)), CC__MIN(pcap, len[j] - off));
    }
    off += pcap;
  } while (off < big);
  for (j = 0; rs && j < n; j++) cc__ph_prefetch(c, CC__DESC_BYTES + (size_t)j * pcap);   /* the next call's blocks */
  return CC_OK;
}

/* reduce, all_reduce, reduce_scatter: either way the same fold, the same bits. */
static cc_result cc__run_reduce(cc_comm *c, const cc__call *k, int root) {
  if (k->coll != CC__REDUCE_SCATTER && (k->count * cc__dtype_bytes(k->t) <= c->small_bytes || c->size <= 2))
    return cc__run_reduce_one(c, k, root);
  return cc__run_reduce_blocks(c, k);
}

/* The calls that move data without reducing (cc__plan_move): a rank stages pc
   bytes of each piece per phase, readers copy out theirs. The v forms first
   publish every rank's counts, so that every rank checks every pair alike
   (CC_ERR_MISMATCH everywhere or nowhere) and knows how many phases it takes. */
static CC__NOINLINE cc_result cc__arena_move(cc_comm *c, const cc__call *k) {
  const char *what = cc__coll_name(k->coll);
  size_t es = cc__dtype_bytes(k->t), pc = c->seg.half - CC__DESC_BYTES, off = 0, maxlen = 0, own = 0, total;
  int n = c->size, me = c->rank, j, i, first = 1, writes, reads;
  unsigned char *mine;
  uint64_t count = cc__ident_count(k);
  cc__plan p;
  cc__plan_move(c, k, &p);
  writes = (p.writer < 0 || p.writer == me) && !(p.one_piece && p.reader == me);
  reads = (p.reader < 0 || p.reader == me) && p.writer != me;
  if (!p.one_piece) pc = cc__piece_cap(c, k->coll == CC__ALL_TO_ALL ? k->count * es : 0);   /* packed: all_to_all only */
  if (!cc__is_v(k->coll)) {
    maxlen = k->count * es;
  } else {                             /* the counts: [0,n) what this rank sends, [n,2n) what it expects */
    uint64_t *arr;
    for (j = 0; j < n; j++) own = CC__MAX(own, cc__plan_slen(&p, j));
    CC__TRY(cc__first_begin(c, k, count, own, &mine));
    arr = (uint64_t *)CC__DATA(mine);
    for (j = 0; j < 2 * n; j++) arr[j] = 0;
    for (j = 0; j < n; j++) {
      if (k->sc) arr[j] = k->sc[j];
      if (k->rc) arr[n + j] = k->rc[j];
    }
    CC__TRY(cc__first_end(c, k));
    for (i = 0; i < n; i++) {          /* every rank checks every pair */
      const uint64_t *ai = (const uint64_t *)CC__DATA(cc__half(c, i, c->arena.step));
      for (j = 0; j < n; j++) {
        uint64_t have, want;
        int from, to;
        switch (k->coll) {
        case CC__GATHER_V: case CC__ALL_GATHER_V:
          if (k->coll == CC__GATHER_V && i != k->root) continue;
          have = cc__desc_of(c, j)->count; want = ai[n + j]; from = j; to = i; break;
        case CC__SCATTER_V: if (i != k->root) continue; have = ai[j]; want = cc__desc_of(c, j)->count; from = i; to = j; break;
        default: have = ai[j]; want = ((const uint64_t *)CC__DATA(cc__half(c, j, c->arena.step)))[n + i]; from = i; to = j; break;
        }
        if (have != want) return cc__vcount_mismatch(c, what, from, to, have, want);
      }
      maxlen = CC__MAX(maxlen, (size_t)cc__desc_of(c, i)->aux);
    }
    first = 0;
  }
  total = p.one_piece && p.writer >= 0 ? maxlen : maxlen * (size_t)n;   /* bytes the ranks stage (cc__stage) */
  while (first || off < maxlen) {
    if (first || writes) CC__TRY(first ? cc__first_begin(c, k, count, maxlen, &mine) : cc__ph_begin(c, &mine, what));
    if (writes) {
      for (j = 0; j < n; j++) {
        const unsigned char *src = (const unsigned char *)k->sbuf + cc__plan_soff(&p, j) + off;
        if (p.one_piece) {
          if (cc__plan_slen(&p, 0) > off) cc__stage(c, CC__DATA(mine), src, CC__MIN(pc, cc__plan_slen(&p, 0) - off), total, 1);
          break;
        }
        if (j != me && (p.reader < 0 || p.reader == j) && cc__plan_slen(&p, j) > off)
          cc__stage(c, CC__DATA(mine) + (size_t)j * pc, src, CC__MIN(pc, cc__plan_slen(&p, j) - off), total, 1);
      }
    }
    if (first) CC__TRY(cc__first_end(c, k));
    else cc__ph_arrive(c);
    if (!first && reads) CC__TRY(cc__ph_wait(c, p.writer, what));
    first = 0;
    for (j = 0; reads && j < n; j++) {
      const unsigned char *src;
      if (j == me || (p.writer >= 0 && p.writer != j) || cc__plan_rlen(&p, j) <= off) continue;
      src = CC__DATA(cc__half(c, j, c->arena.step)) + (p.one_piece ? 0 : (size_t)me * pc);
      memcpy((unsigned char *)k->rbuf + cc__plan_roff(&p, j) + off, src, CC__MIN(pc, cc__plan_rlen(&p, j) - off));
    }
    off += pc;
  }
  cc__plan_own(c, k, &p);
  for (j = 0; !p.one_piece && writes && j < n; j++)   /* the pieces of the next call like this one */
    if (j != me && cc__plan_slen(&p, j)) cc__ph_prefetch(c, CC__DESC_BYTES + (size_t)j * pc);
  return CC_OK;
}

/* ---------------------------------------------------------------- arena: direct access to peers' buffers */
/* Large messages skip the arena's two copies: each rank reads (or writes) its peers' buffers
   itself, in place where cc_mem_alloc memory maps them, else by cross-memory attach; the first
   phase carries where they are (cc__drec), a last one keeps them alive until every rank is done
   (docs/shm.md, "Large messages: one copy"). Whether a call goes direct depends only on what
   every rank sees alike: the call, the records, c->direct.nmem (allocations are collective)
   and c->direct.cma, set by every rank at the first direct call from the records' probes. */

#define CC__DR_CMA   1u   /* this rank may read every rank's memory by cross-memory attach */
#define CC__DR_CALL  2u   /* this rank's part of the call can go direct */
#define CC__DR_TUNED 4u   /* rank 0, CC_SHM_CMA=auto: `tune` says how this call goes */
#define CC__DR_PIECE ((size_t)256 << 10)   /* bytes of one source per fold step */

typedef struct cc__drec {              /* 48 bytes after the descriptor of a direct call's first phase */
  uint64_t sa, ra;                     /* sendbuf and recvbuf in this rank's address space */
  uint64_t soff, roff;                 /* their offsets in this rank's part of allocations sid, rid */
  uint32_t sid, rid;                   /* allocation id + 1; 0: not inside one */
  uint32_t flags;                      /* CC__DR_* */
  uint32_t tune;                       /* rank 0, CC__DR_TUNED: wait << 2 | way << 1 | this call by cross-memory attach */
} cc__drec;

/* May this rank read every rank's memory? One INFO line when it may not. */
static void cc__cma_probe(cc_comm *c) {
  int j;
  c->direct.cma_mine = c->set.shm_cma ? 1 : 0;
  for (j = 0; c->direct.cma_mine && j < c->size; j++) {
    const cc__ctl *t = &c->seg.ctl[j];
    uint64_t v = 0;
    char why[96];
    if (j == c->rank) continue;
    errno = 0;
    if (cc__vm_read(CC__LOAD(&t->pid), &v, (const void *)(uintptr_t)t->probe_at, sizeof v) == 0 && v == t->probe)
      continue;
    if (errno) cc__strerr(errno, why, sizeof why);
    else snprintf(why, sizeof why, "read a wrong value");
    cc__log(c, CC__LOG_INFO, "shm: rank %d: cannot read rank %d's memory (process_vm_readv: %s): large messages "
            "go through the arena (two copies)", c->rank, j, why);
    c->direct.cma_mine = 0;
  }
}

/* The allocation of this rank that holds [p, p + len): its id + 1 and the
   offset of p in this rank's part; 0 when none does. */
static uint32_t cc__mem_find(const cc_comm *c, const void *p, size_t len, uint64_t *off) {
  const cc__mem *m;
  uintptr_t a = (uintptr_t)p;
  for (m = c->direct.mem; m && p; m = m->next) {
    uintptr_t b = (uintptr_t)(m->base + (size_t)m->me * m->slot);
    if (m->mapped && a >= b && a - b <= m->bytes[m->me] && len <= m->bytes[m->me] - (a - b)) {
      *off = (uint64_t)(a - b);
      return m->id + 1;
    }
  }
  return 0;
}

/* Rank j's part of allocation id - 1 at offset off, as mapped here; *max: the
   bytes from there to the end of j's part. NULL when not mapped here. */
static unsigned char *cc__mem_peer(const cc_comm *c, uint32_t id, int j, uint64_t off, size_t *max) {
  const cc__mem *m;
  *max = 0;
  for (m = c->direct.mem; m && id; m = m->next)
    if (m->id + 1 == id && m->mapped && j < m->nranks && off <= m->bytes[j]) {
      *max = m->bytes[j] - (size_t)off;
      return m->base + (size_t)j * m->slot + (size_t)off;
    }
  return NULL;
}

/* Bytes of rank j's sendbuf (*s) and recvbuf (*r) that other ranks touch in
   a direct run of k: the reading run (put 0), or the putting run (1), which
   writes into the peers' recvbufs (mapped: cross-memory attach only reads). */
static void cc__direct_need(const cc_comm *c, const cc__call *k, int j, int put, size_t *s, size_t *r) {
  size_t b = k->count * cc__dtype_bytes(k->t), all = b * (size_t)c->size;
  int root = j == k->root;
  *s = *r = 0;
  switch (k->coll) {
  case CC__ALL_REDUCE: *s = b; *r = b; break;
  case CC__REDUCE: *s = b; *r = root ? b : 0; break;
  case CC__REDUCE_SCATTER: case CC__ALL_TO_ALL: *s = all; break;
  case CC__ALL_GATHER: *s = b; break;
  case CC__GATHER: if (put) *r = root ? all : 0; else *s = root ? 0 : b; break;
  case CC__SCATTER: *s = root ? all : 0; break;
  case CC__BROADCAST: *s = root ? b : 0; break;
  default: break;
  }
}

/* The collectives whose reading run may use cross-memory attach, as indices of
   CC_SHM_CMA=auto's table, else -1. broadcast: the arena's pipelined copies are
   faster; reduce has no reading run (its partials need the root's recvbuf). */
static int cc__tune_coll(int coll) {
  static const int colls[CC__TUNE_COLLS] = {CC__ALL_REDUCE, CC__REDUCE_SCATTER, CC__ALL_GATHER, CC__ALL_TO_ALL,
                                            CC__GATHER, CC__SCATTER};
  int i;
  for (i = 0; i < CC__TUNE_COLLS; i++) if (colls[i] == coll) return i;
  return -1;
}

/* k's message size as nccl-tests counts it (the largest buffer); 0 when k cannot run direct. */
static size_t cc__direct_size(const cc_comm *c, const cc__call *k) {
  size_t b = k->count * cc__dtype_bytes(k->t);
  switch (k->coll) {
  case CC__BROADCAST: case CC__REDUCE: case CC__ALL_REDUCE: return b;
  case CC__GATHER: case CC__ALL_GATHER: case CC__SCATTER: case CC__REDUCE_SCATTER: case CC__ALL_TO_ALL:
    return b * (size_t)c->size;
  default: return 0;
  }
}

/* ---------------------------------------------------------------- arena: cross-memory attach chosen by measuring */
/* CC_SHM_CMA=auto (the default): per collective and size class (a power of two), rank 0
   times its calls both ways, the arena's two copies and cross-memory attach's one, and
   chooses by its own settings; its record in the direct first phase carries the call's way
   and the class's state after it, which every rank takes (while the arena is the way, `wait`
   calls skip that phase, alike on every rank). Learning, tries and why: docs/shm.md, "Cross-
   memory attach or the arena: chosen by measuring", and docs/performance.md. */

/* The class of call k when its way is chosen by measuring, else NULL. */
static cc__tune *cc__tune_of(const cc_comm *c, const cc__call *k) {
  int ci = cc__tune_coll(k->coll);
  if (!c->direct.tune || c->direct.cma == 0 || ci < 0) return NULL;
  return &c->direct.tune[ci * CC__TUNE_SIZES + cc__tune_size(cc__direct_size(c, k))];
}

/* Rank 0: the word its record carries for call k of class t (cc__drec.tune).
   A class learns first the way the nearest smaller class chose. */
static uint32_t cc__tune_ask(const cc_comm *c, const cc__call *k, cc__tune *t) {
  int si = (int)(t - c->direct.tune) % CC__TUNE_SIZES, prior = 0, chose, use, i;
  for (i = si - 1; i >= 0; i--)
    if (t[i - si].every) { prior = t[i - si].way; break; }
  use = cc__tune_step(&c->set, t, prior, &chose);
  t->want = (uint8_t)use;
  if (chose)                           /* the figures the choice compared: t->ref is what the way chosen did */
    cc__log(c, CC__LOG_INFO, "shm: %s of %zu KiB to %zu KiB: %s, %.2f GB/s against %.2f (CC_SHM_CMA=auto)",
            cc__coll_name(k->coll), (size_t)1 << si, (size_t)2 << si, t->way ? "cross-memory attach" : "through the arena",
            1.0 / (double)t->ref, 1.0 / (double)cc__tune_est(t, !t->way));
  return t->wait << 2 | (uint32_t)t->way << 1 | (uint32_t)use;
}

/* Does call k begin with a direct first phase? The same answer on every rank. */
static CC__INLINE int cc__direct_try(const cc_comm *c, const cc__call *k) {
  size_t b;
  if (k->count * cc__dtype_bytes(k->t) * (size_t)c->size < c->set.direct_bytes) return 0;   /* small: at most this */
  b = cc__direct_size(c, k);
  return c->size > 1 && b && b >= c->set.direct_bytes &&
         ((c->direct.cma != 0 && cc__tune_coll(k->coll) >= 0) || c->direct.nmem > 0);
}

/* Cross-memory attach failed on rank j's buffer. A failure posted meanwhile
   explains it (the peer left the call and freed the buffer): that one. */
static cc_result cc__cma_fail(cc_comm *c, int j, int side, const char *what) {
  int e = errno;
  char why[96];
  if (CC__LOAD(&c->hdr->fail_code)) return cc__take_fail(c, what);
  cc__strerr(e, why, sizeof why);
  if (e == ESRCH) {
    CC__TRY(cc__check_peer(c, j, what));
    return cc__fail_all(c, CC_ERR_PEER_LOST, j, what, "rank %d lost (its memory is gone: %s)", j, why);
  }
  return cc__fail_all(c, CC_ERR_SYSTEM, j, what, "cannot read rank %d's %s (process_vm_readv: %s)", j,
                      side ? "recvbuf" : "sendbuf", why);
}

/* Rank j's bytes [off, off + len) of its sendbuf (side 0) or recvbuf (1):
   in place where mapped here (*out points there), else read into tmp. */
static cc_result cc__peer_src(cc_comm *c, int j, int side, size_t off, size_t len, unsigned char *tmp,
                              const void **out, const char *what) {
  const cc__pbuf *b = &c->direct.pb[j];
  const unsigned char *m = side ? b->r : b->s;
  if (m && off + len <= (side ? b->r_max : b->s_max)) { *out = m + off; return CC_OK; }
  if (cc__vm_read(b->pid, tmp, (const void *)(uintptr_t)((side ? b->ra : b->sa) + off), len) != 0)
    return cc__cma_fail(c, j, side, what);
  *out = tmp;
  return CC_OK;
}

/* Copy rank j's bytes [off, off + len) of its sendbuf or recvbuf into dst. */
static cc_result cc__peer_get(cc_comm *c, int j, int side, size_t off, void *dst, size_t len, const char *what) {
  const void *src = NULL;             /* set unless cc__peer_src fails (gcc -O3 cannot tell) */
  if (!len) return CC_OK;
  CC__TRY(cc__peer_src(c, j, side, off, len, (unsigned char *)dst, &src, what));
  if (src != dst) memcpy(dst, src, len);
  return CC_OK;
}

/* Write len bytes into rank j's recvbuf at off: it is mapped here (a putting
   run is only chosen when every recvbuf it writes is). */
static void cc__peer_put(cc_comm *c, int j, size_t off, const void *src, size_t len) {
  if (len) memcpy(c->direct.pb[j].r + off, src, len);
}

/* Can this rank reach `need` bytes of a peer's buffer: mapped here, or by cross-memory attach? */
static int cc__reach(const unsigned char *m, size_t max, size_t need, int cma) {
  return !need || cma || (m && max >= need);
}

/* How a direct call goes on after its first phase (cc__direct_begin). */
enum {
  CC__GO_NOT,                          /* not direct at all: the arena runs the whole call */
  CC__GO_READ,                         /* each rank reads what it needs from the others' buffers */
  CC__GO_PUT,                          /* each rank writes what the others need into their buffers */
  CC__GO_ARENA                         /* the tuner tries the arena this time: it runs the rest */
};

/* The first phase of a direct call: the descriptor and where this rank's buffers
   are; from every rank's, every rank computes the same *go (CC__GO_*). t (this
   rank's state of the class, CC_SHM_CMA=auto) takes rank 0's word. */
static cc_result cc__direct_begin(cc_comm *c, const cc__call *k, cc__tune *t, int *go) {
  const char *what = cc__coll_name(k->coll);
  int n = c->size, me = c->rank, j, all_cma = 1, call_ok = 1, cma, rd = 1, rdm = 1, pt;
  uint32_t tw = 1;                     /* rank 0's word on the class (cc__drec.tune); untuned: this call may */
  int tuned = 0;                       /* rank 0 chose this call's way (its record says CC__DR_TUNED) */
  size_t sn, rn, sp, rp;
  unsigned char *mine;
  cc__drec d;
  *go = 0;
  if (!c->direct.pb && !(c->direct.pb = (cc__pbuf *)CC_MALLOC(sizeof(cc__pbuf) * (size_t)n)))
    return cc__fail_all(c, CC_ERR_NO_MEMORY, me, what, "out of memory");
  if (c->direct.cma_mine < 0) cc__cma_probe(c);
  memset(&d, 0, sizeof d);
  d.sa = (uint64_t)(uintptr_t)k->sbuf;
  d.ra = (uint64_t)(uintptr_t)k->rbuf;
  d.flags = (c->direct.cma_mine > 0 ? CC__DR_CMA : 0u) | (k->coll == CC__ALL_TO_ALL && k->sbuf == k->rbuf ? 0u : CC__DR_CALL);
  cc__direct_need(c, k, me, 0, &sn, &rn);
  cc__direct_need(c, k, me, 1, &sp, &rp);
  sn = CC__MAX(sn, sp);
  rn = CC__MAX(rn, rp);
  if (sn) d.sid = cc__mem_find(c, k->sbuf, sn, &d.soff);
  if (rn) d.rid = cc__mem_find(c, k->rbuf, rn, &d.roff);
  if (t && me == 0) {
    d.flags |= CC__DR_TUNED;
    d.tune = cc__tune_ask(c, k, t);
  }
  CC__TRY(cc__first_begin(c, k, k->count, CC__AUX_DIRECT, &mine));
  memcpy(CC__DATA(mine), &d, sizeof d);
  CC__TRY(cc__first_end(c, k));
  for (j = 0; j < n; j++) {
    cc__pbuf *b = &c->direct.pb[j];
    cc__drec e;
    memcpy(&e, CC__DATA(cc__half(c, j, c->arena.step)), sizeof e);
    all_cma &= (e.flags & CC__DR_CMA) != 0;
    call_ok &= (e.flags & CC__DR_CALL) != 0;
    if (j == 0 && (e.flags & CC__DR_TUNED)) {   /* rank 0 chooses, for every rank */
      tw = e.tune;
      tuned = 1;
    }
    b->sa = e.sa;
    b->ra = e.ra;
    b->pid = CC__LOAD(&c->seg.ctl[j].pid);
    b->s = cc__mem_peer(c, e.sid, j, e.soff, &b->s_max);
    b->r = cc__mem_peer(c, e.rid, j, e.roff, &b->r_max);
  }
  if (c->direct.cma < 0) c->direct.cma = all_cma;
  cma = all_cma && cc__tune_coll(k->coll) >= 0 && (tw & 1u);
  if (t) {                             /* rank 0 untuned (CC_SHM_CMA=1 there): ask every call */
    t->way = (uint8_t)((tw >> 1) & 1u);
    t->wait = tw >> 2;
  }
  pt = k->coll == CC__ALL_REDUCE || k->coll == CC__REDUCE || k->coll == CC__GATHER;
  for (j = 0; j < n; j++) {            /* every rank's buffers, this one's included: the same answer everywhere */
    const cc__pbuf *b = &c->direct.pb[j];
    cc__direct_need(c, k, j, 0, &sn, &rn);
    rd &= cc__reach(b->s, b->s_max, sn, cma) && cc__reach(b->r, b->r_max, rn, cma);
    rdm &= cc__reach(b->s, b->s_max, sn, 0) && cc__reach(b->r, b->r_max, rn, 0);
    cc__direct_need(c, k, j, 1, &sp, &rp);
    pt &= cc__reach(b->s, b->s_max, sp, all_cma) && cc__reach(b->r, b->r_max, rp, 0);
  }
  if (k->coll == CC__REDUCE) rd = 0;
  *go = call_ok && pt ? CC__GO_PUT : call_ok && rd ? CC__GO_READ : tuned ? CC__GO_ARENA : CC__GO_NOT;
  if (t) t->ran = (uint8_t)(*go == CC__GO_NOT || *go == CC__GO_ARENA ? 0 : *go == CC__GO_READ && !rdm ? 1 : 2);
  return CC_OK;
}

/* A phase without data: every rank is done with what came before (the last
   of a direct run: no rank returns while another still reads its buffers). */
static cc_result cc__direct_sync(cc_comm *c, const char *what) {
  cc__ph_arrive(c);
  return cc__ph_wait(c, -1, what);
}

/* A direct run's scratch: this rank's other half, which no rank reads before its next phase. */
static unsigned char *cc__direct_tmp(cc_comm *c, size_t *piece) {
  *piece = CC__MIN(cc__piece_cap(c, 0), CC__DR_PIECE);
  return CC__DATA(cc__half(c, c->rank, c->arena.step + 1));
}

/* reduce, all_reduce, reduce_scatter: each rank folds its share (cc__plan_step)
   from every rank's sendbuf, in rank order (one rank folds each element: the
   same bits everywhere), into its recvbuf where it keeps it; the putting run
   also writes it into the other recvbufs it belongs in, while all_reduce's
   reading run then copies the others' shares from their owners. */
static cc_result cc__direct_reduce(cc_comm *c, const cc__call *k, int put) {
  const char *what = cc__coll_name(k->coll);
  int n = c->size, me = c->rank, j, t, keep;
  int user = k->op >= CC__OP_FIRST_USER && !cc__is_premul(c, k->op);
  size_t es = cc__dtype_bytes(k->t), pc, per, off, m;
  unsigned char *tmp = cc__direct_tmp(c, &pc), *rb = (unsigned char *)k->rbuf;
  const unsigned char *sb = (const unsigned char *)k->sbuf;
  cc__step st, sj;
  cc__plan_step(k, n, me, CC__SHARES, 1, &st);
  keep = cc__step_to(&st, me);
  per = pc / es;
  for (off = st.lo; off < st.hi; off += m) {
    unsigned char *dst;
    m = CC__MIN(per, st.hi - off);
    for (j = 0, t = 0; j < n; j++) {
      if (j == me) c->arena.srcs[j] = sb + st.src + off * es;
      else CC__TRY(cc__peer_src(c, j, 0, st.src + off * es, m * es, tmp + (size_t)(t++) * pc, &c->arena.srcs[j], what));
    }
    /* the result in recvbuf when this rank keeps it; but a user op's fold
       starts with a copy of the first source, which must not land on another */
    dst = keep && !user ? rb + off * es : tmp + (size_t)(n - 1) * pc;
    CC__TRY(cc__apply(c, k, dst, m));
    if (keep && dst != rb + off * es) memcpy(rb + off * es, dst, m * es);
    for (j = 0; j < n; j++)
      if (j != me && cc__step_to(&st, j) && (put || st.to == CC__TO_ROOT)) cc__peer_put(c, j, off * es, dst, m * es);
  }
  if (st.to == CC__TO_ALL && !put) {   /* every share folded: copy the others' from their recvbufs */
    CC__TRY(cc__direct_sync(c, what));
    for (t = 1; t < n; t++) {
      j = (me + t) % n;
      cc__plan_step(k, n, j, CC__SHARES, 1, &sj);
      CC__TRY(cc__peer_get(c, j, 1, sj.lo * es, rb + sj.lo * es, (sj.hi - sj.lo) * es, what));
    }
  }
  return cc__direct_sync(c, what);
}

/* broadcast, gather, all_gather, scatter, all_to_all (cc__plan_move): each
   rank fetches what it receives from its senders' sendbufs (the putting
   gather: writes its piece into the root's recvbuf), then its own piece. */
static cc_result cc__direct_move(cc_comm *c, const cc__call *k, int put) {
  const char *what = cc__coll_name(k->coll);
  int n = c->size, me = c->rank, i, j;
  cc__plan p;
  cc__plan_move(c, k, &p);
  if (put && me != k->root) cc__peer_put(c, k->root, (size_t)me * p.bytes, k->sbuf, p.bytes);
  for (i = 1; !put && (p.reader < 0 || p.reader == me) && i < n; i++) {
    j = (me + i) % n;                  /* rank me+1 first, so that the ranks start on different peers */
    if (p.writer < 0 || p.writer == j)
      CC__TRY(cc__peer_get(c, j, 0, cc__plan_src_off(c, k, j), (unsigned char *)k->rbuf + cc__plan_roff(&p, j),
                           cc__plan_rlen(&p, j), what));
  }
  cc__plan_own(c, k, &p);
  return cc__direct_sync(c, what);
}

static cc_result cc__arena_algo(cc_comm *c, const cc__call *k);

/* The rest of a call whose direct first phase chose go; CC__GO_ARENA ends
   with a phase on every rank at once, as a direct run does (rank 0 times it). */
static cc_result cc__direct_body(cc_comm *c, const cc__call *k, int go) {
  if (go == CC__GO_ARENA) {
    CC__TRY(cc__arena_algo(c, k));
    return cc__direct_sync(c, cc__coll_name(k->coll));
  }
  if (cc__reduces(k->coll)) return cc__direct_reduce(c, k, go == CC__GO_PUT);   /* reduce_scatter never puts */
  return cc__direct_move(c, k, go == CC__GO_PUT);
}

/* A call whose way rank 0 measures: it asks (a direct first phase) unless its
   class goes through the arena for a while. Timed from the end of that phase where it
   has one (not what the last call left undone) to a phase that ends it on every rank. */
static cc_result cc__tuned_run(cc_comm *c, const cc__call *k, cc__tune *t) {
  uint64_t t0 = c->rank == 0 ? cc__now_ns() : 0;
  int go = 0;
  cc_result r = CC_OK;
  if (t->way || !t->wait || c->direct.nmem) {   /* mapped memory: always ask, it may be read in place */
    r = cc__direct_begin(c, k, t, &go);
    if (c->rank == 0) t0 = cc__now_ns();
    if (r == CC_OK) r = go ? cc__direct_body(c, k, go) : cc__arena_algo(c, k);
  } else {
    t->wait--;
    t->want = t->ran = 0;
    r = cc__arena_algo(c, k);
  }
  if (r == CC_OK && c->rank == 0)
    cc__tune_note(t, (float)(cc__now_ns() - t0) / (float)cc__direct_size(c, k));
  return r;
}

/* A call cc__direct_try picked: direct when every rank can, else (*done 0) through the arena. */
static CC__NOINLINE cc_result cc__direct_run(cc_comm *c, const cc__call *k, int *done) {
  int go;
  cc__tune *t = cc__tune_of(c, k);
  cc_result r;
  if (t) {
    *done = 1;
    return cc__tuned_run(c, k, t);
  }
  r = cc__direct_begin(c, k, NULL, &go);
  *done = r != CC_OK || go;
  return r == CC_OK && go ? cc__direct_body(c, k, go) : r;
}

/* ---------------------------------------------------------------- arena: symmetric memory */
/* cc_mem_alloc on ranks of one host: one segment per allocation, every rank's
   part `slot` bytes (the largest request, in whole pages). Rank 0 creates and
   names it in a phase, the others map it, and a last phase tells all whether all
   could (then the name is unlinked). Every rank fails alike, or none. */

static cc_result cc__arena_mem_alloc(cc_comm *c, size_t bytes, void **ptr) {
  const char *what = "mem_alloc";
  int n = c->size, me = c->rank, j, bad = -1, err = 0;
  size_t slot = 4096, total = 0, got = 0;
  unsigned char *mine, *base = NULL;
  cc__mem *m = (cc__mem *)CC_MALLOC(sizeof(cc__mem));
  size_t *sizes = (size_t *)CC_MALLOC(sizeof(size_t) * (size_t)n);
  char name[96];
  cc__call k;
  cc_result r;
  if (!m || !sizes) err = ENOMEM;
  cc__call_init(&k, CC__MEM_ALLOC, NULL, NULL, 0, CC_UINT8, 0, 0);
  c->seq++;
  cc__ident_of(&k, &c->cur);
  if ((r = cc__first_begin(c, &k, 0, 0, &mine)) != CC_OK) goto out;
  memcpy(CC__DATA(mine), &bytes, sizeof bytes);
  if ((r = cc__first_end(c, &k)) != CC_OK) goto out;
  for (j = 0; j < n; j++) {
    size_t b;
    memcpy(&b, CC__DATA(cc__half(c, j, c->arena.step)), sizeof b);
    if (sizes) sizes[j] = b;
    slot = CC__MAX(slot, b);
  }
  if (slot > ((size_t)1 << 46) / (size_t)n) err = err ? err : ENOMEM;   /* the same on every rank */
  else slot = cc__align(slot, 4096);
  total = slot * (size_t)n;
  /* the second phase: base and got the mapping (NULL when it failed: err says
     why); name the segment's, empty when rank 0 did not create one */
  if ((r = cc__ph_begin(c, &mine, what)) != CC_OK) goto out;
  name[0] = 0;
  if (me == 0 && !err) {
    char rnd[20];
    if (cc__random_hex(rnd, 16) != 0) err = errno;
    else {
      snprintf(name, sizeof name, "/cc-%s-m%s", c->jobid, rnd);
      if ((base = (unsigned char *)cc__shm_create(name, total)) == NULL) { err = errno; name[0] = 0; }
    }
    got = total;
  }
  memcpy(CC__DATA(mine), name, sizeof name);
  cc__ph_arrive(c);
  if ((r = cc__ph_wait(c, 0, what)) != CC_OK) goto out;
  if (me != 0) {
    memcpy(name, CC__DATA(cc__half(c, 0, c->arena.step)), sizeof name);
    name[sizeof name - 1] = 0;
    if (name[0] && !err && (base = (unsigned char *)cc__shm_open(name, total, &got)) == NULL) err = errno ? errno : ENOENT;
  }
  if ((r = cc__ph_begin(c, &mine, what)) != CC_OK) goto out;
  memcpy(CC__DATA(mine), &err, sizeof err);
  cc__ph_arrive(c);
  if ((r = cc__ph_wait(c, -1, what)) != CC_OK) goto out;
  if (me == 0 && name[0]) cc__shm_unlink(name);
  for (j = 0; j < n && bad < 0; j++) {
    int e;
    memcpy(&e, CC__DATA(cc__half(c, j, c->arena.step)), sizeof e);
    if (e) { bad = j; err = e; }
  }
  if (bad < 0 && !name[0]) bad = 0;   /* rank 0 says why: never reached */
  if (bad >= 0) {
    char why[96];
    cc__strerr(err ? err : EIO, why, sizeof why);
    r = cc__fail(c, err == ENOMEM ? CC_ERR_NO_MEMORY : CC_ERR_SYSTEM, "%s: rank %d: rank %d could not %s the "
                 "shared memory of %zu bytes per rank: %s", what, me, bad, bad == 0 ? "create" : "map", slot, why);
    goto out;
  }
  m->id = c->direct.mem_seq++;
  m->base = base;
  m->map_bytes = got;
  m->slot = slot;
  m->bytes = sizes;
  m->nranks = n;
  m->me = me;
  m->mapped = 1;
  m->next = c->direct.mem;
  c->direct.mem = m;
  c->direct.nmem++;
  *ptr = base + (size_t)me * slot;
  return CC_OK;
out:
  if (base) cc__shm_unmap(base, got);
  CC_FREE(m);
  CC_FREE(sizes);
  return r;
}

/* cc_mem_free's phase: every rank frees the same allocation (else
   CC_ERR_MISMATCH), and none still uses the others' parts (their collectives
   are over), so each unmaps it at once. */
static cc_result cc__arena_mem_free(cc_comm *c, cc__mem *m) {
  cc__mem **pp;
  unsigned char *mine;
  cc__call k;
  cc__call_init(&k, CC__MEM_FREE, NULL, NULL, m->id, CC_UINT8, 0, 0);
  c->seq++;
  cc__ident_of(&k, &c->cur);
  CC__TRY(cc__first_begin(c, &k, k.count, 0, &mine));
  CC__TRY(cc__first_end(c, &k));
  for (pp = &c->direct.mem; *pp && *pp != m; pp = &(*pp)->next) {}
  if (*pp) *pp = m->next;
  c->direct.nmem--;
  cc__mem_drop(m);
  return CC_OK;
}

/* A call on a communicator of ranks on one host, through the arena. */
static CC__INLINE cc_result cc__arena_algo(cc_comm *c, const cc__call *k) {
  switch (k->coll) {
  case CC__BARRIER: case CC__INIT: return cc__run_barrier(c, k);
  case CC__REDUCE: return cc__run_reduce(c, k, k->root);
  case CC__ALL_REDUCE: case CC__REDUCE_SCATTER: return cc__run_reduce(c, k, -1);
  case CC__BROADCAST: case CC__GATHER: case CC__ALL_GATHER: case CC__SCATTER: case CC__ALL_TO_ALL:
  case CC__GATHER_V: case CC__ALL_GATHER_V: case CC__SCATTER_V: case CC__ALL_TO_ALL_V:
    return cc__arena_move(c, k);
  default:
    return cc__fail(c, CC_ERR_INVALID_ARG, "%s: rank %d: internal: not an arena collective", cc__coll_name(k->coll), c->rank);
  }
}

/* A call on a communicator of ranks on one host. */
static CC__INLINE cc_result cc__arena_run(cc_comm *c, const cc__call *k) {
  if (cc__direct_try(c, k)) {
    int done;
    cc_result r = cc__direct_run(c, k, &done);
    if (done) return r;
  }
  return cc__arena_algo(c, k);
}

/* ---------------------------------------------------------------- messages: helpers */

/* Out of memory in the middle of a collective: every rank must learn it. */
static cc_result cc__oom(cc_comm *c, const char *what) {
  return cc__fail_all(c, CC_ERR_NO_MEMORY, c->rank, what, "out of memory");
}

/* Scratch of the algorithms, kept from call to call (fresh pages cost a fault
   each, more than the fold). */
static unsigned char *cc__keep(unsigned char **buf, size_t *have, size_t bytes) {
  if (*have < bytes || !*buf) {
    unsigned char *p = (unsigned char *)CC_MALLOC(bytes ? bytes : 1);
    if (!p) return NULL;
    CC_FREE(*buf);
    *buf = p;
    *have = bytes;
  }
  return *buf;
}

/* avg: the sum divided by the number of ranks, once, at the end. Messages
   carry float16 and bfloat16 sums as float32 (cc__msg_half), so only float32
   and float64 (and their complex pairs) come here: integers have no avg. */
static void cc__avg_div(void *buf, size_t count, cc_dtype t, int n) {
  size_t i;
  float *f = (float *)buf;
  double *d = (double *)buf;
  if (t == CC_FLOAT32 || t == CC_COMPLEX64)
    for (i = 0; i < count * (t == CC_COMPLEX64 ? 2 : 1); i++) f[i] /= (float)n;
  else if (t == CC_FLOAT64 || t == CC_COMPLEX128)
    for (i = 0; i < count * (t == CC_COMPLEX128 ? 2 : 1); i++) d[i] /= (double)n;
}

/* Send to `to` and receive from `from` (either may be -1), together. */
static cc_result cc__msg_xchg(cc_comm *c, int to, const void *sb, size_t sbytes, int from, void *rb, size_t rbytes,
                              const char *what) {
  cc__msg m[2];
  int n = 0;
  if (to >= 0) cc__msg_send(&m[n++], to, CC__TAG_COLL, sb, sbytes);
  if (from >= 0) cc__msg_recv(&m[n++], from, CC__TAG_COLL, rb, rbytes);
  return n ? cc__engine_run(c, m, n, NULL, NULL, &c->cur, what) : CC_OK;
}

/* Messages for len elements of es bytes at buf, sent to or received from peer
   in pieces of chunk elements (one empty message when len is 0), into ms; live
   says whether they start at once. Returns how many. */
static int cc__msg_chunks(cc__msg *ms, int send, int peer, const void *buf, size_t len, size_t chunk, size_t es,
                          int live) {
  size_t o;
  int n = 0;
  for (o = 0; o == 0 || o < len; o += chunk) {
    cc__msg_set(&ms[n], send, peer, CC__TAG_COLL, (unsigned char *)(uintptr_t)buf + o * es,
                len ? CC__MIN(chunk, len - o) * es : 0);
    ms[n++].live = live;
  }
  return n;
}

/* ---------------------------------------------------------------- messages: algorithms over members
   M[0..m): the ranks taking part (one per host, or all); p: this one's index. */

/* Reduce-scatter by direct exchange: every member sends block q (cc__part) of
   its input to member q in chunks, and folds the m pieces of its own block into
   out as they arrive, in member order, as on one host. With `full`, each folded
   chunk also goes to every member (all-reduce: the all-gather rides along). */
typedef struct cc__drs_ctx {
  cc_comm *c;
  int op, m, p, nrecv;
  cc_dtype t;
  size_t chunk, blen;                  /* chunk and block length, elements */
  const unsigned char *mine;           /* this member's own piece of its block */
  unsigned char *scratch, *out;        /* m-1 pieces of blen elements; the result */
  int *arrived;                        /* per chunk */
  const void **srcs;
  int ag, nch;                         /* all-gather: its sends start at m[ag], m-1 x nch */
  const char *what;
} cc__drs_ctx;

static cc_result cc__drs_done(void *ctx, cc__msg *m, int i) {
  cc__drs_ctx *x = (cc__drs_ctx *)ctx;
  size_t es = cc__dtype_bytes(x->t), ch = (size_t)(i % x->nch);
  size_t off = ch * x->chunk, n = CC__MIN(x->chunk, x->blen - off);
  int j, q;
  if (i >= x->nrecv || ++x->arrived[ch] < x->m - 1) return CC_OK;
  for (j = 0, q = 0; j < x->m; j++) {
    if (j == x->p) x->srcs[j] = x->mine + off * es;
    else x->srcs[j] = x->scratch + ((size_t)q++ * x->blen + off) * es;
  }
  CC__TRY(cc__fold(x->c, x->op, x->t, x->out + off * es, x->srcs, NULL, x->m, n, x->what));
  for (q = 0; x->ag >= 0 && q < x->m - 1; q++) m[x->ag + q * x->nch + (int)ch].live = 1;   /* pass it on */
  return CC_OK;
}

static cc_result cc__msg_rs_direct(cc_comm *c, const int *M, int m, int p, const void *in, void *out, size_t count,
                                   cc_dtype t, int op, void *full, const char *what) {
  size_t es = cc__dtype_bytes(t), chunk = CC__MAX(c->set.net_chunk / es, (size_t)1), lo, hi, bo, bl;
  size_t maxch = (count / (size_t)m + 1 + chunk - 1) / chunk + 1, blen, nch;
  const unsigned char *src = (const unsigned char *)in;
  cc__msg *ms;
  cc__drs_ctx x;
  int q, j, n = 0;
  cc_result r;
  if (m == 1) { if (out != in && count) memcpy(out, in, count * es); return CC_OK; }
  cc__share(count, 1, m, p, &lo, &hi);     /* member j folds share j of every input */
  blen = hi - lo;
  nch = blen ? (blen + chunk - 1) / chunk : 1;
  ms = (cc__msg *)CC_MALLOC(sizeof(cc__msg) * (size_t)(m - 1) * 2 * (nch + maxch));
  x.scratch = cc__keep(&c->net->tmp, &c->net->tmp_bytes, (size_t)(m - 1) * blen * es + 1);
  x.arrived = (int *)CC_MALLOC(sizeof(int) * nch);
  x.srcs = (const void **)CC_MALLOC(sizeof(void *) * (size_t)m);
  if (!ms || !x.scratch || !x.arrived || !x.srcs) { r = cc__oom(c, what); goto out; }
  memset(x.arrived, 0, sizeof(int) * nch);
  x.c = c; x.op = op; x.m = m; x.p = p; x.t = t; x.chunk = chunk; x.blen = blen; x.what = what;
  x.mine = src + lo * es;
  x.out = (unsigned char *)out;
  /* receives first (m[0, (m-1)*nch): piece q, chunk i at index q*nch + i) */
  for (q = 0, j = 0; j < m; j++)
    if (j != p) n += cc__msg_chunks(ms + n, 0, M[j], x.scratch + (size_t)(q++) * blen * es, blen, chunk, es, 1);
  x.nrecv = n;
  x.ag = -1;
  x.nch = (int)nch;
  for (j = 0; full && j < m; j++) {    /* all-gather: the others' results, after their pieces of mine */
    if (j == p) continue;
    cc__share(count, 1, m, j, &bo, &bl);
    n += cc__msg_chunks(ms + n, 0, M[j], (unsigned char *)full + bo * es, bl - bo, chunk, es, 1);
  }
  for (j = 1; j < m; j++) {            /* sends, staggered: member p+1 first */
    int to = (p + j) % m;
    cc__share(count, 1, m, to, &bo, &bl);
    n += cc__msg_chunks(ms + n, 1, M[to], src + bo * es, bl - bo, chunk, es, 1);
  }
  if (full) {                          /* each folded chunk goes to everyone as soon as it is done */
    x.ag = n;
    for (j = 1; j < m; j++) n += cc__msg_chunks(ms + n, 1, M[(p + j) % m], x.out, blen, chunk, es, 0);
  }
  r = cc__engine_run(c, ms, n, cc__drs_done, &x, &c->cur, what);
out:
  CC_FREE(ms); CC_FREE(x.arrived); CC_FREE(x.srcs);
  return r;
}

/* Ring all-gather of member j's block (where plan pl puts rank j's bytes) in buf. */
static cc_result cc__msg_ring_ag(cc_comm *c, const int *M, int m, int p, void *buf, const cc__plan *pl,
                                 const char *what) {
  int s, right = M[(p + 1) % m], left = M[(p + m - 1) % m];
  for (s = 0; s < m - 1; s++) {
    int sb = (p - s + m) % m, rb = (p - s - 1 + 2 * m) % m;
    CC__TRY(cc__msg_xchg(c, right, (unsigned char *)buf + cc__plan_roff(pl, sb), cc__plan_rlen(pl, sb), left,
                         (unsigned char *)buf + cc__plan_roff(pl, rb), cc__plan_rlen(pl, rb), what));
  }
  return CC_OK;
}

/* Broadcast from index rp: a binomial tree for small messages, else a chain
   pipelined in chunks, each forwarded as it arrives (two members too: a late
   receiver queues chunks, not one huge message). The chain's last member has it
   after nch + m - 2 chunk times, the tree's after ceil(log2 m) message times. */
typedef struct cc__chain_ctx { int nrecv; } cc__chain_ctx;

static int cc__bcast_by_tree(const cc_comm *c, int m, size_t bytes) {
  size_t chunk = CC__MAX(c->set.net_chunk, (size_t)1), nch = (bytes + chunk - 1) / chunk, depth = 0;
  while (((size_t)1 << depth) < (size_t)m) depth++;
  return bytes <= c->set.net_small_bytes || nch + (size_t)m - 2 > depth * nch;
}

static cc_result cc__chain_done(void *ctx, cc__msg *m, int i) {
  cc__chain_ctx *x = (cc__chain_ctx *)ctx;
  if (i < x->nrecv) m[x->nrecv + i].live = 1;     /* forward chunk i */
  return CC_OK;
}

static cc_result cc__msg_bcast(cc_comm *c, const int *M, int m, int p, int rp, void *buf, size_t bytes,
                               const char *what) {
  int v = (p - rp + m) % m, mask;
  cc_result r;
  if (m == 1) return CC_OK;
  if (cc__bcast_by_tree(c, m, bytes)) {
    cc__msg o[32];
    int n = 0;
    for (mask = 1; mask < m; mask <<= 1)
      if (v & mask) {
        CC__TRY(cc__msg_xchg(c, -1, NULL, 0, M[(v - mask + rp) % m], buf, bytes, what));
        break;
      }
    for (mask >>= 1; mask > 0; mask >>= 1)
      if (v + mask < m) cc__msg_send(&o[n++], M[(v + mask + rp) % m], CC__TAG_COLL, buf, bytes);
    return n ? cc__engine_run(c, o, n, NULL, NULL, &c->cur, what) : CC_OK;
  } else {
    size_t chunk = CC__MAX(c->set.net_chunk, (size_t)1), nch = (bytes + chunk - 1) / chunk;
    int prev = v > 0 ? M[(v - 1 + rp) % m] : -1, next = v + 1 < m ? M[(v + 1 + rp) % m] : -1, n = 0;
    cc__msg *ms = (cc__msg *)CC_MALLOC(sizeof(cc__msg) * 2 * nch);
    cc__chain_ctx x;
    if (!ms) return cc__oom(c, what);
    if (prev >= 0) n = cc__msg_chunks(ms, 0, prev, buf, bytes, chunk, 1, 1);   /* bytes > 0: nch of them */
    x.nrecv = n;
    if (next >= 0) n += cc__msg_chunks(ms + n, 1, next, buf, bytes, chunk, 1, prev < 0);
    r = cc__engine_run(c, ms, n, prev >= 0 && next >= 0 ? cc__chain_done : NULL, &x, &c->cur, what);
    CC_FREE(ms);
    return r;
  }
}

/* Reduce to index rp, or all-reduce (rp < 0). Small: every member sends its
   input to those that keep the result, which fold it all. Large: reduce-scatter
   by direct exchange, then the all-gather riding on it, or the blocks to the
   root. Either way the left fold in member order. */
static cc_result cc__msg_reduce(cc_comm *c, const int *M, int m, int p, int rp, const void *in, void *out,
                                size_t count, cc_dtype t, int op, const char *what) {
  size_t es = cc__dtype_bytes(t), bytes = count * es, lo, hi;
  int j, n = 0, keep = rp < 0 || p == rp;
  unsigned char *tmp = NULL;
  const void **srcs = NULL;
  cc__msg *ms = NULL;
  cc_result r;
  if (m == 1) { if (out != in && bytes) memcpy(out, in, bytes); return CC_OK; }
  cc__share(count, 1, m, p, &lo, &hi);
  if (bytes <= c->set.net_small_bytes || count < (size_t)m) {
    srcs = (const void **)CC_MALLOC(sizeof(void *) * (size_t)m);
    ms = (cc__msg *)CC_MALLOC(sizeof(cc__msg) * 2 * (size_t)m);
    if (!srcs || !ms || (keep && !(tmp = (unsigned char *)CC_MALLOC((size_t)m * bytes + 1)))) { r = cc__oom(c, what); goto out; }
    for (j = 1; j < m; j++) {          /* staggered: not every member sends to one first */
      int to = (p + j) % m, from = (p - j + m) % m;
      if (rp < 0 || to == rp) cc__msg_send(&ms[n++], M[to], CC__TAG_COLL, in, bytes);
      if (keep) cc__msg_recv(&ms[n++], M[from], CC__TAG_COLL, tmp + (size_t)from * bytes, bytes);
    }
    for (j = 0; j < m; j++) srcs[j] = j == p ? in : tmp + (size_t)j * bytes;
    r = cc__engine_run(c, ms, n, NULL, NULL, &c->cur, what);
    if (r == CC_OK && keep) r = cc__fold(c, op, t, out, srcs, NULL, m, count, what);
  } else if (rp < 0) {
    return cc__msg_rs_direct(c, M, m, p, in, (unsigned char *)out + lo * es, count, t, op, out, what);
  } else {
    unsigned char *acc = keep ? (unsigned char *)out : (tmp = (unsigned char *)CC_MALLOC(bytes + 1));
    if (!acc || !(ms = (cc__msg *)CC_MALLOC(sizeof(cc__msg) * (size_t)m))) { r = cc__oom(c, what); goto out; }
    r = cc__msg_rs_direct(c, M, m, p, in, acc + lo * es, count, t, op, NULL, what);
    for (j = 0; r == CC_OK && j < m; j++) {
      cc__share(count, 1, m, j, &lo, &hi);
      if (keep && j != p) cc__msg_recv(&ms[n++], M[j], CC__TAG_COLL, acc + lo * es, (hi - lo) * es);
      if (!keep && j == p) cc__msg_send(&ms[n++], M[rp], CC__TAG_COLL, acc + lo * es, (hi - lo) * es);
    }
    if (r == CC_OK) r = cc__engine_run(c, ms, n, NULL, NULL, &c->cur, what);
  }
out:
  CC_FREE(srcs);
  CC_FREE(tmp);
  CC_FREE(ms);
  return r;
}

/* premul_sum: this rank's input times its scalar, into *own (NULL when the op
   is no premul_sum); *in then points at it. */
static cc_result cc__premul_input(cc_comm *c, const cc__call *k, size_t count, unsigned char **own, const void **in,
                                  const char *what) {
  const cc__opinfo *o = cc__opinfo_of(c, k->op);
  const void *s[1], *sc[1];
  *own = NULL;
  *in = k->sbuf;
  if (!o || o->kind != CC__OPK_PREMUL) return CC_OK;
  if (!(*own = (unsigned char *)CC_MALLOC(count * cc__dtype_bytes(k->t) + 1))) return cc__oom(c, what);
  s[0] = k->sbuf;
  sc[0] = o->scal;
  if (count) cc__reduce_n(*own, s, 1, count, k->t, CC__OP_PREMUL, sc);
  *in = *own;
  return CC_OK;
}

/* The pieces of plan p as messages into ms (returns how many), from rank me+1
   on, so that not all ranks send to one first. With `quick` (queued calls), a
   whole frame goes straight through the ring where it can, the rest through
   the engine. */
static CC__INLINE int cc__plan_msgs(cc_comm *c, const cc__plan *p, const unsigned char *sb, unsigned char *rb, cc__msg *ms,
                         int quick) {
  int n = c->size, me = c->rank, i, nm = 0;
  int sends = p->writer < 0 || p->writer == me, recvs = p->reader < 0 || p->reader == me;
  for (i = 1; i < n; i++) {
    int to = (me + i) % n, from = (me - i + n) % n;
    if (sends && (p->reader < 0 || p->reader == to)) {
      const unsigned char *src = sb + cc__plan_soff(p, to);
      size_t len = cc__plan_slen(p, to);
      if (!quick || !cc__ring_send_now(c, to, &c->cur, src, len)) cc__msg_send(&ms[nm++], to, CC__TAG_COLL, src, len);
    }
    if (recvs && (p->writer < 0 || p->writer == from)) {
      unsigned char *dst = rb + cc__plan_roff(p, from);
      size_t len = cc__plan_rlen(p, from);
      if (!quick || (!cc__ring_recv_now(c, from, &c->cur, dst, len) && !cc__ring_recv_watch(c, from, &c->cur, dst, len)))
        cc__msg_recv(&ms[nm++], from, CC__TAG_COLL, dst, len);
    }
  }
  return nm;
}

/* ---------------------------------------------------------------- messages: collectives */

/* gather, all_gather, scatter, all_to_all, v forms (cc__plan_move): every rank
   straight to every other, all_gather as a ring, reduce_scatter by exchange. */
static cc_result cc__msg_flat(cc_comm *c, const cc__call *k) {
  const char *what = cc__coll_name(k->coll);
  int n = c->size, me = c->rank, j, nm = 0;
  cc__msg *ms = (cc__msg *)CC_MALLOC(sizeof(cc__msg) * 2 * (size_t)n);
  int *M = (int *)CC_MALLOC(sizeof(int) * (size_t)n);
  const unsigned char *sb = (const unsigned char *)k->sbuf;
  unsigned char *rb = (unsigned char *)k->rbuf, *copy = NULL;
  cc__plan p;
  cc_result r = CC_OK;
  if (!ms || !M) { r = cc__oom(c, what); goto out; }
  for (j = 0; j < n; j++) M[j] = j;
  if (k->coll == CC__REDUCE_SCATTER) {
    size_t es = cc__dtype_bytes(k->t), count = k->count * (size_t)n;
    unsigned char *own = NULL, *acc;
    const void *in = NULL;
    /* blocks of equal size, so block j is rank j's share; in place, the
       result may not overwrite input that is still to be sent */
    if ((r = cc__premul_input(c, k, count, &own, &in, what)) != CC_OK) goto out;
    acc = cc__keep(&c->net->tmp2, &c->net->tmp2_bytes, k->count * es + 1);
    if (!acc) r = cc__oom(c, what);
    else r = cc__msg_rs_direct(c, M, n, me, in, acc, count, k->t, cc__wire_op(c, k->op), NULL, what);
    if (r == CC_OK) {
      if (k->count) memcpy(rb, acc, k->count * es);
      if (k->op == CC_AVG) cc__avg_div(rb, k->count, k->t, n);
    }
    CC_FREE(own);
    goto out;
  }
  cc__plan_move(c, k, &p);
  if (k->coll == CC__ALL_GATHER || k->coll == CC__ALL_GATHER_V) {
    cc__plan_own(c, k, &p);
    r = cc__msg_ring_ag(c, M, n, me, rb, &p, what);
    goto out;
  }
  if (sb && sb == rb && (k->coll == CC__ALL_TO_ALL || k->coll == CC__ALL_TO_ALL_V)) {
    size_t total = 0;                  /* in place: send from a copy */
    for (j = 0; j < n; j++) if (cc__plan_slen(&p, j)) total = CC__MAX(total, cc__plan_soff(&p, j) + cc__plan_slen(&p, j));
    if (!(copy = (unsigned char *)CC_MALLOC(total + 1))) { r = cc__oom(c, what); goto out; }
    if (total) memcpy(copy, sb, total);
    sb = copy;
  }
  nm = cc__plan_msgs(c, &p, sb, rb, ms, 0);
  if (copy) {                          /* this rank's own piece, from the copy */
    if (cc__plan_rlen(&p, me)) memmove(rb + cc__plan_roff(&p, me), sb + cc__plan_soff(&p, me), cc__plan_rlen(&p, me));
  } else {
    cc__plan_own(c, k, &p);
  }
  r = cc__engine_run(c, ms, nm, NULL, NULL, &c->cur, what);
out:
  CC_FREE(copy);
  CC_FREE(ms);
  CC_FREE(M);
  return r;
}

/* ---------------------------------------------------------------- hierarchical runs */

/* One rank per host: the root on its host, the lowest rank elsewhere. *me:
   this rank's index in M, or -1 when it represents no host. */
static int *cc__hier_reps(cc_comm *c, int root, int *me) {
  cc__net *nt = c->net;
  int *M = (int *)CC_MALLOC(sizeof(int) * (size_t)nt->ngroups), g;
  if (!M) return NULL;
  for (g = 0; g < nt->ngroups; g++) M[g] = nt->gfirst[g];
  if (root >= 0) M[nt->grp[root]] = root;
  *me = M[nt->grp[c->rank]] == c->rank ? nt->grp[c->rank] : -1;
  return M;
}

/* CC_ERR_MISMATCH for every rank when this host's ranks called otherwise as the
   whole communicator sees it: the host's part compares only what it runs (two
   broadcasts from two roots on another host meet there). Each rank stored its
   call word on entry (cc__algo_run): once that part has met, all are there. */
static cc_result cc__hier_agree(cc_comm *c, const char *what) {
  cc__net *nt = c->net;
  cc_comm *l = nt->local;
  uint64_t mine, theirs;
  char a[96], b[96];
  int i, g = nt->grp[c->rank];
  if (!l || !l->seg.ctl) return CC_OK;
  mine = CC__LOAD(&l->seg.ctl[l->rank].call);
  for (i = 0; i < c->size; i++) {
    if (i == c->rank || nt->grp[i] != g) continue;
    theirs = CC__LOAD(&l->seg.ctl[nt->lrank[i]].call);
    if (theirs >> 24 != mine >> 24 || theirs == mine) continue;
    cc__call_word_str(theirs, a, sizeof a);
    cc__call_word_str(mine, b, sizeof b);
    return cc__fail_all(c, CC_ERR_MISMATCH, i, what, "rank %d called %s as collective #%llu while this rank called %s",
                        i, a, (unsigned long long)(mine >> 24), b);
  }
  return CC_OK;
}

/* The host's part, an arena run on the host's communicator. A failure there is
   the communicator's, told to the other hosts, naming the rank as it knows it. */
static cc_result cc__hier_local(cc_comm *c, int coll, const cc__call *k, const void *sb, void *rb, size_t count,
                                int op, int root) {
  cc_comm *l = c->net->local;
  cc__call lk;
  cc_result r;
  if (!l) return CC_OK;
  cc__call_init(&lk, coll, sb, rb, count, k->t, op, root);
  l->ops = c->ops;                     /* user ops are the parent's */
  l->nops = c->nops;
  r = cc__arena_run(l, &lk);
  if (r == CC_ERR_MISMATCH && !c->failed && cc__hier_agree(c, cc__coll_name(k->coll)) != CC_OK)
    return r;                          /* said as the calls the program made, where they differ */
  if (r != CC_OK) {
    cc__net *nt = c->net;
    int who = CC__LOAD(&l->hdr->fail_ready) ? l->hdr->fail_rank : -1, g = nt->grp[c->rank], i, gw = -1;
    char msg[CC__ERR_BYTES];
    for (i = 0; i < c->size && who >= 0; i++) if (nt->grp[i] == g && nt->lrank[i] == who) gw = i;
    if (gw >= 0) snprintf(msg, sizeof msg, "%.240s [on this host, rank %d is rank %d of the communicator]", l->err, who, gw);
    else snprintf(msg, sizeof msg, "%.240s", l->err);
    if (!c->failed) cc__fail(c, r, "%s", msg);
    cc__propagate(c, r, gw >= 0 ? gw : c->rank, msg);
  }
  return r;
}

/* barrier, broadcast, reduce, all_reduce across hosts. */
static cc_result cc__hier_run(cc_comm *c, const cc__call *k) {
  cc__net *nt = c->net;
  const char *what = cc__coll_name(k->coll);
  size_t es = cc__dtype_bytes(k->t), bytes = k->count * es;
  int root = k->coll == CC__BROADCAST || k->coll == CC__REDUCE ? k->root : -1, me, op = cc__wire_op(c, k->op);
  int *M = cc__hier_reps(c, root, &me), lroot;
  unsigned char *own = NULL, *buf = NULL;
  const void *in;
  cc_result r = CC_OK;
  if (!M) return cc__oom(c, what);
  lroot = nt->lrank[M[nt->grp[c->rank]]];
  switch (k->coll) {
  case CC__BARRIER: {
    unsigned char b = 0;
    if ((r = cc__hier_local(c, CC__BARRIER, k, NULL, NULL, 0, 0, 0)) != CC_OK || (r = cc__hier_agree(c, what)) != CC_OK)
      break;
    if (me >= 0 && (r = cc__msg_reduce(c, M, nt->ngroups, me, -1, &b, &b, 1, CC_UINT8, CC_MAX, what)) != CC_OK) break;
    r = cc__hier_local(c, CC__BARRIER, k, NULL, NULL, 0, 0, 0);
    break;
  }
  case CC__BROADCAST:
    if (me >= 0 && (r = cc__msg_bcast(c, M, nt->ngroups, me, nt->grp[root], k->rbuf, bytes, what)) != CC_OK) break;
    if ((r = cc__hier_local(c, CC__BROADCAST, k, k->rbuf, k->rbuf, k->count, 0, lroot)) == CC_OK)
      r = cc__hier_agree(c, what);
    break;
  case CC__REDUCE: case CC__ALL_REDUCE:
    if ((r = cc__premul_input(c, k, k->count, &own, &in, what)) != CC_OK) break;
    if (me >= 0) {                     /* the host's partial result lands in the representative's buffer */
      int mine = k->coll == CC__ALL_REDUCE || c->rank == root;
      buf = mine ? (unsigned char *)k->rbuf : (unsigned char *)CC_MALLOC(bytes + 1);
      if (!buf && !mine) { r = cc__oom(c, what); break; }
    }
    if (nt->local) {
      if ((r = cc__hier_local(c, CC__REDUCE, k, in, me >= 0 ? buf : k->rbuf, k->count, op, lroot)) != CC_OK ||
          (r = cc__hier_agree(c, what)) != CC_OK)
        break;
      in = buf;
    }
    if (me >= 0) {
      r = cc__msg_reduce(c, M, nt->ngroups, me, k->coll == CC__ALL_REDUCE ? -1 : nt->grp[root], in, buf, k->count, k->t,
                         op, what);
      if (r != CC_OK) break;
      if (k->op == CC_AVG && (k->coll == CC__ALL_REDUCE || c->rank == root)) cc__avg_div(buf, k->count, k->t, c->size);
    }
    if (k->coll == CC__ALL_REDUCE && nt->local)
      r = cc__hier_local(c, CC__BROADCAST, k, k->rbuf, k->rbuf, k->count, 0, lroot);
    break;
  default:
    r = cc__fail(c, CC_ERR_INVALID_ARG, "%s: rank %d: internal: not a hierarchical collective", what, c->rank);
  }
  if (buf && buf != k->rbuf) CC_FREE(buf);
  CC_FREE(own);
  CC_FREE(M);
  return r;
}

/* ---------------------------------------------------------------- the choice */

static cc_result cc__msg_run(cc_comm *c, const cc__call *k);

/* float16/bfloat16 sums, products and averages cross the network in float32
   and are rounded once at the end, as on one host (min and max are exact). */
static cc_result cc__msg_half(cc_comm *c, const cc__call *k) {
  const char *what = cc__coll_name(k->coll);
  size_t nin = k->coll == CC__REDUCE_SCATTER ? k->count * (size_t)c->size : k->count, i;
  float *w = (float *)CC_MALLOC(nin * 4 + 4), *o = (float *)CC_MALLOC(k->count * 4 + 4), scal = 1.0f;
  const uint16_t *in = (const uint16_t *)k->sbuf;
  int bf = k->t == CC_BFLOAT16, premul = cc__is_premul(c, k->op);
  cc__call k2 = *k;
  cc_result r;
  if (!w || !o) { CC_FREE(w); CC_FREE(o); return cc__oom(c, what); }
  if (premul) {
    uint16_t h;
    memcpy(&h, c->ops[k->op - CC__OP_FIRST_USER].scal, 2);
    scal = bf ? cc__bf16_to_float(h) : cc__half_to_float(h);
  }
  for (i = 0; i < nin; i++) {
    float x = bf ? cc__bf16_to_float(in[i]) : cc__half_to_float(in[i]);
    w[i] = premul ? x * scal : x;
  }
  k2.t = CC_FLOAT32;
  k2.sbuf = w;
  k2.rbuf = o;
  if (premul) k2.op = CC_SUM;
  r = cc__msg_run(c, &k2);
  if (r == CC_OK && (k->coll != CC__REDUCE || k->root == c->rank))
    for (i = 0; i < k->count; i++)
      ((uint16_t *)k->rbuf)[i] = bf ? cc__float_to_bf16(o[i]) : cc__float_to_half(o[i]);
  CC_FREE(w);
  CC_FREE(o);
  return r;
}

/* A collective on a communicator whose ranks span hosts (or talk TCP only). */
static cc_result cc__msg_run(cc_comm *c, const cc__call *k) {
  if ((k->t == CC_FLOAT16 || k->t == CC_BFLOAT16) && k->op != CC_MIN && k->op != CC_MAX && cc__reduces(k->coll) &&
      (k->op < CC__OP_FIRST_USER || cc__is_premul(c, k->op)))
    return cc__msg_half(c, k);
  switch (k->coll) {
  case CC__BARRIER: case CC__BROADCAST: case CC__REDUCE: case CC__ALL_REDUCE:
    return cc__hier_run(c, k);
  default:
    return cc__msg_flat(c, k);
  }
}

/* Room for n messages of a run, kept from call to call: NULL without memory. */
static cc__msg *cc__msgs(cc_comm *c, int n) {
  if (c->eng.one_cap < n) {
    cc__msg *g = (cc__msg *)CC_MALLOC(sizeof(cc__msg) * (size_t)n);
    if (!g) return NULL;
    CC_FREE(c->eng.one);
    c->eng.one = g;
    c->eng.one_cap = n;
  }
  return c->eng.one;
}

/* Sends and receives (a group's, or one), over every link together. */
static cc_result cc__p2p_run(cc_comm *c, const cc__call *calls, int ncalls, const char *what) {
  cc__msg *m = cc__msgs(c, ncalls);
  int i, n = 0;
  cc_result r;
  if (!m) return cc__fail(c, CC_ERR_NO_MEMORY, "%s: rank %d: out of memory", what, c->rank);
  for (i = 0; i < ncalls; i++) {
    const cc__call *k = &calls[i];
    if (k->coll == CC__SEND) cc__msg_send(&m[n++], k->peer, k->tag, k->sbuf, k->count * cc__dtype_bytes(k->t));
    else if (k->coll == CC__RECV) cc__msg_recv(&m[n++], k->peer, k->tag, k->rbuf, k->count * cc__dtype_bytes(k->t));
  }
  r = cc__engine_run(c, m, n, NULL, NULL, NULL, what);
  for (i = 0, n = 0; i < ncalls; i++) {  /* receives from any source: who sent what they took */
    const cc__call *k = &calls[i];
    if (k->coll != CC__SEND && k->coll != CC__RECV) continue;
    if (k->src) *k->src = m[n].done && !CC__ANY(&m[n]) ? m[n].peer : CC_UNDEFINED;
    n++;
  }
  return r;
}

/* ---------------------------------------------------------------- queued calls
   Small broadcasts, scatters and gathers on one host go as frames through the rings: a rank
   that only sends returns once they are in. A receiver compares each frame's call with its
   own; c->qhist, which the next arena call compares, catches a root no frame could show
   (docs/shm.md, "Small broadcasts, scatters and gathers: queued"). */

static CC__INLINE int cc__queued(const cc_comm *c, const cc__call *k) {
  size_t bytes = k->count * cc__dtype_bytes(k->t);
  if (c->net || !c->seg.ctl || c->size < 2 || c->size > CC__QUEUE_RANKS) return 0;
  if (k->coll == CC__BROADCAST) return bytes <= c->set.queue_bytes;
  if (k->coll == CC__SCATTER || k->coll == CC__GATHER) return bytes * (size_t)c->size <= c->set.queue_bytes;
  return 0;
}

static CC__NOINLINE cc_result cc__queued_run(cc_comm *c, const cc__call *k) {
  cc__msg *m = cc__msgs(c, c->size);
  cc__plan p;
  int n;
  c->qhist = (c->qhist ^ (c->seq * UINT64_C(0x9E3779B97F4A7C15) + (uint64_t)k->coll * UINT64_C(0x100000001B3) +
                          (uint64_t)k->root)) * UINT64_C(0xBF58476D1CE4E5B9);
  c->qhist ^= c->qhist >> 31;
  if (!m) return cc__oom(c, cc__coll_name(k->coll));
  cc__plan_move(c, k, &p);
  n = cc__plan_msgs(c, &p, (const unsigned char *)k->sbuf, (unsigned char *)k->rbuf, m, 1);
  cc__plan_own(c, k, &p);
  return n ? cc__engine_run(c, m, n, NULL, NULL, &c->cur, cc__coll_name(k->coll)) : CC_OK;
}

/* Run collective k, numbered next (its frames carry the number). */
static CC__INLINE cc_result cc__algo_run(cc_comm *c, const cc__call *k) {
  int queued = cc__queued(c, k);
  uint64_t word;
  cc_result r;
  c->seq++;
  word = cc__call_word(c->seq, queued, k->coll, cc__ident_root(k));
  if (c->shm)                          /* where this rank is: its host's ranks read it (a timeout's summary, */
    CC__STORE(&c->shm->seg.ctl[c->shm->rank].call, word);   /* cc__check_call) */
  if (c->net || queued) cc__ident_of(k, &c->cur);   /* the identity frames carry */
  else c->cur.coll = (uint8_t)k->coll;               /* an arena call's descriptor carries it: cc__where */
  c->call_word = word;                 /* cc__check_call and cc__left: a collective is under way */
  r = c->net ? cc__msg_run(c, k) : queued ? cc__queued_run(c, k) : cc__arena_run(c, k);
  c->call_word = 0;
  return r;
}
/* ============================================================== @bootstrap */
/* cc_comm_init's named init paths, and cc_comm_split: docs/design.md, "How a communicator comes to be". */

/* ---------------------------------------------------------------- communicators */

static cc_comm *cc__comm_new(int rank, int size, const cc__settings *s) {
  cc_comm *c = (cc_comm *)CC_MALLOC(sizeof *c);
  size_t n = (size_t)size;
  int i;
  if (!c) return NULL;
  memset(c, 0, sizeof *c);
  c->rank = c->local_rank = rank;
  c->size = c->local_size = size;
  c->set = *s;
  c->oversub = size > cc__ncpus();
  c->spin_ns = (uint64_t)(s->spin_us >= 0 ? s->spin_us : c->oversub ? 2 : 50) * 1000;
  c->settle_ns = 500 * CC__MS;
  c->small_bytes = s->small_bytes >= 0 ? (size_t)s->small_bytes : c->oversub ? (64u << 10) : (16u << 10);
  c->direct.cma = c->direct.cma_mine = -1;
  c->arena.srcs = (const void **)CC_MALLOC(sizeof(void *) * n);
  c->arena.scals = (const void **)CC_MALLOC(sizeof(void *) * n);
  c->arena.scalbuf = (unsigned char *)CC_MALLOC(16 * n);
  c->arena.blk = (size_t *)CC_MALLOC(2 * sizeof(size_t) * n);
  c->peers = (cc__peer *)CC_MALLOC(sizeof(cc__peer) * n);
  c->eng.pfd = (struct pollfd *)CC_MALLOC(sizeof(struct pollfd) * n);
  c->eng.pfd_rank = (int *)CC_MALLOC(sizeof(int) * n);
  if (s->shm_cma == CC__CMA_AUTO && (c->direct.tune = (cc__tune *)CC_MALLOC(sizeof(cc__tune) * CC__TUNE_COLLS * CC__TUNE_SIZES)))
    memset(c->direct.tune, 0, sizeof(cc__tune) * CC__TUNE_COLLS * CC__TUNE_SIZES);
  if (!c->arena.srcs || !c->arena.scals || !c->peers || !c->arena.scalbuf || !c->arena.blk || !c->eng.pfd ||
      !c->eng.pfd_rank || (s->shm_cma == CC__CMA_AUTO && !c->direct.tune)) {
    CC_FREE(c->arena.srcs); CC_FREE(c->arena.scals); CC_FREE(c->peers); CC_FREE(c->arena.scalbuf); CC_FREE(c->arena.blk);
    CC_FREE(c->eng.pfd); CC_FREE(c->eng.pfd_rank); CC_FREE(c->direct.tune); CC_FREE(c);
    return NULL;
  }
  memset(c->peers, 0, sizeof(cc__peer) * n);
  for (i = 0; i < size; i++) c->peers[i].tcp.fd = -1;
  c->peers[rank].link = CC__LINK_SELF;
  pthread_mutex_init(&c->async.lock, NULL);
  pthread_cond_init(&c->async.cond, NULL);
  return c;
}

/* A new communicator of c's job: c's settings, job identity and segment key. NULL when out of memory. */
static cc_comm *cc__comm_kin(const cc_comm *c, int rank, int size) {
  cc_comm *nc = cc__comm_new(rank, size, &c->set);
  if (!nc) return NULL;
  memcpy(nc->jobid, c->jobid, sizeof nc->jobid);
  memcpy(nc->shmkey, c->shmkey, sizeof nc->shmkey);
  nc->has_shmkey = c->has_shmkey;
  return nc;
}

/* A failed communicator's connections are closed once the peers ended theirs, or after CC__LINGER_NS, what
   arrives meanwhile read and dropped (why: docs/tcp.md, "Failures"). */
#define CC__LINGER_NS (1000 * CC__MS)
static void cc__tcp_linger(cc_comm *c) {
  unsigned char sink[4096];
  uint64_t until = cc__now_ns() + CC__LINGER_NS, now;
  int i, np;
  for (;;) {
    np = 0;
    for (i = 0; i < c->size; i++)
      if (c->peers[i].link == CC__LINK_TCP && c->peers[i].tcp.fd >= 0 && !c->peers[i].tcp.eof)
        cc__pfd_add(c, &np, i, POLLIN);
    now = cc__now_ns();
    if (!np || now >= until) return;
    if (cc__poll(c->eng.pfd, np, CC__MIN(until - now, 10 * CC__MS)) <= 0) continue;
    for (i = 0; i < np; i++) {
      cc__peer *p = &c->peers[c->eng.pfd_rank[i]];
      long k;
      if (!(c->eng.pfd[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      while ((k = cc__sock_recv(p->tcp.fd, sink, sizeof sink)) > 0) {}
      if (k == 0 || (errno != EAGAIN && errno != EWOULDBLOCK)) p->tcp.eof = 1;
    }
  }
}

static void cc__batch_free(cc__batch *b) {
  int i;
  for (i = 0; i < b->n; i++) {
    cc__call *k = &b->calls[i];
    CC_FREE(k->sc); CC_FREE(k->sd); CC_FREE(k->rc); CC_FREE(k->rd);
  }
  CC_FREE(b->calls);
  b->calls = NULL;
  b->n = b->cap = 0;
}

static void cc__comm_free(cc_comm *c) {
  int i;
  if (!c) return;
  if (c->net && c->net->propagated) cc__tcp_linger(c);
  for (i = 0; i < c->size; i++) {
    cc__peer *p = &c->peers[i];
    while (p->uq_head) { cc__umsg *u = p->uq_head; p->uq_head = u->next; cc__umsg_free(u); }
    cc__umsg_free(p->rx_unexp);
    if (p->link == CC__LINK_TCP) cc__sock_close(p->tcp.fd);
    CC_FREE(p->tcp.stage);
    cc__sec_free(p->tcp.sec);
  }
  if (c->net) {
    cc__net *nt = c->net;
    if (nt->local) {
      cc_comm *l = nt->local;
      l->ops = NULL;
      l->nops = 0;
      if (l->seg.ctl) CC__STORE_SC(&l->seg.ctl[l->rank].departed, 1u);
      if (l->hdr) cc__notify(l);
      cc__comm_free(l);
    }
    CC_FREE(nt->grp); CC_FREE(nt->lrank); CC_FREE(nt->gfirst); CC_FREE(nt->gsize);
    CC_FREE(nt->tmp); CC_FREE(nt->tmp2);
    CC_FREE(nt);
  }
  cc__batch_free(&c->group);
  if (c->seg.base) cc__shm_unmap(c->seg.base, c->seg.bytes);
  pthread_mutex_destroy(&c->async.lock);
  pthread_cond_destroy(&c->async.cond);
  CC_FREE(c->arena.srcs); CC_FREE(c->arena.scals); CC_FREE(c->peers); CC_FREE(c->ops); CC_FREE(c->arena.blk);
  CC_FREE(c->arena.scalbuf); CC_FREE(c->eng.pfd); CC_FREE(c->eng.pfd_rank); CC_FREE(c->eng.one); CC_FREE(c->direct.pb); CC_FREE(c->direct.tune);
  cc__mem_drop_all(c);
  cc__settings_clear(&c->set);
  cc__crypto_wipe(c->shmkey, sizeof c->shmkey);
  CC_FREE(c);
}

/* The first phase of a new segment: every rank is there, with its pid. */
static cc_result cc__comm_ready(cc_comm *c) {
  cc__call k;
  cc_result r;
  int j;
  /* the asymmetric fence, where every rank has it and none waits on a CPU
     another rank needs (there a sleeper's fence would cost every call) */
  if (!c->oversub && cc__membar_register() == 0) CC__ADD(&c->hdr->membar, 1u);
  cc__call_init(&k, CC__INIT, NULL, NULL, 0, CC_UINT8, 0, 0);
  for (j = 0; j < c->size; j++) {      /* every other rank through this communicator's own segment */
    c->peers[j].link = j == c->rank ? CC__LINK_SELF : CC__LINK_SHM;
    c->peers[j].ring.ch = j;
  }
  r = cc__arena_run(c, &k);            /* every rank has registered, or not, before it arrived here */
  c->seg.asym = r == CC_OK && CC__LOAD(&c->hdr->membar) == (uint32_t)c->size;
  return r;
}

/* ---------------------------------------------------------------- records */

/* This rank's record: its host, and a port it listens on at ip (*lfd). lfd NULL, or when it cannot listen:
   port 0, "no port". */
static cc_result cc__rec_mine(cc_comm *c, const char *ip, cc__rec *rec, int *lfd, const char *what) {
  char why[128];
  int port = 0;
  memset(rec, 0, sizeof *rec);
  cc__host_id(rec->host, sizeof rec->host);
  snprintf(rec->ip, sizeof rec->ip, "%s", ip);
  if (!lfd) return CC_OK;
  if ((*lfd = cc__sock_listen(rec->ip, 0, CC__BACKLOG, &port)) < 0) {
    cc__strerr(errno, why, sizeof why);
    return cc__fail(c, CC_ERR_SYSTEM, "%s: rank %d: cannot listen on %s: %s", what, c->rank, rec->ip, why);
  }
  rec->port = (uint32_t)port;
  return CC_OK;
}

/* Every rank's record through the arena of a ready shared-memory communicator. */
static cc_result cc__exchange_shm(cc_comm *w, const cc__rec *mine, cc__rec *recs) {
  unsigned char *all = (unsigned char *)CC_MALLOC((size_t)w->size * CC__REC), one[CC__REC];
  cc__call k;
  cc_result r;
  int i;
  if (!all) return cc__fail(w, CC_ERR_NO_MEMORY, "comm_init: rank %d: out of memory", w->rank);
  cc__rec_encode(one, mine);
  cc__call_init(&k, CC__ALL_GATHER, one, all, CC__REC, CC_UINT8, 0, 0);
  r = cc__arena_run(w, &k);
  for (i = 0; r == CC_OK && i < w->size; i++)
    if (cc__rec_decode(all + (size_t)i * CC__REC, &recs[i]) != 0)
      r = cc__fail(w, CC_ERR_SYSTEM, "comm_init: rank %d: rank %d's record is malformed", w->rank, i);
  CC_FREE(all);
  return r;
}

/* ---------------------------------------------------------------- the mesh
   Make c (rank, size, jobid, settings; no segment) a communicator of ranks on
   several hosts from every rank's record: group by host (each rank alone when
   tcp_only), connect to every rank of another group (to the lower ranks; the
   higher ones connect here), then map the group's segment, named
   prefix-g<first rank>. lfd: this rank's listening socket (closed here). */

/* cc__hs_serve's take (ctx: the communicator built): the first connection of each higher rank of another group. */
static int cc__mesh_take(void *ctx, const cc__hello_t *h, int fd, const unsigned char *rec, cc__sec *sec) {
  cc_comm *c = (cc_comm *)ctx;
  (void)rec;
  if (h->from <= c->rank || c->net->grp[h->from] == c->net->grp[c->rank] || c->peers[h->from].tcp.fd >= 0) return 0;
  c->peers[h->from].tcp.fd = fd;
  c->peers[h->from].link = CC__LINK_TCP;
  c->peers[h->from].tcp.sec = sec;
  return 1;
}

/* Connect to rank j (a lower rank of another host) until the deadline, retrying all but an authentication
   failure; a port that refuses means rank j is gone (docs/security.md, "Start-up that a flood cannot break"). */
static cc_result cc__mesh_connect(cc_comm *c, int j, const cc__rec *rec, uint64_t deadline, const char *what) {
  const char *token = c->set.token[0] ? c->set.token : NULL;
  uint64_t pause = 10 * CC__MS;
  char why[160] = "";
  cc__hello_t h;
  cc_result r;
  int refused = 0;
  memset(&h, 0, sizeof h);
  h.kind = CC__HELLO_DATA; h.world = (uint32_t)c->size; h.from = c->rank; h.to = j;
  memcpy(h.job, c->jobid, 33);
  for (;;) {
    int fd = cc__sock_connect(rec->ip, (int)rec->port, CC__MIN(deadline, cc__now_ns() + CC__S));
    if (fd >= 0) {
      cc__sec *sec = NULL;
      refused = 0;
      r = cc__hs_client(fd, &h, token, c->set.net_encrypt, CC__MIN(deadline, cc__now_ns() + 10 * CC__S), &sec, why,
                        sizeof why);
      if (r == CC_OK) {
        c->peers[j].tcp.fd = fd;
        c->peers[j].link = CC__LINK_TCP;
        c->peers[j].tcp.sec = sec;
        return CC_OK;
      }
      cc__fd_close(fd);
      if (r == CC_ERR_AUTH || r == CC_ERR_NO_MEMORY || r == CC_ERR_SYSTEM)
        return cc__fail(c, r, "%s: rank %d: rank %d at %s port %u: %s", what, c->rank, j, rec->ip, rec->port, why);
    } else {
      int e = errno;
      cc__strerr(e, why, sizeof why);
      if (e == ECONNREFUSED && ++refused >= 3)
        return cc__fail(c, CC_ERR_PEER_LOST, "%s: rank %d: rank %d at %s port %u refuses connections (%s): it exited "
                        "or failed before this rank could connect", what, c->rank, j, rec->ip, rec->port, why);
    }
    if (cc__now_ns() + pause >= deadline)
      return cc__fail(c, CC_ERR_TIMEOUT, "%s: rank %d: cannot connect to rank %d at %s port %u within the timeout: %s",
                      what, c->rank, j, rec->ip, rec->port, why);
    cc__sleep_ns(pause);
    pause = CC__MIN(pause * 2, 200 * CC__MS);
  }
}

/* Who shares a host with whom: groups by first appearance (every rank alone
   when tcp_only); local rank and size from the true host either way. */
static cc_result cc__mesh_groups(cc_comm *c, const cc__rec *recs, int tcp_only, const char *what) {
  int n = c->size, me = c->rank, i, j, nlocal = 0, hl = 0;
  cc__net *nt = (cc__net *)CC_MALLOC(sizeof *nt);
  if (!nt) return cc__fail(c, CC_ERR_NO_MEMORY, "%s: rank %d: out of memory", what, me);
  memset(nt, 0, sizeof *nt);
  c->net = nt;
  c->hdr = &nt->own_hdr;
  nt->tcp_only = tcp_only;
  snprintf(nt->ip, sizeof nt->ip, "%s", recs[me].ip);
  nt->grp = (int *)CC_MALLOC(sizeof(int) * (size_t)n);
  nt->lrank = (int *)CC_MALLOC(sizeof(int) * (size_t)n);
  nt->gfirst = (int *)CC_MALLOC(sizeof(int) * (size_t)n);
  nt->gsize = (int *)CC_MALLOC(sizeof(int) * (size_t)n);
  if (!nt->grp || !nt->lrank || !nt->gfirst || !nt->gsize)
    return cc__fail(c, CC_ERR_NO_MEMORY, "%s: rank %d: out of memory", what, me);
  for (i = 0; i < n; i++) {
    int g = -1;
    for (j = 0; j < i && g < 0; j++)
      if (!tcp_only && strcmp(recs[i].host, recs[j].host) == 0) g = nt->grp[j];
    if (g < 0) { g = nt->ngroups++; nt->gfirst[g] = i; nt->gsize[g] = 0; }
    nt->grp[i] = g;
    nt->lrank[i] = nt->gsize[g]++;
    if (strcmp(recs[i].host, recs[me].host) == 0) { if (i < me) hl++; nlocal++; }
  }
  c->local_rank = hl;
  c->local_size = nlocal;
  return CC_OK;
}

static cc_result cc__mesh_build(cc_comm *c, const cc__rec *recs, int lfd, int tcp_only, const char *prefix,
                                const char *what) {
  int n = c->size, me = c->rank, j, want = 0;
  uint64_t deadline = cc__now_ns() + c->set.timeout_ns;
  cc__net *nt;
  cc_result r = cc__mesh_groups(c, recs, tcp_only, what);
  nt = c->net;
  for (j = 0; j < me && r == CC_OK; j++)          /* to lower ranks first, then accept the higher ones */
    if (nt->grp[j] != nt->grp[me]) r = cc__mesh_connect(c, j, &recs[j], deadline, what);
  for (j = me + 1; r == CC_OK && j < n; j++) if (nt->grp[j] != nt->grp[me]) want++;   /* (r: nt and its tables are there) */
  if (r == CC_OK && want) {
    cc__hs_srv v;
    int st;
    memset(&v, 0, sizeof v);
    v.c = c; v.kind = CC__HELLO_DATA; v.world = (uint32_t)n; v.me = me; v.job = c->jobid;
    v.token = c->set.token[0] ? c->set.token : NULL; v.encrypt = c->set.net_encrypt;
    v.take = cc__mesh_take; v.ctx = c;
    if ((st = cc__hs_serve(&v, lfd, want, deadline)) == -3) {
      r = cc__fail(c, CC_ERR_NO_MEMORY, "%s: rank %d: out of memory", what, me);
    } else if (st != 0) {
      int missing = me + 1;
      while (missing < n && (nt->grp[missing] == nt->grp[me] || c->peers[missing].tcp.fd >= 0)) missing++;
      r = cc__fail(c, CC_ERR_TIMEOUT, "%s: rank %d: rank %d did not connect within the timeout", what, me, missing);
    }
  }
  cc__fd_close(lfd);
  for (j = 0; j < n && r == CC_OK; j++) {
    if (c->peers[j].link != CC__LINK_TCP) continue;
    cc__sock_bufsize(c->peers[j].tcp.fd, c->set.net_sockbuf);
    if (!(c->peers[j].tcp.stage = (unsigned char *)CC_MALLOC(CC__STAGE)))
      r = cc__fail(c, CC_ERR_NO_MEMORY, "%s: rank %d: out of memory", what, me);
    else if (c->peers[j].tcp.sec)
      cc__log(c, CC__LOG_INFO, "%s: rank %d: the connection to rank %d is authenticated: %s, %s", what, me, j,
              c->peers[j].tcp.sec->suite == CC__AEAD_AES256_GCM ? "AES-256-GCM" : "ChaCha20-Poly1305",
              c->peers[j].tcp.sec->encrypt ? "payloads encrypted" : "integrity only");
    else
      cc__log(c, CC__LOG_INFO, "%s: rank %d: the connection to rank %d is not authenticated (no token)", what, me, j);
  }
  if (r == CC_OK && nt->gsize[nt->grp[me]] > 1) {  /* the host's segment */
    char name[128];
    cc_comm *l = cc__comm_kin(c, nt->lrank[me], nt->gsize[nt->grp[me]]);
    if (!l) return cc__fail(c, CC_ERR_NO_MEMORY, "%s: rank %d: out of memory", what, me);
    nt->local = l;
    snprintf(name, sizeof name, "%s-g%d", prefix, nt->gfirst[nt->grp[me]]);
    r = cc__shm_join(l, name, nt->lrank[me] == 0, what);
    if (r == CC_OK) r = cc__comm_ready(l);
    if (r != CC_OK) {
      if (nt->lrank[me] == 0) cc__shm_forget(l, name);
      return cc__fail(c, r, "%s", l->err);
    }
    c->hdr = l->hdr;
    c->shm = l;
    for (j = 0; j < n; j++)
      if (j != me && nt->grp[j] == nt->grp[me]) { c->peers[j].link = CC__LINK_SHM; c->peers[j].ring.ch = nt->lrank[j]; }
  }
  return r;
}

/* ---------------------------------------------------------------- the rendezvous
   docs/tcp.md, "Start-up". Rank 0's reply: {magic, status, world, missing, job[40], shmkey[32]} + world records */

#define CC__REPLY 88

typedef struct cc__rdv {
  const char *host;                    /* where rank 0 listens (env://, tcp://, unique id) */
  int port;
  const char *path;                    /* file://: the file */
  const char *nonce;                   /* the rendezvous' identity ("" none) */
  int lfd;                             /* rank 0: a socket already listening (unique id), or -1 */
  char where[300];                     /* for messages */
} cc__rdv;

/* A start-up wait that lasts speaks up as a collective's does: at
   CC_WARN_AFTER, again at twice that, and so on. */
typedef struct cc__slow {
  uint64_t t0, next;                   /* when the wait began; the next warning (0: never) */
} cc__slow;

static void cc__slow_start(const cc_comm *c, cc__slow *s) {
  s->t0 = cc__now_ns();
  s->next = c->set.warn_ns ? s->t0 + c->set.warn_ns : 0;
}

/* Is a warning due? *waited: how long the wait has lasted. */
static int cc__slow_due(cc__slow *s, uint64_t *waited) {
  uint64_t now = cc__now_ns();
  if (!s->next || now < s->next) return 0;
  *waited = now - s->t0;
  s->next = s->t0 + 2 * (s->next - s->t0);
  return 1;
}

typedef struct cc__rdv_take_ctx {
  int *fds, got, n;
  cc__sec **secs;
  cc__rec *recs;
  cc__refusal *refs, *refused;         /* n + 1 (cc__hs_srv); the one the rendezvous fails for */
  uint64_t grace;                      /* CC_REFUSED_GRACE; 0: never fail for a refusal */
  cc_comm *c;                          /* rank 0's: the warnings while ranks are missing */
  const cc__rdv *v;
  cc__slow slow;
} cc__rdv_take_ctx;

/* The ranks that have not joined rank 0's rendezvous yet, as text ("2-3, 7"). */
static void cc__rdv_missing(const cc__rdv_take_ctx *x, char *buf, size_t len) {
  int i = 1, runs = 0;
  buf[0] = 0;
  while (i < x->n) {
    int j = i;
    if (x->fds[i] >= 0) { i++; continue; }
    while (j + 1 < x->n && x->fds[j + 1] < 0) j++;
    if (runs++ == 16) { cc__cat(buf, len, ", ..."); break; }
    if (j > i) cc__cat(buf, len, "%s%d-%d", buf[0] ? ", " : "", i, j);
    else cc__cat(buf, len, "%s%d", buf[0] ? ", " : "", i);
    i = j + 1;
  }
}

/* Rank 0's give_up: the rule for refused ranks (docs/tcp.md, "A refused rank fails the job"), and a warning while
   ranks are missing. */
static int cc__rdv_give_up(void *ctx) {
  cc__rdv_take_ctx *x = (cc__rdv_take_ctx *)ctx;
  uint64_t now = cc__now_ns(), waited;
  int r;
  if (cc__slow_due(&x->slow, &waited)) {
    char missing[200];
    cc__rdv_missing(x, missing, sizeof missing);
    cc__log(x->c, CC__LOG_ALWAYS, "comm_init: rank 0: has waited %.0f s for %d of %d ranks to join the rendezvous at "
            "%s: rank%s %s (the timeout is %g s; is every host's ccrun started, with this address and port?)",
            (double)waited / 1e9, x->n - 1 - x->got, x->n, x->v->where, x->n - 2 - x->got > 0 ? "s" : "", missing,
            (double)x->c->set.timeout_ns / 1e9);
  }
  if (!x->grace) return 0;
  for (r = 1; r <= x->n; r++) {
    cc__refusal *f = &x->refs[r];
    if (!f->count || now < f->first + x->grace || (r < x->n && x->fds[r] >= 0)) continue;
    x->refused = f;
    return 1;
  }
  return 0;
}

static int cc__rdv_take(void *ctx, const cc__hello_t *h, int fd, const unsigned char *rec, cc__sec *sec) {
  cc__rdv_take_ctx *x = (cc__rdv_take_ctx *)ctx;
  if (x->fds[h->from] >= 0 || cc__rec_decode(rec, &x->recs[h->from]) != 0) return 0;   /* a second or bad one */
  x->fds[h->from] = fd;
  x->secs[h->from] = sec;
  x->got++;
  return 1;
}

/* Without a token, a job whose rank 0 listens on an address other hosts can
   reach lets anyone in: say so once (rank 0, on stderr, whatever CC_DEBUG). */
static int cc__warned_no_token;

static void cc__warn_no_token(cc_comm *c, const char *ip, const cc__rdv *v) {
  if (c->set.token[0] || !ip[0] || cc__ip_is_loopback(ip)) return;
  if (__atomic_exchange_n(&cc__warned_no_token, 1, __ATOMIC_RELAXED)) return;
  fprintf(stderr, "[cc rank %d] WARNING comm_init: this job has no token (CC_TOKEN) and its rendezvous at %s is on "
          "%s, not loopback: any process that can reach it can join as a rank and read or change the job's data. "
          "Give every rank the same token (`ccrun --make-token`); docs/security.md says more\n", c->rank, v->where, ip);
}

/* Rank 0's side of the rendezvous, on its listening socket lfd (closed here, once every rank was answered). */
static cc_result cc__rdv_serve(cc_comm *c, int lfd, const cc__rdv *v, cc__rec *recs, char *jobid) {
  uint64_t deadline = cc__now_ns() + c->set.timeout_ns;
  int n = c->size, i, *fds = (int *)CC_MALLOC(sizeof(int) * (size_t)n), missing = -1, bad;
  cc__sec **secs = (cc__sec **)CC_MALLOC(sizeof(cc__sec *) * (size_t)n);
  cc__out *outs = (cc__out *)CC_MALLOC(sizeof(cc__out) * (size_t)n);
  cc__refusal *refs = (cc__refusal *)CC_MALLOC(sizeof(cc__refusal) * (size_t)(n + 1)), refused;
  unsigned char *table = (unsigned char *)CC_MALLOC((size_t)n * CC__REC + CC__REPLY);
  cc__rdv_take_ctx x;
  cc__hs_srv s;
  char text[200];
  int st;
  cc_result r = CC_OK;
  if (!fds || !table || !secs || !outs || !refs) {
    CC_FREE(fds); CC_FREE(table); CC_FREE(secs); CC_FREE(outs); CC_FREE(refs); cc__fd_close(lfd);
    return cc__fail(c, CC_ERR_NO_MEMORY, "comm_init: rank 0: out of memory");
  }
  for (i = 0; i < n; i++) { fds[i] = -1; secs[i] = NULL; }
  memset(refs, 0, sizeof(cc__refusal) * (size_t)(n + 1));
  memset(&refused, 0, sizeof refused);
  x.fds = fds; x.secs = secs; x.recs = recs; x.got = 0; x.n = n;
  x.refs = refs; x.refused = NULL; x.grace = c->set.refused_grace_ns;
  x.c = c; x.v = v;
  cc__slow_start(c, &x.slow);
  memset(&s, 0, sizeof s);
  s.c = c; s.kind = CC__HELLO_RDV; s.world = (uint32_t)n; s.me = 0; s.job = v->nonce;
  s.token = c->set.token[0] ? c->set.token : NULL; s.encrypt = c->set.net_encrypt; s.with_rec = 1;
  s.take = cc__rdv_take; s.ctx = &x; s.refs = refs; s.give_up = cc__rdv_give_up;
  if ((st = cc__hs_serve(&s, lfd, n - 1, deadline)) == -2 && x.refused) {
    refused = *x.refused;
    missing = refused.rank;
    cc__refusal_text(&refused, 0, (uint32_t)n, text, sizeof text);
    r = cc__fail(c, refused.reason <= CC__REF_ENCRYPT ? CC_ERR_AUTH : CC_ERR_MISMATCH,   /* CC__REF_TOKEN.._ENCRYPT */
                 "comm_init: rank 0: rank %d (from %s) was refused at the rendezvous at %s: %s; "
                 "no rank %d joined within %.0f s of that (CC_REFUSED_GRACE)", refused.rank, refused.addr, v->where,
                 text, refused.rank, (double)x.grace / 1e9);
  } else if (st == -3) {
    r = cc__fail(c, CC_ERR_NO_MEMORY, "comm_init: rank 0: out of memory");
  } else if (st != 0) {
    for (missing = 1; missing < n && fds[missing] >= 0; missing++) {}
    cc__rdv_missing(&x, text, sizeof text);
    r = cc__fail(c, CC_ERR_TIMEOUT, "comm_init: rank 0: rank%s %s did not join the rendezvous at %s within the "
                 "timeout (%.0f s)", n - 2 - x.got > 0 ? "s" : "", text, v->where, (double)c->set.timeout_ns / 1e9);
  }
  if (r == CC_OK && (cc__random_hex(jobid, 32) != 0 || cc__random(c->shmkey, sizeof c->shmkey) != 0))
    r = cc__no_random(c, "comm_init", "the job's identity and segment key");
  if (r == CC_OK) c->has_shmkey = 1;
  memset(table, 0, CC__REPLY);
  cc__put32(table, CC__HS_MAGIC);
  cc__put32(table + 4, (uint32_t)r);
  cc__put32(table + 8, (uint32_t)n);
  cc__put32(table + 12, (uint32_t)missing);
  if (r == CC_OK) { memcpy(table + 16, jobid, 33); memcpy(table + 56, c->shmkey, 32); }
  else if (refused.reason) {           /* who was refused and why, in place of the job's identity */
    cc__put32(table + 16, (uint32_t)refused.reason);
    cc__put32(table + 20, refused.world);
    memcpy(table + 24, refused.addr, 63);
  }
  for (i = 0; i < n; i++) cc__rec_encode(table + CC__REPLY + (size_t)i * CC__REC, &recs[i]);
  /* answer everyone who came, even on failure, all at once */
  for (i = 0; i < n; i++) { outs[i].fd = i ? fds[i] : -1; outs[i].sec = secs[i]; }
  bad = cc__send_many(outs, n, table, r == CC_OK ? CC__REPLY + (size_t)n * CC__REC : CC__REPLY,
                      cc__now_ns() + CC__MIN(c->set.timeout_ns, 10 * CC__S));
  for (i = 1; i < n && r == CC_OK && bad; i++)
    if (bad < 0 || outs[i].ok < 0)
      r = cc__fail(c, bad < 0 ? CC_ERR_NO_MEMORY : CC_ERR_PEER_LOST, "comm_init: rank 0: rank %d %s", i,
                   bad < 0 ? "could not be answered: out of memory" : "hung up during the rendezvous (or did not take "
                   "its answer within 10 s)");
  for (i = 1; i < n; i++) { cc__fd_close(fds[i]); cc__sec_free(secs[i]); }
  cc__crypto_wipe(table + 56, 32);
  CC_FREE(fds); CC_FREE(secs); CC_FREE(outs); CC_FREE(refs);
  CC_FREE(table);
  cc__fd_close(lfd);
  return r;
}

/* Rank 0's answer says the rendezvous failed (its status word is not 0):
   the failure it names, on this rank. */
static cc_result cc__rdv_failed(cc_comm *c, const cc__rdv *v, const unsigned char *reply) {
  uint32_t s4 = cc__get32(reply + 4);
  uint32_t why4 = cc__get32(reply + 16);
  if (s4 == (uint32_t)CC_ERR_TIMEOUT)
    return cc__fail(c, CC_ERR_TIMEOUT, "comm_init: rank %d: rank %d did not join the rendezvous at %s within the "
                    "timeout", c->rank, (int)cc__get32(reply + 12), v->where);
  if (why4 > CC__REF_NONE && why4 < CC__REF_COUNT && (s4 == (uint32_t)CC_ERR_AUTH || s4 == (uint32_t)CC_ERR_MISMATCH)) {
    cc__refusal f;
    char what[200];
    memset(&f, 0, sizeof f);
    f.reason = (int)why4;
    f.rank = (int)cc__get32(reply + 12);
    f.world = cc__get32(reply + 20);
    memcpy(f.addr, reply + 24, 63);
    cc__refusal_text(&f, 0, (uint32_t)c->size, what, sizeof what);
    return cc__fail(c, (cc_result)s4, "comm_init: rank %d: rank 0 failed the rendezvous at %s: rank %d (from %s) was "
                    "refused: %s", c->rank, v->where, f.rank, f.addr, what);
  }
  return cc__fail(c, s4 < (uint32_t)CC_RESULT_COUNT ? (cc_result)s4 : CC_ERR_SYSTEM,
                  "comm_init: rank %d: rank 0 failed the rendezvous", c->rank);
}

/* Joined: wait for rank 0's answer to begin (it answers once every rank is
   in), saying what it waits for while it lasts. 0, or -1 (errno ETIMEDOUT
   at the deadline, else the connection's end or error). */
static int cc__rdv_await(cc_comm *c, int fd, const cc__rdv *v, uint64_t deadline) {
  struct pollfd pf;
  cc__slow slow;
  uint64_t waited, now;
  cc__slow_start(c, &slow);
  for (;;) {
    if (cc__slow_due(&slow, &waited))
      cc__log(c, CC__LOG_ALWAYS, "comm_init: rank %d: joined the rendezvous at %s and has waited %.0f s for rank 0's "
              "answer, which comes once every rank has joined (the timeout is %g s; rank 0 names the ranks missing)",
              c->rank, v->where, (double)waited / 1e9, (double)c->set.timeout_ns / 1e9);
    if ((now = cc__now_ns()) >= deadline) { errno = ETIMEDOUT; return -1; }
    pf.fd = fd; pf.events = POLLIN; pf.revents = 0;
    if (cc__poll(&pf, 1, CC__MIN(deadline - now, 100 * CC__MS) + 1000) > 0) return 0;
  }
}

/* One attempt to join at ip:port: CC_OK, or a code. *retry: the attempt
   failed in a way that may pass (the port not open yet, a connection dropped,
   refused for a stale file:// rendezvous, no answer), with the reason in why;
   else the failure is final and set on c. */
static cc_result cc__rdv_join(cc_comm *c, const char *ip, int port, const cc__rdv *v, cc__rec *recs, char *jobid,
                              uint64_t deadline, int *retry, char *why, size_t whylen) {
  int n = c->size, fd, i, st;
  cc__hello_t h;
  cc__sec *sec = NULL;
  unsigned char reply[CC__REPLY], rb[CC__REC + CC__TAG], *all = NULL;
  cc_result r;
  *retry = 1;
  fd = cc__sock_connect(ip, port, CC__MIN(deadline, cc__now_ns() + CC__S));
  if (fd < 0) { cc__strerr(errno, why, whylen); return CC_ERR_TIMEOUT; }
  memset(&h, 0, sizeof h);
  h.kind = CC__HELLO_RDV; h.world = (uint32_t)n; h.from = c->rank; h.to = 0;
  snprintf(h.job, sizeof h.job, "%s", v->nonce);
  r = cc__hs_client(fd, &h, c->set.token[0] ? c->set.token : NULL, c->set.net_encrypt,
                    CC__MIN(deadline, cc__now_ns() + 10 * CC__S), &sec, why, whylen);
  if (r != CC_OK) cc__fd_close(fd);
  if (r != CC_OK && r != CC_ERR_AUTH && r != CC_ERR_NO_MEMORY && r != CC_ERR_SYSTEM) return r;
  *retry = 0;                          /* from here on, a failure is final */
  if (r != CC_OK) return cc__fail(c, r, "comm_init: rank %d: rank 0 at %s: %s", c->rank, v->where, why);
  cc__rec_encode(rb, &recs[c->rank]);
  if (sec) cc__sec_seal(sec, rb, CC__REC, rb);
  /* rank 0 answers everyone once all are in, at the latest when its own
     timeout ends: wait a little longer than ours (speaking up meanwhile); the
     reply's status says whether the records follow; nothing is acted on
     before the whole message's tag is checked */
  if (cc__sock_send_all(fd, rb, CC__REC + (sec ? CC__TAG : 0), deadline) != 0 ||
      cc__rdv_await(c, fd, v, deadline + 2 * CC__S) != 0 ||
      (st = cc__recv_sealed(fd, sec, reply, sizeof reply, 1, 0, deadline + 2 * CC__S)) != 0)
    r = cc__fail(c, errno == ETIMEDOUT ? CC_ERR_TIMEOUT : CC_ERR_PEER_LOST, "comm_init: rank %d: rank 0 at %s %s",
                 c->rank, v->where, errno == ETIMEDOUT ? "did not answer within the timeout"
                                                       : "hung up during the rendezvous");
  else if (!(all = (unsigned char *)CC_MALLOC((size_t)n * CC__REC + 1)))
    r = cc__fail(c, CC_ERR_NO_MEMORY, "comm_init: rank %d: out of memory", c->rank);
  else
    st = cc__recv_sealed(fd, sec, all, cc__get32(reply + 4) != 0 ? 0 : (size_t)n * CC__REC, 0, 1, deadline + 2 * CC__S);
  cc__fd_close(fd);
  cc__sec_free(sec);
  if (r != CC_OK) return r;
  if (st == -2)
    r = cc__fail(c, CC_ERR_AUTH, "comm_init: rank %d: the answer from rank 0 at %s failed its integrity check: it was "
                 "changed on the way, or does not come from this job's rank 0", c->rank, v->where);
  else if (st != 0)
    r = cc__fail(c, CC_ERR_PEER_LOST, "comm_init: rank %d: the table from rank 0 at %s is cut short", c->rank, v->where);
  else if (cc__get32(reply) != CC__HS_MAGIC || cc__get32(reply + 8) != (uint32_t)n)
    r = cc__fail(c, CC_ERR_AUTH, "comm_init: rank %d: %s is not the rank 0 of this job (bad answer)", c->rank, v->where);
  else if (cc__get32(reply + 4) != 0)
    r = cc__rdv_failed(c, v, reply);
  for (i = 0; r == CC_OK && i < n; i++)
    if (cc__rec_decode(all + (size_t)i * CC__REC, &recs[i]) != 0)
      r = cc__fail(c, CC_ERR_PEER_LOST, "comm_init: rank %d: the table from rank 0 at %s is malformed", c->rank,
                   v->where);
  CC_FREE(all);
  if (r != CC_OK) return r;
  memcpy(jobid, reply + 16, 40);
  jobid[39] = 0;
  memcpy(c->shmkey, reply + 56, 32);
  c->has_shmkey = 1;
  cc__crypto_wipe(reply, sizeof reply);
  if (!cc__is_jobid(jobid))
    return cc__fail(c, CC_ERR_AUTH, "comm_init: rank %d: rank 0 at %s sent a malformed job id", c->rank, v->where);
  return CC_OK;
}

/* A file:// rendezvous' line, "cc-rendezvous 2 IP PORT NONCE\n", parsed: 0, or -1 (docs/tcp.md, "Start-up"). */
static int cc__file_parse(const char *s, char *ip, size_t iplen, int *port, char *nonce) {
  char a[64], b[40];
  long p;
  int v, used = 0;
  if (sscanf(s, "cc-rendezvous %d %63s %ld %39s%n", &v, a, &p, b, &used) != 4 || v != 2) return -1;
  if (p <= 0 || p > 65535 || !cc__is_jobid(b) || strlen(a) >= iplen) return -1;
  if (!cc__ip_parse(a, NULL)) return -1;
  snprintf(ip, iplen, "%s", a);
  *port = (int)p;
  snprintf(nonce, 40, "%s", b);
  return 0;
}

/* Rank 0 of a file:// rendezvous: listen, write the file (how: docs/tcp.md, "Start-up"), serve, remove the file
   if it is still ours. */
static cc_result cc__rdv_file_serve(cc_comm *c, cc__rdv *v, cc__rec *recs, char *jobid, uint64_t deadline) {
  char why[200], fwhy[200], line[160], nonce[40], buf[160];
  int lfd, ffd, port = 0;
  cc_result r;
  if (cc__random_hex(nonce, 32) != 0) return cc__no_random(c, "comm_init", "the rendezvous' nonce");
  if ((lfd = cc__sock_listen(recs[0].ip, 0, CC__BACKLOG, &port)) < 0) {
    cc__strerr(errno, why, sizeof why);
    return cc__fail(c, CC_ERR_SYSTEM, "comm_init: rank 0: cannot listen on %s: %s", recs[0].ip, why);
  }
  cc__warn_no_token(c, recs[0].ip, v);
  v->nonce = nonce;
  snprintf(line, sizeof line, "cc-rendezvous 2 %s %d %s\n", recs[0].ip, port, nonce);
  ffd = cc__file_open(v->path, 1, fwhy, sizeof fwhy);
  if (ffd < 0 || cc__file_lock(ffd, 1, deadline) != 0 || cc__file_write(ffd, line) != 0) {
    cc__strerr(errno, why, sizeof why);
    cc__fd_close(ffd);
    cc__fd_close(lfd);
    return cc__fail(c, CC_ERR_SYSTEM, "comm_init: rank 0: %s the rendezvous file %s: %s", fwhy[0] ? "refusing" :
                    "cannot write", v->path, fwhy[0] ? fwhy : why);
  }
  cc__file_unlock(ffd);
  r = cc__rdv_serve(c, lfd, v, recs, jobid);
  if (cc__file_lock(ffd, 1, cc__now_ns() + CC__S) == 0) {
    if (cc__file_read(ffd, buf, sizeof buf) == 0 && strstr(buf, nonce)) cc__file_unlink(v->path, ffd);
    cc__file_unlock(ffd);
  }
  cc__fd_close(ffd);
  v->nonce = "";
  return r;
}

/* The rendezvous itself. recs[c->rank] is this rank's record on entry; on
   success recs holds every rank's and jobid the job identity. */
static cc_result cc__rendezvous(cc_comm *c, cc__rdv *v, cc__rec *recs, char *jobid) {
  uint64_t deadline = cc__now_ns() + c->set.timeout_ns, pause = 10 * CC__MS, refused_since = 0;
  char why[200] = "", ip[64], nonce[40], refused_why[200] = "";
  cc__slow slow;
  if (c->rank == 0) {
    int lfd = v->lfd;
    if (v->path) return cc__rdv_file_serve(c, v, recs, jobid, deadline);
    if (cc__sock_lookup(v->host, ip, sizeof ip, why, sizeof why) == 0) cc__warn_no_token(c, ip, v);
    if (lfd < 0 && (lfd = cc__sock_listen(v->host, v->port, CC__BACKLOG, NULL)) < 0) {
      cc__strerr(errno, why, sizeof why);
      return cc__fail(c, CC_ERR_SYSTEM, "comm_init: rank 0: cannot listen on %s port %d%s: %s", v->host, v->port,
                      errno == EADDRINUSE ? " (the port is in use: another job, or pick another MASTER_PORT)" : "", why);
    }
    return cc__rdv_serve(c, lfd, v, recs, jobid);
  }
  if (!v->path && cc__sock_lookup(v->host, ip, sizeof ip, why, sizeof why) != 0)
    return cc__fail(c, CC_ERR_INVALID_ARG, "comm_init: rank %d: cannot resolve %s: %s", c->rank, v->host, why);
  cc__slow_start(c, &slow);
  for (;;) {
    int retry = 1, ok = 1, port = v->port;
    cc_result r = CC_ERR_TIMEOUT;
    uint64_t waited;
    if (cc__slow_due(&slow, &waited))
      cc__log(c, CC__LOG_ALWAYS, "comm_init: rank %d: has waited %.0f s to reach rank 0 at %s (%s; the timeout is "
              "%g s; is rank 0's host started, with this address and port?)", c->rank, (double)waited / 1e9,
              v->where, why[0] ? why : v->path ? "no valid rendezvous file yet" : "no answer yet",
              (double)c->set.timeout_ns / 1e9);
    if (v->path) {                     /* read the file afresh every time: a stale one may be replaced */
      char buf[160], fwhy[200];
      int fd = cc__file_open(v->path, 0, fwhy, sizeof fwhy);
      ok = 0;
      if (fd < 0 && fwhy[0])
        return cc__fail(c, CC_ERR_SYSTEM, "comm_init: rank %d: refusing the rendezvous file %s: %s", c->rank, v->path,
                        fwhy);
      if (fd >= 0) {
        buf[0] = 0;
        if (cc__file_lock(fd, 0, deadline) == 0) {
          cc__file_read(fd, buf, sizeof buf);
          cc__file_unlock(fd);
        }
        cc__fd_close(fd);
        if (cc__file_parse(buf, ip, sizeof ip, &port, nonce) == 0) { ok = 1; v->nonce = nonce; }
      }
    }
    if (ok) {
      r = cc__rdv_join(c, ip, port, v, recs, jobid, deadline, &retry, why, sizeof why);
      if (r == CC_OK || !retry) return r;
    }
    /* refused for the world size or as another job: believed as docs/tcp.md, "A refused rank fails the job", says */
    if (r == CC_ERR_MISMATCH) {
      if (!refused_since) refused_since = cc__now_ns();
      snprintf(refused_why, sizeof refused_why, "%s", why);
    } else if (r == CC_ERR_INVALID_ARG) refused_since = 0;
    if (refused_since && c->set.refused_grace_ns && cc__now_ns() - refused_since >= c->set.refused_grace_ns)
      return cc__fail(c, CC_ERR_MISMATCH, "comm_init: rank %d: rank 0 at %s refused this rank (it kept doing so for "
                      "%.0f s, CC_REFUSED_GRACE): %s", c->rank, v->where, (double)c->set.refused_grace_ns / 1e9,
                      refused_why);
    if (cc__now_ns() + pause >= deadline)
      return cc__fail(c, CC_ERR_TIMEOUT, "comm_init: rank %d: cannot reach rank 0 at %s within the timeout%s%s",
                      c->rank, v->where, v->path && !ok ? " (no valid rendezvous file)" : ": ",
                      v->path && !ok ? "" : why);
    cc__sleep_ns(pause);
    pause = CC__MIN(pause * 2, 500 * CC__MS);
  }
}

/* ---------------------------------------------------------------- init paths */

static int cc__world_inits;            /* world communicators made by this process */

static cc_result cc__init_single(cc_comm *c) {
  size_t bytes;
  unsigned char *seg;
  cc_result r;
  if (cc__is_jobid(c->set.job_id)) snprintf(c->jobid, sizeof c->jobid, "%s", c->set.job_id);
  /* split segments are named after the job id (ccrun cleans by job) and the key */
  if ((!cc__is_jobid(c->set.job_id) && cc__random_hex(c->jobid, 32) != 0) || cc__random(c->shmkey, sizeof c->shmkey) != 0)
    return cc__no_random(c, "comm_init", "the job's identity and segment key");
  c->has_shmkey = 1;
  if (!(seg = cc__seg_anon(1, c->set.shm_chunk, &bytes)))
    return cc__fail(c, CC_ERR_NO_MEMORY, "comm_init: cannot map %zu bytes", bytes);
  if ((r = cc__seg_attach(c, seg, bytes, "comm_init")) != CC_OK) { cc__shm_unmap(seg, bytes); return r; }
  return cc__comm_ready(c);
}

/* CC_TRANSPORT=tcp under ccrun or cc_spawn: docs/design.md, "How a communicator comes to be". */
static cc_result cc__init_tcp_from_shm(cc_comm **pc, int idx) {
  cc_comm *w = *pc, *nc;
  cc__rec *recs = (cc__rec *)CC_MALLOC(sizeof(cc__rec) * (size_t)w->size), mine;
  char why[160], prefix[96], ip[64];
  int lfd = -1;
  cc_result r;
  if (!recs) return cc__fail(w, CC_ERR_NO_MEMORY, "comm_init: rank %d: out of memory", w->rank);
  if (cc__sock_pick_addr(w->set.ifname, NULL, 0, ip, sizeof ip, why, sizeof why) != 0) {
    CC_FREE(recs);
    return cc__fail(w, CC_ERR_INVALID_ARG, "comm_init: rank %d: %s", w->rank, why);
  }
  if ((r = cc__rec_mine(w, ip, &mine, &lfd, "comm_init")) != CC_OK) { CC_FREE(recs); return r; }
  if ((r = cc__exchange_shm(w, &mine, recs)) != CC_OK) { cc__fd_close(lfd); CC_FREE(recs); return r; }
  nc = cc__comm_kin(w, w->rank, w->size);
  if (!nc) { cc__fd_close(lfd); CC_FREE(recs); return cc__fail(w, CC_ERR_NO_MEMORY, "comm_init: rank %d: out of memory", w->rank); }
  snprintf(prefix, sizeof prefix, "/cc-%s-t%d", w->jobid, idx);
  r = cc__mesh_build(nc, recs, lfd, 1, prefix, "comm_init");
  CC_FREE(recs);
  if (r != CC_OK) {
    cc__fail(w, r, "%s", nc->err);
    cc__comm_free(nc);
    return r;
  }
  CC__STORE_SC(&w->seg.ctl[w->rank].departed, 1u);
  cc__comm_free(w);
  *pc = nc;
  return CC_OK;
}

static cc_result cc__init_shm_job(cc_comm **pc, int idx) {
  cc_comm *c = *pc;
  char name[96];
  cc_result r;
  if (!cc__is_jobid(c->set.job_id))
    return cc__fail(c, CC_ERR_INVALID_ARG, "comm_init: rank %d: CC_JOB_ID='%.40s' is not 16 to 32 hex digits",
                    c->rank, c->set.job_id);
  if (c->size > CC__MAX_LOCAL)
    return cc__fail(c, CC_ERR_UNSUPPORTED, "comm_init: rank %d: %d ranks on one host; at most %d are supported",
                    c->rank, c->size, CC__MAX_LOCAL);
  snprintf(c->jobid, sizeof c->jobid, "%s", c->set.job_id);
  if (c->set.token[0]) {               /* the segments' names: from the token, which only the job's ranks know */
    const void *part = c->jobid;
    size_t plen = strlen(c->jobid);
    cc__hmac_sha256(c->set.token, strlen(c->set.token), &part, &plen, 1, c->shmkey);
    c->has_shmkey = 1;
  }
  snprintf(name, sizeof name, "/cc-%s-w%d", c->jobid, idx);
  r = cc__shm_join(c, name, c->rank == 0, "comm_init");
  if (r == CC_OK) r = cc__comm_ready(c);
  if (r != CC_OK) { cc__shm_forget(c, name); return r; }   /* a rank that never came: leave nothing */
  return c->set.transport == CC__TR_TCP ? cc__init_tcp_from_shm(pc, idx) : CC_OK;
}

static cc_result cc__init_rendezvous(cc_comm *c, cc__rdv *v) {
  cc__rec *recs = (cc__rec *)CC_MALLOC(sizeof(cc__rec) * (size_t)c->size);
  char why[160], ip[64], name[96];
  int lfd = -1, one_host = 1, i, tcp_only = c->set.transport == CC__TR_TCP;
  cc_result r;
  if (!recs) return cc__fail(c, CC_ERR_NO_MEMORY, "comm_init: rank %d: out of memory", c->rank);
  memset(recs, 0, sizeof(cc__rec) * (size_t)c->size);
  if (cc__sock_pick_addr(c->set.ifname, v->path ? NULL : v->host, 0, ip, sizeof ip, why, sizeof why) != 0)
    r = cc__fail(c, CC_ERR_INVALID_ARG, "comm_init: rank %d: %s", c->rank, why);
  else
    r = cc__rec_mine(c, ip, &recs[c->rank], &lfd, "comm_init");
  if (r == CC_OK) r = cc__rendezvous(c, v, recs, c->jobid);
  for (i = 1; r == CC_OK && i < c->size; i++) if (strcmp(recs[i].host, recs[0].host) != 0) one_host = 0;
  snprintf(name, sizeof name, "/cc-%s-w0", c->jobid);
  if (r == CC_OK && one_host && !tcp_only) {       /* all on one host: shared memory only (lfd closed below) */
    if (c->size > CC__MAX_LOCAL)
      r = cc__fail(c, CC_ERR_UNSUPPORTED, "comm_init: rank %d: %d ranks on one host; at most %d are supported",
                   c->rank, c->size, CC__MAX_LOCAL);
    else {
      r = cc__shm_join(c, name, c->rank == 0, "comm_init");
      if (r == CC_OK) r = cc__comm_ready(c);
      if (r != CC_OK) cc__shm_forget(c, name);
    }
  } else if (r == CC_OK) {
    r = cc__mesh_build(c, recs, lfd, tcp_only, name, "comm_init");
    lfd = -1;
  }
  cc__fd_close(lfd);
  CC_FREE(recs);
  return r;
}

/* Where an env:// or tcp:// rendezvous meets, from the settings or the method. */
static cc_result cc__init_where(const cc__settings *s, const char *method, cc__rdv *v, char *host, size_t hostlen) {
  memset(v, 0, sizeof *v);
  v->lfd = -1;
  v->nonce = "";
  v->host = host;
  if (!strncmp(method, "tcp://", 6)) {
    const char *colon = strrchr(method + 6, ':');
    char *end;
    long p;
    if (!colon || colon == method + 6 || (size_t)(colon - method - 6) >= hostlen)
      return cc__fail(NULL, CC_ERR_INVALID_ARG, "comm_init: init_method '%s' is not tcp://HOST:PORT", method);
    p = strtol(colon + 1, &end, 10);
    if (*end || p <= 0 || p > 65535)
      return cc__fail(NULL, CC_ERR_INVALID_ARG, "comm_init: init_method '%s' has a bad port", method);
    memcpy(host, method + 6, (size_t)(colon - method - 6));
    host[colon - method - 6] = 0;
    if (host[0] == '[' && host[strlen(host) - 1] == ']') {
      memmove(host, host + 1, strlen(host));
      host[strlen(host) - 1] = 0;
    }
    v->port = (int)p;
  } else if (!strncmp(method, "file://", 7)) {
    v->path = method + 7;
    if (v->path[0] != '/')
      return cc__fail(NULL, CC_ERR_INVALID_ARG, "comm_init: init_method '%s' is not file:///ABSOLUTE/PATH", method);
  } else if (!strcmp(method, "env://")) {
    if (s->master_err[0]) return cc__fail(NULL, CC_ERR_INVALID_ARG, "comm_init: rank %d: %s", s->rank, s->master_err);
    if (!s->master_addr[0] || !s->master_port)
      return cc__fail(NULL, CC_ERR_INVALID_ARG, "comm_init: rank %d of %d: not started by ccrun (no CC_JOB_ID), "
                      "and MASTER_ADDR/MASTER_PORT are not set for an env:// rendezvous", s->rank, s->size);
    snprintf(host, hostlen, "%s", s->master_addr);
    v->port = s->master_port;
  } else {
    return cc__fail(NULL, CC_ERR_INVALID_ARG, "comm_init: init_method '%s' is not env://, tcp://HOST:PORT "
                    "or file:///PATH", method);
  }
  if (v->path) snprintf(v->where, sizeof v->where, "file://%s", v->path);
  else snprintf(v->where, sizeof v->where, "%s port %d", host, v->port);
  return CC_OK;
}

/* ---------------------------------------------------------------- unique ids
   Layout (little endian): "ccU1", u16 port, u8 family (4 or 6), u8 0, 16 bytes
   of address, 16 bytes of nonce, 32 bytes of secret, zeros. The process that
   made an id keeps its listening socket until its rank 0 joins. */

typedef struct cc__uid {
  char ip[64];
  int port, lfd;
  char nonce[40];                      /* 32 hex digits: the rendezvous' identity */
  char secret[72];                     /* 64 hex digits: the job's token */
} cc__uid;

#define CC__UID_SLOTS 16
static struct { char nonce[40]; int fd; } cc__uid_slots[CC__UID_SLOTS];
static pthread_mutex_t cc__uid_lock = PTHREAD_MUTEX_INITIALIZER;

CC_API cc_result cc_get_unique_id(cc_unique_id *id) {
  cc__settings s;
  unsigned char *p, a[16], nonce[16], secret[32];
  char why[160], ip[64];
  int lfd, i, fam, port = 0;
  cc_result r;
  cc__tls_err[0] = 0;
  if (!id) return cc__fail(NULL, CC_ERR_INVALID_ARG, "get_unique_id: id is NULL");
  memset(id, 0, sizeof *id);
  if ((r = cc__settings_lib(NULL, &s)) != CC_OK) return r;
  cc__settings_clear(&s);
  if (cc__sock_pick_addr(s.ifname, s.master_addr, !s.ifname[0] && !s.master_addr[0], ip, sizeof ip, why, sizeof why) != 0)
    return cc__fail(NULL, CC_ERR_INVALID_ARG, "get_unique_id: %s", why);
  if ((lfd = cc__sock_listen(ip, 0, CC__BACKLOG, &port)) < 0) {
    cc__strerr(errno, why, sizeof why);
    return cc__fail(NULL, CC_ERR_SYSTEM, "get_unique_id: cannot listen on %s: %s", ip, why);
  }
  if (!(fam = cc__ip_parse(ip, a)))
    r = cc__fail(NULL, CC_ERR_SYSTEM, "get_unique_id: address %s is neither IPv4 nor IPv6", ip);
  else if (cc__random(nonce, sizeof nonce) != 0 || cc__random(secret, sizeof secret) != 0)
    r = cc__no_random(NULL, "get_unique_id", "the job's nonce and secret");
  if (r != CC_OK) { cc__fd_close(lfd); cc__crypto_wipe(secret, sizeof secret); return r; }
  pthread_mutex_lock(&cc__uid_lock);
  for (i = 0; i < CC__UID_SLOTS && cc__uid_slots[i].nonce[0]; i++) {}
  if (i == CC__UID_SLOTS) {
    pthread_mutex_unlock(&cc__uid_lock);
    cc__fd_close(lfd);
    return cc__fail(NULL, CC_ERR_UNSUPPORTED, "get_unique_id: %d ids wait for their rank 0 in this process; "
                    "no more", CC__UID_SLOTS);
  }
  cc__hex(nonce, sizeof nonce, cc__uid_slots[i].nonce);
  cc__uid_slots[i].fd = lfd;
  pthread_mutex_unlock(&cc__uid_lock);
  p = (unsigned char *)id->internal;
  memcpy(p, "ccU1", 4);
  p[4] = (unsigned char)(port & 0xff);
  p[5] = (unsigned char)(port >> 8);
  p[6] = (unsigned char)fam;
  memcpy(p + 8, a, fam == 4 ? 4 : 16);
  memcpy(p + 24, nonce, 16);
  memcpy(p + 40, secret, 32);
  cc__crypto_wipe(secret, sizeof secret);
  return CC_OK;
}

/* Decode an id: 0, or -1 when it is not one. */
static int cc__uid_decode(const cc_unique_id *id, cc__uid *u) {
  const unsigned char *p = (const unsigned char *)id->internal;
  int i;
  memset(u, 0, sizeof *u);
  u->lfd = -1;
  if (memcmp(p, "ccU1", 4) != 0 || (p[6] != 4 && p[6] != 6) || p[7] != 0) return -1;
  for (i = 72; i < CC_UNIQUE_ID_BYTES; i++) if (p[i]) return -1;
  u->port = p[4] | p[5] << 8;
  if (u->port == 0 || cc__ip_format(p[6], p + 8, u->ip, sizeof u->ip) != 0) return -1;
  cc__hex(p + 24, 16, u->nonce);
  cc__hex(p + 40, 32, u->secret);
  return 0;
}

/* The listening socket of an id made in this process, taken once (or -1). */
static int cc__uid_take_fd(const char *nonce) {
  int i, fd = -1;
  pthread_mutex_lock(&cc__uid_lock);
  for (i = 0; i < CC__UID_SLOTS; i++)
    if (cc__uid_slots[i].nonce[0] && !strcmp(cc__uid_slots[i].nonce, nonce)) {
      fd = cc__uid_slots[i].fd;
      cc__uid_slots[i].nonce[0] = 0;
      break;
    }
  pthread_mutex_unlock(&cc__uid_lock);
  return fd;
}

/* ---------------------------------------------------------------- cc_comm_init */

static int cc__told_alone;             /* the world-of-one line was printed (once a process) */

/* Read the settings, pick the init path, run it. uid: cc_comm_init_rank's. */
static cc_result cc__init(cc_comm **out, const cc_config *cfg, cc__uid *uid) {
  const char *method = cfg && cfg->init_method ? cfg->init_method : "env://";
  cc__settings s;
  cc__rdv v;
  char host[256];
  int idx;
  cc_comm *c;
  cc_result r;
  cc__tls_err[0] = 0;
  if (!out) return cc__fail(NULL, CC_ERR_INVALID_ARG, "comm_init: out is NULL");
  *out = NULL;
  if ((r = cc__settings_read(cfg, &s)) != CC_OK) return r;
  if (s.no_launcher && s.require_launcher) {
    cc__settings_clear(&s);
    return cc__fail(NULL, CC_ERR_INVALID_ARG, "comm_init: no launcher set RANK and WORLD_SIZE (nor Open MPI's, PMI's "
                    "or Slurm's variables) and CC_REQUIRE_LAUNCHER=1: start the program with ccrun, torchrun, mpirun "
                    "or srun");
  }
  if (s.no_launcher && !__atomic_exchange_n(&cc__told_alone, 1, __ATOMIC_RELAXED))   /* once a process, on stderr */
    cc__log(NULL, CC__LOG_ALWAYS, "comm_init: no launcher set RANK and WORLD_SIZE (nor Open MPI's, PMI's or Slurm's "
            "variables): this process is a world of one rank. Start it with `ccrun -n N %s` (or cc_spawn) for N ranks; "
            "WORLD_SIZE=1 (or cfg.world_size = 1) says one rank is meant and silences this; CC_REQUIRE_LAUNCHER=1 "
            "makes it an error", cc__prog_name());
  c = cc__comm_new(s.rank, s.size, &s);
  cc__settings_clear(&s);
  if (!c) return cc__fail(NULL, CC_ERR_NO_MEMORY, "comm_init: rank %d: out of memory", s.rank);
  idx = __atomic_fetch_add(&cc__world_inits, 1, __ATOMIC_SEQ_CST);
  if (!CC__HAVE_TCP && c->size > 1 && (c->set.transport == CC__TR_TCP || uid || strcmp(method, "env://") ||
                                       !c->set.job_id[0])) {
    r = cc__fail(c, CC_ERR_UNSUPPORTED, "comm_init: rank %d: %s: this build has no TCP transport (CC_NO_TCP)", c->rank,
                 c->set.transport == CC__TR_TCP ? "CC_TRANSPORT=tcp" : "no CC_JOB_ID (not started by ccrun) and no "
                 "TCP rendezvous");
  } else if (c->size == 1) {
    r = cc__init_single(c);
  } else if (!uid && !strcmp(method, "env://") && c->set.job_id[0]) {
    r = cc__init_shm_job(&c, idx);
  } else if ((r = cc__init_where(&c->set, method, &v, host, sizeof host)) == CC_OK) {
    if (uid) { v.nonce = uid->nonce; v.lfd = uid->lfd; }
    r = cc__init_rendezvous(c, &v);
  }
  if (r != CC_OK) {
    if (c->err[0]) snprintf(cc__tls_err, sizeof cc__tls_err, "%s", c->err);   /* else cc__init_where's is there */
    cc__comm_free(c);
    return r;
  }
  cc__log(c, CC__LOG_INFO, "comm_init: rank %d of %d ready (job %s, %s%s)", c->rank, c->size, c->jobid,
          c->net ? "tcp" : "shared memory", c->oversub ? ", more ranks than CPUs: yielding waits" : "");
  *out = c;
  return CC_OK;
}

CC_API void cc_config_init(cc_config *cfg) {
  if (!cfg) return;
  memset(cfg, 0, sizeof *cfg);
  cfg->rank = -1;
  cfg->world_size = -1;
}

CC_API cc_result cc_comm_init(cc_comm **out, const cc_config *cfg) {
  return cc__init(out, cfg, NULL);
}

CC_API cc_result cc_comm_init_rank(cc_comm **out, int nranks, const cc_unique_id *id, int rank,
                                   const cc_config *cfg) {
  cc_config c2;
  cc__uid u;
  char method[96];
  cc_result r;
  cc__tls_err[0] = 0;
  if (!out) return cc__fail(NULL, CC_ERR_INVALID_ARG, "comm_init_rank: out is NULL");
  *out = NULL;
  if (!id) return cc__fail(NULL, CC_ERR_INVALID_ARG, "comm_init_rank: id is NULL");
  if (nranks < 1) return cc__fail(NULL, CC_ERR_INVALID_ARG, "comm_init_rank: nranks %d must be at least 1", nranks);
  if (rank < 0 || rank >= nranks)
    return cc__fail(NULL, CC_ERR_INVALID_ARG, "comm_init_rank: rank %d is out of range for nranks %d", rank, nranks);
  if (cc__uid_decode(id, &u) != 0)
    return cc__fail(NULL, CC_ERR_INVALID_ARG, "comm_init_rank: rank %d: the id is not one that cc_get_unique_id made", rank);
  if (cfg) c2 = *cfg; else cc_config_init(&c2);
  c2.rank = rank;
  c2.world_size = nranks;
  snprintf(method, sizeof method, strchr(u.ip, ':') ? "tcp://[%s]:%d" : "tcp://%s:%d", u.ip, u.port);
  c2.init_method = method;
  if (!c2.token || !*c2.token) c2.token = u.secret;
  if (rank == 0) u.lfd = cc__uid_take_fd(u.nonce);
  if (nranks == 1 && u.lfd >= 0) { cc__fd_close(u.lfd); u.lfd = -1; }
  r = cc__init(out, &c2, &u);
  cc__crypto_wipe(u.secret, sizeof u.secret);
  return r;
}

CC_API int cc_comm_rank(const cc_comm *c) { return c ? c->rank : -1; }
CC_API int cc_comm_size(const cc_comm *c) { return c ? c->size : 0; }
CC_API int cc_comm_local_rank(const cc_comm *c) { return c ? c->local_rank : -1; }
CC_API int cc_comm_local_size(const cc_comm *c) { return c ? c->local_size : 0; }

CC_API size_t cc_dtype_size(cc_dtype t) { return cc__dtype_bytes(t); }

/* ---------------------------------------------------------------- split */

/* The ranks of `color` in the records of a split (rb bytes each: color, key,
   ...), ordered by (key, rank), into order[]; how many; *newrank: where rank
   me (of that color, with that key) stands among them. */
static int cc__split_order(const unsigned char *all, size_t rb, int n, int me, int color, int key, int *order,
                           int *newrank) {
  int j, m = 0;
  *newrank = 0;
  for (j = 0; j < n; j++) {
    int cj = (int)cc__get32(all + rb * (size_t)j), kj = (int)cc__get32(all + rb * (size_t)j + 4), i;
    if (cj != color) continue;
    if (kj < key || (kj == key && j < me)) (*newrank)++;
    for (i = m; i > 0; i--) {          /* insertion by (key, rank) */
      int ko = (int)cc__get32(all + rb * (size_t)order[i - 1] + 4);
      if (ko <= kj) break;
      order[i] = order[i - 1];
    }
    order[i] = j;
    m++;
  }
  return m;
}

/* comm_split of ranks on one host: every rank's (color, key) in one arena
   phase, then each group's first rank creates its segment and says its name
   in the next. */
static cc_result cc__split_shm(cc_comm *c, int color, int key, cc_comm **out) {
  const char *what = "comm_split";
  int n = c->size, me = c->rank, j, m, newrank = 0, leader = -1;
  unsigned char *ck, *mine;
  int *order;
  char name[96];
  cc__call k;
  cc_comm *nc = NULL;
  cc_result r;
  ck = (unsigned char *)CC_MALLOC(8 * (size_t)n + sizeof(int) * (size_t)n);
  if (!ck) return cc__fail(c, CC_ERR_NO_MEMORY, "%s: rank %d: out of memory", what, me);
  order = (int *)(void *)(ck + 8 * (size_t)n);
  cc__call_init(&k, CC__SPLIT, NULL, NULL, 0, CC_UINT8, 0, 0);
  if ((r = cc__first_begin(c, &k, 0, 0, &mine)) != CC_OK) goto out;
  cc__put32(CC__DATA(mine), (uint32_t)color);
  cc__put32(CC__DATA(mine) + 4, (uint32_t)key);
  if ((r = cc__first_end(c, &k)) != CC_OK) goto out;
  for (j = 0; j < n; j++) memcpy(ck + 8 * (size_t)j, CC__DATA(cc__half(c, j, c->arena.step)), 8);
  if (color != CC_UNDEFINED) {          /* my group, ordered by (key, rank): its first rank leads */
    m = cc__split_order(ck, 8, n, me, color, key, order, &newrank);
    leader = order[0];
    nc = cc__comm_kin(c, newrank, m);
    if (!nc) { r = cc__fail(c, CC_ERR_NO_MEMORY, "%s: rank %d: out of memory", what, me); goto out; }
    nc->oversub = c->oversub;
    nc->spin_ns = c->spin_ns;
    nc->small_bytes = c->small_bytes;
  }
  if ((r = cc__ph_begin(c, &mine, what)) != CC_OK) goto out;
  memset(CC__DATA(mine), 0, 96);
  if (nc && newrank == 0) {
    char rnd[20];
    if (cc__random_hex(rnd, 16) != 0) cc__no_random(nc, what, "the new communicator's segment name");   /* none: all fail */
    else {
      snprintf(name, sizeof name, "/cc-%s-s%s", c->jobid, rnd);
      if (cc__shm_join(nc, name, 1, what) == CC_OK) memcpy(CC__DATA(mine), name, strlen(name) + 1);
    }
  }
  cc__ph_arrive(c);
  if ((r = cc__ph_wait(c, -1, what)) != CC_OK) goto out;
  if (nc) {
    const char *lname = (const char *)CC__DATA(cc__half(c, leader, c->arena.step));
    if (!lname[0]) {
      r = cc__fail(c, CC_ERR_SYSTEM, "%s: rank %d: rank %d could not create the new communicator's shared "
                   "memory%s%s", what, me, leader, newrank == 0 ? ": " : "", newrank == 0 ? nc->err : "");
      goto out;
    }
    if (newrank != 0) {
      memcpy(name, lname, sizeof name);
      name[sizeof name - 1] = 0;
      r = cc__shm_join(nc, name, 0, what);
    }
    if (r == CC_OK) r = cc__comm_ready(nc);
    if (r != CC_OK) cc__fail(c, r, "%s", nc->err);
  }
out:
  CC_FREE(ck);
  if (r != CC_OK) cc__comm_free(nc);
  else *out = nc;
  return r;
}

/* comm_split of ranks on several hosts: docs/tcp.md, "Start-up" (its last paragraph). */
static cc_result cc__split_net(cc_comm *c, int color, int key, cc_comm **out) {
  const char *what = "comm_split";
  cc__net *nt = c->net;
  int n = c->size, me = c->rank, j, m = 0, newrank = 0, lfd = -1, one_host = 1;
  size_t rb = 8 + CC__REC;
  unsigned char *all = (unsigned char *)CC_MALLOC(rb * (size_t)(n + 1)), *mine;
  cc__rec *recs = (cc__rec *)CC_MALLOC(sizeof(cc__rec) * (size_t)n), rec;
  int *order = (int *)CC_MALLOC(sizeof(int) * (size_t)n);
  char prefix[96];
  cc__call k;
  cc_comm *nc = NULL;
  cc_result r = CC_OK, r2;
  if (!all || !recs || !order) { r = cc__fail(c, CC_ERR_NO_MEMORY, "%s: rank %d: out of memory", what, me); goto out; }
  mine = all + rb * (size_t)n;
  /* a rank of no color, or one that cannot listen, still takes part, so that no rank waits: its port 0 says so */
  r = cc__rec_mine(c, nt->ip, &rec, color != CC_UNDEFINED ? &lfd : NULL, what);
  if (cc__random_hex(rec.extra, 10) != 0) {      /* the same: port 0 tells the others */
    if (r == CC_OK) r = cc__no_random(c, what, "the new communicator's segment name");
    rec.port = 0;
  }
  cc__put32(mine, (uint32_t)color);
  cc__put32(mine + 4, (uint32_t)key);
  cc__rec_encode(mine + 8, &rec);
  cc__call_init(&k, CC__SPLIT, NULL, NULL, 0, CC_UINT8, 0, 0);
  c->seq++;
  cc__ident_of(&k, &c->cur);           /* the frames say split; the bytes move as an all_gather */
  cc__call_init(&k, CC__ALL_GATHER, mine, all, rb, CC_UINT8, 0, 0);
  if ((r2 = cc__msg_flat(c, &k)) != CC_OK) { r = r2; goto out; }
  if (r != CC_OK || color == CC_UNDEFINED) goto out;
  m = cc__split_order(all, rb, n, me, color, key, order, &newrank);   /* my group */
  for (j = 0; j < m && r == CC_OK; j++) {
    if (cc__get32(all + rb * (size_t)order[j] + 8 + 240) == 0)
      r = cc__fail(c, CC_ERR_SYSTEM, "%s: rank %d: rank %d could not listen for the new communicator's connections "
                   "(its error says why)", what, me, order[j]);
    else if (cc__rec_decode(all + rb * (size_t)order[j] + 8, &recs[j]) != 0)
      r = cc__fail(c, CC_ERR_SYSTEM, "%s: rank %d: rank %d's record is malformed", what, me, order[j]);
    else if (strcmp(recs[j].host, recs[0].host) != 0)
      one_host = 0;
  }
  if (r != CC_OK) goto out;
  nc = cc__comm_kin(c, newrank, m);
  if (!nc) { r = cc__fail(c, CC_ERR_NO_MEMORY, "%s: rank %d: out of memory", what, me); goto out; }
  nc->oversub = c->oversub;
  nc->spin_ns = c->spin_ns;
  snprintf(prefix, sizeof prefix, "/cc-%s-s%s", c->jobid, recs[0].extra);
  if (one_host && !nt->tcp_only) {     /* lfd closed below */
    r = cc__shm_join(nc, prefix, newrank == 0, what);
    if (r == CC_OK) r = cc__comm_ready(nc);
  } else {
    r = cc__mesh_build(nc, recs, lfd, nt->tcp_only, prefix, what);
    lfd = -1;
  }
  if (r != CC_OK) cc__fail(c, r, "%s", nc->err);
out:
  cc__fd_close(lfd);
  CC_FREE(all);
  CC_FREE(recs);
  CC_FREE(order);
  if (r != CC_OK) cc__comm_free(nc);
  else *out = nc;
  return r;
}
/* ============================================================== @comm */
/* The public calls, groups and requests, user ops, abort, destroy and split: docs/design.md, "What each section
   owns" and "How a call flows". */

static CC__INLINE cc_result cc__exec(cc_comm *c, const cc__call *k) {
  if (k->coll == CC__SEND || k->coll == CC__RECV) return cc__p2p_run(c, k, 1, cc__coll_name(k->coll));
  return cc__algo_run(c, k);
}

/* A group: its collectives in issue order, then all its sends and receives
   progressing together. */
static cc_result cc__run_batch(cc_comm *c, cc__batch *b) {
  int i, n = 0;
  for (i = 0; i < b->n; i++) {
    if (b->calls[i].coll == CC__SEND || b->calls[i].coll == CC__RECV) n++;
    else CC__TRY(cc__exec(c, &b->calls[i]));
  }
  return n ? cc__p2p_run(c, b->calls, b->n, "group") : CC_OK;
}

/* The background worker of asynchronous requests: runs them in issue order. */
static void *cc__worker_main(void *arg) {
  cc_comm *c = (cc_comm *)arg;
  pthread_mutex_lock(&c->async.lock);
  for (;;) {
    cc_request *q;
    cc_result r;
    while (!c->async.head && !c->async.stop) pthread_cond_wait(&c->async.cond, &c->async.lock);
    if (!c->async.head) break;
    q = c->async.head;
    pthread_mutex_unlock(&c->async.lock);
    r = cc__run_batch(c, &q->batch);
    pthread_mutex_lock(&c->async.lock);
    if (r != CC_OK) snprintf(q->err, sizeof q->err, "%s", c->err);
    q->result = r;
    c->async.head = q->next;
    if (!c->async.head) c->async.tail = NULL;
    CC__STORE(&q->done, 1u);
    pthread_cond_broadcast(&c->async.cond);
  }
  pthread_mutex_unlock(&c->async.lock);
  return NULL;
}

/* Wait until no request is pending, so that the caller may use the comm. */
static void cc__drain(cc_comm *c) {
  if (!c->async.started) return;
  pthread_mutex_lock(&c->async.lock);
  while (c->async.head) pthread_cond_wait(&c->async.cond, &c->async.lock);
  pthread_mutex_unlock(&c->async.lock);
}

/* cc__ready's rare answers: an earlier failure, an abort. */
static CC__COLD cc_result cc__not_ready(cc_comm *c, const char *what) {
  if (c->failed) {
    char prev[sizeof c->err];
    memcpy(prev, c->err, sizeof prev);
    return cc__fail(c, CC_ERR_ABORTED, "%s: rank %d: the communicator failed earlier: %.200s", what, c->rank, prev);
  }
  return cc__fail(c, CC_ERR_ABORTED, "%s: rank %d: cc_comm_abort was called", what, c->rank);
}

/* May a call run? A failed communicator answers CC_ERR_ABORTED at once; on
   TCP, what the sockets hold is taken in first (every call: not a rare path). */
static CC__INLINE cc_result cc__ready(cc_comm *c, const char *what) {
  if (c->failed || CC__LOAD(&c->abort_flag)) return cc__not_ready(c, what);
  if (c->net) CC__TRY(cc__engine_poll(c, what));
  if (CC__LOAD_RLX(&c->hdr->fail_code)) return cc__take_fail(c, what);
  return CC_OK;
}

/* *p (n counts, or NULL) becomes a copy of its own: 0, or -1 when out of memory (then *p is NULL). */
static int cc__dup_counts(size_t **p, int n) {
  const size_t *a = *p;
  if (!a) return 0;
  if ((*p = (size_t *)CC_MALLOC(sizeof(size_t) * (size_t)n)) != NULL) memcpy(*p, a, sizeof(size_t) * (size_t)n);
  return *p ? 0 : -1;
}

/* Run a validated call now, or queue it in the open group. */
static cc_result cc__submit(cc_comm *c, const cc__call *k) {
  const char *what = cc__coll_names[k->coll];
  cc_result r;
  if (c->group_depth > 0) {
    cc__call *q;
    if (c->group.n == c->group.cap) {
      int cap = c->group.cap ? 2 * c->group.cap : 16;
      cc__call *nc = (cc__call *)CC_MALLOC(sizeof(cc__call) * (size_t)cap);
      if (!nc) return cc__fail(c, CC_ERR_NO_MEMORY, "%s: rank %d: out of memory queueing in a group", what, c->rank);
      if (c->group.n) memcpy(nc, c->group.calls, sizeof(cc__call) * (size_t)c->group.n);
      CC_FREE(c->group.calls);
      c->group.calls = nc;
      c->group.cap = cap;
    }
    q = &c->group.calls[c->group.n];
    *q = *k;                           /* `|`: every array copied, so that none freed below is the caller's */
    if (cc__dup_counts(&q->sc, c->size) | cc__dup_counts(&q->sd, c->size) | cc__dup_counts(&q->rc, c->size) |
        cc__dup_counts(&q->rd, c->size)) {
      CC_FREE(q->sc); CC_FREE(q->sd); CC_FREE(q->rc); CC_FREE(q->rd);
      return cc__fail(c, CC_ERR_NO_MEMORY, "%s: rank %d: out of memory queueing in a group", what, c->rank);
    }
    c->group.n++;
    return CC_OK;
  }
  cc__drain(c);
  if ((r = cc__ready(c, what)) != CC_OK) return r;
  if (c->set.debug >= CC__LOG_TRACE) {
    cc__ident id;
    char desc[128];
    cc__ident_of(k, &id);
    cc__ident_str(&id, desc, sizeof desc);
    if (k->coll == CC__SEND || k->coll == CC__RECV)
      cc__log(c, CC__LOG_TRACE, "%s(count %zu, %s, peer %d%s, tag %d)", what, k->count, cc__dtype_name(k->t), k->peer,
              k->peer == CC_ANY_SOURCE ? " (any source)" : "", k->tag);
    else
      cc__log(c, CC__LOG_TRACE, "%s, collective #%llu", desc, (unsigned long long)c->seq + 1);
  }
  return cc__exec(c, k);
}

/* ---------------------------------------------------------------- argument checks */

static cc_result cc__v_dtype(cc_comm *c, const char *what, cc_dtype t) {
  if ((int)t < 0 || (int)t >= (int)CC_DTYPE_COUNT) return cc__fail(c, CC_ERR_INVALID_ARG, "%s: dtype %d is not a cc_dtype", what, (int)t);
  return CC_OK;
}

/* `count` elements of `t`, `mult` times, must fit in size_t; ptr may be NULL only when it is 0 bytes. */
static cc_result cc__v_buf(cc_comm *c, const char *what, const char *name, const void *p, size_t count,
                           size_t mult, cc_dtype t) {
  size_t es = cc__dtype_bytes(t);
  if (count && (mult > SIZE_MAX / count || count * mult > SIZE_MAX / es))
    return cc__fail(c, CC_ERR_INVALID_ARG, "%s: count %zu x %zu x %zu bytes overflows size_t", what, count, mult, es);
  if (!p && count && mult) return cc__fail(c, CC_ERR_INVALID_ARG, "%s: %s is NULL with count %zu", what, name, count);
  return CC_OK;
}

static cc_result cc__v_rank(cc_comm *c, const char *what, const char *name, int r) {
  if (r < 0 || r >= c->size) return cc__fail(c, CC_ERR_INVALID_ARG, "%s: %s %d is out of range (communicator of %d ranks)", what, name, r, c->size);
  return CC_OK;
}

static cc_result cc__v_op(cc_comm *c, const char *what, cc_dtype t, cc_op op) {
  const cc__opinfo *o;
  if (op >= 0 && op < CC_OP_BUILTIN_COUNT) {
    const char *why = cc__op_check(t, op);
    return why ? cc__fail(c, CC_ERR_INVALID_ARG, "%s: %s", what, why) : CC_OK;
  }
  if (!(o = cc__opinfo_of(c, op)) || o->kind == CC__OPK_FREE)
    return cc__fail(c, CC_ERR_INVALID_ARG, "%s: op %d is not a built-in op nor one created on this communicator (or it was destroyed)", what, op);
  if (o->kind == CC__OPK_PREMUL && o->dtype != t)
    return cc__fail(c, CC_ERR_INVALID_ARG, "%s: op %d is a premul_sum for dtype %s, used with dtype %s", what, op,
                   cc__dtype_name(o->dtype), cc__dtype_name(t));
  return CC_OK;
}

/* a (alen bytes) and b (blen bytes) may only overlap with a == ok. */
static cc_result cc__v_overlap(cc_comm *c, const char *what, const void *a, size_t alen, const void *b,
                               size_t blen, const void *ok, const char *rule) {
  uintptr_t x = (uintptr_t)a, y = (uintptr_t)b;
  if (!a || !b || !alen || !blen || a == ok) return CC_OK;
  if (x < y + blen && y < x + alen)
    return cc__fail(c, CC_ERR_INVALID_ARG, "%s: sendbuf and recvbuf overlap but are not in place (%s)", what, rule);
  return CC_OK;
}

/* Largest displs[j] + counts[j]: the extent a v buffer must have, in elements. */
static cc_result cc__v_extent(cc_comm *c, const char *what, const char *cn, const size_t *counts,
                              const char *dn, const size_t *displs, cc_dtype t, size_t *extent) {
  size_t e = 0, es = cc__dtype_bytes(t);
  int j;
  if (!counts || !displs) return cc__fail(c, CC_ERR_INVALID_ARG, "%s: %s is NULL", what, counts ? dn : cn);
  for (j = 0; j < c->size; j++) {
    if (counts[j] > SIZE_MAX / es || displs[j] > SIZE_MAX / es - counts[j])
      return cc__fail(c, CC_ERR_INVALID_ARG, "%s: %s[%d] + %s[%d] overflows size_t", what, dn, j, cn, j);
    if (counts[j]) e = CC__MAX(e, displs[j] + counts[j]);
  }
  *extent = e;
  return CC_OK;
}

/* `one` holds one_count elements and `all` a block per rank: one_count each
   in rank order, or (cn names counts: the v side of gather_v, all_gather_v
   and scatter_v) counts[j] at displs[j]. `one` may only overlap `all` as
   block idx (in place). Checks both buffers and their overlap. */
static cc_result cc__v_blocks(cc_comm *c, const char *what, const char *one_name, const void *one,
                              size_t one_count, const char *all_name, const void *all, const char *cn,
                              const size_t *counts, const size_t *displs, cc_dtype t, int idx,
                              const char *rule) {
  size_t es = cc__dtype_bytes(t), ext = one_count * (size_t)c->size, at = one_count * (size_t)idx;
  CC__TRY(cc__v_buf(c, what, one_name, one, one_count, 1, t));
  if (!cn) CC__TRY(cc__v_buf(c, what, all_name, all, one_count, (size_t)c->size, t));
  else {
    CC__TRY(cc__v_extent(c, what, cn, counts, "displs", displs, t, &ext));
    CC__TRY(cc__v_buf(c, what, all_name, all, ext, 1, t));
    at = displs[idx];
  }
  return cc__v_overlap(c, what, one, one_count * es, all, ext * es, all ? (const char *)all + at * es : NULL, rule);
}

#define CC__CHECK_COMM(c) do { if (!(c)) return cc__fail(NULL, CC_ERR_INVALID_ARG, "%s: comm is NULL", __func__); } while (0)

/* ---------------------------------------------------------------- collectives */

/* A call's arguments by its kind, in the order a user meets them: the dtype,
   the op, the root or peer, the tag, then the buffers and how they may
   overlap. A non-root rank's arrays for the root's side are never read, and
   are cleared here so that no later step reads them. */
static cc_result cc__args(cc_comm *c, cc__call *k) {
  const char *w = cc__coll_name(k->coll);
  const cc_dtype t = k->t;
  const int root = c->rank == k->root;
  size_t n = k->count, b, es, se, re, m;
  if (k->coll == CC__BARRIER) return CC_OK;
  CC__TRY(cc__v_dtype(c, w, t));
  if (cc__reduces(k->coll)) CC__TRY(cc__v_op(c, w, t, k->op));
  if (cc__rooted(k->coll)) CC__TRY(cc__v_rank(c, w, "root", k->root));
  es = cc__dtype_bytes(t);
  b = n * es;
  switch (k->coll) {
  case CC__BROADCAST:
    return cc__v_buf(c, w, "buf", k->rbuf, n, 1, t);
  case CC__SEND:
  case CC__RECV:
    if (k->peer != CC_ANY_SOURCE) CC__TRY(cc__v_rank(c, w, "peer", k->peer));
    if (k->tag < 0) return cc__fail(c, CC_ERR_INVALID_ARG, "%s: tag %d is negative", w, k->tag);
    return cc__v_buf(c, w, "buf", k->coll == CC__SEND ? k->sbuf : k->rbuf, n, 1, t);
  case CC__REDUCE:
  case CC__ALL_REDUCE:
  case CC__ALL_TO_ALL:                 /* all_to_all: a block for every rank each way */
    m = k->coll == CC__ALL_TO_ALL ? (size_t)c->size : 1;
    CC__TRY(cc__v_buf(c, w, "sendbuf", k->sbuf, n, m, t));
    if (k->coll == CC__REDUCE && !root) return CC_OK;
    CC__TRY(cc__v_buf(c, w, "recvbuf", k->rbuf, n, m, t));
    return cc__v_overlap(c, w, k->sbuf, b * m, k->rbuf, b * m, k->rbuf, "in place is sendbuf == recvbuf");
  case CC__GATHER:
    if (!root) return cc__v_buf(c, w, "sendbuf", k->sbuf, n, 1, t);
    return cc__v_blocks(c, w, "sendbuf", k->sbuf, n, "recvbuf", k->rbuf, NULL, NULL, NULL, t, k->root,
                        "in place is sendbuf == recvbuf + root*count");
  case CC__SCATTER:
    if (!root) return cc__v_buf(c, w, "recvbuf", k->rbuf, n, 1, t);
    return cc__v_blocks(c, w, "recvbuf", k->rbuf, n, "sendbuf", k->sbuf, NULL, NULL, NULL, t, k->root,
                        "in place is recvbuf == sendbuf + root*count");
  case CC__ALL_GATHER:
    return cc__v_blocks(c, w, "sendbuf", k->sbuf, n, "recvbuf", k->rbuf, NULL, NULL, NULL, t, c->rank,
                        "in place is sendbuf == recvbuf + rank*count");
  case CC__REDUCE_SCATTER:
    return cc__v_blocks(c, w, "recvbuf", k->rbuf, n, "sendbuf", k->sbuf, NULL, NULL, NULL, t, c->rank,
                        "in place is recvbuf == sendbuf + rank*count");
  case CC__GATHER_V:
    if (!root) {
      k->rc = k->rd = NULL;
      return cc__v_buf(c, w, "sendbuf", k->sbuf, k->scount, 1, t);
    }
    return cc__v_blocks(c, w, "sendbuf", k->sbuf, k->scount, "recvbuf", k->rbuf, "recv_counts", k->rc, k->rd,
                        t, k->root, "in place is sendbuf == recvbuf + displs[root]");
  case CC__ALL_GATHER_V:
    return cc__v_blocks(c, w, "sendbuf", k->sbuf, k->scount, "recvbuf", k->rbuf, "recv_counts", k->rc, k->rd,
                        t, c->rank, "in place is sendbuf == recvbuf + displs[rank]");
  case CC__SCATTER_V:
    if (!root) {
      k->sc = k->sd = NULL;
      return cc__v_buf(c, w, "recvbuf", k->rbuf, k->rcount, 1, t);
    }
    return cc__v_blocks(c, w, "recvbuf", k->rbuf, k->rcount, "sendbuf", k->sbuf, "send_counts", k->sc, k->sd,
                        t, k->root, "in place is recvbuf == sendbuf + displs[root]");
  case CC__ALL_TO_ALL_V:
    CC__TRY(cc__v_extent(c, w, "send_counts", k->sc, "send_displs", k->sd, t, &se));
    CC__TRY(cc__v_extent(c, w, "recv_counts", k->rc, "recv_displs", k->rd, t, &re));
    CC__TRY(cc__v_buf(c, w, "sendbuf", k->sbuf, se, 1, t));
    CC__TRY(cc__v_buf(c, w, "recvbuf", k->rbuf, re, 1, t));
    return cc__v_overlap(c, w, k->sbuf, se * es, k->rbuf, re * es, NULL, "all_to_all_v is never in place");
  default:
    return CC_OK;
  }
}

/* Every public call's way in, with the cc__call that describes it: a
   communicator, good arguments (cc__args), then run or queue. */
static cc_result cc__enter(cc_comm *c, cc__call *k) {
  if (!c) return cc__fail(NULL, CC_ERR_INVALID_ARG, "cc_%s: comm is NULL", cc__coll_name(k->coll));
  CC__TRY(cc__args(c, k));
  return cc__submit(c, k);
}

/* The same for a call that its cc__call_init describes in full. */
static CC__INLINE cc_result cc__enter_new(cc_comm *c, int coll, const void *sb, void *rb, size_t count, cc_dtype t,
                                          cc_op op, int root) {
  cc__call k;
  cc__call_init(&k, coll, sb, rb, count, t, op, root);
  return cc__enter(c, &k);
}

CC_API cc_result cc_barrier(cc_comm *c) {
  return cc__enter_new(c, CC__BARRIER, NULL, NULL, 0, CC_UINT8, 0, 0);
}

CC_API cc_result cc_broadcast(cc_comm *c, void *buf, size_t count, cc_dtype t, int root) {
  return cc__enter_new(c, CC__BROADCAST, buf, buf, count, t, 0, root);
}

CC_API cc_result cc_reduce(cc_comm *c, const void *sendbuf, void *recvbuf, size_t count, cc_dtype t,
                           cc_op op, int root) {
  return cc__enter_new(c, CC__REDUCE, sendbuf, recvbuf, count, t, op, root);
}

CC_API cc_result cc_all_reduce(cc_comm *c, const void *sendbuf, void *recvbuf, size_t count, cc_dtype t, cc_op op) {
  return cc__enter_new(c, CC__ALL_REDUCE, sendbuf, recvbuf, count, t, op, 0);
}

CC_API cc_result cc_gather(cc_comm *c, const void *sendbuf, void *recvbuf, size_t count, cc_dtype t, int root) {
  return cc__enter_new(c, CC__GATHER, sendbuf, recvbuf, count, t, 0, root);
}

CC_API cc_result cc_all_gather(cc_comm *c, const void *sendbuf, void *recvbuf, size_t count, cc_dtype t) {
  return cc__enter_new(c, CC__ALL_GATHER, sendbuf, recvbuf, count, t, 0, 0);
}

CC_API cc_result cc_scatter(cc_comm *c, const void *sendbuf, void *recvbuf, size_t count, cc_dtype t, int root) {
  return cc__enter_new(c, CC__SCATTER, sendbuf, recvbuf, count, t, 0, root);
}

CC_API cc_result cc_reduce_scatter(cc_comm *c, const void *sendbuf, void *recvbuf, size_t count, cc_dtype t, cc_op op) {
  return cc__enter_new(c, CC__REDUCE_SCATTER, sendbuf, recvbuf, count, t, op, 0);
}

CC_API cc_result cc_all_to_all(cc_comm *c, const void *sendbuf, void *recvbuf, size_t count, cc_dtype t) {
  return cc__enter_new(c, CC__ALL_TO_ALL, sendbuf, recvbuf, count, t, 0, 0);
}

/* The v calls: the counts and displacements in the descriptor (sc/sd the
   send side's, rc/rd the receive side's; scount, rcount a single side's). */
static void cc__call_v(cc__call *k, size_t scount, const size_t *sc, const size_t *sd, size_t rcount,
                       const size_t *rc, const size_t *rd) {
  k->scount = scount;
  k->rcount = rcount;
  k->sc = (size_t *)(uintptr_t)sc;
  k->sd = (size_t *)(uintptr_t)sd;
  k->rc = (size_t *)(uintptr_t)rc;
  k->rd = (size_t *)(uintptr_t)rd;
}

static cc_result cc__enter_v(cc_comm *c, int coll, const void *sb, void *rb, cc_dtype t, int root, size_t scount,
                             const size_t *sc, const size_t *sd, size_t rcount, const size_t *rc, const size_t *rd) {
  cc__call k;
  cc__call_init(&k, coll, sb, rb, 0, t, 0, root);
  cc__call_v(&k, scount, sc, sd, rcount, rc, rd);
  return cc__enter(c, &k);
}

CC_API cc_result cc_gather_v(cc_comm *c, const void *sendbuf, size_t send_count, void *recvbuf,
                             const size_t *recv_counts, const size_t *displs, cc_dtype t, int root) {
  return cc__enter_v(c, CC__GATHER_V, sendbuf, recvbuf, t, root, send_count, NULL, NULL, 0, recv_counts, displs);
}

CC_API cc_result cc_all_gather_v(cc_comm *c, const void *sendbuf, size_t send_count, void *recvbuf,
                                 const size_t *recv_counts, const size_t *displs, cc_dtype t) {
  return cc__enter_v(c, CC__ALL_GATHER_V, sendbuf, recvbuf, t, 0, send_count, NULL, NULL, 0, recv_counts, displs);
}

CC_API cc_result cc_scatter_v(cc_comm *c, const void *sendbuf, const size_t *send_counts, const size_t *displs,
                              void *recvbuf, size_t recv_count, cc_dtype t, int root) {
  return cc__enter_v(c, CC__SCATTER_V, sendbuf, recvbuf, t, root, 0, send_counts, displs, recv_count, NULL, NULL);
}

CC_API cc_result cc_all_to_all_v(cc_comm *c, const void *sendbuf, const size_t *send_counts,
                                 const size_t *send_displs, void *recvbuf, const size_t *recv_counts,
                                 const size_t *recv_displs, cc_dtype t) {
  return cc__enter_v(c, CC__ALL_TO_ALL_V, sendbuf, recvbuf, t, 0, 0, send_counts, send_displs, 0, recv_counts,
                     recv_displs);
}

/* Send and receive: the peer, the tag and, for a receive from any source,
   where the sender's rank goes when it completes (cc__p2p_run). */
static void cc__call_p2p(cc__call *k, int peer, int tag, int *source) {
  k->peer = peer;
  k->tag = tag;
  k->src = source;
}

static cc_result cc__enter_p2p(cc_comm *c, int coll, const void *sb, void *rb, size_t count, cc_dtype t, int peer,
                               int tag, int *source) {
  cc__call k;
  cc__call_init(&k, coll, sb, rb, count, t, 0, 0);
  cc__call_p2p(&k, peer, tag, source);
  return cc__enter(c, &k);
}

CC_API cc_result cc_send(cc_comm *c, const void *buf, size_t count, cc_dtype t, int peer, int tag) {
  return cc__enter_p2p(c, CC__SEND, buf, NULL, count, t, peer, tag, NULL);
}

CC_API cc_result cc_recv(cc_comm *c, void *buf, size_t count, cc_dtype t, int peer, int tag) {
  return cc__enter_p2p(c, CC__RECV, NULL, buf, count, t, peer, tag, NULL);
}

CC_API cc_result cc_recv_any(cc_comm *c, void *buf, size_t count, cc_dtype t, int tag, int *source) {
  if (source) *source = CC_UNDEFINED;
  return cc__enter_p2p(c, CC__RECV, NULL, buf, count, t, CC_ANY_SOURCE, tag, source);
}

/* ---------------------------------------------------------------- groups and requests */

CC_API cc_result cc_group_begin(cc_comm *c) {
  CC__CHECK_COMM(c);
  c->group_depth++;
  return CC_OK;
}

CC_API cc_result cc_group_end(cc_comm *c, cc_request **req) {
  cc__batch b;
  cc_request *q;
  cc_result r;
  CC__CHECK_COMM(c);
  if (req) *req = NULL;
  if (c->group_depth <= 0) return cc__fail(c, CC_ERR_INVALID_ARG, "group_end: rank %d: no group is open", c->rank);
  if (--c->group_depth > 0) return CC_OK;
  b = c->group;
  memset(&c->group, 0, sizeof c->group);
  if (!req) {
    cc__drain(c);
    r = cc__ready(c, "group_end");
    if (r == CC_OK) r = cc__run_batch(c, &b);
    cc__batch_free(&b);
    return r;
  }
  q = (cc_request *)CC_MALLOC(sizeof *q);
  if (!q) { cc__batch_free(&b); return cc__fail(c, CC_ERR_NO_MEMORY, "group_end: rank %d: out of memory", c->rank); }
  memset(q, 0, sizeof *q);
  q->comm = c;
  q->batch = b;
  pthread_mutex_lock(&c->async.lock);
  if (!c->async.started && pthread_create(&c->async.thread, NULL, cc__worker_main, c) != 0) {
    pthread_mutex_unlock(&c->async.lock);
    cc__batch_free(&q->batch);
    CC_FREE(q);
    return cc__fail(c, CC_ERR_SYSTEM, "group_end: rank %d: cannot start the worker thread", c->rank);
  }
  c->async.started = 1;
  if (c->failed || CC__LOAD(&c->abort_flag)) {      /* fail it now, in order */
    q->result = CC_ERR_ABORTED;
    snprintf(q->err, sizeof q->err, "group_end: rank %d: the communicator failed earlier", c->rank);
    q->done = 1;
  } else {
    if (c->async.tail) c->async.tail->next = q; else c->async.head = q;
    c->async.tail = q;
    pthread_cond_broadcast(&c->async.cond);
  }
  pthread_mutex_unlock(&c->async.lock);
  *req = q;
  return CC_OK;
}

CC_API cc_result cc_test(cc_request *req, int *done) {
  if (!req || !done) return cc__fail(NULL, CC_ERR_INVALID_ARG, "test: %s is NULL", req ? "done" : "req");
  *done = CC__LOAD(&req->done) ? 1 : 0;
  return CC_OK;
}

CC_API const char *cc_request_error(const cc_request *req) {
  return req && CC__LOAD(&req->done) ? req->err : "";
}

CC_API cc_result cc_wait(cc_request *req) {
  cc_result r;
  if (!req) return cc__fail(NULL, CC_ERR_INVALID_ARG, "wait: req is NULL");
  if (!CC__LOAD(&req->done)) {
    cc_comm *c = req->comm;
    pthread_mutex_lock(&c->async.lock);
    while (!req->done) pthread_cond_wait(&c->async.cond, &c->async.lock);
    pthread_mutex_unlock(&c->async.lock);
  }
  r = req->result;
  cc__batch_free(&req->batch);
  CC_FREE(req);
  return r;
}

/* ---------------------------------------------------------------- ops */

static cc_result cc__op_slot(cc_comm *c, int *slot) {
  cc__opinfo *n;
  int i;
  for (i = 0; i < c->nops; i++) if (c->ops[i].kind == CC__OPK_FREE) { *slot = i; return CC_OK; }
  if (!(n = (cc__opinfo *)CC_MALLOC(sizeof(cc__opinfo) * (size_t)(c->nops + 8))))
    return cc__fail(c, CC_ERR_NO_MEMORY, "op_create: out of memory");
  memset(n, 0, sizeof(cc__opinfo) * (size_t)(c->nops + 8));
  if (c->nops) memcpy(n, c->ops, sizeof(cc__opinfo) * (size_t)c->nops);
  CC_FREE(c->ops);
  c->ops = n;
  *slot = c->nops;
  c->nops += 8;
  return CC_OK;
}

CC_API cc_result cc_op_create(cc_comm *c, cc_reduce_fn fn, void *user, cc_op *out) {
  int s = 0;
  CC__CHECK_COMM(c);
  if (!fn || !out) return cc__fail(c, CC_ERR_INVALID_ARG, "op_create: %s is NULL", fn ? "out" : "fn");
  cc__drain(c);
  CC__TRY(cc__op_slot(c, &s));
  c->ops[s].kind = CC__OPK_USER;
  c->ops[s].fn = fn;
  c->ops[s].user = user;
  *out = CC__OP_FIRST_USER + s;
  return CC_OK;
}

CC_API cc_result cc_op_create_premul_sum(cc_comm *c, cc_dtype t, const void *scalar, cc_op *out) {
  int s = 0;
  CC__CHECK_COMM(c);
  CC__TRY(cc__v_dtype(c, "op_create_premul_sum", t));
  if (!scalar || !out) return cc__fail(c, CC_ERR_INVALID_ARG, "op_create_premul_sum: %s is NULL", scalar ? "out" : "scalar");
  cc__drain(c);
  CC__TRY(cc__op_slot(c, &s));
  memset(&c->ops[s], 0, sizeof c->ops[s]);
  c->ops[s].kind = CC__OPK_PREMUL;
  c->ops[s].dtype = t;
  memcpy(c->ops[s].scal, scalar, cc__dtype_bytes(t));
  *out = CC__OP_FIRST_USER + s;
  return CC_OK;
}

CC_API cc_result cc_op_destroy(cc_comm *c, cc_op op) {
  const cc__opinfo *o;
  CC__CHECK_COMM(c);
  if (!(o = cc__opinfo_of(c, op)) || o->kind == CC__OPK_FREE)
    return cc__fail(c, CC_ERR_INVALID_ARG, "op_destroy: op %d was not created on this communicator (or was destroyed already)", op);
  cc__drain(c);
  c->ops[op - CC__OP_FIRST_USER].kind = CC__OPK_FREE;
  return CC_OK;
}

/* ---------------------------------------------------------------- lifecycle */

CC_API void cc_comm_abort(cc_comm *c) {
  char msg[64] = "rank ";
  int i = 5, r, d = 1;
  if (!c) return;
  CC__STORE(&c->abort_flag, 1u);
  r = c->rank;                          /* itoa without stdio: signal safe */
  while (d * 10 <= r) d *= 10;
  for (; d > 0; d /= 10) msg[i++] = (char)('0' + (r / d) % 10);
  memcpy(msg + i, " called cc_comm_abort", 22);
  cc__post_fail(c->hdr, CC_ERR_ABORTED, c->rank, msg);
}

/* The communicator cc_spawn made for this process's worker (NULL elsewhere); cc_comm_destroy forgets it when
   the worker destroys it itself (docs/api.md, "Processes: cc_spawn and ccrun"). */
static cc_comm *cc__spawn_owned;

/* Leaving: did this rank's last collective meet another call on a rank of its host? A
   queued call returns before the others enter theirs, so a mismatch with it may only show
   now: one another rank posted, or a rank of this host in the same collective number with
   another call. CC_OK when nothing says so yet (the others then learn it from this rank's
   control block, cc__check_call). */
static cc_result cc__leave_check(cc_comm *c) {
  uint64_t mine, theirs;
  char a[96], b[96];
  int j;
  if (c->failed || !c->hdr || !c->seg.ctl || c->net) return CC_OK;
  mine = CC__LOAD(&c->seg.ctl[c->rank].call);
  for (j = 0; mine && j < c->size; j++) {
    if (j == c->rank || (theirs = CC__LOAD(&c->seg.ctl[j].call)) >> 24 != mine >> 24 || theirs == mine) continue;
    cc__call_word_str(theirs, a, sizeof a);
    cc__call_word_str(mine, b, sizeof b);
    return cc__fail(NULL, CC_ERR_MISMATCH, "comm_destroy: rank %d: rank %d called %s as collective #%llu while this "
                    "rank called %s", c->rank, j, a, (unsigned long long)(mine >> 24), b);
  }
  if (CC__LOAD(&c->hdr->fail_code) == (uint32_t)CC_ERR_MISMATCH)
    return cc__fail(NULL, CC_ERR_MISMATCH, "comm_destroy: rank %d: a mismatch was found by another rank: %s", c->rank,
                    cc__posted_msg(c->hdr));
  return CC_OK;
}

CC_API cc_result cc_comm_destroy(cc_comm *c) {
  cc_result r;
  if (!c) return cc__fail(NULL, CC_ERR_INVALID_ARG, "comm_destroy: comm is NULL");
  if (c == cc__spawn_owned) cc__spawn_owned = NULL;
  if (c->async.started) {
    cc__drain(c);
    pthread_mutex_lock(&c->async.lock);
    c->async.stop = 1;
    pthread_cond_broadcast(&c->async.cond);
    pthread_mutex_unlock(&c->async.lock);
    pthread_join(c->async.thread, NULL);
  }
  cc__propagate_posted(c);
  cc__say_bye(c);
  r = cc__leave_check(c);
  if (c->seg.ctl) {
    CC__STORE_SC(&c->seg.ctl[c->rank].departed, 1u);
    cc__notify(c);
  }
  cc__comm_free(c);
  return r;
}

CC_API cc_result cc_comm_split(cc_comm *c, int color, int key, cc_comm **out) {
  const char *what = "comm_split";
  CC__CHECK_COMM(c);
  if (!out) return cc__fail(c, CC_ERR_INVALID_ARG, "%s: out is NULL", what);
  *out = NULL;
  if (color < 0 && color != CC_UNDEFINED)
    return cc__fail(c, CC_ERR_INVALID_ARG, "%s: color %d is negative (and not CC_UNDEFINED)", what, color);
  if (c->group_depth > 0) return cc__fail(c, CC_ERR_INVALID_ARG, "%s: not allowed inside a group", what);
  cc__drain(c);
  CC__TRY(cc__ready(c, what));
  return c->net ? cc__split_net(c, color, key, out) : cc__split_shm(c, color, key, out);
}

/* ---------------------------------------------------------------- symmetric memory */

/* Where c's allocations are mapped and listed: c itself (one host), the
   host's communicator, or NULL (a rank alone on its host: plain memory, in
   c's own list). */
static cc_comm *cc__mem_home(cc_comm *c) {
  if (c->net) return c->net->local;
  return c->seg.base ? c : NULL;
}

static int cc__in(const void *p, const unsigned char *lo, size_t len) {
  return p && (const unsigned char *)p >= lo && (const unsigned char *)p < lo + len;
}

CC_API cc_result cc_mem_alloc(cc_comm *c, size_t bytes, void **ptr) {
  const char *what = "mem_alloc";
  cc_comm *h;
  cc_result r;
  CC__CHECK_COMM(c);
  if (!ptr) return cc__fail(c, CC_ERR_INVALID_ARG, "%s: ptr is NULL", what);
  *ptr = NULL;
  if (!bytes) return cc__fail(c, CC_ERR_INVALID_ARG, "%s: bytes is 0", what);
  if (c->group_depth > 0) return cc__fail(c, CC_ERR_INVALID_ARG, "%s: not allowed inside a group", what);
  cc__drain(c);
  CC__TRY(cc__ready(c, what));
  if ((h = cc__mem_home(c)) == NULL) {          /* plain memory, listed so that cc_mem_free knows it */
    size_t b = cc__align(bytes, 4096);
    cc__mem *m = (cc__mem *)CC_MALLOC(sizeof(cc__mem));
    size_t *sz = (size_t *)CC_MALLOC(sizeof(size_t));
    unsigned char *p = m && sz ? (unsigned char *)cc__shm_map_anon(b) : NULL;
    if (!p) {
      CC_FREE(m); CC_FREE(sz);
      return cc__fail(c, CC_ERR_NO_MEMORY, "%s: rank %d: out of memory (%zu bytes)", what, c->rank, bytes);
    }
    memset(m, 0, sizeof *m);
    *sz = bytes;
    m->id = c->direct.mem_seq++; m->base = p; m->map_bytes = b; m->slot = b; m->bytes = sz; m->nranks = 1;
    m->next = c->direct.mem;
    c->direct.mem = m;
    *ptr = p;
    return CC_OK;
  }
  if ((r = cc__arena_mem_alloc(h, bytes, ptr)) != CC_OK && h != c && !c->failed) cc__fail(c, r, "%s", h->err);
  return r;
}

CC_API cc_result cc_mem_free(cc_comm *c, void *ptr) {
  const char *what = "mem_free";
  cc_comm *h, *o;
  cc__mem *m;
  cc_request *q;
  unsigned char *mine = NULL;
  int busy = 0, i;
  cc_result r;
  CC__CHECK_COMM(c);
  if (!ptr) return cc__fail(c, CC_ERR_INVALID_ARG, "%s: ptr is NULL", what);
  if (c->group_depth > 0) return cc__fail(c, CC_ERR_INVALID_ARG, "%s: not allowed inside a group", what);
  o = (h = cc__mem_home(c)) != NULL ? h : c;
  for (m = o->direct.mem; m; m = m->next) {
    mine = m->base + (m->mapped ? (size_t)m->me * m->slot : 0);
    if (mine == (unsigned char *)ptr) break;
  }
  if (!m)
    return cc__fail(c, CC_ERR_INVALID_ARG, "%s: rank %d: %p is not memory from cc_mem_alloc on this communicator "
                    "(or it was freed already)", what, c->rank, ptr);
  if (c->async.started) {             /* a request not yet complete that uses it */
    pthread_mutex_lock(&c->async.lock);
    for (q = c->async.head; q && !busy; q = q->next)
      for (i = 0; i < q->batch.n && !busy; i++)
        busy = cc__in(q->batch.calls[i].sbuf, mine, m->bytes[m->me]) || cc__in(q->batch.calls[i].rbuf, mine, m->bytes[m->me]);
    pthread_mutex_unlock(&c->async.lock);
  }
  if (busy)
    return cc__fail(c, CC_ERR_INVALID_ARG, "%s: rank %d: the memory at %p is in use by a request that is not "
                    "complete (cc_wait for it first)", what, c->rank, ptr);
  cc__drain(c);
  CC__TRY(cc__ready(c, what));
  if (!m->mapped) {
    cc__mem **pp;
    for (pp = &o->direct.mem; *pp != m; pp = &(*pp)->next) {}
    *pp = m->next;
    cc__mem_drop(m);
    return CC_OK;
  }
  if ((r = cc__arena_mem_free(o, m)) != CC_OK && o != c && !c->failed) cc__fail(c, r, "%s", o->err);
  return r;
}

/* ============================================================== @spawn */
/* cc_spawn forks the ranks itself; its segment, and what it removes: docs/shm.md, "Meeting without a port". The
   settings are read once, in the parent. */

static void cc__spawn_child(int rank, int n, unsigned char *seg, size_t bytes, const char *jobid, int parent,
                            const unsigned char *shmkey, const cc__settings *s, cc_main_fn fn, void *arg) {
  char num[32];
  cc_comm *c;
  cc_result r;
  int rc;
  if (cc__proc_tie_to_parent(parent)) cc__proc_exit(1);
  snprintf(num, sizeof num, "%d", rank);
  cc__env_set("RANK", num);
  cc__env_set("LOCAL_RANK", num);
  snprintf(num, sizeof num, "%d", n);
  cc__env_set("WORLD_SIZE", num);
  cc__env_set("LOCAL_WORLD_SIZE", num);
  cc__env_set("CC_JOB_ID", jobid);
  c = cc__comm_new(rank, n, s);
  if (!c) { fprintf(stderr, "cc_spawn: rank %d: out of memory\n", rank); cc__proc_exit(1); }
  memcpy(c->jobid, jobid, 33);
  memcpy(c->shmkey, shmkey, sizeof c->shmkey);
  c->has_shmkey = 1;
  r = cc__seg_attach(c, seg, bytes, "cc_spawn");
  if (r == CC_OK) {
    CC__ADD(&c->hdr->mapped, 1u);
    r = cc__comm_ready(c);
  }
  if (r == CC_OK && s->transport == CC__TR_TCP) r = cc__init_tcp_from_shm(&c, 0);
  if (r != CC_OK) {
    fprintf(stderr, "cc_spawn: rank %d: %s\n", rank, c->err);
    cc__proc_exit(1);
  }
  cc__spawn_owned = c;
  rc = fn(c, arg);
  if (cc__spawn_owned) cc_comm_destroy(cc__spawn_owned);
  cc__proc_exit(rc == 0 ? 0 : (rc & 0xff) ? (rc & 0xff) : 1);
}

/* Reap every rank. When one fails, the others get a short grace (they notice
   the loss within ~0.1 s and may report it), then SIGKILL. Returns the first
   failed rank's status (its exit code, or 128 + its signal), *failed its rank
   (-1 when none failed: status 0), with the thread's message saying how. */
static int cc__spawn_reap(int *pids, int nprocs, uint64_t grace_ns, int *failed) {
  int i, live, status = 0, killed = 0;
  uint64_t kill_at = 0;
  for (live = nprocs; live > 0;) {
    int reaped = 0;
    for (i = 0; i < nprocs; i++) {
      int code = 0, sig = 0, w;
      if (pids[i] <= 0) continue;
      if ((w = cc__proc_reap(pids[i], &code, &sig)) == 0) continue;
      pids[i] = -pids[i];
      live--;
      reaped = 1;
      if (w < 0 || *failed >= 0 || (!sig && code == 0)) continue;
      *failed = i;
      kill_at = cc__now_ns() + grace_ns;
      status = sig ? 128 + sig : code;
      if (sig) cc__fail(NULL, CC_ERR_PEER_LOST, "cc_spawn: rank %d (pid %d) was killed by signal %d", i, -pids[i], sig);
      else cc__fail(NULL, CC_ERR_PEER_LOST, "cc_spawn: rank %d (pid %d) exited with status %d", i, -pids[i], code);
    }
    if (*failed >= 0 && !killed && cc__now_ns() >= kill_at) {
      for (i = 0; i < nprocs; i++) if (pids[i] > 0) cc__proc_kill(pids[i]);
      killed = 1;
    }
    if (!reaped && live > 0) cc__sleep_ns(200000);
  }
  return status;
}

CC_API int cc_spawn(int nprocs, cc_main_fn fn, void *arg) {
  char jobid[40], prefix[64], why[128];
  size_t bytes = 0;
  unsigned char *seg = NULL, shmkey[32];
  int *pids = NULL, parent = cc__getpid();
  int i, status = 1, failed = -1;
  cc__settings s;
  cc__tls_err[0] = 0;
  if (nprocs < 1 || nprocs > CC__MAX_LOCAL) {
    cc__fail(NULL, CC_ERR_INVALID_ARG, "cc_spawn: nprocs %d is out of range (1..%d)", nprocs, CC__MAX_LOCAL);
    return 1;
  }
  if (!fn) { cc__fail(NULL, CC_ERR_INVALID_ARG, "cc_spawn: fn is NULL"); return 1; }
  if (cc__settings_lib(NULL, &s) != CC_OK) return 1;
  if (cc__random_hex(jobid, 32) != 0 || cc__random(shmkey, sizeof shmkey) != 0) {
    cc__no_random(NULL, "cc_spawn", "the job's identity and segment key");
    goto out;
  }
  snprintf(prefix, sizeof prefix, "cc-%s", jobid);
  seg = cc__seg_anon(nprocs, s.shm_chunk, &bytes);
  pids = (int *)CC_MALLOC(sizeof(int) * (size_t)nprocs);
  if (!seg || !pids) {
    cc__fail(NULL, CC_ERR_NO_MEMORY, "cc_spawn: cannot map %zu bytes of shared memory", bytes);
    goto out;
  }
  for (i = 0; i < nprocs; i++) {
    int p = cc__proc_fork();
    if (p == 0) cc__spawn_child(i, nprocs, seg, bytes, jobid, parent, shmkey, &s, fn, arg);
    if (p < 0) {
      int e = errno, j, code, sig;
      for (j = 0; j < i; j++) cc__proc_kill(pids[j]);
      for (j = 0; j < i; j++) while (cc__proc_reap(pids[j], &code, &sig) == 0) cc__sleep_ns(CC__MS);
      cc__strerr(e, why, sizeof why);
      cc__fail(NULL, CC_ERR_SYSTEM, "cc_spawn: fork of rank %d: %s", i, why);
      goto out;
    }
    pids[i] = p;
  }
  cc__settings_clear(&s);              /* the ranks have their copies */
  status = cc__spawn_reap(pids, nprocs, s.spawn_grace_ns, &failed);   /* 0 exactly when none failed */
  if (failed >= 0) {                  /* as torchrun's summary: which rank, how, and the job's first error */
    const cc__hdr *h = (const cc__hdr *)seg;
    if (CC__LOAD(&h->fail_ready))
      fprintf(stderr, "%s; the job's first error: %s\n", cc__tls_err, h->fail_msg);
    else
      fprintf(stderr, "%s\n", cc__tls_err);
  }
  cc__shm_unlink_prefix(prefix);
out:                                   /* status 1 when the ranks did not all start */
  cc__settings_clear(&s);
  cc__shm_unmap(seg, bytes);
  CC_FREE(pids);
  return status;
}

#ifdef __cplusplus
}
#endif
#endif /* CC_IMPLEMENTATION */

/* ============================================================== @licence
   Changelog
     0.1.0  (in development since 2026-11-21; no release tagged yet)
            every collective, their v forms, send/recv (and receives from
            any source), groups and asynchronous requests, over shared
            memory on one host and TCP between hosts (hierarchical: shared
            memory within each host); env://, tcp://, file:// and unique-id
            start-up; TCP authenticated with the job's token and optionally
            encrypted; cc_mem_alloc; cc_spawn and ccrun; cc_cuda.cuh (tested
            on a CPU emulation of the CUDA runtime, and on one H200 by its
            device check); the torch_cc backend (torch 1.13 and 2).

   MIT License

   Copyright (c) 2026 the cc authors

   Permission is hereby granted, free of charge, to any person obtaining a copy of
   this software and associated documentation files (the "Software"), to deal in
   the Software without restriction, including without limitation the rights to
   use, copy, modify, merge, publish, distribute, sublicense, and/or sell copies of
   the Software, and to permit persons to whom the Software is furnished to do so,
   subject to the following conditions:

   The above copyright notice and this permission notice shall be included in all
   copies or substantial portions of the Software.

   THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND, EXPRESS OR
   IMPLIED, INCLUDING BUT NOT LIMITED TO THE WARRANTIES OF MERCHANTABILITY, FITNESS
   FOR A PARTICULAR PURPOSE AND NONINFRINGEMENT. IN NO EVENT SHALL THE AUTHORS OR
   COPYRIGHT HOLDERS BE LIABLE FOR ANY CLAIM, DAMAGES OR OTHER LIABILITY, WHETHER
   IN AN ACTION OF CONTRACT, TORT OR OTHERWISE, ARISING FROM, OUT OF OR IN
   CONNECTION WITH THE SOFTWARE OR THE USE OR OTHER DEALINGS IN THE SOFTWARE.
*/
