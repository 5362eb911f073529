/* SPDX-License-Identifier: BSD-3-Clause */
/* files.c -- file-system helpers (see files.h).
 *
 * Every file descriptor is opened with O_CLOEXEC. fs_read_file() trusts
 * fstat()'s size only as a first guess and otherwise reads until EOF, so
 * files that change size or special files with no size are still bounded
 * by max_len. fs_check_private_dir() opens the directory and works on the
 * descriptor (fstat/fchmod) so the checks and the fix apply to the same
 * object even if the path is replaced meanwhile.
 */
#include "lib/fs/files.h"
#include "lib/log/log.h"
#include "lib/malloc/alloc.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Set errno to e and return -e. */
static int
fail(int e)
{
  errno = e;
  return -e;
}

int
fs_read_file(const char *path, size_t max_len, uint8_t **data_out,
             size_t *len_out)
{
  *data_out = NULL;
  *len_out = 0;
  if (max_len > SIZE_MAX / 4)
    max_len = SIZE_MAX / 4; /* keeps the size arithmetic below safe */
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return fail(errno);
  struct stat st;
  if (fstat(fd, &st) < 0) {
    int e = errno;
    close(fd);
    return fail(e);
  }
  if (S_ISDIR(st.st_mode)) {
    close(fd);
    return fail(EISDIR);
  }
  if (S_ISREG(st.st_mode) && (uint64_t)st.st_size > max_len) {
    close(fd);
    return fail(EFBIG);
  }

  /* Start with the reported size (+1 to see EOF without a realloc). */
  size_t cap = 1024;
  if (S_ISREG(st.st_mode) && (size_t)st.st_size + 1 > cap)
    cap = (size_t)st.st_size + 1;
  if (cap > max_len + 1)
    cap = max_len + 1;
  uint8_t *buf = pc_malloc(cap + 1);
  size_t len = 0;
  for (;;) {
    if (len == cap) {
      if (cap > max_len)
        break; /* read max_len + 1 bytes: too large */
      size_t ncap = cap * 2 > max_len + 1 ? max_len + 1 : cap * 2;
      buf = pc_realloc(buf, ncap + 1);
      cap = ncap;
    }
    ssize_t r = read(fd, buf + len, cap - len);
    if (r < 0) {
      if (errno == EINTR)
        continue;
      int e = errno;
      free(buf);
      close(fd);
      return fail(e);
    }
    if (r == 0)
      break;
    len += (size_t)r;
  }
  close(fd);
  if (len > max_len) {
    free(buf);
    return fail(EFBIG);
  }
  buf[len] = '\0';
  *data_out = buf;
  *len_out = len;
  return 0;
}

int
fs_read_text(const char *path, size_t max_len, char **text_out)
{
  uint8_t *data;
  size_t len;
  *text_out = NULL;
  int r = fs_read_file(path, max_len, &data, &len);
  if (r < 0)
    return r;
  if (memchr(data, '\0', len)) {
    free(data);
    return fail(EINVAL);
  }
  *text_out = (char *)data;
  return 0;
}

/* write() all of data, retrying on EINTR and short writes. */
static int
write_all(int fd, const uint8_t *data, size_t len)
{
  while (len > 0) {
    ssize_t w = write(fd, data, len);
    if (w < 0) {
      if (errno == EINTR)
        continue;
      return -1;
    }
    data += w;
    len -= (size_t)w;
  }
  return 0;
}

/* fsync() the directory holding path, so a rename in it is durable.
 * Errors are ignored: some file systems do not support it. */
static void
sync_parent_dir(const char *path)
{
  const char *slash = strrchr(path, '/');
  char *dir;
  if (!slash)
    dir = pc_strdup(".");
  else if (slash == path)
    dir = pc_strdup("/");
  else
    dir = pc_strndup(path, (size_t)(slash - path));
  int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd >= 0) {
    (void)fsync(fd);
    close(fd);
  }
  free(dir);
}

int
fs_write_file_atomic(const char *path, const void *data, size_t len,
                     mode_t mode)
{
  char *tmp = pc_asprintf("%s.tmp", path);
  int e = 0;
  if (unlink(tmp) < 0 && errno != ENOENT) {
    e = errno;
    free(tmp);
    return fail(e);
  }
  int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
                mode & 07777);
  if (fd < 0) {
    e = errno;
    free(tmp);
    return fail(e);
  }
  if (fchmod(fd, mode & 07777) < 0 || write_all(fd, data, len) < 0 ||
      fsync(fd) < 0)
    e = errno;
  if (close(fd) < 0 && !e)
    e = errno;
  if (!e && rename(tmp, path) < 0)
    e = errno;
  if (e) {
    unlink(tmp);
    free(tmp);
    return fail(e);
  }
  free(tmp);
  sync_parent_dir(path);
  return 0;
}

/* The User that a root process will switch to (see files.h); set once at
 * start-up, before any directory is checked. */
static uid_t private_dir_owner = (uid_t)-1;

void
fs_set_private_dir_owner(uid_t uid)
{
  private_dir_owner = uid;
}

int
fs_check_private_dir(const char *path, char **err_out)
{
  return fs_check_private_dir_mode(path, 0, err_out);
}

int
fs_check_private_dir_mode(const char *path, int group_readable,
                          char **err_out)
{
  const mode_t want = group_readable ? 0750 : 0700;
  *err_out = NULL;
  if (mkdir(path, want) < 0 && errno != EEXIST) {
    *err_out = pc_asprintf("cannot create directory \"%s\": %s", path,
                           strerror(errno));
    return -1;
  }
  int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOTDIR)
      *err_out = pc_asprintf("\"%s\" exists but is not a directory", path);
    else
      *err_out = pc_asprintf("cannot open directory \"%s\": %s", path,
                             strerror(errno));
    return -1;
  }
  struct stat st;
  if (fstat(fd, &st) < 0) {
    *err_out = pc_asprintf("cannot stat \"%s\": %s", path, strerror(errno));
    close(fd);
    return -1;
  }
  if (!S_ISDIR(st.st_mode)) {
    *err_out = pc_asprintf("\"%s\" exists but is not a directory", path);
    close(fd);
    return -1;
  }
  int owner_ok = st.st_uid == geteuid() ||
                 (geteuid() == 0 && private_dir_owner != (uid_t)-1 &&
                  st.st_uid == private_dir_owner);
  if (!owner_ok) {
    *err_out = pc_asprintf("directory \"%s\" is owned by uid %lu, not by "
                           "the user pctor runs as (uid %lu)",
                           path, (unsigned long)st.st_uid,
                           (unsigned long)geteuid());
    close(fd);
    return -1;
  }
  if ((st.st_mode & 07777) != want) {
    if (fchmod(fd, want) < 0) {
      *err_out = pc_asprintf("cannot make directory \"%s\" private "
                             "(mode %04o): %s", path, (unsigned)want,
                             strerror(errno));
      close(fd);
      return -1;
    }
    if (st.st_mode & ~want & 077)
      log_notice("Directory \"%s\" was accessible to other users (mode "
                 "%04o); changed its mode to %04o.", path,
                 (unsigned)(st.st_mode & 07777), (unsigned)want);
  }
  close(fd);
  return 0;
}

int
fs_file_exists(const char *path)
{
  struct stat st;
  return stat(path, &st) == 0;
}

int64_t
fs_file_size(const char *path)
{
  struct stat st;
  if (stat(path, &st) < 0)
    return fail(errno);
  return (int64_t)st.st_size;
}

char *
fs_path_join(const char *dir, const char *name)
{
  size_t dl = strlen(dir);
  if (dl == 0 || dir[dl - 1] == '/')
    return pc_asprintf("%s%s", dir, name);
  return pc_asprintf("%s/%s", dir, name);
}
