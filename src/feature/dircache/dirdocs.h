/* SPDX-License-Identifier: BSD-3-Clause */
/* dirdocs.h -- the directory documents a relay caches, served over
 * BEGIN_DIR: the consensus (both flavors), the authorities' key
 * certificates, microdescriptors by digest, and server descriptors by
 * digest or identity (for tor clients with UseMicrodescriptors 0). */
#ifndef PCTOR_FEATURE_DIRCACHE_DIRDOCS_H
#define PCTOR_FEATURE_DIRCACHE_DIRDOCS_H
#include "feature/dir/dir_client.h"

/* Register the providers with dircache. The documents come from md (the
 * microdesc-flavor directory client: its node list, for
 * microdescriptors), ns (the ns-flavor client: server descriptors; may be
 * NULL) and the cache files they write in datadir; all must outlive
 * dircache_shutdown(). */
void dirdocs_register(const dir_client_t *md, const dir_client_t *ns,
                      const char *datadir);
void dirdocs_unregister(void);
#endif
