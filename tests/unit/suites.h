/* suites.h -- the Check suites linked into tests/unit/check_pctor.
 *
 * One line per module: SUITE(name) means tests/unit/check_<name>.c defines
 * "Suite *suite_<name>(void)". Add a line when you add a test file.
 */
SUITE(log)
SUITE(buf)
SUITE(container)
SUITE(evloop)
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
SUITE(router_keys)
SUITE(options)
SUITE(circuit)
SUITE(ed25519_ext)
