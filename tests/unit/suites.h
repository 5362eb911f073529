/* SPDX-License-Identifier: BSD-3-Clause */
/* suites.h -- the Check suites linked into tests/unit/check_pctor.
 *
 * One line per module: SUITE(name) means tests/unit/check_<name>.c defines
 * "Suite *suite_<name>(void)". Add a line when you add a test file.
 * The suites of lib and core that need nothing above core are listed in
 * suites_core.h (check_core runs those alone); this file adds the rest.
 */
#include "suites_core.h"
SUITE(log_domains)
SUITE(router_keys)
SUITE(family_keys)
SUITE(options)
SUITE(circuit_features)
SUITE(dtcp)
SUITE(dgram_carry)
SUITE(dir_authority)
SUITE(routerdesc)
SUITE(netdoc)
SUITE(dir_docs)
SUITE(path)
SUITE(guards)
SUITE(cbt)
SUITE(addrmap)
SUITE(policy)
SUITE(geoip)
SUITE(dir_client)
SUITE(socks)
SUITE(oom)
SUITE(delayd)
SUITE(toolargs)
SUITE(vici)
SUITE(congestion_features)
SUITE(measureme)
SUITE(ipsec_broker)
SUITE(conflux)
SUITE(hibernate)
SUITE(stream)
SUITE(client)
SUITE(client_port)
SUITE(dircache)
SUITE(dirport)
SUITE(dirreq_stats)
SUITE(dir_tunnel)
SUITE(control)
SUITE(dgram)
SUITE(backtap)
