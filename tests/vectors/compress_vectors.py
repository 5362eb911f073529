#!/usr/bin/env python3
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
