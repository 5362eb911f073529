# SPDX-License-Identifier: BSD-3-Clause
# conftest.py -- pytest set-up for tests/python: the package under test,
# scripts/pctor_lab, is imported from the source tree ($top_srcdir when
# make check sets it, else relative to this file), and the test-bed and
# experiment files the tests read are found there too.
import os
import sys

import pytest

TOP = os.path.abspath(os.environ.get("top_srcdir") or
                      os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
sys.path.insert(0, os.path.join(TOP, "scripts"))


@pytest.fixture
def top():
    return TOP
