/* SPDX-License-Identifier: BSD-3-Clause */
/* runner.c -- runs every Check suite listed in suites.h.
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

#define SUITE(name) Suite *suite_##name(void);
#include "suites.h"
#undef SUITE

int
main(void)
{
  setenv("CK_DEFAULT_TIMEOUT", "30", 0); /* read by tcase_create() */
  SRunner *sr = srunner_create(NULL);
#define SUITE(name) srunner_add_suite(sr, suite_##name());
#include "suites.h"
#undef SUITE
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
