# SPDX-License-Identifier: BSD-3-Clause
# pctor_lab -- the test bed (scripts/pctor-testbed) and the experiment runner
# (scripts/pctor-experiment) as one package; the two scripts are thin entry
# points that find this package beside them (source tree, or installed in
# $(prefix)/lib/pctor) and call testbed.main() or experiment.main().
# pctor-measure and pctor-shadow import the parts they need.
#
# Modules, each importing only those above it:
#   common      constants, TestbedError, logging, running commands, units
#   keycache    the Shadow engine's cache of authority and relay keys
#   config      the test-bed file (TOML) and its validation
#   netns       namespaces, address slots, run state, links (tc/nft/delayd),
#               link measurements (selftest)
#   control     the one control-protocol client (ControlPorts in namespaces)
#   network     binaries, keys, torrcs, daemons (tor, pctor, charon, web
#               servers), consensus and client readiness
#   traffic     pctor-testbed's web/bulk client loops
#   testbed     pctor-testbed's commands and command line
#   definition  experiment definitions (TOML), per-run test-bed files
#   paths       paired paths: drawn per loop, pinned through the ControlPort
#   workload    the experiment's request loops and ss sampling
#   report      statistics (percentiles, changes, MeasureMe joins), tables,
#               plots, the report
#   experiment  pctor-experiment's commands and command line
# and, run as a program by both engines rather than imported:
#   webserver   the experiments' web server (http.server, listen backlog 4096)
# Python 3.11 standard library only (matplotlib optional, for plots).
