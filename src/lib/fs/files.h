/* SPDX-License-Identifier: BSD-3-Clause */
/* files.h -- small file-system helpers: whole-file read and atomic write,
 * private directories, existence and size, path joining.
 *
 * Functions that can fail return 0 (or a non-negative result) on success
 * and a negative errno value on failure (-ENOENT when a file is missing,
 * -EFBIG when it is larger than allowed, ...), and also leave that value
 * in errno, so callers can tell "absent" from "broken" without parsing
 * messages. fs_check_private_dir() instead explains problems in an
 * allocated message, since its failures are configuration errors to show
 * to the operator.
 *
 * Reads are bounded by a caller-given maximum so a huge or endless file
 * (a device, a FIFO) cannot exhaust memory. Writes go to "PATH.tmp"
 * first, are fsync()ed, and are renamed over PATH, so a crash leaves
 * either the old or the new contents, never a mix.
 */
#ifndef PCTOR_LIB_FS_FILES_H
#define PCTOR_LIB_FS_FILES_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Read the whole file at path into a newly allocated buffer, at most
 * max_len bytes. On success returns 0, sets *data_out (free() it) and
 * *len_out; the buffer has one extra NUL byte after the data (not counted
 * in *len_out) so text can be used as a string. On failure returns a
 * negative errno and sets *data_out = NULL, *len_out = 0: -ENOENT if the
 * file does not exist, -EFBIG if it holds more than max_len bytes,
 * -EISDIR for a directory, others as open()/read() report them. */
int fs_read_file(const char *path, size_t max_len, uint8_t **data_out,
                 size_t *len_out);

/* Like fs_read_file() for text: *text_out is a NUL-terminated string (free()
 * it). Returns -EINVAL if the file contains a NUL byte. */
int fs_read_text(const char *path, size_t max_len, char **text_out);

/* Replace the file at path with len bytes of data, atomically: write
 * "path.tmp" (any old one is removed first) with permissions exactly mode,
 * fsync() it, rename() it over path, and fsync() the directory. Returns 0
 * or a negative errno (the temporary file is removed on failure). */
int fs_write_file_atomic(const char *path, const void *data, size_t len,
                         mode_t mode);

/* Make sure path is a directory only we can use: create it with mode 0700
 * if it does not exist (its parent must exist); if it exists, it must be a
 * directory (symbolic links are followed) owned by the effective user,
 * and any group/other permissions are removed (mode set to 0700, with a
 * log notice). Returns 0, or -1 and sets *err_out to a newly allocated
 * message saying what is wrong (free() it). While the process runs as
 * root, a directory owned by the uid given to fs_set_private_dir_owner()
 * is accepted too. */
int fs_check_private_dir(const char *path, char **err_out);
/* The same, but with group_readable the mode is 0750 (the owner's group
 * may read and enter it: tor's DataDirectoryGroupReadable). */
int fs_check_private_dir_mode(const char *path, int group_readable,
                              char **err_out);

/* Set once at start-up, before the directories are checked, by a process
 * that starts as root and will switch to the user uid ("User"): its
 * DataDirectory was handed to that user on an earlier run, so it is the
 * rightful owner now. (uid_t)-1 (the default) accepts only the effective
 * user. */
void fs_set_private_dir_owner(uid_t uid);

/* 1 if something exists at path (following symbolic links), else 0. */
int fs_file_exists(const char *path);

/* Size in bytes of the file at path, or a negative errno (-ENOENT if
 * missing). */
int64_t fs_file_size(const char *path);

/* New string "dir/name" (free() it). No '/' is added when dir is empty or
 * already ends with one. */
char *fs_path_join(const char *dir, const char *name);

#endif
