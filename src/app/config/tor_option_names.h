/* SPDX-License-Identifier: BSD-3-Clause */
/* tor_option_names.h -- the names of tor's torrc options (data generated
 * from tor --list-torrc-options by scripts/gen-tor-option-names), so that
 * a tor option pctor does not implement is refused with a line that says
 * so instead of being reported as unknown or silently ignored. */
#ifndef PCTOR_APP_CONFIG_TOR_OPTION_NAMES_H
#define PCTOR_APP_CONFIG_TOR_OPTION_NAMES_H

#include <stddef.h>

/* In tor's order; names are unique case-insensitively. */
extern const char *const tor_option_names[];
extern const size_t n_tor_option_names;
/* The tor version the list came from ("0.4.9.11"). */
extern const char tor_option_names_version[];

#endif
