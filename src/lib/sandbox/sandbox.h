/* SPDX-License-Identifier: BSD-3-Clause */
/* sandbox.h -- tor's "Sandbox 1" for pctor: a seccomp-bpf allow-list of
 * the system calls the daemon makes once it runs, and a Landlock ruleset
 * restricting which paths it may still open.
 *
 * The caller (src/app) installs it once, after everything that needs
 * privileges or arbitrary files is done (keys read, ports bound, user
 * switched). From then on:
 *  - a system call not on the list (execve, ptrace, fork, mount, bpf,
 *    setuid, ...) raises SIGSYS; the handler writes one line naming the
 *    call to the log files (signal-safe) and the process exits with
 *    status 1;
 *  - sockets may only be AF_UNIX, AF_INET, AF_INET6 (stream and
 *    datagram) and AF_NETLINK (route and XFRM); memory may never be writable and executable at
 *    once; ioctl, prctl, clone and kill are limited to what pctor uses;
 *  - files (kernel with Landlock) may be read only beneath the paths given
 *    with sandbox_cfg_allow_read() and written, created, renamed and
 *    removed only beneath those given with sandbox_cfg_allow_write().
 *    Without Landlock in the kernel the seccomp part still applies and
 *    sandbox_install() says so through *note_out.
 * Nothing can remove either part. The seccomp filter applies to every
 * thread of the process, even those that exist already (TSYNC); the
 * Landlock ruleset only to the calling thread and the threads it creates
 * afterwards (the kernel has no way to impose it on running threads), so
 * install the sandbox before starting worker threads.
 * Without libseccomp at build time sandbox_is_supported() is 0 and
 * sandbox_install() fails with "not supported in this build".
 */
#ifndef PCTOR_LIB_SANDBOX_SANDBOX_H
#define PCTOR_LIB_SANDBOX_SANDBOX_H

typedef struct sandbox_cfg_t sandbox_cfg_t;

sandbox_cfg_t *sandbox_cfg_new(void);
void sandbox_cfg_free_(sandbox_cfg_t *cfg);
#define sandbox_cfg_free(p) \
  do {                      \
    sandbox_cfg_free_(p);   \
    (p) = NULL;             \
  } while (0)

/* Allow reading the file, or everything beneath the directory, at path.
 * A path that does not exist when the sandbox is installed is skipped. */
void sandbox_cfg_allow_read(sandbox_cfg_t *cfg, const char *path);
/* Allow reading, writing, creating, renaming and removing beneath the
 * directory path (or writing the file path). */
void sandbox_cfg_allow_write(sandbox_cfg_t *cfg, const char *path);

/* 1 if this build can install the sandbox (libseccomp), else 0. */
int sandbox_is_supported(void);

/* Install the sandbox for the whole process (sets PR_SET_NO_NEW_PRIVS
 * first). Returns 0 (with *note_out, to be freed, when something could
 * not be restricted, e.g. no Landlock in the kernel), or -1 with *err_out.
 * After a failure part of the sandbox may be in place. */
int sandbox_install(const sandbox_cfg_t *cfg, char **note_out,
                    char **err_out);

/* 1 once sandbox_install() succeeded in this process. */
int sandbox_is_active(void);

#endif
