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
# Prints every violation and exits 1 if there is any.
set -u
top=${top_srcdir:-$(dirname "$0")/..}
cd "$top/src" || exit 99
out=$(mktemp)
trap 'rm -f "$out"' EXIT
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
if [ -s "$out" ]; then
  cat "$out"; exit 1
fi
echo "layers: all includes respect src/lib -> src/core -> src/feature -> src/app"
exit 0
