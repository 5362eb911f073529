#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""compress_vectors.py -- known-answer inputs for tests/unit/check_compress.c.

Produces zlib (RFC 1950) and gzip (RFC 1952) encodings of a short text with
Python's zlib/gzip modules, printed as C byte arrays. Run by hand:
    python3 tests/vectors/compress_vectors.py
"""
import gzip
import zlib

TEXT = b"network-status-version 3 microdesc\nvote-status consensus\n" * 3

def carr(name, data):
    print("static const uint8_t %s[%d] = {" % (name, len(data)))
    for i in range(0, len(data), 12):
        print("  " + ", ".join("0x%02x" % b for b in data[i:i + 12]) + ",")
    print("};")

carr("zlib_vec", zlib.compress(TEXT, 9))
carr("gzip_vec", gzip.compress(TEXT, compresslevel=9, mtime=0))
# A stored (uncompressed) zlib block, level 0.
carr("zlib_stored_vec", zlib.compress(b"abc", 0))

# zstd and lzma ("x-zstd", "x-tor-lzma", dir-spec 6.1), from independent
# encoders: the zstd command-line tool (Python 3.11 has no zstd module)
# and Python's lzma module in the legacy .lzma format (FORMAT_ALONE),
# which is what tor's "x-tor-lzma" is.
import lzma
import subprocess

carr("zstd_vec", subprocess.run(["zstd", "-q", "-c", "-19"],
                                input=TEXT, capture_output=True,
                                check=True).stdout)
carr("lzma_vec", lzma.compress(TEXT, format=lzma.FORMAT_ALONE,
                               filters=[{"id": lzma.FILTER_LZMA1,
                                         "preset": 6,
                                         "dict_size": 1 << 16}]))
