/* SPDX-License-Identifier: BSD-3-Clause */
/* fuzz_cell.c -- fuzz target: the cell framing of a channel's byte stream.
 *
 * Input: byte 0 chooses the link protocol (3: 2-byte circuit IDs, else 4);
 * the rest is what a peer writes on an open channel. It is cut into cells
 * exactly as the channel does: variable-length cells with var_cell_fetch(),
 * fixed ones with cell_unpack(); each fixed cell's payload is then given to
 * the parser its command selects (CREATE2, CREATED2, CREATE_FAST,
 * CREATED_FAST, DESTROY). A variable cell holds at most 64 KiB: the bound
 * is 64 KiB + 4 bytes per input byte.
 */
#include "fuzz.h"

#include "core/proto/cell.h"
#include "core/proto/create.h"

#include <stdlib.h>

static void
parse_fixed(const cell_t *c)
{
  create2_t c2;
  created2_t d2;
  create_fast_t cf;
  created_fast_t df;
  (void)cell_command_name(c->command);
  switch (c->command) {
  case CELL_CREATE2:
    (void)create2_parse(&c2, c->payload, CELL_PAYLOAD_LEN);
    break;
  case CELL_CREATED2:
    (void)created2_parse(&d2, c->payload, CELL_PAYLOAD_LEN);
    break;
  case CELL_CREATE_FAST:
    create_fast_parse(&cf, c->payload);
    break;
  case CELL_CREATED_FAST:
    created_fast_parse(&df, c->payload);
    break;
  case CELL_DESTROY:
    (void)destroy_reason_name(destroy_cell_reason(c));
    break;
  default:
    break;
  }
}

static void
run(const uint8_t *data, size_t len)
{
  if (len < 1)
    return;
  int proto = data[0] == 3 ? 3 : 4;
  data++;
  len--;
  size_t hdr = cell_circid_len(proto);
  while (len > hdr) {
    if (cell_command_is_var(data[hdr])) {
      var_cell_t *vc = NULL;
      size_t used = 0;
      int r = var_cell_fetch(data, len, proto, &vc, &used);
      if (r <= 0 || !vc)
        return; /* malformed, or needs more bytes */
      if (used == 0 || used > len)
        abort(); /* the API promised progress within the input */
      var_cell_free(vc);
      data += used;
      len -= used;
    } else {
      size_t n = cell_network_len(proto);
      if (len < n)
        return;
      cell_t c;
      cell_unpack(&c, data, proto);
      parse_fixed(&c);
      data += n;
      len -= n;
    }
  }
}

const fuzz_target_t fuzz_target = {
  .name = "cell", .run = run, .amp_factor = 4, .amp_slack = 64 * 1024 + 256,
};
