/* SPDX-License-Identifier: BSD-3-Clause */
/* circbench_churn.h -- pctor-circbench --churn: the in-process benchmark of
 * circuit set-up and teardown bookkeeping at a relay (see
 * circbench_churn.c). */
#ifndef PCTOR_TOOLS_CIRCBENCH_CHURN_H
#define PCTOR_TOOLS_CIRCBENCH_CHURN_H
/* argv[0] is "--churn". Returns the process exit status. */
int circbench_churn_main(int argc, char **argv);
#endif
