/* SPDX-License-Identifier: BSD-3-Clause */
/* runner.c -- runs every Check suite listed in suites.h (check_pctor), or
 * with PCTOR_SUITES_CORE_ONLY defined those of suites_core.h alone
 * (check_core: lib and core, linked without feature code).
 *
 * CK_RUN_SUITE=name / CK_RUN_CASE=name (Check's own variables) select a
 * subset. The exit status is non-zero when any test fails.
 *
 * A test case that sets no timeout of its own gets 30 s, not Check's 4 s:
 * many run a relay on loopback for seconds, and CI runs them beside the
 * integration tests and under sanitizers, where 4 s were not enough
 * (test_circbw_short_circuit). CK_DEFAULT_TIMEOUT in the environment
 * still wins.
 */
#include <check.h>
#include <stdlib.h>

#ifdef PCTOR_SUITES_CORE_ONLY
#define PCTOR_SUITES "suites_core.h"
#else
#define PCTOR_SUITES "suites.h"
#endif

#define SUITE(name) Suite *suite_##name(void);
#include PCTOR_SUITES
#undef SUITE

int
main(void)
{
  setenv("CK_DEFAULT_TIMEOUT", "30", 0); /* read by tcase_create() */
  SRunner *sr = srunner_create(NULL);
#define SUITE(name) srunner_add_suite(sr, suite_##name());
#include PCTOR_SUITES
#undef SUITE
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
