/* SPDX-License-Identifier: BSD-3-Clause */
/* fuzz_pwbox.c -- fuzz target: tor's passphrase boxes (lib/crypt/pwbox),
 * the body of ed25519_master_id_secret_key_encrypted, opened with a fixed
 * passphrase. The first input byte chooses the passphrase ("" or the one
 * the seeds were made with), the rest is the box. Key derivation is
 * bounded by pwbox itself (scrypt 64 MiB, about 1 MiB of S2K hashing).
 * Bound: 66 MiB + 4/byte.
 */
#include "fuzz.h"

#include "lib/crypt/pwbox.h"

#include <stdlib.h>

static void
run(const uint8_t *data, size_t len)
{
  static const char pw[] = "pctor test passphrase";
  if (len < 1)
    return;
  uint8_t *out = NULL;
  size_t out_len = 0;
  const char *why = NULL;
  size_t pwlen = (data[0] & 1) ? sizeof(pw) - 1 : 0;
  if (crypt_pwbox_open(&out, &out_len, data + 1, len - 1, pw, pwlen,
                       &why) == PWBOX_OK)
    free(out);
}

const fuzz_target_t fuzz_target = {
  .name = "pwbox", .run = run, .amp_factor = 4, .amp_slack = 66 << 20,
};
