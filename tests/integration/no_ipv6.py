#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""no_ipv6.py -- run a program as on a host without IPv6.

Usage: no_ipv6.py PROGRAM [ARGS...]

Installs a seccomp filter (through libseccomp, with ctypes: no Python
module needed) under which socket(AF_INET6, ...) fails with EAFNOSUPPORT,
as on a kernel booted with ipv6.disable=1, then executes PROGRAM. Every
other system call is allowed. A test uses it to check that a daemon still
starts, and says so, where IPv6 does not exist (disable_ipv6 sysctls do not
make socket() fail, so they cannot show this). Exits 77 (skip) when
libseccomp cannot be loaded or the filter cannot be installed.
"""
import ctypes
import ctypes.util
import os
import sys

SCMP_ACT_ALLOW = 0x7FFF0000
SCMP_ACT_ERRNO_BASE = 0x00050000
SCMP_CMP_EQ = 4
AF_INET6 = 10
EAFNOSUPPORT = 97


class ArgCmp(ctypes.Structure):
    """struct scmp_arg_cmp"""
    _fields_ = [("arg", ctypes.c_uint), ("op", ctypes.c_int),
                ("datum_a", ctypes.c_uint64), ("datum_b", ctypes.c_uint64)]


def main():
    if len(sys.argv) < 2:
        sys.exit("usage: no_ipv6.py PROGRAM [ARGS...]")
    name = ctypes.util.find_library("seccomp") or "libseccomp.so.2"
    try:
        lib = ctypes.CDLL(name)
    except OSError as e:
        print("no_ipv6.py: cannot load libseccomp: %s" % e, file=sys.stderr)
        sys.exit(77)
    lib.seccomp_init.restype = ctypes.c_void_p
    lib.seccomp_init.argtypes = [ctypes.c_uint32]
    lib.seccomp_syscall_resolve_name.argtypes = [ctypes.c_char_p]
    lib.seccomp_rule_add_array.argtypes = [
        ctypes.c_void_p, ctypes.c_uint32, ctypes.c_int, ctypes.c_uint,
        ctypes.POINTER(ArgCmp)]
    lib.seccomp_load.argtypes = [ctypes.c_void_p]
    ctx = lib.seccomp_init(SCMP_ACT_ALLOW)
    nr = lib.seccomp_syscall_resolve_name(b"socket")
    cmp = ArgCmp(0, SCMP_CMP_EQ, AF_INET6, 0)
    if (not ctx or nr < 0 or
            lib.seccomp_rule_add_array(ctx, SCMP_ACT_ERRNO_BASE | EAFNOSUPPORT,
                                       nr, 1, ctypes.byref(cmp)) != 0 or
            lib.seccomp_load(ctx) != 0):
        print("no_ipv6.py: cannot install the seccomp filter", file=sys.stderr)
        sys.exit(77)
    os.execvp(sys.argv[1], sys.argv[1:])


if __name__ == "__main__":
    main()
