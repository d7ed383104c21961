/* test_cuda_watchdog.cu - cc_cuda.cuh's watchdog, on the CPU.
 *
 * The watchdog reads and writes only the flag page (host memory), so its
 * logic runs here without a GPU: a GPU communicator of 3 ranks is set up by
 * hand around a page in plain memory, the streams' progress is played by
 * writing the flags, and cc_cuda__watch is called as the watchdog thread
 * would call it (the timeout shortened to 50 ms). Checked:
 *   - ranks in step, or waiting less than the timeout: no failure;
 *   - a collective phase, a message not sent and a message not received, each
 *     waited on past the timeout: CC_ERR_TIMEOUT naming the late rank;
 *   - a peer that exited (a zombie, not yet reaped): CC_ERR_PEER_LOST naming it;
 *   - once failed, every flag is released (every wait the streams could be
 *     in passes), a stream writing an older value is put back, a higher value
 *     stays, and the flags never run so far ahead that a wait fails again;
 *   - cc_cuda_comm_check and the next call report the failure and its rank,
 *     and the host communicator is aborted (nobody waits in a host call for
 *     a rank that failed);
 *   - once destroy has begun (closing), an exited peer and a late wait are no
 *     failure, but a failure on the page is still acted on;
 *   - cc_cuda_comm_abort fails the communicator the same way. */
#define _POSIX_C_SOURCE 200809L
#define CC_IMPLEMENTATION
#include "cc.h"
#include "cc_cuda.cuh"
#include "test_util.h"

#include <sys/wait.h>

#define MS 1000000ull

/* A GPU communicator of 3 ranks around a page in plain memory, over a host
 * communicator of its own (one rank; the watchdog aborts it on a failure). */
static cc_cuda_comm *make(int peer2_pid) {
  cc_cuda_comm *g = (cc_cuda_comm *)calloc(1, sizeof *g);
  cc_comm *host;
  cc_config cfg;
  cc_config_init(&cfg);
  cfg.rank = 0;
  cfg.world_size = 1;
  if (cc_comm_init(&host, &cfg) != CC_OK) {
    tu_fail("cuda watchdog: host comm", "%s", cc_comm_last_error(NULL));
    exit(1);
  }
  host->set.timeout_ns = 50 * MS;
  g->host = host;
  g->rank = 0;
  g->size = 3;
  g->mode = CC_CUDA__IPC;
  g->page = (cc_cuda__page *)calloc(1, sizeof *g->page);
  g->hi = (unsigned int *)calloc(2 * CC_CUDA__NFLAGS, sizeof *g->hi);
  g->pids[0] = g->pids[1] = (int)getpid();
  g->pids[2] = peer2_pid;
  pthread_mutex_init(&g->lock, NULL);
  pthread_cond_init(&g->cond, NULL);
  return g;
}

static void unmake(cc_cuda_comm *g) {
  cc_comm_destroy(g->host);
  pthread_mutex_destroy(&g->lock);
  pthread_cond_destroy(&g->cond);
  free(g->page);
  free(g->hi);
  free(g);
}

/* Would a stream waiting for `target` on flag f go on? */
static int passes(const unsigned int *f, unsigned int target) { return (int)(*f - target) >= 0; }

/* Watch twice, the timeout apart: the first round notes the wait, the second judges it. */
static void watch_past_timeout(cc_cuda_comm *g, int closing) {
  cc_cuda__watch(g, closing);
  tu_sleep_us(70 * 1000);
  cc_cuda__watch(g, closing);
}

static void expect_failure(const char *name, cc_cuda_comm *g, cc_result code, const char *words) {
  cc_result r = (cc_result)g->page->abort;
  if (r != code) { tu_fail(name, "page says %d (%s), want %s", (int)r, g->page->abort_msg, cc_strerror(code)); return; }
  if (!strstr(g->page->abort_msg, words)) { tu_fail(name, "message \"%s\" lacks \"%s\"", g->page->abort_msg, words); return; }
  if (cc_cuda_comm_check(g) != code) { tu_fail(name, "cc_cuda_comm_check: %s", cc_cuda_comm_last_error(g)); return; }
  if (!strstr(cc_cuda_comm_last_error(g), words)) { tu_fail(name, "check's message \"%s\"", cc_cuda_comm_last_error(g)); return; }
  if (cc_cuda__ready(g, "all_reduce") != CC_ERR_ABORTED || !strstr(g->err, words)) {
    tu_fail(name, "the next call: \"%s\"", g->err);
    return;
  }
  if (cc_barrier(g->host) == CC_OK) {
    tu_fail(name, "the host communicator still works (the watchdog must abort it)");
    return;
  }
  tu_pass(name, "%s; the host communicator aborted", g->page->abort_msg);
}

/* In step, or behind for less than the timeout: nothing. */
static void wd_keeps_up(cc_cuda_comm *g) {
  g->page->post[0][0] = g->page->post[1][0] = g->page->post[2][0] = 7;
  watch_past_timeout(g, 0);
  g->page->post[0][0] = 8;             /* this rank waits on phase 8 ... */
  cc_cuda__watch(g, 0);
  g->page->post[1][0] = g->page->post[2][0] = 8;   /* ... and the others come in time */
  tu_sleep_us(70 * 1000);
  cc_cuda__watch(g, 0);
  if (g->page->abort || cc_cuda_comm_check(g) != CC_OK) tu_fail("cuda watchdog: no failure while ranks keep up", "%s", g->page->abort_msg);
  else tu_pass("cuda watchdog: no failure while ranks keep up", NULL);
}

/* A late rank in a collective. */
static void wd_late_collective(cc_cuda_comm *g) {
  g->page->post[0][0] = g->page->post[1][0] = 9;
  watch_past_timeout(g, 0);
  expect_failure("cuda watchdog: a rank late for a collective phase", g, CC_ERR_TIMEOUT, "rank 2 to reach collective phase 9");
}

/* Released: every wait passes; an older value written over a flag is put back; a higher one stays. */
static void wd_released(cc_cuda_comm *g) {
  int i, ok;
  ok = passes(&g->page->post[2][0], 9) && passes(&g->page->post[2][0], 9 + 1000) && passes(&g->page->done[0][1], 1000);
  g->page->post[2][0] = 9;             /* rank 2's stream finally posts phase 9 */
  g->page->want[1][2] = (1u << 24) + 12345;  /* some stream writes beyond its released value */
  cc_cuda__watch(g, 0);
  ok = ok && passes(&g->page->post[2][0], 9 + 1000) && g->page->want[1][2] == (1u << 24) + 12345;
  for (i = 0; i < 50 && ok; i++) cc_cuda__watch(g, 0);   /* rounds go by: nothing runs away */
  ok = ok && passes(&g->page->post[2][0], 9 + 1000) && passes(&g->page->post[0][0], 9 + 1000) &&
       (int)(g->page->post[0][0] - 9) < (1 << 26);
  if (ok) tu_pass("cuda watchdog: released flags let every wait pass, and stay so", NULL);
  else tu_fail("cuda watchdog: released flags", "post[2] %u, post[0] %u, want[1][2] %u", g->page->post[2][0],
               g->page->post[0][0], g->page->want[1][2]);
}

/* A message not sent, and one not received. */
static void wd_messages(void) {
  cc_cuda_comm *g = make((int)getpid());
  g->page->want[1][0] = 3;             /* this rank's stream waits for message 3 from rank 1 */
  g->page->ready[1][0] = 2;
  watch_past_timeout(g, 0);
  expect_failure("cuda watchdog: a message not sent in time", g, CC_ERR_TIMEOUT, "message 3 from rank 1");
  unmake(g);
  g = make((int)getpid());
  g->page->ready[0][2] = 4;            /* this rank sent message 4 to rank 2, which does not take it */
  g->page->done[0][2] = 3;
  watch_past_timeout(g, 0);
  expect_failure("cuda watchdog: a message not received in time", g, CC_ERR_TIMEOUT, "rank 2 to receive message 4");
  unmake(g);
}

/* A child that exits at once: a zombie, not yet reaped, after 50 ms. */
static pid_t exited_child(void) {
  pid_t child = fork();
  if (child == 0) _exit(0);
  tu_sleep_us(50 * 1000);
  return child;
}

/* A peer that exited: a zombie, not yet reaped. */
static void wd_exited_peer(void) {
  pid_t child = exited_child();
  cc_cuda_comm *g = make((int)child);
  char want[64];
  cc_cuda__watch(g, 0);
  snprintf(want, sizeof want, "rank 2 lost (pid %d exited)", (int)child);
  expect_failure("cuda watchdog: a peer process that exited", g, CC_ERR_PEER_LOST, want);
  unmake(g);
  waitpid(child, NULL, 0);
}

/* Destroy has begun: a peer that left and a wait past the timeout are no
 * failure; a failure on the page is still acted on. */
static void wd_closing(void) {
  pid_t child = exited_child();
  cc_cuda_comm *g = make((int)child);
  g->page->post[0][0] = 9;
  watch_past_timeout(g, 1);
  if (g->page->abort || cc_cuda_comm_check(g) != CC_OK) {
    tu_fail("cuda watchdog: closing", "a verdict while closing: %s", g->page->abort_msg);
  } else {
    g->page->abort = CC_ERR_TIMEOUT;   /* a peer failed it */
    g->page->abort_rank = 1;
    snprintf(g->page->abort_msg, sizeof g->page->abort_msg, "rank 1 gave up");
    cc_cuda__watch(g, 1);
    if (!passes(&g->page->post[1][0], 9) || cc_barrier(g->host) == CC_OK)
      tu_fail("cuda watchdog: closing", "a peer's failure while closing was not acted on (waits released: %d)",
              passes(&g->page->post[1][0], 9));
    else
      tu_pass("cuda watchdog: while closing, an exited peer and a late wait are no failure; a peer's failure still "
              "releases the waits and aborts the host communicator", NULL);
  }
  unmake(g);
  waitpid(child, NULL, 0);
}

/* cc_cuda_comm_abort. */
static void wd_abort(void) {
  cc_cuda_comm *g = make((int)getpid());
  g->page->post[0][0] = 5;             /* a wait in flight */
  cc_cuda_comm_abort(g);
  cc_cuda__watch(g, 0);
  if (!passes(&g->page->post[1][0], 5) || !passes(&g->page->post[2][0], 5)) tu_fail("cuda watchdog: cc_cuda_comm_abort", "waits not released");
  else expect_failure("cuda watchdog: cc_cuda_comm_abort", g, CC_ERR_ABORTED, "called cc_cuda_comm_abort");
  unmake(g);
}

int main(void) {
  cc_cuda_comm *g = make((int)getpid());
  wd_keeps_up(g);
  wd_late_collective(g);
  wd_released(g);
  unmake(g);
  wd_messages();
  wd_exited_peer();
  wd_closing();
  wd_abort();
  return tu_exit_code();
}
