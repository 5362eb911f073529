/* SPDX-License-Identifier: BSD-3-Clause */
/* extend.h -- a relay's handling of EXTEND2: validate the request, then
 * ask the circuit layer to reach the next hop and send it CREATE2. */
#ifndef PCTOR_FEATURE_RELAY_EXTEND_H
#define PCTOR_FEATURE_RELAY_EXTEND_H

/* Register the EXTEND2 handler with core. allow_private: whether we may
 * extend to private/loopback addresses (ExtendAllowPrivateAddresses, or
 * TestingTorNetwork). */
void extend_init(int allow_private);
void extend_set_allow_private(int allow_private);
#endif
