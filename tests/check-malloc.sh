#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# check-malloc.sh -- the built pctor uses the allocator it was configured
# with (./configure --with-malloc=system|jemalloc|mimalloc).
#
# The configured choice is read from config.h (PCTOR_MALLOC_JEMALLOC,
# PCTOR_MALLOC_MIMALLOC, or neither for glibc); the binary's
# `--library-versions` names the allocator it runs with and adds a remark
# when the library is linked but malloc() does not return its memory (the
# binary asks the allocator whether a fresh block is its own). CI builds
# the default only; building with each allocator and running this test is
# how the option is checked by hand.
set -u
top_builddir=${top_builddir:-.}
pctor="$top_builddir/src/app/pctor"
[ -x "$pctor" ] || { echo "check-malloc: $pctor not built"; exit 99; }
[ -f "$top_builddir/config.h" ] || { echo "check-malloc: no config.h in $top_builddir"; exit 99; }

want=glibc
grep -q '^#define PCTOR_MALLOC_JEMALLOC 1' "$top_builddir/config.h" && want=jemalloc
grep -q '^#define PCTOR_MALLOC_MIMALLOC 1' "$top_builddir/config.h" && want=mimalloc

out=$("$pctor" --library-versions) || { echo "check-malloc: '$pctor --library-versions' failed"; exit 1; }
line=$(printf '%s\n' "$out" | grep '^malloc')
case $line in
  *"not serving"*) echo "check-malloc: FAIL: $line"; exit 1 ;;
esac
got=$(printf '%s\n' "$line" | awk '{ print $2 }')
ver=$(printf '%s\n' "$line" | awk '{ print $3 }')
if [ "$got" != "$want" ] || [ -z "$ver" ]; then
  echo "check-malloc: FAIL: configured for $want, but --library-versions says: ${line:-no malloc line}"
  exit 1
fi
"$pctor" --version | grep -q "malloc $want $ver" ||
  { echo "check-malloc: FAIL: --version does not name malloc $want $ver"; exit 1; }
echo "check-malloc: pctor uses $want $ver, as configured"
