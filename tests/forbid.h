/* forbid.h - what a sandbox may do to a rank, for the tests that need it: a
 * seccomp filter under which one system call fails with ENOSYS from now on,
 * in every thread of this process and in the processes it starts. */
#ifndef FORBID_H_INCLUDED
#define FORBID_H_INCLUDED

#include <errno.h>
#include <stddef.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <linux/filter.h>
#include <linux/seccomp.h>

/* 0, or -1 with errno when the filter cannot be installed. */
static inline int tu_forbid_syscall(long nr) {
#ifdef SYS_seccomp
  struct sock_filter f[4];
  struct sock_fprog prog;
  f[0] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr));
  f[1] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (unsigned)nr, 0, 1);
  f[2] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | ENOSYS);
  f[3] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
  prog.len = 4;
  prog.filter = f;
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) return -1;
  return (int)syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_TSYNC, &prog);
#else
  (void)nr;
  errno = ENOSYS;
  return -1;
#endif
}

#endif /* FORBID_H_INCLUDED */
