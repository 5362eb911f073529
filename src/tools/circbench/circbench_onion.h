/* SPDX-License-Identifier: BSD-3-Clause */
/* circbench_onion.h -- pctor-circbench --onionskins (circbench_onion.c):
 * CREATE2 handshake rate with 0, 1, 2, ... worker threads. */
#ifndef PCTOR_TOOLS_CIRCBENCH_CIRCBENCH_ONION_H
#define PCTOR_TOOLS_CIRCBENCH_CIRCBENCH_ONION_H
int circbench_onion_main(int argc, char **argv);
#endif
