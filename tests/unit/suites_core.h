/* SPDX-License-Identifier: BSD-3-Clause */
/* suites_core.h -- the Check suites of src/lib and src/core that need
 * nothing above core: tests/unit/check_core runs exactly these, linked
 * against src/libpctor_lib.a and src/libpctor_core.a alone, and suites.h
 * includes this list, so check_pctor runs them too.
 *
 * A suite listed here is built into tests/unit/libcheck_core.a (its
 * module's include.am adds it to tests_unit_libcheck_core_a_SOURCES) and
 * may include only lib/ and core/ headers, fixture_core.h (a loopback
 * relay with keys made in memory) and fixture_circuit.h (origin circuits
 * to it); tests/check-layers.sh checks both. A
 * lib or core test that needs a feature (or app/) belongs in suites.h.
 */
SUITE(log)
SUITE(buf)
SUITE(memacct)
SUITE(container)
SUITE(strbuf)
SUITE(relay_names)
SUITE(str)
SUITE(evloop)
SUITE(workqueue)
SUITE(cpuworker)
SUITE(crypt)
SUITE(conf)
SUITE(encoding)
SUITE(fs)
SUITE(onion)
SUITE(relay_crypto)
SUITE(cell)
SUITE(torcert)
SUITE(time)
SUITE(tls)
SUITE(net)
SUITE(circuit)
SUITE(chan_index)
SUITE(channel_hs)
SUITE(circ_queue)
SUITE(btcirc)
SUITE(utcp)
SUITE(ed25519_ext)
SUITE(compress)
SUITE(sandbox)
SUITE(dns)
SUITE(ratelimit)
SUITE(scheduler)
SUITE(congestion)
SUITE(edge)
SUITE(dos)
