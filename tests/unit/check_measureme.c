/* SPDX-License-Identifier: BSD-3-Clause */
/* check_measureme.c -- the MeasureMe request body (measureme.h). The
 * recording itself is checked end to end in
 * tests/integration/measureme.sh. */
#include <check.h>
#include <string.h>

#include "feature/measureme/measureme.h"

Suite *suite_measureme(void);

START_TEST(test_encode_known_bytes)
{
  measureme_request_t r = {1000, 30, {1, 2, 3, 4, 5, 6, 7, 8}};
  uint8_t out[MEASUREME_BODY_LEN];
  measureme_request_encode(out, &r);
  static const uint8_t want[MEASUREME_BODY_LEN] = {
      0x01, 0x00, 0x03, 0xe8, 0x00, 0x00, 0x00, 0x1e,
      0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08};
  ck_assert_mem_eq(out, want, sizeof(want));
  measureme_request_t back;
  const char *err = NULL;
  ck_assert_int_eq(measureme_request_parse(out, sizeof(out), &back, &err), 0);
  ck_assert_uint_eq(back.interval_ms, 1000);
  ck_assert_uint_eq(back.duration_s, 30);
  ck_assert_mem_eq(back.label, r.label, 8);
  /* longer bodies (a later version's extra fields) are fine */
  uint8_t longer[40];
  memset(longer, 0xee, sizeof(longer));
  memcpy(longer, out, sizeof(out));
  ck_assert_int_eq(measureme_request_parse(longer, sizeof(longer), &back,
                                           &err), 0);
}
END_TEST

START_TEST(test_parse_rejects)
{
  measureme_request_t r = {100, 0, {0}};
  uint8_t b[MEASUREME_BODY_LEN];
  measureme_request_t out;
  const char *err = NULL;
  measureme_request_encode(b, &r);
  ck_assert_int_eq(measureme_request_parse(b, sizeof(b), &out, &err), 0);
  ck_assert_int_eq(measureme_request_parse(b, 15, &out, &err), -1);
  ck_assert_str_eq(err, "body too short");
  ck_assert_int_eq(measureme_request_parse(b, 0, &out, &err), -1);
  b[0] = 2;
  ck_assert_int_eq(measureme_request_parse(b, sizeof(b), &out, &err), -1);
  ck_assert_str_eq(err, "unknown version");
  const struct {
    uint16_t iv;
    uint32_t dur;
    int ok;
  } cases[] = {{99, 0, 0},    {100, 0, 1},     {60000, 0, 1},
               {60001, 0, 0}, {1000, 86400, 1}, {1000, 86401, 0},
               {0, 0, 0},     {65535, 0, 0}};
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    r.interval_ms = cases[i].iv;
    r.duration_s = cases[i].dur;
    measureme_request_encode(b, &r);
    ck_assert_int_eq(measureme_request_parse(b, sizeof(b), &out, &err),
                     cases[i].ok ? 0 : -1);
  }
}
END_TEST

Suite *
suite_measureme(void)
{
  Suite *s = suite_create("measureme");
  TCase *tc = tcase_create("request");
  tcase_add_test(tc, test_encode_known_bytes);
  tcase_add_test(tc, test_parse_rejects);
  suite_add_tcase(s, tc);
  return s;
}
