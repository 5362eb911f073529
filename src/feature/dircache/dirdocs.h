/* dirdocs.h -- the directory documents a relay caches, served over
 * BEGIN_DIR: the consensus (both flavors, as cached), the authorities' key
 * certificates, and microdescriptors by digest. */
#ifndef PCTOR_FEATURE_DIRCACHE_DIRDOCS_H
#define PCTOR_FEATURE_DIRCACHE_DIRDOCS_H
#include "feature/dir/dir_client.h"

/* Register the providers with dircache. The documents come from dc (its
 * node list, for microdescriptors) and from the cache files it writes in
 * datadir; both must outlive dircache_shutdown(). */
void dirdocs_register(const dir_client_t *dc, const char *datadir);
void dirdocs_unregister(void);
#endif
