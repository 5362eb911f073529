/* SPDX-License-Identifier: BSD-3-Clause */
/* runner.c -- runs every Check suite listed in suites.h.
 *
 * CK_RUN_SUITE=name / CK_RUN_CASE=name (Check's own variables) select a
 * subset. The exit status is non-zero when any test fails.
 */
#include <check.h>
#include <stdlib.h>

#define SUITE(name) Suite *suite_##name(void);
#include "suites.h"
#undef SUITE

int
main(void)
{
  SRunner *sr = srunner_create(NULL);
#define SUITE(name) srunner_add_suite(sr, suite_##name());
#include "suites.h"
#undef SUITE
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
