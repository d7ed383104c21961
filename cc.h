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

   Environment (a value in cc_config wins over the environment):

       RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE   as torchrun sets them;
           else OMPI_COMM_WORLD_{RANK,SIZE,LOCAL_RANK,LOCAL_SIZE}, PMI_RANK/PMI_SIZE,
           SLURM_PROCID/SLURM_NTASKS/SLURM_LOCALID
       MASTER_ADDR, MASTER_PORT   rendezvous of jobs not started by ccrun/cc_spawn
       CC_JOB_ID         job identity set by ccrun (32 hex digits); ranks of one job
                         meet in shared memory named after it, never on a fixed port
       CC_TIMEOUT        seconds any wait may last (default 600)
       CC_TRANSPORT      auto | shm | tcp
       CC_TOKEN          job secret for TCP handshakes
       CC_DEBUG          WARN | INFO | TRACE: log lines on stderr, prefixed with the rank
       CC_SPIN_US        microseconds a wait spins before it sleeps (default: 50, or 2
                         when there are more local ranks than CPUs)

   CONTENTS (search for the tag)

       @api          public declarations
       @platform     time, futex waits, shared memory, sockets, processes
       @reduce       the reduction kernels for every dtype and op
       @bootstrap    environment, rendezvous
       @shm          the shared-memory transport: arena phases, p2p channels
       @algo         collective algorithms over the transport
       @comm         communicator lifecycle, split, groups, requests
       @spawn        cc_spawn
       @licence      changelog and licence
*/

/* ============================================================== @api */
#ifndef CC_H_INCLUDED
#define CC_H_INCLUDED

#include <stddef.h>
#include <stdint.h>

#define CC_VERSION_MAJOR 0
#define CC_VERSION_MINOR 1
#define CC_VERSION_PATCH 0
#define CC_VERSION_STRING "0.1.0"

#ifndef CC_API
#  ifdef CC_STATIC
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
  X(CC_ERR_MISMATCH,     "ranks called different collectives, counts or roots")     \
  X(CC_ERR_TIMEOUT,      "a peer did not arrive within the timeout")                \
  X(CC_ERR_PEER_LOST,    "a peer process died or its connection broke")             \
  X(CC_ERR_ABORTED,      "cc_comm_abort was called, or an earlier error")           \
  X(CC_ERR_SYSTEM,       "an operating-system call failed")                         \
  X(CC_ERR_AUTH,         "handshake refused: wrong token or protocol")              \
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
  const char *token;        /* job secret; NULL: CC_TOKEN or none          */
} cc_config;

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
 *   Returns           CC_OK, or an error (then *out is NULL and cc_comm_last_error(NULL)
 *                     says why) */
CC_API cc_result cc_comm_init(cc_comm **out, const cc_config *cfg);

/* cc_comm_destroy - finish pending requests and free the communicator. Local: it
 *   does not wait for the other ranks. Peers still waiting for this rank fail. */
CC_API cc_result cc_comm_destroy(cc_comm *c);

/* cc_comm_abort - fail the communicator on every rank: pending and later calls
 *   return CC_ERR_ABORTED. Safe to call from another thread or a signal handler. */
CC_API void cc_comm_abort(cc_comm *c);

CC_API int cc_comm_rank(const cc_comm *c);
CC_API int cc_comm_size(const cc_comm *c);
CC_API int cc_comm_local_rank(const cc_comm *c);   /* rank among this host's ranks */
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
 * reduce_scatter (and on the root of scatter). Other overlaps are
 * CC_ERR_INVALID_ARG. A count of 0 is valid and buffers may then be NULL. Every
 * rank calls each collective with the same count, dtype, op and root; where the
 * ranks can tell they do not, they return CC_ERR_MISMATCH. Results are bitwise
 * identical on every rank: element i is reduced as ((x0 op x1) op x2) ... in rank
 * order. Returns CC_OK, or an error with detail in cc_comm_last_error. */

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
 *   Blocking          outside a group, returns when `buf` may be reused */
CC_API cc_result cc_send(cc_comm *c, const void *buf, size_t count, cc_dtype t,
                         int peer, int tag);
CC_API cc_result cc_recv(cc_comm *c, void *buf, size_t count, cc_dtype t,
                         int peer, int tag);

/* cc_group_begin, cc_group_end - calls in between are queued, not run. The group's
 *   collectives run in issue order, then its sends and receives all progress
 *   together (a ring exchange in one group never deadlocks).
 *   req               NULL: run the group and return when it is done;
 *                     else return at once with a request for cc_wait / cc_test
 *   Groups nest; only the outermost cc_group_end runs the work. */
CC_API cc_result cc_group_begin(cc_comm *c);
CC_API cc_result cc_group_end(cc_comm *c, cc_request **req);

/* cc_wait - wait for the request, free it, and return its result. */
CC_API cc_result cc_wait(cc_request *req);
/* cc_test - *done = 1 when the request has finished; never blocks. */
CC_API cc_result cc_test(cc_request *req, int *done);

/* cc_spawn - fork `nprocs` ranks on this host (as torch's mp.spawn); each calls
 *   fn(c, arg) with a ready communicator. Returns 0 when every rank returned 0;
 *   when a rank fails or dies the others are stopped at once and cc_spawn returns
 *   nonzero (that rank's exit status, or 128 + its signal). No process and no
 *   /dev/shm entry is left behind. */
CC_API int cc_spawn(int nprocs, cc_main_fn fn, void *arg);

#ifdef __cplusplus
}
#endif
#endif /* CC_H_INCLUDED */
