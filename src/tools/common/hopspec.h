/* SPDX-License-Identifier: BSD-3-Clause */
/* hopspec.h -- how the test tools (pctor-circtest, pctor-circbench) name
 * the relays of a circuit on their command line:
 *   ADDR:PORT,RSAFP[,ED25519_BASE64|-[,NTOR_BASE64]]
 *   pctor:DATADIR@ADDR:PORT   (keys read from a pctor relay's DataDirectory)
 *   NICKNAME                  (a line of a pctor-privnet nodes.txt file:
 *                              "nick orport dirport fp ed ntor role")
 */
#ifndef PCTOR_TOOLS_COMMON_HOPSPEC_H
#define PCTOR_TOOLS_COMMON_HOPSPEC_H
#include "core/or/circuit.h"

/* Fill *t from spec (nodes_file may be NULL). Returns 0, or -1 (a message
 * may have been printed to stderr). */
int hopspec_parse(extend_target_t *t, const char *spec,
                  const char *nodes_file);
#endif
