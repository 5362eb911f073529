/* SPDX-License-Identifier: BSD-3-Clause */
/* sandbox.c -- the seccomp-bpf allow-list and Landlock ruleset behind
 * "Sandbox 1" (see sandbox.h). The only user of <seccomp.h>.
 *
 * Design:
 *  - The list of system calls is data (allowed[]), resolved by name with
 *    libseccomp, so that a name unknown on this architecture is skipped
 *    instead of breaking the build; calls that take flags or families are
 *    added with argument conditions below it. Anything else traps: the
 *    kernel sends SIGSYS, whose handler uses only write() and _exit()
 *    (allowed) to log the call's number and stop. Another architecture's
 *    system calls (i386 on x86_64) kill the process (libseccomp's default
 *    for a foreign architecture).
 *  - seccomp filters compare numbers, not the strings a pointer argument
 *    points to, so paths are left to Landlock, which restricts them by
 *    file hierarchy. Its rights are masked down to what the running
 *    kernel's ABI knows (1: base, 2: REFER, 3: TRUNCATE, 5: IOCTL_DEV),
 *    and a file (not a directory) gets only file rights, as Landlock
 *    requires. A kernel without Landlock is reported, not fatal: the
 *    system-call filter is the sandbox's main part.
 *  - open/openat themselves are allowed by seccomp (their path is
 *    Landlock's business), and so is exit_group, which the SIGSYS handler
 *    needs. Order: Landlock (its own system calls would not be on the
 *    list), the handler, then the filter.
 */
#include "config.h"

#include "lib/sandbox/sandbox.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <linux/landlock.h>

#ifdef HAVE_SECCOMP
#include <linux/netlink.h>
#include <linux/sockios.h>
#include <sched.h>
#include <seccomp.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <termios.h>
#endif

#include "lib/log/log.h"
#include "lib/malloc/alloc.h"

typedef struct {
  char *path;
  int write;
} sandbox_rule_t;

struct sandbox_cfg_t {
  sandbox_rule_t *rules;
  int n, cap;
};

static int sandbox_active;

sandbox_cfg_t *
sandbox_cfg_new(void)
{
  return pc_zalloc(sizeof(sandbox_cfg_t));
}

void
sandbox_cfg_free_(sandbox_cfg_t *cfg)
{
  if (!cfg)
    return;
  for (int i = 0; i < cfg->n; i++)
    free(cfg->rules[i].path);
  free(cfg->rules);
  free(cfg);
}

static void
cfg_add(sandbox_cfg_t *cfg, const char *path, int write)
{
  if (!path || !*path)
    return;
  if (cfg->n == cfg->cap) {
    cfg->cap = cfg->cap ? cfg->cap * 2 : 16;
    cfg->rules = pc_realloc(cfg->rules, cfg->cap * sizeof(*cfg->rules));
  }
  cfg->rules[cfg->n].path = pc_strdup(path);
  cfg->rules[cfg->n].write = write;
  cfg->n++;
}

void
sandbox_cfg_allow_read(sandbox_cfg_t *cfg, const char *path)
{
  cfg_add(cfg, path, 0);
}

void
sandbox_cfg_allow_write(sandbox_cfg_t *cfg, const char *path)
{
  cfg_add(cfg, path, 1);
}

int
sandbox_is_active(void)
{
  return sandbox_active;
}

/* ---- Landlock ---- */

#ifndef __NR_landlock_create_ruleset
#define __NR_landlock_create_ruleset 444
#define __NR_landlock_add_rule 445
#define __NR_landlock_restrict_self 446
#endif
#ifndef LANDLOCK_ACCESS_FS_REFER
#define LANDLOCK_ACCESS_FS_REFER (1ULL << 13)
#endif
#ifndef LANDLOCK_ACCESS_FS_TRUNCATE
#define LANDLOCK_ACCESS_FS_TRUNCATE (1ULL << 14)
#endif
#ifndef LANDLOCK_ACCESS_FS_IOCTL_DEV
#define LANDLOCK_ACCESS_FS_IOCTL_DEV (1ULL << 15)
#endif

#define LL_FILE_READ (LANDLOCK_ACCESS_FS_READ_FILE)
#define LL_FILE_WRITE \
  (LANDLOCK_ACCESS_FS_WRITE_FILE | LANDLOCK_ACCESS_FS_TRUNCATE)
#define LL_DIR_READ (LL_FILE_READ | LANDLOCK_ACCESS_FS_READ_DIR)
#define LL_DIR_WRITE                                                      \
  (LL_FILE_WRITE | LANDLOCK_ACCESS_FS_REMOVE_DIR |                        \
   LANDLOCK_ACCESS_FS_REMOVE_FILE | LANDLOCK_ACCESS_FS_MAKE_DIR |         \
   LANDLOCK_ACCESS_FS_MAKE_REG | LANDLOCK_ACCESS_FS_MAKE_SYM |            \
   LANDLOCK_ACCESS_FS_REFER)
/* Everything Landlock can restrict on files (up to ABI 5). */
#define LL_ALL                                                            \
  (LL_DIR_READ | LL_DIR_WRITE | LANDLOCK_ACCESS_FS_EXECUTE |              \
   LANDLOCK_ACCESS_FS_MAKE_CHAR | LANDLOCK_ACCESS_FS_MAKE_SOCK |          \
   LANDLOCK_ACCESS_FS_MAKE_FIFO | LANDLOCK_ACCESS_FS_MAKE_BLOCK |         \
   LANDLOCK_ACCESS_FS_IOCTL_DEV)

static uint64_t
landlock_mask(int abi)
{
  uint64_t m = LL_ALL;
  if (abi < 2)
    m &= ~LANDLOCK_ACCESS_FS_REFER;
  if (abi < 3)
    m &= ~LANDLOCK_ACCESS_FS_TRUNCATE;
  if (abi < 5)
    m &= ~LANDLOCK_ACCESS_FS_IOCTL_DEV;
  return m;
}

/* Returns 1 (installed), 0 (no Landlock here: *note_out), -1 (*err_out). */
static int
landlock_install(const sandbox_cfg_t *cfg, char **note_out, char **err_out)
{
  long abi = syscall(__NR_landlock_create_ruleset, NULL, 0,
                     LANDLOCK_CREATE_RULESET_VERSION);
  if (abi < 1) {
    *note_out = pc_asprintf("the kernel has no Landlock (%s), so file "
                            "access is not restricted by path; the "
                            "system-call filter applies",
                            strerror(errno));
    return 0;
  }
  uint64_t mask = landlock_mask((int)abi);
  struct landlock_ruleset_attr attr;
  memset(&attr, 0, sizeof(attr));
  attr.handled_access_fs = mask;
  int rfd = (int)syscall(__NR_landlock_create_ruleset, &attr,
                         sizeof(attr.handled_access_fs), 0);
  if (rfd < 0) {
    *err_out = pc_asprintf("Landlock: creating the ruleset failed: %s",
                           strerror(errno));
    return -1;
  }
  for (int i = 0; i < cfg->n; i++) {
    const sandbox_rule_t *r = &cfg->rules[i];
    int fd = open(r->path, O_PATH | O_CLOEXEC);
    if (fd < 0)
      continue; /* a path that does not exist grants nothing */
    struct stat st;
    if (fstat(fd, &st) < 0) {
      close(fd);
      continue;
    }
    uint64_t want = S_ISDIR(st.st_mode) ? (r->write ? LL_DIR_READ | LL_DIR_WRITE
                                                    : LL_DIR_READ)
                                        : (r->write ? LL_FILE_READ | LL_FILE_WRITE
                                                    : LL_FILE_READ);
    if (!S_ISDIR(st.st_mode) && S_ISCHR(st.st_mode) && r->write)
      want |= LANDLOCK_ACCESS_FS_IOCTL_DEV;
    struct landlock_path_beneath_attr pb;
    memset(&pb, 0, sizeof(pb));
    pb.parent_fd = fd;
    pb.allowed_access = want & mask;
    long rr = syscall(__NR_landlock_add_rule, rfd, LANDLOCK_RULE_PATH_BENEATH,
                      &pb, 0);
    int e = errno;
    close(fd);
    if (rr < 0) {
      *err_out = pc_asprintf("Landlock: allowing %s failed: %s", r->path,
                             strerror(e));
      close(rfd);
      return -1;
    }
  }
  long rr = syscall(__NR_landlock_restrict_self, rfd, 0);
  int e = errno;
  close(rfd);
  if (rr < 0) {
    *err_out = pc_asprintf("Landlock: restricting the process failed: %s",
                           strerror(e));
    return -1;
  }
  return 1;
}

#ifdef HAVE_SECCOMP

/* ---- the system-call filter ---- */

/* Allowed whatever their arguments. open/openat/rename/unlink are here:
 * Landlock decides on their paths. */
static const char *const allowed[] = {
    /* memory, time, identity, process */
    "brk", "munmap", "mremap", "madvise", "mlock", "munlock", "membarrier",
    "futex", "set_robust_list", "get_robust_list", "rseq",
    "set_tid_address", "sched_yield", "sched_getaffinity", "getpid",
    "gettid", "getppid", "getuid", "geteuid", "getgid", "getegid",
    "getresuid", "getresgid", "getgroups", "getrandom", "clock_gettime",
    "clock_getres", "clock_nanosleep", "gettimeofday", "time", "nanosleep",
    "uname", "sysinfo", "getrusage", "getrlimit", "times", "getpriority",
    "umask", "getcwd", "exit", "exit_group", "restart_syscall",
    "rt_sigaction", "rt_sigprocmask", "rt_sigreturn", "rt_sigpending",
    "rt_sigtimedwait", "sigaltstack",
    /* file descriptors and files (paths: Landlock) */
    "read", "write", "readv", "writev", "pread64", "pwrite64", "preadv",
    "pwritev", "close", "close_range", "dup", "dup2", "dup3", "fcntl",
    "fcntl64", "lseek", "_llseek", "fstat", "fstat64", "stat", "stat64",
    "lstat", "lstat64", "newfstatat", "fstatat64", "statx", "statfs",
    "fstatfs", "open", "openat", "creat", "access", "faccessat",
    "faccessat2", "readlink", "readlinkat", "getdents", "getdents64",
    "mkdir", "mkdirat", "rmdir", "unlink", "unlinkat", "rename", "renameat",
    "renameat2", "fsync", "fdatasync", "ftruncate", "ftruncate64",
    "fchmod", "utimensat", "futimesat", "flock", "fadvise64",
    "sendfile", "pipe", "pipe2", "eventfd", "eventfd2", "timerfd_create",
    "timerfd_settime", "timerfd_gettime", "inotify_init1",
    "inotify_add_watch", "inotify_rm_watch",
    /* event loop */
    "epoll_create", "epoll_create1", "epoll_ctl", "epoll_wait",
    "epoll_pwait", "epoll_pwait2", "poll", "ppoll", "select", "_newselect",
    "pselect6",
    /* sockets (socket itself: families below) */
    "bind", "listen", "accept", "accept4", "connect", "getsockname",
    "getpeername", "getsockopt", "setsockopt", "sendto", "recvfrom",
    "sendmsg", "recvmsg", "sendmmsg", "recvmmsg", "shutdown",
};

/* ioctls pctor and its libraries make: bytes waiting (KIST, DNS),
 * non-blocking mode, isatty. */
static const unsigned long allowed_ioctls[] = {
    FIONREAD, FIONBIO, TIOCOUTQ, TCGETS, TIOCGWINSZ,
#ifdef SIOCOUTQNSD
    SIOCOUTQNSD,
#endif
};

static const int allowed_prctls[] = {
    PR_SET_DUMPABLE, PR_GET_DUMPABLE, PR_SET_NAME, PR_GET_NAME,
    PR_GET_NO_NEW_PRIVS, PR_SET_NO_NEW_PRIVS, PR_CAPBSET_READ,
    PR_GET_SECCOMP,
#ifdef PR_SET_VMA
    PR_SET_VMA,
#endif
};

static void
on_sigsys(int sig, siginfo_t *si, void *ctx)
{
  (void)sig;
  (void)ctx;
  char msg[128];
  static const char head[] = "[err] Sandbox: pctor made the forbidden "
                             "system call number ";
  size_t n = sizeof(head) - 1;
  memcpy(msg, head, n);
  char num[24];
  int k = 0;
  unsigned v = si ? (unsigned)si->si_syscall : 0;
  do {
    num[k++] = (char)('0' + v % 10);
    v /= 10;
  } while (v && k < (int)sizeof(num));
  while (k > 0)
    msg[n++] = num[--k];
  static const char tail[] = " (see Sandbox in pctor(1)); exiting.\n";
  memcpy(msg + n, tail, sizeof(tail) - 1);
  n += sizeof(tail) - 1;
  log_write_sigsafe(msg, n);
  _exit(1);
}

static int
rule(scmp_filter_ctx ctx, uint32_t action, const char *name,
     unsigned n_args, const struct scmp_arg_cmp *args, char **err_out)
{
  int nr = seccomp_syscall_resolve_name(name);
  if (nr == __NR_SCMP_ERROR)
    return 0; /* not a system call on this architecture */
  int r = seccomp_rule_add_array(ctx, action, nr, n_args, args);
  if (r < 0) {
    *err_out = pc_asprintf("seccomp: adding a rule for %s failed: %s",
                           name, strerror(-r));
    return -1;
  }
  return 0;
}

static int
rule1(scmp_filter_ctx ctx, const char *name, struct scmp_arg_cmp a,
      char **err_out)
{
  return rule(ctx, SCMP_ACT_ALLOW, name, 1, &a, err_out);
}

static int
add_rules(scmp_filter_ctx ctx, char **err_out)
{
  for (size_t i = 0; i < sizeof(allowed) / sizeof(allowed[0]); i++)
    if (rule(ctx, SCMP_ACT_ALLOW, allowed[i], 0, NULL, err_out) < 0)
      return -1;
  for (size_t i = 0; i < sizeof(allowed_ioctls) / sizeof(allowed_ioctls[0]);
       i++)
    if (rule1(ctx, "ioctl", SCMP_A1(SCMP_CMP_EQ, allowed_ioctls[i]),
              err_out) < 0)
      return -1;
  for (size_t i = 0; i < sizeof(allowed_prctls) / sizeof(allowed_prctls[0]);
       i++)
    if (rule1(ctx, "prctl", SCMP_A0(SCMP_CMP_EQ, (scmp_datum_t)allowed_prctls[i]),
              err_out) < 0)
      return -1;
  /* Sockets of the families and types pctor uses (no raw IP sockets,
   * whatever the capabilities); netlink only to list addresses
   * (getifaddrs) and to see whether the kernel does IPsec. */
  static const int families[] = {AF_UNIX, AF_INET, AF_INET6};
  static const int types[] = {SOCK_STREAM, SOCK_DGRAM};
  for (size_t i = 0; i < sizeof(families) / sizeof(families[0]); i++)
    for (size_t j = 0; j < sizeof(types) / sizeof(types[0]); j++) {
      struct scmp_arg_cmp a[2] = {
          SCMP_A0(SCMP_CMP_EQ, (scmp_datum_t)families[i]),
          SCMP_A1(SCMP_CMP_MASKED_EQ, 0xf, (scmp_datum_t)types[j])};
      if (rule(ctx, SCMP_ACT_ALLOW, "socket", 2, a, err_out) < 0)
        return -1;
    }
  static const int netlinks[] = {NETLINK_ROUTE, NETLINK_XFRM};
  for (size_t i = 0; i < sizeof(netlinks) / sizeof(netlinks[0]); i++) {
    struct scmp_arg_cmp a[2] = {
        SCMP_A0(SCMP_CMP_EQ, AF_NETLINK),
        SCMP_A2(SCMP_CMP_EQ, (scmp_datum_t)netlinks[i])};
    if (rule(ctx, SCMP_ACT_ALLOW, "socket", 2, a, err_out) < 0)
      return -1;
  }
  if (rule1(ctx, "socketpair", SCMP_A0(SCMP_CMP_EQ, AF_UNIX), err_out) < 0)
    return -1;
  /* Never writable and executable at once. */
  static const scmp_datum_t prots[] = {0, PROT_WRITE, PROT_EXEC};
  for (size_t i = 0; i < 3; i++) {
    struct scmp_arg_cmp a =
        SCMP_A2(SCMP_CMP_MASKED_EQ, PROT_WRITE | PROT_EXEC, prots[i]);
    if (rule1(ctx, "mmap", a, err_out) < 0 ||
        rule1(ctx, "mmap2", a, err_out) < 0 ||
        rule1(ctx, "mprotect", a, err_out) < 0)
      return -1;
  }
  /* Threads, not processes; clone3's flags are in memory seccomp cannot
   * read, so it fails and the C library falls back to clone. */
  if (rule1(ctx, "clone", SCMP_A0(SCMP_CMP_MASKED_EQ, CLONE_THREAD,
                                  CLONE_THREAD), err_out) < 0 ||
      rule(ctx, SCMP_ACT_ERRNO(ENOSYS), "clone3", 0, NULL, err_out) < 0)
    return -1;
  /* Signals to ourselves only (raise, abort), and signal 0 to anyone
   * (is __OwningControllerProcess still alive?). */
  scmp_datum_t self = (scmp_datum_t)getpid();
  if (rule1(ctx, "kill", SCMP_A0(SCMP_CMP_EQ, self), err_out) < 0 ||
      rule1(ctx, "kill", SCMP_A1(SCMP_CMP_EQ, 0), err_out) < 0 ||
      rule1(ctx, "tgkill", SCMP_A0(SCMP_CMP_EQ, self), err_out) < 0)
    return -1;
  /* Reading resource limits, not changing them. */
  if (rule1(ctx, "prlimit64", SCMP_A2(SCMP_CMP_EQ, 0), err_out) < 0)
    return -1;
  return 0;
}

int
sandbox_is_supported(void)
{
  return 1;
}

int
sandbox_install(const sandbox_cfg_t *cfg, char **note_out, char **err_out)
{
  *note_out = NULL;
  if (sandbox_active) {
    *err_out = pc_strdup("the sandbox is already installed");
    return -1;
  }
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0) {
    *err_out = pc_asprintf("prctl(PR_SET_NO_NEW_PRIVS) failed: %s",
                           strerror(errno));
    return -1;
  }
  if (landlock_install(cfg, note_out, err_out) < 0)
    return -1;

  struct sigaction sa;
  memset(&sa, 0, sizeof(sa));
  sa.sa_sigaction = on_sigsys;
  sa.sa_flags = SA_SIGINFO;
  sigemptyset(&sa.sa_mask);
  if (sigaction(SIGSYS, &sa, NULL) < 0) {
    *err_out = pc_asprintf("installing the SIGSYS handler failed: %s",
                           strerror(errno));
    return -1;
  }
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGSYS);
  sigprocmask(SIG_UNBLOCK, &set, NULL);

  scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_TRAP);
  if (!ctx) {
    *err_out = pc_strdup("seccomp_init failed");
    return -1;
  }
  if (add_rules(ctx, err_out) < 0) {
    seccomp_release(ctx);
    return -1;
  }
  /* Every thread that already exists, not only the calling one (pctor
   * starts its workers afterwards, for Landlock's sake, see sandbox.h;
   * this keeps the filter whole should a thread exist anyway). */
  int r = seccomp_attr_set(ctx, SCMP_FLTATR_CTL_TSYNC, 1);
  if (r < 0) {
    seccomp_release(ctx);
    *err_out = pc_asprintf("cannot apply the seccomp filter to every "
                           "thread (TSYNC): %s", strerror(-r));
    return -1;
  }
  r = seccomp_load(ctx);
  seccomp_release(ctx);
  if (r < 0) {
    *err_out = pc_asprintf("loading the seccomp filter failed: %s",
                           strerror(-r));
    return -1;
  }
  sandbox_active = 1;
  return 0;
}

#else /* !HAVE_SECCOMP */

int
sandbox_is_supported(void)
{
  return 0;
}

int
sandbox_install(const sandbox_cfg_t *cfg, char **note_out, char **err_out)
{
  (void)cfg;
  (void)landlock_install;
  *note_out = NULL;
  *err_out = pc_strdup("Sandbox 1 is not supported in this build (pctor "
                       "was built without libseccomp; on Debian: apt-get "
                       "install libseccomp-dev, then configure and build "
                       "again)");
  return -1;
}

#endif
