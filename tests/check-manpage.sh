#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# check-manpage.sh -- fail if doc/pctor.1 does not document every torrc
# option and command-line flag that the built daemon accepts.
#
# The options come from the binary itself (`pctor --list-torrc-options`,
# generated from the option tables, one name per line, checked against
# `pctor --list-options`) and the flags from `pctor --help`, so
# the man page cannot fall behind the option table. An option counts as
# documented when the man page shows it in bold at the start of an entry
# (".B Name", ".BR Name ...", or a line starting "\fBName"); a flag when it
# is in bold on such a line (".BR \-h , \-\-help"). Each option's entry
# must also say whether SIGHUP changes it, as the option table does, and
# every entry in an option section must name an existing option. Works in
# VPATH builds: the binary is found under $top_builddir, the page under
# $top_srcdir.
set -u
top_srcdir=${top_srcdir:-$(dirname "$0")/..}
top_builddir=${top_builddir:-.}
pctor="$top_builddir/src/app/pctor"
page="$top_srcdir/doc/pctor.1"

[ -x "$pctor" ] || { echo "check-manpage: $pctor not built"; exit 99; }
[ -f "$page" ] || { echo "check-manpage: $page missing"; exit 1; }

opts=$("$pctor" --list-torrc-options) || {
  echo "check-manpage: '$pctor --list-torrc-options' failed"; exit 1; }
listed=$("$pctor" --list-options | grep '^[A-Za-z]' | cut -d' ' -f1) || {
  echo "check-manpage: '$pctor --list-options' failed"; exit 1; }
[ "$opts" = "$listed" ] || {
  echo "check-manpage: --list-torrc-options and --list-options disagree"
  exit 1; }
flags=$("$pctor" --help | grep -o -- '^ *-[-a-z]*\(, --[-a-z]*\)\?' |
        tr ',' '\n' | tr -d ' ' | grep -v '^-*$') || {
  echo "check-manpage: '$pctor --help' failed"; exit 1; }
[ -n "$opts" ] || { echo "check-manpage: no options listed"; exit 1; }

# The page with roff's escaped hyphens made plain.
text=$(sed 's/\\-/-/g' "$page")
missing=0
for o in $opts; do
  # A torrc option starts an entry: ".B o", ".BR o ...", ".BI o ..." or a
  # line beginning with "\fBo".
  if ! printf '%s\n' "$text" |
       grep -E -q -- "^(\.B[RI]? +\"?|\\\\fB)$o([^A-Za-z0-9-]|\$)"; then
    echo "check-manpage: option $o is not documented in doc/pctor.1"
    missing=1
  fi
done
for o in $flags; do
  # A flag appears in bold on a .B/.BR/.BI line or as "\fBflag".
  if ! printf '%s\n' "$text" |
       grep -E -q -- "^\.B[RI]? (.*[ \"])?$o([^A-Za-z0-9-]|\$)|\\\\fB$o([^A-Za-z0-9-]|\$)"; then
    echo "check-manpage: flag $o is not documented in doc/pctor.1"
    missing=1
  fi
done
# An option's entry: from its header line (right after .TP) to the next
# .TP, .SH or .PP, joined into one line.
entry() {
  printf '%s\n' "$text" | awk -v n="$1" '
    on && /^\.(TP|SH|PP)/ { exit }
    !on && prev == ".TP" && $0 ~ ("^\\.B[RI]? +\"?" n "([^A-Za-z0-9-]|$)") { on = 1 }
    on { printf "%s ", $0 }
    { prev = $0 }'
}
# Whether SIGHUP changes each option, from --list-options ("Changes on
# SIGHUP: yes|no", possibly wrapped), must be what the entry says.
reload=$("$pctor" --list-options | awk '
  /^[A-Za-z]/ { if (n != "") print n, r; n = $1; r = ""; buf = "" }
  { buf = buf " " $0
    if (buf ~ /Changes +on +SIGHUP: +yes/) r = "yes"
    else if (buf ~ /Changes +on +SIGHUP: +no/) r = "no" }
  END { if (n != "") print n, r }')
while read -r o r; do
  e=$(entry "$o")
  [ -n "$e" ] || continue # reported above
  case $r in
  yes) printf '%s' "$e" | grep -q "Can be changed by SIGHUP" || {
         echo "check-manpage: $o changes on SIGHUP, but its entry does not say \"Can be changed by SIGHUP\""
         missing=1; } ;;
  no) printf '%s' "$e" | grep -Eq "Needs a restart|Cannot be changed by SIGHUP" || {
        echo "check-manpage: $o needs a restart, but its entry does not say so"
        missing=1; } ;;
  *) echo "check-manpage: --list-options does not say whether $o changes on SIGHUP"
     missing=1 ;;
  esac
done <<EOF
$reload
EOF
# The other way round: every entry in an option section names an option
# the daemon has (no documentation of options that are gone).
documented=$(printf '%s\n' "$text" | awk '
  /^\.SH / { sec = $0; next }
  prev == ".TP" && sec ~ /OPTIONS/ && sec !~ /COMMAND-LINE/ && /^\.B[RI]? / {
    w = $2; gsub(/"/, "", w); print w }
  { prev = $0 }')
for d in $documented; do
  printf '%s\n' "$opts" | grep -qx -- "$d" || {
    echo "check-manpage: doc/pctor.1 documents $d, which pctor does not have"
    missing=1; }
done
[ "$missing" = 0 ] || exit 1
n=$(printf '%s\n' $opts | wc -l)
echo "check-manpage: all $n options (and whether SIGHUP changes them) and the command-line flags are documented"
exit 0
