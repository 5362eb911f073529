#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# ewma-priority-pctcp.sh -- ewma-priority.sh with PerCircuitTCP 1 on the
# relays: the bulk and the interactive circuit have connections of their
# own between the relays, so only the scheduler's choice across
# connections (and its hand-out of the exit's bandwidth tokens) can favour
# the interactive one.
EWMA_EXTRA_RELAY_LINES="PerCircuitTCP 1" exec bash "$(dirname "$0")/ewma-priority.sh"
