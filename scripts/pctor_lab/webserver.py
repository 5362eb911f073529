# SPDX-License-Identifier: BSD-3-Clause
# webserver.py -- the experiments' web server (both engines): Python's
# threading HTTP file server with a listen backlog of 4096.
#
#   python3 webserver.py PORT --bind IP --directory DIR
#
# `python3 -m http.server` listens with a backlog of 5 (socketserver's
# request_queue_size). With hundreds of virtual clients the exits' connects
# to it come in bursts: SYNs beyond the backlog are dropped, and each such
# request waits for the exit's SYN retransmission, 1, 3, 7 or 15 s later
# (in Shadow's paper-scale runs about half of the web requests did;
# doc/experiments.md). It is a standalone file (standard library only),
# so that Shadow can run it by path. Access lines go to stderr as
# http.server's do.
import argparse
import functools
import http.server
import sys

BACKLOG = 4096   # the kernel caps it at net.core.somaxconn (Shadow: 4096)


class Server(http.server.ThreadingHTTPServer):
    request_queue_size = BACKLOG
    daemon_threads = True


def main(argv=None):
    p = argparse.ArgumentParser(description="Serve a directory over HTTP/1.0 "
                                "with a listen backlog of %d." % BACKLOG)
    p.add_argument("port", type=int)
    p.add_argument("--bind", default="0.0.0.0")
    p.add_argument("--directory", default=".")
    a = p.parse_args(argv)
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=a.directory)
    with Server((a.bind, a.port), handler) as httpd:
        httpd.serve_forever()


if __name__ == "__main__":
    sys.exit(main())
