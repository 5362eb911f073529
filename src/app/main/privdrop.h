/* SPDX-License-Identifier: BSD-3-Clause */
/* privdrop.h -- switching to an unprivileged user (the User option).
 *
 * pctor binds its ports and reads its keys as root; privdrop_switch_user()
 * then hands DataDirectory to the user, switches uid, gid and groups
 * irrevocably, and clears every capability (nothing in pctor needs one
 * after start-up). It checks its own work: it fails if root can be
 * regained or a capability is left.
 */
#ifndef PCTOR_APP_MAIN_PRIVDROP_H
#define PCTOR_APP_MAIN_PRIVDROP_H

/* Before start-up: can we switch to user? Fails (with *err_out set) if the
 * user does not exist, or if it is another user and we are not root. When
 * it succeeds as root, directories owned by the user pass
 * fs_check_private_dir() (they were handed over on an earlier run). */
int privdrop_check(const char *user, char **err_out);

/* Before start-up opens any file, as root with User set: if pctor may not
 * override file permissions (CAP_DAC_OVERRIDE is not in its effective set:
 * a service manager's narrow capability bounding set, as tor's units
 * have), root could not read or write the user's DataDirectory, so every
 * file is opened with the user's identity from now on (setfsgid/setfsuid
 * and the user's groups; the process keeps root's ids, so ports below 1024
 * can still be bound). Files it creates then belong to the user, and
 * nothing needs CAP_CHOWN. Returns 1 if it switched, 0 if not needed (not
 * root, User is root, or root may override permissions: files are then
 * created as root and handed over by privdrop_switch_user()), -1 after
 * logging why. */
int privdrop_fs_as_user(const char *user);

/* Switch to user, after giving it data_dir (created with mode 0700 if
 * missing) and the files in it that belong to the current user, and the
 * same for cache_dir (CacheDirectory; NULL or data_dir: nothing more). If we
 * already run as user, only logs. Returns 0, or -1 after logging why. */
int privdrop_switch_user(const char *user, const char *data_dir,
                         const char *cache_dir);

/* After the switch (or instead of it): PR_SET_NO_NEW_PRIVS, so that
 * nothing this process (or a child) executes can gain privileges through
 * set-user-ID bits or file capabilities. pctor executes nothing, so this
 * costs nothing; it is a guard, and the precondition of a seccomp filter
 * without CAP_SYS_ADMIN. Checked with PR_GET_NO_NEW_PRIVS. Returns 0, or
 * -1 after logging why (an old kernel). */
int privdrop_no_new_privs(void);

/* Clear the capability sets (permitted, effective, inheritable, ambient).
 * Returns 0 or -1. */
int privdrop_clear_capabilities(void);

/* Whether the process holds no capability in any of its sets (1), some
 * (0), or this could not be determined (-1). */
int privdrop_has_no_capabilities(void);

#endif
