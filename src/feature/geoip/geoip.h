/* SPDX-License-Identifier: BSD-3-Clause */
/* geoip.h -- country codes for addresses, from tor's GeoIP files.
 *
 * tor's formats (the files Debian's tor-geoipdb installs as
 * /usr/share/tor/geoip and geoip6): one range per line, "LOW,HIGH,CC",
 * where LOW and HIGH are IPv4 addresses as decimal integers (geoip) or
 * IPv6 addresses in text (geoip6), CC a two-letter code or "??"; lines
 * starting with '#' are comments. Ranges must be sorted and must not
 * overlap (as tor's tool writes them); a file that breaks this, or any
 * malformed line, is refused whole with the line number.
 *
 * The database is three arrays per family (low, high, country index),
 * searched by bisection; countries are kept once each.
 */
#ifndef PCTOR_FEATURE_GEOIP_GEOIP_H
#define PCTOR_FEATURE_GEOIP_GEOIP_H

#include "lib/address/address.h"

typedef struct geoip_db_t geoip_db_t;

geoip_db_t *geoip_db_new(void);
void geoip_db_free_(geoip_db_t *db);
#define geoip_db_free(db)                                                     \
  do {                                                                        \
    geoip_db_free_(db);                                                       \
    (db) = NULL;                                                              \
  } while (0)

/* Load the file at path for family (AF_INET: tor's geoip, AF_INET6:
 * geoip6), replacing that family's ranges. Returns the number of ranges,
 * or -1 with *err (newly allocated) and the old ranges kept. */
long geoip_db_load(geoip_db_t *db, int family, const char *path,
                   char **err);
/* Parse text (len bytes) in the format of family, as geoip_db_load(). */
long geoip_db_load_text(geoip_db_t *db, int family, const char *text,
                        size_t len, char **err);
/* Whether ranges for family are loaded. */
int geoip_db_has(const geoip_db_t *db, int family);
/* The lower-case country code of a ("de"), or "??" when no range holds
 * it or the file says "??". */
const char *geoip_db_country(const geoip_db_t *db, const pc_addr_t *a);

#endif
