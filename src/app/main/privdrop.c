/* SPDX-License-Identifier: BSD-3-Clause */
/* privdrop.c -- the User option: hand DataDirectory over, switch user,
 * drop every capability, and verify (see privdrop.h).
 *
 * Before start-up (privdrop_fs_as_user()): root without CAP_DAC_OVERRIDE
 * (the bounding set of pctor's systemd units, as narrow as tor's) cannot
 * open the user's files, so start-up opens them with the user's
 * file-system ids; it creates no file of root's, and step 1 below then
 * finds nothing to hand over. With CAP_DAC_OVERRIDE (root from a shell),
 * start-up creates its files as root and step 1 hands them over.
 *
 * Order matters:
 *  1. chown DataDirectory while still root, and the log files this run
 *     created (lib/log knows which; files that existed are left alone,
 *     so "Log ... file /var/log/syslog" never changes hands). The
 *     DataDirectory walk never follows a symlink and never opens a file
 *     for reading: every entry is opened with O_PATH|O_NOFOLLOW relative to its already-open parent, checked
 *     with fstat and changed with fchownat(AT_EMPTY_PATH), so a user who
 *     can write into the directory cannot redirect the chown elsewhere by
 *     swapping in a symlink. It stays on the directory's file system and
 *     only touches entries owned by the starting user (pctor's own files),
 *     leaving files of other users alone. It changes only directories
 *     and regular files with a single link (a hard link planted by the
 *     user could name any file of root's on the same file system).
 *  2. Drop the capability bounding set while we still have CAP_SETPCAP
 *     (where the kernel or container does not allow it, we say so and go
 *     on: the uid switch below already empties the other sets), and clear
 *     the ambient set.
 *  3. initgroups, then setresgid, then setresuid (gid first: once the uid
 *     is not 0 we could no longer change groups). PR_SET_KEEPCAPS is off,
 *     so the kernel clears permitted and effective capabilities at the
 *     uid switch; we clear them (and the inheritable set) explicitly too.
 *  4. Verify: setuid(0)/setgid(0) must fail, all of real/effective/saved
 *     ids must be the user's, and no capability may remain.
 *  5. PR_SET_NO_NEW_PRIVS (privdrop_no_new_privs(), called by main after
 *     the switch, and without User too): no exec can raise privileges
 *     again.
 */
#include "app/main/privdrop.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <stdlib.h>
#include <string.h>
#include <sys/capability.h>
#include <sys/fsuid.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include "lib/fs/files.h"
#include "lib/log/log.h"
#include "lib/malloc/alloc.h"

/* Deep enough for DataDirectory/keys/...; deeper trees are not ours. */
#define CHOWN_MAX_DEPTH 8

int
privdrop_check(const char *user, char **err_out)
{
  struct passwd *pw = getpwnam(user);
  if (!pw) {
    *err_out = pc_asprintf("User %s: there is no such user", user);
    return -1;
  }
  if (pw->pw_uid == getuid() && pw->pw_uid == geteuid())
    return 0;
  if (geteuid() != 0) {
    *err_out = pc_asprintf("User %s: pctor runs as uid %lu and can only "
                           "switch to another user when started as root",
                           user, (unsigned long)geteuid());
    return -1;
  }
  /* An earlier run handed DataDirectory (and its keys/ directory) to the
   * user; starting as root again must accept that owner. */
  fs_set_private_dir_owner(pw->pw_uid);
  return 0;
}

int
privdrop_fs_as_user(const char *user)
{
  struct passwd *pw = getpwnam(user);
  if (!pw) {
    log_err("User %s: there is no such user.", user);
    return -1;
  }
  if (geteuid() != 0 || pw->pw_uid == 0)
    return 0;
  cap_t now = cap_get_proc();
  cap_flag_value_t dac = CAP_CLEAR;
  if (!now || cap_get_flag(now, CAP_DAC_OVERRIDE, CAP_EFFECTIVE, &dac) < 0) {
    log_err("User %s: could not read our capabilities: %s", user,
            strerror(errno));
    if (now)
      cap_free(now);
    return -1;
  }
  cap_free(now);
  if (dac == CAP_SET)
    return 0;
  uid_t uid = pw->pw_uid;
  gid_t gid = pw->pw_gid;
  char *name = pc_strdup(pw->pw_name);
  int ret = -1;
  /* Groups first: the user's groups decide what its identity may open
   * (a charon VICI socket shared with a group, say). */
  if (initgroups(name, gid) < 0) {
    log_err("User %s: initgroups failed: %s", name, strerror(errno));
    goto out;
  }
  /* setfsuid() and setfsgid() return the previous value and report no
   * error: a second call with the same value reads the current one. */
  setfsgid(gid);
  setfsuid(uid);
  if ((gid_t)setfsgid(gid) != gid || (uid_t)setfsuid(uid) != uid) {
    log_err("User %s: could not take its file-system identity (uid %lu, "
            "gid %lu).", name, (unsigned long)uid, (unsigned long)gid);
    goto out;
  }
  log_info("Without CAP_DAC_OVERRIDE, files are opened as user %s (uid "
           "%lu) from now on.", name, (unsigned long)uid);
  ret = 1;
out:
  free(name);
  return ret;
}

typedef struct {
  dev_t dev;
  uid_t from, uid;
  gid_t gid;
  int failed;
  unsigned n_changed;
} chown_ctx_t;

static void
chown_entry(chown_ctx_t *c, int fd, const struct stat *st, const char *path)
{
  if (st->st_uid != c->from)
    return; /* not ours: leave it alone */
  if (!S_ISDIR(st->st_mode) && !S_ISREG(st->st_mode)) {
    log_info("Not changing the owner of %s: not a file or directory", path);
    return;
  }
  if (S_ISREG(st->st_mode) && st->st_nlink > 1) {
    /* A hard link could point at any file of ours on this file system
     * (/etc/shadow...): never give such a file away. */
    log_warn("Not changing the owner of %s: it has %lu hard links", path,
             (unsigned long)st->st_nlink);
    return;
  }
  if (fchownat(fd, "", c->uid, c->gid, AT_EMPTY_PATH) < 0) {
    log_warn("Could not give %s to uid %lu: %s", path,
             (unsigned long)c->uid, strerror(errno));
    c->failed = 1;
    return;
  }
  c->n_changed++;
}

/* Walk the directory open as dirfd (an O_RDONLY directory fd). */
static void
chown_walk(chown_ctx_t *c, int dirfd, const char *path, int depth)
{
  int dfd = dup(dirfd);
  DIR *d = dfd >= 0 ? fdopendir(dfd) : NULL;
  if (!d) {
    if (dfd >= 0)
      close(dfd);
    log_warn("Could not read directory %s: %s", path, strerror(errno));
    c->failed = 1;
    return;
  }
  struct dirent *de;
  while ((de = readdir(d)) != NULL) {
    if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
      continue;
    char *sub = pc_asprintf("%s/%s", path, de->d_name);
    int fd = openat(dirfd, de->d_name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) < 0) {
      log_info("Skipping %s: %s", sub, strerror(errno));
    } else if (S_ISLNK(st.st_mode) || st.st_dev != c->dev) {
      log_info("Not changing the owner of %s (a symbolic link or on "
               "another file system)", sub);
    } else {
      if (S_ISDIR(st.st_mode)) {
        int sfd = openat(dirfd, de->d_name,
                         O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        struct stat st2;
        if (sfd >= 0 && fstat(sfd, &st2) == 0 && st2.st_ino == st.st_ino &&
            st2.st_dev == st.st_dev) {
          if (depth < CHOWN_MAX_DEPTH)
            chown_walk(c, sfd, sub, depth + 1);
          else
            log_warn("Not changing the owner of files below %s: too deep",
                     sub);
        } else {
          log_warn("Could not open directory %s", sub);
          c->failed = 1;
        }
        if (sfd >= 0)
          close(sfd);
      }
      chown_entry(c, fd, &st, sub);
    }
    if (fd >= 0)
      close(fd);
    free(sub);
  }
  closedir(d);
}

/* Give data_dir and pctor's files in it to uid/gid. */
static int
chown_data_dir(const char *data_dir, uid_t uid, gid_t gid, const char *user)
{
  int fd = open(data_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0 && errno == ENOENT) {
    if (mkdir(data_dir, 0700) < 0 && errno != EEXIST) {
      log_err("Could not create DataDirectory %s: %s", data_dir,
              strerror(errno));
      return -1;
    }
    fd = open(data_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  }
  if (fd < 0) {
    log_err("Could not open DataDirectory %s: %s", data_dir,
            strerror(errno));
    return -1;
  }
  struct stat st;
  if (fstat(fd, &st) < 0) {
    log_err("Could not stat DataDirectory %s: %s", data_dir,
            strerror(errno));
    close(fd);
    return -1;
  }
  if (st.st_uid != geteuid() && st.st_uid != uid) {
    log_err("DataDirectory %s belongs to uid %lu, neither to us nor to "
            "user %s; refusing to take it over.", data_dir,
            (unsigned long)st.st_uid, user);
    close(fd);
    return -1;
  }
  chown_ctx_t c = {.dev = st.st_dev, .from = geteuid(), .uid = uid,
                   .gid = gid};
  chown_walk(&c, fd, data_dir, 0);
  chown_entry(&c, fd, &st, data_dir);
  close(fd);
  if (c.failed) {
    log_err("Could not give DataDirectory %s to user %s.", data_dir, user);
    return -1;
  }
  if (c.n_changed)
    log_info("Gave %u file(s) in DataDirectory %s to user %s.", c.n_changed,
             data_dir, user);
  return 0;
}

/* Drop every capability from the bounding set (needs CAP_SETPCAP). */
static void
drop_bounding_set(void)
{
  int denied = 0;
  for (cap_value_t v = 0; v < (cap_value_t)cap_max_bits(); v++) {
    if (cap_get_bound(v) != 1)
      continue;
    if (cap_drop_bound(v) < 0)
      denied++;
  }
  if (denied)
    log_info("Could not drop %d capabilities from the bounding set (no "
             "CAP_SETPCAP here); the uid switch still removes them from "
             "every other set.", denied);
}

int
privdrop_clear_capabilities(void)
{
  cap_t none = cap_init();
  if (!none)
    return -1;
  int r = cap_set_proc(none);
  cap_free(none);
  if (r < 0)
    return -1;
  /* The ambient set does not exist on old kernels: nothing to clear. */
  if (CAP_AMBIENT_SUPPORTED() && cap_reset_ambient() < 0)
    return -1;
  return 0;
}

int
privdrop_has_no_capabilities(void)
{
  cap_t now = cap_get_proc(), none = cap_init();
  int r = -1;
  if (now && none)
    r = cap_compare(now, none) == 0;
  if (now)
    cap_free(now);
  if (none)
    cap_free(none);
  if (r == 1 && CAP_AMBIENT_SUPPORTED()) {
    for (cap_value_t v = 0; v < (cap_value_t)cap_max_bits(); v++)
      if (cap_get_ambient(v) == 1)
        return 0;
  }
  return r;
}

int
privdrop_no_new_privs(void)
{
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0) {
    log_warn("prctl(PR_SET_NO_NEW_PRIVS) failed: %s", strerror(errno));
    return -1;
  }
  if (prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0) != 1) {
    log_warn("PR_SET_NO_NEW_PRIVS did not take effect");
    return -1;
  }
  log_info("No new privileges: set (PR_SET_NO_NEW_PRIVS)");
  return 0;
}

int
privdrop_switch_user(const char *user, const char *data_dir,
                     const char *cache_dir)
{
  struct passwd *pw = getpwnam(user);
  if (!pw) {
    log_err("User %s: there is no such user.", user);
    return -1;
  }
  uid_t uid = pw->pw_uid;
  gid_t gid = pw->pw_gid;
  char *name = pc_strdup(pw->pw_name);
  int ret = -1;

  if (uid == getuid() && uid == geteuid()) {
    log_info("Already running as user %s (uid %lu); not switching.", name,
             (unsigned long)uid);
    ret = 0;
    goto out;
  }
  if (geteuid() != 0) {
    log_err("User %s: pctor runs as uid %lu and can only switch to another "
            "user when started as root.", name, (unsigned long)geteuid());
    goto out;
  }
  if (data_dir && chown_data_dir(data_dir, uid, gid, name) < 0)
    goto out;
  if (cache_dir && (!data_dir || strcmp(cache_dir, data_dir)) &&
      chown_data_dir(cache_dir, uid, gid, name) < 0)
    goto out;
  /* Log files this run created as root: the user reopens them on SIGHUP. */
  if (log_give_created_files(uid, gid) < 0)
    goto out;

  if (prctl(PR_SET_KEEPCAPS, 0, 0, 0, 0) < 0)
    log_warn("prctl(PR_SET_KEEPCAPS, 0) failed: %s", strerror(errno));
  drop_bounding_set();

  if (initgroups(name, gid) < 0) {
    log_err("User %s: initgroups failed: %s", name, strerror(errno));
    goto out;
  }
  if (setresgid(gid, gid, gid) < 0) {
    log_err("User %s: setting gid %lu failed: %s", name,
            (unsigned long)gid, strerror(errno));
    goto out;
  }
  if (setresuid(uid, uid, uid) < 0) {
    log_err("User %s: setting uid %lu failed: %s", name,
            (unsigned long)uid, strerror(errno));
    goto out;
  }
  if (privdrop_clear_capabilities() < 0) {
    log_err("User %s: clearing capabilities failed: %s", name,
            strerror(errno));
    goto out;
  }

  /* Verify: no way back, no capability left. */
  uid_t ru, eu, su;
  gid_t rg, eg, sg;
  if (getresuid(&ru, &eu, &su) < 0 || getresgid(&rg, &eg, &sg) < 0 ||
      ru != uid || eu != uid || su != uid || rg != gid || eg != gid ||
      sg != gid) {
    log_err("User %s: the user or group ids did not change as expected.",
            name);
    goto out;
  }
  if (uid != 0 && (setuid(0) == 0 || seteuid(0) == 0)) {
    log_err("User %s: we could become root again after switching; "
            "refusing to run.", name);
    goto out;
  }
  if (gid != 0 && (setgid(0) == 0 || setegid(0) == 0)) {
    log_err("User %s: we could regain group root after switching; "
            "refusing to run.", name);
    goto out;
  }
  if (privdrop_has_no_capabilities() != 1) {
    log_err("User %s: capabilities remain after switching; refusing to "
            "run.", name);
    goto out;
  }
  log_notice("Switched to user %s (uid %lu, gid %lu); no capabilities "
             "kept.", name, (unsigned long)uid, (unsigned long)gid);
  ret = 0;
out:
  free(name);
  return ret;
}
