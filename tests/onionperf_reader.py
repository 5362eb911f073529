#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
# onionperf_reader.py -- a small reader of OnionPerf analysis files, written
# from OnionPerf's documented format (the JSON schema "OnionPerf analysis
# JSON file format 4.0", schema/onionperf-4.0.json in OnionPerf's
# repository), independent of the program that wrote the file (it imports
# nothing of pctor). The integration test tests/integration/measure.sh
# loads pctor-measure's output with it.
#
#   onionperf_reader.py FILE[.xz]     validate; print a JSON summary
#
# Checks what the schema requires (document type and version, source names,
# the required members of every tgen stream, tor circuit and tor stream,
# their types and string patterns, no members the schema forbids in tor
# circuits and streams), then does what analysis tools do with the file:
# time to first and last byte per transfer size from time_info and
# elapsed_seconds, and the links between a tgen stream and its tor stream
# (the local port of the transport = the source port of the tor stream) and
# between a tor stream and its circuit (circuit_id). Exit status 1 with a
# list of problems if the file does not conform.

import json
import lzma
import re
import sys

STREAM_REQUIRED = ("byte_info", "is_complete", "is_error", "is_success", "stream_id",
                   "stream_info", "time_info", "transport_info", "unix_ts_end", "unix_ts_start")
BYTE_INFO = ("payload-bytes-recv", "payload-bytes-send", "payload-progress-recv",
             "payload-progress-send", "total-bytes-recv", "total-bytes-send")
STREAM_INFO = ("error", "id", "name", "peername", "recvsize", "recvstate", "sendsize",
               "sendstate", "vertexid")
TIME_INFO = ("created-ts", "now-ts", "usecs-to-checksum-recv", "usecs-to-checksum-send",
             "usecs-to-command", "usecs-to-first-byte-recv", "usecs-to-first-byte-send",
             "usecs-to-last-byte-recv", "usecs-to-last-byte-send", "usecs-to-proxy-choice",
             "usecs-to-proxy-init", "usecs-to-proxy-request", "usecs-to-proxy-response",
             "usecs-to-response", "usecs-to-socket-connect", "usecs-to-socket-create")
TRANSPORT_INFO = ("error", "fd", "local", "proxy", "remote", "state")
CIRC_ALLOWED = {"build_quantile", "build_timeout", "buildtime_seconds", "circuit_id",
                "elapsed_seconds", "failure_reason_local", "failure_reason_remote",
                "filtered_out", "path", "unix_ts_end", "unix_ts_start"}
CIRC_REQUIRED = ("circuit_id", "elapsed_seconds", "unix_ts_end", "unix_ts_start")
TSTREAM_ALLOWED = {"circuit_id", "elapsed_seconds", "failure_reason_local",
                   "failure_reason_remote", "source", "stream_id", "target", "unix_ts_end",
                   "unix_ts_start"}
TSTREAM_REQUIRED = ("circuit_id", "elapsed_seconds", "stream_id", "target", "unix_ts_end",
                    "unix_ts_start")


def is_num(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def load(path):
    opener = lzma.open if path.endswith(".xz") else open
    with opener(path, "rt") as f:
        return json.load(f)


def check(doc):
    p = []
    if not isinstance(doc, dict):
        return ["the document is not an object"], {}
    for k in ("data", "type", "version"):
        if k not in doc:
            p.append(f"missing top-level '{k}'")
    if doc.get("type") != "onionperf":
        p.append(f"type is {doc.get('type')!r}, not 'onionperf'")
    if not re.fullmatch(r"4\.[0-9]+", str(doc.get("version", ""))):
        p.append(f"version {doc.get('version')!r} is not 4.x")
    summary = {"sources": {}}
    data = doc.get("data") if isinstance(doc.get("data"), dict) else {}
    for src, d in data.items():
        if not re.fullmatch(r"[A-Za-z0-9-]+", src):
            p.append(f"source name {src!r}")
        for k in ("measurement_ip", "tgen", "tor"):
            if k not in d:
                p.append(f"{src}: missing '{k}'")
        tgen = d.get("tgen", {}).get("streams")
        tor = d.get("tor", {})
        if not isinstance(tgen, dict):
            p.append(f"{src}: tgen.streams is not an object")
            tgen = {}
        circs, tstreams = tor.get("circuits"), tor.get("streams")
        if not isinstance(circs, dict) or not isinstance(tstreams, dict):
            p.append(f"{src}: tor.circuits / tor.streams missing")
            circs, tstreams = circs or {}, tstreams or {}
        for cid, c in circs.items():
            w = f"{src}: circuit {cid}"
            if not re.fullmatch(r"[0-9]+", cid):
                p.append(f"{w}: key is not a number")
            for k in CIRC_REQUIRED:
                if k not in c:
                    p.append(f"{w}: missing {k}")
            for k in set(c) - CIRC_ALLOWED:
                p.append(f"{w}: member {k} is not allowed")
            if not isinstance(c.get("circuit_id"), int):
                p.append(f"{w}: circuit_id is not an integer")
            for e in c.get("elapsed_seconds", []):
                if not (isinstance(e, list) and len(e) == 2 and isinstance(e[0], str)
                        and is_num(e[1])):
                    p.append(f"{w}: bad elapsed_seconds entry {e!r}")
            for e in c.get("path", []):
                if not (isinstance(e, list) and len(e) == 2 and isinstance(e[0], str) and
                        re.fullmatch(r"\$[0-9A-Z]{40}~[0-9a-zA-Z]{1,19}", e[0]) and
                        is_num(e[1]) and e[1] >= 0):
                    p.append(f"{w}: bad path entry {e!r}")
            for k in ("unix_ts_start", "unix_ts_end", "buildtime_seconds"):
                if k in c and not is_num(c[k]):
                    p.append(f"{w}: {k} is not a number")
        by_source = {}
        for sid, s in tstreams.items():
            w = f"{src}: tor stream {sid}"
            if not re.fullmatch(r"[0-9]+", sid):
                p.append(f"{w}: key is not a number")
            for k in TSTREAM_REQUIRED:
                if k not in s:
                    p.append(f"{w}: missing {k}")
            for k in set(s) - TSTREAM_ALLOWED:
                p.append(f"{w}: member {k} is not allowed")
            if not isinstance(s.get("stream_id"), int) or not isinstance(s.get("target"), str):
                p.append(f"{w}: stream_id or target of the wrong type")
            # OnionPerf writes the circuit as stem gives it, a string, and
            # its visualization looks circuits up by that string.
            if s.get("circuit_id") is not None and not isinstance(s["circuit_id"], str):
                p.append(f"{w}: circuit_id is not a string (OnionPerf's plots fail)")
            if "source" in s:
                by_source[s["source"].rsplit(":", 1)[-1]] = s
        per_size = {}
        linked = 0
        for sid, s in tgen.items():
            w = f"{src}: tgen stream {sid}"
            for k in STREAM_REQUIRED:
                if k not in s:
                    p.append(f"{w}: missing {k}")
            for sec, keys in (("byte_info", BYTE_INFO), ("stream_info", STREAM_INFO),
                              ("time_info", TIME_INFO), ("transport_info", TRANSPORT_INFO)):
                for k in keys:
                    if not isinstance(s.get(sec, {}).get(k), str):
                        p.append(f"{w}: {sec}.{k} missing or not a string")
            bi = s.get("byte_info", {})
            for k in ("payload-bytes-recv", "payload-bytes-send", "total-bytes-recv",
                      "total-bytes-send"):
                if not re.fullmatch(r"[0-9]+", str(bi.get(k, ""))):
                    p.append(f"{w}: byte_info.{k} = {bi.get(k)!r}")
            for k in ("payload-progress-recv", "payload-progress-send"):
                if not re.fullmatch(r"[0-9]+\.[0-9]+%", str(bi.get(k, ""))):
                    p.append(f"{w}: byte_info.{k} = {bi.get(k)!r}")
            for k in ("is_complete", "is_error", "is_success"):
                if not isinstance(s.get(k), bool):
                    p.append(f"{w}: {k} is not a boolean")
            for k in ("unix_ts_start", "unix_ts_end"):
                if not is_num(s.get(k)):
                    p.append(f"{w}: {k} is not a number")
            es = s.get("elapsed_seconds", {})
            for k, pat in (("payload_bytes_recv", r"[0-9]+"), ("payload_bytes_send", r"[0-9]+"),
                           ("payload_progress_recv", r"[01]\.[0-9]"),
                           ("payload_progress_send", r"[01]\.[0-9]")):
                for kk, v in es.get(k, {}).items():
                    if not re.fullmatch(pat, kk) or not is_num(v):
                        p.append(f"{w}: elapsed_seconds.{k}.{kk}")
            ti = s.get("time_info", {})
            size = s.get("stream_info", {}).get("recvsize", "?")
            e = per_size.setdefault(size, {"n": 0, "success": 0, "error": 0, "ttfb": [],
                                           "ttlb": [], "linked_circuits": 0})
            e["n"] += 1
            if s.get("is_success"):
                e["success"] += 1
                try:
                    e["ttfb"].append(int(ti["usecs-to-first-byte-recv"]) / 1e6)
                    e["ttlb"].append(int(ti["usecs-to-last-byte-recv"]) / 1e6)
                except (KeyError, ValueError):
                    p.append(f"{w}: a success without first/last byte times")
                if "1.0" not in es.get("payload_progress_recv", {}):
                    p.append(f"{w}: a success without payload_progress_recv 1.0")
            if s.get("is_error"):
                e["error"] += 1
            port = s.get("transport_info", {}).get("local", "").rsplit(":", 1)[-1]
            ts = by_source.get(port)
            if ts is not None and str(ts.get("circuit_id")) in circs:
                linked += 1
                e["linked_circuits"] += 1
        for e in per_size.values():
            for k in ("ttfb", "ttlb"):
                v = sorted(e.pop(k))
                e[f"{k}_median"] = v[len(v) // 2] if v else None
        summary["sources"][src] = {
            "tgen_streams": len(tgen), "tor_circuits": len(circs), "tor_streams": len(tstreams),
            "tgen_streams_linked_to_circuits": linked,
            "circuits_with_path": sum(1 for c in circs.values() if c.get("path")),
            "per_recvsize": per_size}
    return p, summary


def main():
    if len(sys.argv) != 2:
        print("usage: onionperf_reader.py FILE[.xz]", file=sys.stderr)
        return 2
    try:
        doc = load(sys.argv[1])
    except (OSError, ValueError, lzma.LZMAError) as e:
        print(f"onionperf_reader: cannot load {sys.argv[1]}: {e}", file=sys.stderr)
        return 1
    problems, summary = check(doc)
    for x in problems[:50]:
        print(f"onionperf_reader: {x}", file=sys.stderr)
    print(json.dumps(summary, indent=1, sort_keys=True))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
