#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# check-layers.sh -- enforce pctor's layering on every #include under src/.
#
#   src/lib/M      may include lib/*            (generic code, no Tor knowledge)
#   src/core       may include lib/*, core/*    (the protocol spine)
#   src/feature/F  may include lib/*, core/*, feature/F/*, and feature/G/*
#                  only for each G named in src/feature/F/DEPENDS
#   src/app, src/tools  may include anything under src/
# Third-party headers are confined too:
#   <event2/...>           only in src/lib/evloop
#   <openssl/...>          only in src/lib/crypt and src/lib/tls
#   <zlib.h>, <zstd.h>, <lzma.h> only in src/lib/compress
#   <jemalloc/...>, <mimalloc.h> only in src/lib/malloc
#   <sys/capability.h>     only in src/app
#   <seccomp.h>            only in src/lib/sandbox
#   <lwip/...>             only in src/lib/utcp
# Modules are ordered too: no include cycle between the modules of src/lib
# (lib/M includes lib/N, directly or through others, and N includes M) or
# between features (through their DEPENDS-allowed includes), found with
# tsort(1), with no exception (lib/address, holding pc_addr_t, is what
# both lib/evloop's resolver and lib/net's connections use).
# The build follows the layers too: src/libpctor_lib.a holds only src/lib
# sources, src/libpctor_core.a only src/core ones and src/libpctor.a none
# of either (as the include.am files list them), and the unit tests of tests/unit/check_core (the suites
# of tests/unit/suites_core.h, built into tests/unit/libcheck_core.a with
# fixture_core and fixture_circuit) include only lib/ and core/ headers;
# check_core links only those two archives, so a core test that calls
# feature code fails to link.
# Prints every violation and exits 1 if there is any.
set -u
top=${top_srcdir:-$(dirname "$0")/..}
cd "$top/src" || exit 99
out=$(mktemp)
edges=$(mktemp)
trap 'rm -f "$out" "$edges"' EXIT
bad() { echo "layer violation: $1"; }

for f in $(find . -name '*.[ch]' | sed 's|^\./||' | sort); do
  dir=$(dirname "$f")
  case "$f" in
    lib/*)     layer=lib;     mod=$(echo "$f" | cut -d/ -f2) ;;
    core/*)    layer=core;    mod=core ;;
    feature/*) layer=feature; mod=$(echo "$f" | cut -d/ -f2) ;;
    app/*|tools/*) layer=app; mod=app ;;
    *) bad "$f: file outside src/{lib,core,feature,app,tools}"; continue ;;
  esac
  deps=""
  [ "$layer" = feature ] && [ -f "feature/$mod/DEPENDS" ] && deps=$(cat "feature/$mod/DEPENDS")
  grep -n '^[[:space:]]*#[[:space:]]*include' "$f" | while IFS= read -r line; do
    n=${line%%:*}
    inc=$(echo "$line" | sed -n 's/.*#[[:space:]]*include[[:space:]]*\([<"][^>"]*[>"]\).*/\1/p')
    name=$(echo "$inc" | tr -d '<>"')
    case "$inc" in
      \<event2/*) [ "$dir" = lib/evloop ] || bad "$f:$n: $inc outside src/lib/evloop" ;;
      \<openssl/*) case "$dir" in lib/crypt|lib/tls) ;; *) bad "$f:$n: $inc outside src/lib/crypt, src/lib/tls" ;; esac ;;
      \<zlib.h\>|\<zstd.h\>|\<lzma.h\>|\<lzma/*) [ "$dir" = lib/compress ] || bad "$f:$n: $inc outside src/lib/compress" ;;
      \<jemalloc/*|\<mimalloc.h\>|\<mimalloc-*) [ "$dir" = lib/malloc ] || bad "$f:$n: $inc outside src/lib/malloc" ;;
      \<seccomp.h\>) [ "$dir" = lib/sandbox ] || bad "$f:$n: $inc outside src/lib/sandbox" ;;
      \<lwip/*) [ "$dir" = lib/utcp ] || bad "$f:$n: $inc outside src/lib/utcp" ;;
      \<sys/capability.h\>) case "$dir" in app/*) ;; *) bad "$f:$n: $inc outside src/app" ;; esac ;;
      \"*)
        case "$name" in
          */*) ;;
          *) continue ;;  # same-directory include
        esac
        case "$layer:$name" in
          lib:lib/*|feature:feature/*)
            to=$(echo "$name" | cut -d/ -f1-2)
            [ "$to" = "$layer/$mod" ] || echo "$layer/$mod $to" >> "$edges" ;;
        esac
        case "$layer:$name" in
          lib:lib/*|core:lib/*|core:core/*|feature:lib/*|feature:core/*|app:*) ;;
          feature:feature/*)
            g=$(echo "$name" | cut -d/ -f2)
            if [ "$g" != "$mod" ] && ! echo "$deps" | grep -qx "$g"; then
              bad "$f:$n: includes $name but feature/$mod/DEPENDS does not name $g"
            fi ;;
          *) bad "$f:$n: $layer code includes $name" ;;
        esac ;;
    esac
  done
done > "$out" 2>&1
# Each archive's sources, from every include.am (continuation lines joined).
sources_of() {
  { cat ../Makefile.am; find ../src ../tests -name include.am | sort | xargs cat; } | awk -v v="$1" '
      { line = $0; while (line ~ /\\$/ && (getline nxt) > 0) { sub(/\\$/, " ", line); line = line nxt } }
      { n = split(line, w, /[ \t]+/); if (w[1] == v && (w[2] == "+=" || w[2] == "=")) for (i = 3; i <= n; i++) if (w[i] != "") print w[i] }'
}
for src in $(sources_of src_libpctor_lib_a_SOURCES); do
  case "$src" in src/lib/*) ;; *) bad "src/libpctor_lib.a lists $src, which is not under src/lib" ;; esac
done >> "$out"
for src in $(sources_of src_libpctor_core_a_SOURCES); do
  case "$src" in src/core/*) ;; *) bad "src/libpctor_core.a lists $src, which is not under src/core" ;; esac
done >> "$out"
for src in $(sources_of src_libpctor_a_SOURCES); do
  case "$src" in src/lib/*|src/core/*) bad "src/libpctor.a lists $src: it belongs in src/libpctor_$(echo "$src" | cut -d/ -f2).a" ;; esac
done >> "$out"
core_tests=$(sources_of tests_unit_libcheck_core_a_SOURCES)
for s in $(sed -n 's/^SUITE(\([a-z0-9_]*\))$/\1/p' ../tests/unit/suites_core.h); do
  echo "$core_tests" | grep -qx "tests/unit/check_$s.c" ||
    bad "suites_core.h names $s but tests/unit/check_$s.c is not in tests_unit_libcheck_core_a_SOURCES"
done >> "$out"
for t in $core_tests; do
  case "$t" in *.c|*.h) ;; *) continue ;; esac
  grep -n '^[[:space:]]*#[[:space:]]*include[[:space:]]*"' "../$t" |
    sed -n 's/^\([0-9]*\):.*include[[:space:]]*"\([^"]*\)".*/\1 \2/p' |
    while read -r n name; do
      case "$name" in
        lib/*|core/*|fixture_core.h|fixture_circuit.h|suites_core.h|config.h) ;;
        *) bad "$t:$n: a check_core test includes $name (only lib/, core/, fixture_core.h and fixture_circuit.h)" ;;
      esac
    done
done >> "$out"

# A cycle between modules: tsort names the modules on it.
if ! sort -u "$edges" | tsort > /dev/null 2> "$edges.err"; then
  sed -n 's/^tsort: //p' "$edges.err" | grep -v 'input contains a loop' |
    tr '\n' ' ' | sed 's/^/layer violation: include cycle between modules: /; s/ $/\n/' >> "$out"
fi
rm -f "$edges.err"
if [ -s "$out" ]; then
  cat "$out"; exit 1
fi
echo "layers: all includes respect src/lib -> src/core -> src/feature -> src/app, no module cycles; check_core uses lib and core alone"
exit 0
