#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# python-tests.sh -- the pytest unit tests of the test bed's package
# scripts/pctor_lab (tests/python/test_*.py: its parsers and statistics),
# as one test of `make check`.
#
# They run with /usr/bin/python3, the interpreter the scripts name in their
# shebangs, and write nothing into the source tree (no __pycache__, no
# .pytest_cache: distcheck's source tree is read-only). Without pytest
# (Debian: python3-pytest, in scripts/install-deps) the test is skipped.
set -eu
top=${top_srcdir:-$(dirname "$0")/..}
py=/usr/bin/python3
[ -x "$py" ] || py=${PYTHON3:-python3}
if ! "$py" -c 'import pytest' 2>/dev/null; then
    echo "python-tests: SKIP: pytest is missing ($py; apt-get install python3-pytest)"
    exit 77
fi
top_srcdir=$top PYTHONDONTWRITEBYTECODE=1 exec "$py" -m pytest -q -p no:cacheprovider \
    --rootdir "$top/tests/python" "$top/tests/python"
