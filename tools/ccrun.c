/* ccrun - start a program as a cc job of N ranks (as torchrun or mpirun)

       ccrun [options] -n N ./prog args...

   ccrun forks N ranks of `prog`, each with the environment the cc library reads
   (RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, GROUP_RANK and, on a single
   host, a fresh CC_JOB_ID), then supervises them:

   - each rank is its own process group, so a signal or a kill reaches the
     rank's children too; ranks die with ccrun (PR_SET_PDEATHSIG);
   - SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1 and SIGUSR2 sent to ccrun are
     forwarded to every rank; a second SIGINT within the grace period kills;
   - when a rank fails (nonzero exit or killed by a signal), the others get
     SIGTERM, then SIGKILL after --kill-grace seconds, and ccrun exits with the
     first failing rank's status (its exit code, or 128 + its signal); when all
     ranks exit 0 it exits 0 (or 128 + signal if ccrun itself was told to stop
     by SIGINT, SIGTERM, SIGHUP or SIGQUIT);
   - processes a rank left behind in its process group are stopped the same
     way once every rank has exited, and /dev/shm/cc-<CC_JOB_ID>* entries left
     by ranks that died during start-up are removed;
   - with --tag-output every line a rank writes is prefixed with "[RANK] ";
     lines are passed on whole (a line longer than 1 MiB is cut there).

   Tokens (docs/security.md): on one host ccrun makes a fresh CC_TOKEN when
   none is set. A job on several hosts (--nnodes > 1) needs the same CC_TOKEN
   on every host, of at least 128 bits: without one ccrun refuses to start
   (anyone who can reach the rendezvous port could join the job and read and
   change its data) unless --insecure-no-token says that is meant.
   `ccrun --make-token` prints a fresh 256-bit token.

   Exit status: the job's as above; 2 for bad usage; 1 when ccrun itself fails.
   It includes cc.h's implementation for what the ranks decide alike (whether
   a token is strong enough, where random bytes come from), so that the two
   cannot disagree; CC_STATIC keeps only what it calls (no collective). Linux
   only (signalfd, prctl). Single-threaded, so strerror and setenv are safe
   here. */

#define _GNU_SOURCE
#define CC_STATIC
#define CC_IMPLEMENTATION
#include "../cc.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define CCRUN_VERSION   "0.1.0"
#define MAX_NPROC       1024
#define MAX_NNODES      65536
#define LINE_MAX_BYTES  (1u << 20)  /* a longer line is cut (see --tag-output) */
#define GIVEUP_MS       5000        /* after SIGKILL, wait at most this long */
#define DRAIN_MS        1000        /* after the last process, wait for pipe EOF */

/* One output stream of a rank under --tag-output: the read end of its pipe and
 * the bytes of the line not yet complete. */
typedef struct stream {
  int fd;           /* -1 once closed */
  int out_fd;       /* 1 or 2: where its lines go */
  char *buf;
  size_t len, cap;
} stream;

typedef struct rank {
  pid_t pid;        /* also its process-group id */
  int running;      /* not yet reaped */
  int group_alive;  /* its process group may still have members */
  stream io[2];     /* stdout, stderr (--tag-output only) */
} rank;

static struct {
  /* options */
  int nproc, nnodes, node_rank, tag_output, insecure_no_token;
  const char *master_addr, *master_port, *timeout;
  int64_t grace_ms;
  char **argv;                  /* the program and its arguments */
  /* job */
  rank *ranks;
  int nstarted, nrunning;
  char job_id[33];              /* "" for multi-host jobs */
  pid_t self;
  int sigfd;
  sigset_t old_mask;
  struct sigaction old_pipe;
  struct rlimit old_nofile;     /* restored in the ranks when raised */
  int raised_nofile;
  int out_broken[3];            /* our stdout/stderr gave EPIPE: drop output */
  /* outcome */
  int first_fail_status;        /* -1 until a rank fails */
  int setup_failed;
  int stop_signal;              /* a terminating signal ccrun received */
  /* stopping: SIGTERM sent, then SIGKILL at term_deadline */
  int stopping, killed;
  int64_t term_deadline, giveup_deadline, last_sigint;
} g;

/* ------------------------------------------------------------ helpers */

static int64_t now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Write everything or fail; EINTR retried. Returns 0 or -1 with errno. */
static int write_all(int fd, const char *p, size_t n) {
  while (n > 0) {
    ssize_t w = write(fd, p, n);
    if (w < 0) {
      struct pollfd pfd = {fd, POLLOUT, 0};
      if (errno == EINTR) continue;
      if (errno != EAGAIN) return -1;
      poll(&pfd, 1, 1000);                      /* a non-blocking fd we inherited */
      continue;
    }
    p += w;
    n -= (size_t)w;
  }
  return 0;
}

/* Our own output to fd 1 or 2: once the reader is gone, drop the rest quietly. */
static void emit(int fd, const char *p, size_t n) {
  if (g.out_broken[fd]) return;
  if (write_all(fd, p, n) < 0) g.out_broken[fd] = 1;
}

/* "ccrun: ..." on stderr, one write so it cannot tear. */
static void msg(const char *fmt, ...) {
  char line[1024];
  int n = snprintf(line, sizeof line, "ccrun: ");
  va_list ap;
  va_start(ap, fmt);
  n += vsnprintf(line + n, sizeof line - (size_t)n - 1, fmt, ap);
  va_end(ap);
  if (n > (int)sizeof line - 2) n = (int)sizeof line - 2;
  line[n++] = '\n';
  emit(2, line, (size_t)n);
}

static void usage_error(const char *fmt, ...) {
  char what[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(what, sizeof what, fmt, ap);
  va_end(ap);
  msg("%s (try 'ccrun --help')", what);
  exit(2);
}

static void usage(void) {
  static const char text[] =
    "usage: ccrun [options] -n N PROG [ARGS...]\n"
    "Start PROG as a cc job of N ranks on this host (or of NNODES*N ranks on\n"
    "NNODES hosts: run ccrun on each with its --node-rank).\n"
    "\n"
    "  -n, --nproc-per-node N  ranks to start on this host, 1..1024 (required)\n"
    "  --tag-output            prefix each output line with \"[RANK] \"\n"
    "  --nnodes N              hosts in the job (default 1)\n"
    "  --node-rank K           this host's place, 0..N-1 (default 0)\n"
    "  --master-addr HOST      host of rank 0 (required when --nnodes > 1)\n"
    "  --master-port PORT      its TCP port (required when --nnodes > 1)\n"
    "  --timeout SEC           set CC_TIMEOUT for the ranks\n"
    "  --kill-grace SEC        SIGTERM to SIGKILL when stopping ranks (default 3)\n"
    "  --make-token            print a fresh 256-bit token for CC_TOKEN and exit\n"
    "  --insecure-no-token     allow --nnodes > 1 without CC_TOKEN: anyone who can\n"
    "                          reach the rendezvous port can join the job\n"
    "  -h, --help              this text\n"
    "  --version               print the version\n"
    "\n"
    "Each rank gets RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, GROUP_RANK;\n"
    "on one host also CC_JOB_ID (and CC_TOKEN if unset), on several MASTER_ADDR\n"
    "and MASTER_PORT. On several hosts set the same CC_TOKEN on every host\n"
    "(CC_TOKEN=$(ccrun --make-token)). When a rank fails, the others are stopped\n"
    "and ccrun exits with the failed rank's status (128 + signal if it was killed).\n";
  emit(1, text, sizeof text - 1);
}

static long parse_long(const char *opt, const char *s, long lo, long hi) {
  char *end;
  errno = 0;
  long v = strtol(s, &end, 10);
  if (errno || end == s || *end || v < lo || v > hi)
    usage_error("%s wants an integer in %ld..%ld, not '%s'", opt, lo, hi, s);
  return v;
}

static const char *sig_name(int sig) {
  static char other[32];
  switch (sig) {
#define S(x) case x: return #x;
    S(SIGHUP) S(SIGINT) S(SIGQUIT) S(SIGILL) S(SIGTRAP) S(SIGABRT) S(SIGBUS)
    S(SIGFPE) S(SIGKILL) S(SIGUSR1) S(SIGSEGV) S(SIGUSR2) S(SIGPIPE) S(SIGALRM)
    S(SIGTERM) S(SIGCHLD) S(SIGCONT) S(SIGSTOP) S(SIGTSTP) S(SIGTTIN) S(SIGTTOU)
    S(SIGURG) S(SIGXCPU) S(SIGXFSZ) S(SIGVTALRM) S(SIGPROF) S(SIGWINCH) S(SIGIO)
    S(SIGSYS)
#undef S
  }
  if (sig >= SIGRTMIN && sig <= SIGRTMAX)
    snprintf(other, sizeof other, "SIGRTMIN+%d", sig - SIGRTMIN);
  else
    snprintf(other, sizeof other, "%d", sig);
  return other;
}

/* ------------------------------------------------------------ tokens */

/* n random bytes as 2n hex digits into out (2n + 1 bytes), from the kernel
 * (cc.h's cc__random_hex: getrandom, else /dev/urandom); without them ccrun
 * fails, as the ranks would. */
static void random_hex(char *out, size_t n) {
  if (cc__random_hex(out, 2 * n) != 0) {
    msg("no random bytes from the kernel (getrandom, then /dev/urandom: %s): nothing else makes an unguessable "
        "token or job id", strerror(errno));
    exit(1);
  }
}

/* A job on several hosts needs a token (or --insecure-no-token); a token
 * needs 128 bits, judged as the ranks judge it (cc.h's cc__token_check). */
static void check_token(void) {
  const char *t = getenv("CC_TOKEN");
  if (t && *t) {
    char weak[160];
    if (cc__token_check(t, weak, sizeof weak) != 0) {
      msg("CC_TOKEN is too weak: %s, and a token needs at least %d (a guessable one lets a stranger into the "
          "job); make one with `ccrun --make-token` or `head -c 16 /dev/urandom | xxd -p`", weak, CC__TOKEN_MIN_BITS);
      exit(2);
    }
    return;
  }
  if (g.nnodes > 1 && !g.insecure_no_token) {
    msg("--nnodes %d without CC_TOKEN: anyone who can reach %s port %s could join this job and read or change "
        "its data. Set the same token on every host: export CC_TOKEN=$(ccrun --make-token) (or head -c 16 "
        "/dev/urandom | xxd -p); or pass --insecure-no-token to run without one", g.nnodes, g.master_addr,
        g.master_port);
    exit(2);
  }
}

/* ------------------------------------------------------------ options */

/* Long options may be written --opt VALUE or --opt=VALUE, with '-' or '_'
 * between words (torchrun spells them --nproc_per_node). */
static void parse_args(int argc, char **argv) {
  int i;
  g.nnodes = 1;
  g.grace_ms = 3000;
  for (i = 1; i < argc && argv[i][0] == '-' && argv[i][1]; i++) {
    char name[64], *eq;
    const char *arg = argv[i], *val = NULL;
    if (strcmp(arg, "--") == 0) { i++; break; }
    if (arg[1] != '-') {                          /* short options */
      if (strcmp(arg, "-h") == 0) { usage(); exit(0); }
      if (arg[1] != 'n') usage_error("unknown option '%s'", arg);
      val = arg[2] ? arg + 2 : (i + 1 < argc ? argv[++i] : NULL);
      if (!val) usage_error("-n wants a value");
      g.nproc = (int)parse_long("-n", val, 1, MAX_NPROC);
      continue;
    }
    snprintf(name, sizeof name, "%s", arg);
    if ((eq = strchr(name, '=')) != NULL) { *eq = '\0'; val = strchr(arg, '=') + 1; }
    for (char *p = name + 2; *p; p++) if (*p == '_') *p = '-';
    if (strcmp(name, "--help") == 0) { usage(); exit(0); }
    if (strcmp(name, "--version") == 0) {
      static const char v[] = "ccrun " CCRUN_VERSION "\n";
      emit(1, v, sizeof v - 1);
      exit(0);
    }
    if (strcmp(name, "--tag-output") == 0) {
      if (val) usage_error("--tag-output takes no value");
      g.tag_output = 1;
      continue;
    }
    if (strcmp(name, "--make-token") == 0) {
      char tok[65];
      if (val) usage_error("--make-token takes no value");
      random_hex(tok, 32);
      printf("%s\n", tok);
      exit(fflush(stdout) == 0 ? 0 : 1);
    }
    if (strcmp(name, "--insecure-no-token") == 0) {
      if (val) usage_error("--insecure-no-token takes no value");
      g.insecure_no_token = 1;
      continue;
    }
    if (strcmp(name, "--nproc-per-node") && strcmp(name, "--nnodes") &&
        strcmp(name, "--node-rank") && strcmp(name, "--master-addr") &&
        strcmp(name, "--master-port") && strcmp(name, "--timeout") &&
        strcmp(name, "--kill-grace"))
      usage_error("unknown option '%s'", name);
    if (!val && i + 1 < argc) val = argv[++i];
    if (!val) usage_error("%s wants a value", name);
    if (strcmp(name, "--nproc-per-node") == 0) {
      g.nproc = (int)parse_long(name, val, 1, MAX_NPROC);
    } else if (strcmp(name, "--nnodes") == 0) {
      g.nnodes = (int)parse_long(name, val, 1, MAX_NNODES);
    } else if (strcmp(name, "--node-rank") == 0) {
      g.node_rank = (int)parse_long(name, val, 0, MAX_NNODES - 1);
    } else if (strcmp(name, "--master-addr") == 0) {
      if (!*val) usage_error("--master-addr wants a host");
      g.master_addr = val;
    } else if (strcmp(name, "--master-port") == 0) {
      parse_long(name, val, 1, 65535);
      g.master_port = val;
    } else if (strcmp(name, "--timeout") == 0) {
      parse_long(name, val, 1, INT_MAX / 1000);   /* CC_TIMEOUT is in whole seconds */
      g.timeout = val;
    } else {                                      /* --kill-grace, may be fractional */
      char *end;
      double s = strtod(val, &end);
      if (end == val || *end || !(s >= 0 && s <= 86400))
        usage_error("--kill-grace wants seconds in 0..86400, not '%s'", val);
      g.grace_ms = (int64_t)(s * 1000 + 0.5);
    }
  }
  if (g.nproc == 0) usage_error("-n N is required");
  if (i >= argc) usage_error("no program to run");
  if (g.node_rank >= g.nnodes)
    usage_error("--node-rank %d is not below --nnodes %d", g.node_rank, g.nnodes);
  if (g.nnodes > 1 && (!g.master_addr || !g.master_port))
    usage_error("--nnodes %d needs --master-addr and --master-port", g.nnodes);
  g.argv = argv + i;
  check_token();
}

/* ------------------------------------------------------------ environment */

static void set_env(const char *name, const char *value) {
  if (setenv(name, value, 1) != 0) {
    msg("setenv %s: %s", name, strerror(errno));
    exit(1);
  }
}

static void set_env_int(const char *name, long v) {
  char s[24];
  snprintf(s, sizeof s, "%ld", v);
  set_env(name, s);
}

/* What every rank of this host shares; RANK and LOCAL_RANK are set per child. */
static void setup_env(void) {
  set_env_int("WORLD_SIZE", (long)g.nnodes * g.nproc);
  set_env_int("LOCAL_WORLD_SIZE", g.nproc);
  set_env_int("GROUP_RANK", g.node_rank);
  if (g.timeout) set_env("CC_TIMEOUT", g.timeout);
  if (g.master_addr) set_env("MASTER_ADDR", g.master_addr);
  if (g.master_port) set_env("MASTER_PORT", g.master_port);
  if (g.nnodes == 1) {
    /* Ranks meet in shared memory named after the job id: no port to collide. */
    random_hex(g.job_id, 16);
    set_env("CC_JOB_ID", g.job_id);
    if (!getenv("CC_TOKEN")) {
      char token[65];
      random_hex(token, 32);
      set_env("CC_TOKEN", token);
    }
  } else {
    unsetenv("CC_JOB_ID");  /* the ranks rendezvous over TCP at MASTER_ADDR */
  }
}

/* ------------------------------------------------------------ ranks */

static void child_fail(const char *what) {
  msg("%s: %s", what, strerror(errno));
  _exit(127);
}

/* In the child after fork: never returns. */
static void exec_rank(int local, int out_w, int err_w) {
  if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0) child_fail("prctl");
  if (getppid() != g.self) _exit(1);            /* ccrun died before prctl */
  setpgid(0, 0);
  if (out_w >= 0 && (dup2(out_w, 1) < 0 || dup2(err_w, 2) < 0)) child_fail("dup2");
  sigaction(SIGPIPE, &g.old_pipe, NULL);        /* as ccrun found them */
  if (g.raised_nofile) setrlimit(RLIMIT_NOFILE, &g.old_nofile);
  sigprocmask(SIG_SETMASK, &g.old_mask, NULL);
  set_env_int("RANK", (long)g.node_rank * g.nproc + local);
  set_env_int("LOCAL_RANK", local);
  execvp(g.argv[0], g.argv);
  int e = errno;
  msg("cannot run %s: %s", g.argv[0], strerror(e));
  _exit(127);
}

static int start_rank(int local) {
  rank *r = &g.ranks[local];
  int out[2] = {-1, -1}, err[2] = {-1, -1};
  if (g.tag_output) {
    if (pipe2(out, O_CLOEXEC) < 0 || pipe2(err, O_CLOEXEC) < 0) {
      msg("pipe for rank %d: %s%s", local, strerror(errno),
          errno == EMFILE ? " (--tag-output takes 2 per rank)" : "");
      if (out[0] >= 0) { close(out[0]); close(out[1]); }
      return -1;
    }
  }
  pid_t pid = fork();
  if (pid < 0) {
    msg("fork for rank %d: %s", local, strerror(errno));
    if (out[0] >= 0) { close(out[0]); close(out[1]); close(err[0]); close(err[1]); }
    return -1;
  }
  if (pid == 0) exec_rank(local, out[1], err[1]);
  setpgid(pid, pid);     /* as the child does: whichever runs first wins */
  r->pid = pid;
  r->running = r->group_alive = 1;
  r->io[0].fd = out[0];
  r->io[1].fd = err[0];
  r->io[0].out_fd = 1;
  r->io[1].out_fd = 2;
  if (g.tag_output) {
    close(out[1]);
    close(err[1]);
    fcntl(out[0], F_SETFL, O_NONBLOCK);
    fcntl(err[0], F_SETFL, O_NONBLOCK);
  }
  g.nstarted++;
  g.nrunning++;
  return 0;
}

/* Send `sig` to every rank's process group that may still have members. */
static void signal_groups(int sig) {
  for (int i = 0; i < g.nstarted; i++) {
    rank *r = &g.ranks[i];
    if (!r->group_alive) continue;
    if (kill(-r->pid, sig) < 0 && errno == ESRCH) {
      if (r->running) kill(r->pid, sig);
      else r->group_alive = 0;
    }
  }
}

static void start_stop(void) {
  if (g.stopping) return;
  g.stopping = 1;
  g.term_deadline = now_ms() + g.grace_ms;
  signal_groups(SIGTERM);
  signal_groups(SIGCONT);   /* a stopped process could not act on SIGTERM */
}

static void kill_all(void) {
  if (g.killed) return;
  g.stopping = g.killed = 1;
  g.giveup_deadline = now_ms() + GIVEUP_MS;
  signal_groups(SIGKILL);
}

/* ------------------------------------------------------------ --tag-output */

/* Pass on the complete lines of `s` (all of it when `flush`), each prefixed. */
static void stream_emit(stream *s, int rank_no, int flush) {
  static char *out;
  static size_t out_cap;
  char prefix[24];
  int plen = snprintf(prefix, sizeof prefix, "[%d] ", rank_no);
  size_t start = 0, n = 0;
  for (;;) {
    char *nl = memchr(s->buf + start, '\n', s->len - start);
    size_t end = nl ? (size_t)(nl - s->buf) + 1 : s->len;
    if (!nl && (!flush || start == s->len)) break;
    size_t need = n + (size_t)plen + (end - start) + 1;
    if (need > out_cap) {
      size_t cap = out_cap ? out_cap : 4096;
      while (cap < need) cap *= 2;
      char *p = realloc(out, cap);
      if (!p) { msg("out of memory"); exit(1); }
      out = p;
      out_cap = cap;
    }
    memcpy(out + n, prefix, (size_t)plen);
    memcpy(out + n + (size_t)plen, s->buf + start, end - start);
    n += (size_t)plen + (end - start);
    if (!nl) out[n++] = '\n';                  /* a partial line at EOF */
    start = end;
  }
  if (n) emit(s->out_fd, out, n);
  memmove(s->buf, s->buf + start, s->len - start);
  s->len -= start;
}

/* Read what the pipe holds: one read, or when `drain` until empty (at most
 * 256 reads: a rank's child may keep writing). */
static void stream_pump(stream *s, int rank_no, int drain) {
  for (int reads = 0; s->fd >= 0 && reads < 256; reads++) {
    if (s->cap - s->len < 4096 && s->cap < LINE_MAX_BYTES) {
      size_t cap = s->cap ? s->cap * 2 : 8192;
      char *p = realloc(s->buf, cap);
      if (!p) { msg("out of memory"); exit(1); }
      s->buf = p;
      s->cap = cap;
    }
    ssize_t n = read(s->fd, s->buf + s->len, s->cap - s->len);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN) return;
    if (n <= 0) {                               /* EOF, or an error: done */
      if (n < 0) msg("read output of rank %d: %s", rank_no, strerror(errno));
      stream_emit(s, rank_no, 1);
      close(s->fd);
      s->fd = -1;
      return;
    }
    s->len += (size_t)n;
    stream_emit(s, rank_no, s->len == LINE_MAX_BYTES);  /* full: cut the line */
    if (!drain) return;
  }
}

/* ------------------------------------------------------------ supervision */

static void rank_exited(rank *r, int local, int status) {
  int global = g.node_rank * g.nproc + local;
  r->running = 0;
  g.nrunning--;
  for (int k = 0; k < 2; k++) stream_pump(&r->io[k], global, 1);  /* its last words first */
  /* Only the first failure counts; after a failure of ccrun itself the ranks
   * die of our SIGTERM, which is no news. */
  if ((WIFEXITED(status) && WEXITSTATUS(status) == 0) || g.first_fail_status >= 0 ||
      g.setup_failed)
    return;
  if (WIFEXITED(status)) {
    g.first_fail_status = WEXITSTATUS(status);
    msg("rank %d (pid %d) exited with status %d", global, (int)r->pid, g.first_fail_status);
  } else {
    g.first_fail_status = 128 + WTERMSIG(status);
    msg("rank %d (pid %d) was killed by signal %s", global, (int)r->pid,
        sig_name(WTERMSIG(status)));
  }
  start_stop();
}

/* Reap every child that has exited: ranks, and (as subreaper) orphans of ranks. */
static void reap(void) {
  for (;;) {
    int status;
    pid_t pid = waitpid(-1, &status, WNOHANG);
    if (pid < 0 && errno == EINTR) continue;
    if (pid <= 0) return;
    for (int i = 0; i < g.nstarted; i++)
      if (g.ranks[i].pid == pid && g.ranks[i].running) {
        rank_exited(&g.ranks[i], i, status);
        break;
      }
  }
}

static void on_signal(int sig) {
  if (sig == SIGCHLD) { reap(); return; }
  if (sig == SIGINT || sig == SIGTERM || sig == SIGHUP || sig == SIGQUIT)
    g.stop_signal = sig;
  if (sig == SIGINT) {
    int64_t t = now_ms();
    int again = g.last_sigint && t - g.last_sigint <= g.grace_ms;
    g.last_sigint = t;
    if (again || g.stopping) {
      msg("second SIGINT: killing every rank");
      kill_all();
      return;
    }
  }
  signal_groups(sig);
}

static void read_signals(void) {
  struct signalfd_siginfo si;
  for (;;) {
    ssize_t n = read(g.sigfd, &si, sizeof si);
    if (n < 0 && errno == EINTR) continue;
    if (n != (ssize_t)sizeof si) return;      /* EAGAIN: none left */
    on_signal((int)si.ssi_signo);
  }
}

/* Is any rank's process group still populated? Forgets the empty ones. */
static int groups_alive(void) {
  int alive = 0;
  for (int i = 0; i < g.nstarted; i++) {
    rank *r = &g.ranks[i];
    if (r->group_alive && kill(-r->pid, 0) < 0 && errno == ESRCH) r->group_alive = 0;
    alive |= r->group_alive;
  }
  return alive;
}

static int streams_open(void) {
  for (int i = 0; i < g.nstarted; i++)
    if (g.ranks[i].io[0].fd >= 0 || g.ranks[i].io[1].fd >= 0) return 1;
  return 0;
}

static int64_t min_timeout(int64_t cur, int64_t deadline, int64_t t) {
  int64_t left = deadline > t ? deadline - t : 0;
  return cur < 0 || left < cur ? left : cur;
}

static void supervise(void) {
  struct pollfd *pfd = calloc((size_t)(1 + 2 * g.nstarted), sizeof *pfd);
  int *owner = calloc((size_t)(1 + 2 * g.nstarted), sizeof *owner);  /* 2*rank+stream */
  int64_t drain_deadline = -1;
  if (!pfd || !owner) { msg("out of memory"); exit(1); }
  for (;;) {
    int64_t t = now_ms(), timeout = -1;
    reap();
    if (g.nrunning == 0) {
      if (groups_alive()) {
        start_stop();                          /* leftovers in a rank's group */
        timeout = 50;
      } else {
        if (drain_deadline < 0) drain_deadline = t + DRAIN_MS;
        if (!streams_open() || t >= drain_deadline) break;
        timeout = min_timeout(timeout, drain_deadline, t);
      }
    }
    if (g.stopping && !g.killed) {
      if (t >= g.term_deadline) kill_all();
      else timeout = min_timeout(timeout, g.term_deadline, t);
    }
    if (g.killed) {
      if (t >= g.giveup_deadline) {
        for (int i = 0; i < g.nstarted; i++)
          if (g.ranks[i].running)
            msg("rank %d (pid %d) did not exit after SIGKILL; leaving it",
                g.node_rank * g.nproc + i, (int)g.ranks[i].pid);
        break;
      }
      timeout = min_timeout(timeout, g.giveup_deadline, t);
    }
    int n = 0;
    pfd[n].fd = g.sigfd;
    pfd[n++].events = POLLIN;
    for (int i = 0; i < g.nstarted; i++)
      for (int k = 0; k < 2; k++)
        if (g.ranks[i].io[k].fd >= 0) {
          owner[n] = 2 * i + k;
          pfd[n].fd = g.ranks[i].io[k].fd;
          pfd[n++].events = POLLIN;
        }
    int ready = poll(pfd, (nfds_t)n, (int)timeout);
    if (ready < 0) {
      if (errno == EINTR) continue;
      msg("poll: %s", strerror(errno));
      g.setup_failed = 1;
      kill_all();
      continue;
    }
    for (int j = 1; j < n; j++)
      if (pfd[j].revents) {
        int local = owner[j] / 2;
        stream_pump(&g.ranks[local].io[owner[j] % 2], g.node_rank * g.nproc + local, 0);
      }
    if (pfd[0].revents) read_signals();
  }
  /* Whatever is still readable, then close (a process outside the ranks'
   * groups may hold a pipe open forever). */
  for (int i = 0; i < g.nstarted; i++)
    for (int k = 0; k < 2; k++) {
      stream *s = &g.ranks[i].io[k];
      if (s->fd < 0) continue;
      stream_pump(s, g.node_rank * g.nproc + i, 1);
      if (s->fd >= 0) {
        stream_emit(s, g.node_rank * g.nproc + i, 1);
        close(s->fd);
        s->fd = -1;
      }
    }
  free(pfd);
  free(owner);
}

/* Remove /dev/shm/cc-<job id>* that ranks did not unlink (a rank killed during
 * start-up). Names are collected first: unlinking while reading a directory
 * may skip entries. */
static void cleanup_shm(void) {
  char prefix[40], path[300];
  char (*names)[256] = NULL;
  size_t count = 0, cap = 0;
  if (!g.job_id[0]) return;
  snprintf(prefix, sizeof prefix, "cc-%s", g.job_id);
  DIR *d = opendir("/dev/shm");
  if (!d) return;                               /* no /dev/shm: nothing to leak */
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    if (strncmp(e->d_name, prefix, strlen(prefix)) != 0) continue;
    if (count == cap) {
      cap = cap ? cap * 2 : 16;
      void *p = realloc(names, cap * sizeof *names);
      if (!p) break;
      names = p;
    }
    snprintf(names[count++], sizeof names[0], "%s", e->d_name);
  }
  closedir(d);
  for (size_t i = 0; i < count; i++) {
    snprintf(path, sizeof path, "/dev/shm/%s", names[i]);
    if (unlink(path) < 0 && errno != ENOENT) msg("unlink %s: %s", path, strerror(errno));
  }
  free(names);
}

int main(int argc, char **argv) {
  sigset_t mask;
  struct sigaction ign;
  static const int forwarded[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2};

  /* fds 0..2 open, so no pipe or signalfd lands on them */
  for (int fd = 0; fd < 3; fd++)
    if (fcntl(fd, F_GETFD) < 0 && open("/dev/null", O_RDWR) < 0) return 1;
  parse_args(argc, argv);
  g.self = getpid();
  g.first_fail_status = -1;
  setup_env();

  /* Signals arrive through a signalfd: blocked here, read in the poll loop.
   * Blocked before the first fork so none is lost; children unblock. */
  sigemptyset(&mask);
  sigaddset(&mask, SIGCHLD);
  for (size_t i = 0; i < sizeof forwarded / sizeof forwarded[0]; i++)
    sigaddset(&mask, forwarded[i]);
  if (sigprocmask(SIG_BLOCK, &mask, &g.old_mask) < 0) {
    msg("sigprocmask: %s", strerror(errno));
    return 1;
  }
  g.sigfd = signalfd(-1, &mask, SFD_NONBLOCK | SFD_CLOEXEC);
  if (g.sigfd < 0) { msg("signalfd: %s", strerror(errno)); return 1; }
  memset(&ign, 0, sizeof ign);
  ign.sa_handler = SIG_IGN;
  sigaction(SIGPIPE, &ign, &g.old_pipe);        /* a closed stdout is EPIPE, not death */

  /* Orphaned children of ranks are reparented to us, so we reap them. */
  if (prctl(PR_SET_CHILD_SUBREAPER, 1) != 0) msg("prctl subreaper: %s", strerror(errno));

  /* --tag-output holds two pipes per rank: raise the soft fd limit if needed
   * (the ranks get the original one back). */
  if (g.tag_output && getrlimit(RLIMIT_NOFILE, &g.old_nofile) == 0 &&
      g.old_nofile.rlim_cur != RLIM_INFINITY &&
      g.old_nofile.rlim_cur < (rlim_t)(2 * g.nproc + 64)) {
    struct rlimit more = g.old_nofile;
    more.rlim_cur = more.rlim_max;
    g.raised_nofile = setrlimit(RLIMIT_NOFILE, &more) == 0;
  }

  g.ranks = calloc((size_t)g.nproc, sizeof *g.ranks);
  if (!g.ranks) { msg("out of memory"); return 1; }
  for (int i = 0; i < g.nproc; i++) {
    if (start_rank(i) < 0) {
      g.setup_failed = 1;
      start_stop();
      break;
    }
  }
  supervise();
  cleanup_shm();

  if (g.first_fail_status >= 0) return g.first_fail_status;
  if (g.setup_failed) return 1;
  if (g.stop_signal) return 128 + g.stop_signal;
  return 0;
}
