#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# family-keys.sh -- tor 0.4.9's family keys (FamilyId, --keygen-family) and
# passphrase-encrypted master keys (--keygen --passphrase-fd, --newpass),
# each way between pctor and tor 0.4.9.
#
#  1. Encrypted master keys, no network: tor --keygen makes an encrypted
#     master key; pctor --keygen opens it with the passphrase (a wrong one
#     is refused and changes nothing) and certifies a new signing key with
#     it. pctor --keygen makes an encrypted master key that tor --keygen
#     opens (and refuses with a wrong passphrase); --newpass with the fd
#     fails on an encrypted key as tor's does (its second read is empty),
#     and encrypts an unencrypted one, which tor then opens.
#     On a terminal (script(1)), a new passphrase is asked twice and tor
#     then opens the key with it.
#  2. Family keys in a private network of 3 tor authorities: family A made
#     by tor --keygen-family, family B by pctor --keygen-family (the output
#     lines are compared with tor's format). A pctor relay whose identity
#     is tor's encrypted master key (so it runs with the master key
#     offline, on the signing key of step 1) uses FamilyId A and B; a tor
#     relay uses the same two keys (so tor reads pctor's key file). The
#     test waits until a consensus lists both Running and Valid, checks
#     that pctor's descriptor carries two family-cert lines, and that the
#     authorities derived, from those certificates, a family-ids line with
#     both IDs in each relay's microdescriptor -- so tor authorities
#     checked pctor's family certificates and accepted them. Then SIGHUP
#     with one FamilyId removed: pctor's descriptor has one family-cert.
# About 30 seconds.

. "$(dirname "$0")/lib.sh"
set -u

it_require_tor
PCTOR=${PCTOR:-${top_builddir:?}/src/app/pctor}
[ -x "$PCTOR" ] || it_fail "pctor is not built ($PCTOR)"
PCTOR=$(realpath "$PCTOR")
TOR=${TOR:-tor}
[ "$TOR" = no ] && TOR=tor
PY=$(it_python3) || it_skip "python3 is not installed"

tmp=$(it_tmpdir)
# keygen PROG DATADIR [FLAGS...] < passphrase: --keygen on DATADIR with no
# torrc; the output goes to DATADIR.out.
keygen() {
    local prog=$1 dd=$2
    shift 2
    "$prog" --keygen --DataDirectory "$dd" --ignore-missing-torrc \
        -f "$tmp/none" "$@" > "$dd.out" 2>&1
}

# --- 1. encrypted master keys ------------------------------------------
d1=$tmp/d1 d2=$tmp/d2
mkdir -m 700 "$d1" "$d2"
printf 'tor secret' | keygen "$TOR" "$d1" --passphrase-fd 0 ||
    it_fail "tor --keygen failed: $(tail -3 "$d1.out")"
[ -f "$d1/keys/ed25519_master_id_secret_key_encrypted" ] &&
    [ ! -f "$d1/keys/ed25519_master_id_secret_key" ] ||
    it_fail "tor did not make an encrypted master key"
cert0=$(sha256sum < "$d1/keys/ed25519_signing_cert")
if printf 'wrong' | keygen "$PCTOR" "$d1" --passphrase-fd 0; then
    it_fail "pctor --keygen accepted a wrong passphrase"
fi
grep -q "wrong passphrase" "$d1.out" || it_fail "no clear refusal: $(cat "$d1.out")"
[ "$(sha256sum < "$d1/keys/ed25519_signing_cert")" = "$cert0" ] ||
    it_fail "a refused pctor --keygen changed the signing certificate"
printf 'tor secret' | keygen "$PCTOR" "$d1" --passphrase-fd 0 ||
    it_fail "pctor --keygen cannot open tor's encrypted key: $(cat "$d1.out")"
[ "$(sha256sum < "$d1/keys/ed25519_signing_cert")" != "$cert0" ] ||
    it_fail "pctor --keygen made no new signing certificate"
[ ! -f "$d1/keys/ed25519_master_id_secret_key" ] ||
    it_fail "pctor --keygen left the master key unencrypted"
it_log "pctor --keygen opened tor's encrypted master key"

printf 'pctor secret' | keygen "$PCTOR" "$d2" --passphrase-fd 0 ||
    it_fail "pctor --keygen (new, encrypted) failed: $(cat "$d2.out")"
[ -f "$d2/keys/ed25519_master_id_secret_key_encrypted" ] &&
    [ ! -f "$d2/keys/ed25519_master_id_secret_key" ] ||
    it_fail "pctor did not make an encrypted master key"
if printf 'wrong' | keygen "$TOR" "$d2" --passphrase-fd 0 ||
        ! grep -q "Unable to read" "$d2.out"; then
    it_fail "tor opened pctor's key with a wrong passphrase: $(cat "$d2.out")"
fi
cert0=$(sha256sum < "$d2/keys/ed25519_signing_cert")
printf 'pctor secret' | keygen "$TOR" "$d2" --passphrase-fd 0 ||
    it_fail "tor --keygen failed on pctor's key: $(cat "$d2.out")"
if grep -E '\[(warn|err)\]' "$d2.out" | grep -v "running Tor as root"; then
    it_fail "tor --keygen cannot read pctor's encrypted master key"
fi
[ "$(sha256sum < "$d2/keys/ed25519_signing_cert")" != "$cert0" ] ||
    it_fail "tor made no new signing certificate from pctor's master key"
printf 'pctor secret' | keygen "$PCTOR" "$d2" --newpass --passphrase-fd 0 &&
    it_fail "pctor --newpass took an empty second passphrase from the fd (tor refuses)"
# An unencrypted master key, then --newpass with the fd: encrypted, as
# tor does it.
d3=$tmp/d3
mkdir -m 700 "$d3"
keygen "$PCTOR" "$d3" --no-passphrase < /dev/null ||
    it_fail "pctor --keygen --no-passphrase failed: $(cat "$d3.out")"
grep -qx "Not encrypting the secret key." "$d3.out" || it_fail "pctor did not say it does not encrypt"
[ -f "$d3/keys/ed25519_master_id_secret_key" ] || it_fail "no unencrypted master key"
printf 'second secret' | keygen "$PCTOR" "$d3" --newpass --passphrase-fd 0 ||
    it_fail "pctor --newpass failed: $(cat "$d3.out")"
[ ! -f "$d3/keys/ed25519_master_id_secret_key" ] &&
    [ -f "$d3/keys/ed25519_master_id_secret_key_encrypted" ] ||
    it_fail "pctor --newpass did not encrypt the master key"
printf 'second secret' | keygen "$TOR" "$d3" --passphrase-fd 0 ||
    it_fail "tor --keygen failed after pctor --newpass: $(cat "$d3.out")"
if grep -q "Unable to read" "$d3.out"; then
    it_fail "tor cannot open the key pctor --newpass encrypted"
fi
it_log "tor --keygen opened pctor's encrypted master key (also after --newpass)"

# On a terminal (script(1) gives pctor one): asked twice for a new
# passphrase, which tor then takes from --passphrase-fd.
if command -v script > /dev/null; then
    d4=$tmp/d4
    mkdir -m 700 "$d4"
    (sleep 1; printf 'typed\n'; sleep 1; printf 'typed\n'; sleep 1) |
        script -qec "'$PCTOR' --keygen --DataDirectory '$d4' --ignore-missing-torrc -f '$tmp/none' --hush" \
        /dev/null > "$d4.tty" 2>&1 || it_fail "pctor --keygen on a terminal failed: $(cat "$d4.tty")"
    grep -q "Re-enter new passphrase:" "$d4.tty" || it_fail "pctor did not ask twice: $(cat "$d4.tty")"
    [ -f "$d4/keys/ed25519_master_id_secret_key_encrypted" ] ||
        it_fail "the passphrase typed on the terminal did not encrypt the key"
    printf 'typed' | keygen "$TOR" "$d4" --passphrase-fd 0 ||
        it_fail "tor --keygen failed: $(cat "$d4.out")"
    if grep -q "Unable to read" "$d4.out"; then
        it_fail "tor cannot open the key encrypted with a typed passphrase"
    fi
    it_log "a passphrase typed on the terminal works with tor"
fi

# --- 2. family keys in a private network -------------------------------
(cd "$tmp" && "$TOR" --keygen-family famA --ignore-missing-torrc -f "$tmp/none" \
    > famA.out 2>&1) || it_fail "tor --keygen-family failed"
(cd "$tmp" && "$PCTOR" --keygen-family famB > famB.out 2> famB.err) ||
    it_fail "pctor --keygen-family failed: $(cat "$tmp/famB.err")"
idA=$(cat "$tmp/famA.public_family_id")
idB=$(cat "$tmp/famB.public_family_id")
grep -qxF "FamilyId $idA" "$tmp/famA.out" || it_fail "tor's output lacks its ID"
# pctor prints what tor prints (tor adds its log lines on stdout).
printf '# Generated famB.secret_family_key\nFamilyId %s\n' "$idB" |
    cmp -s - "$tmp/famB.out" || it_fail "pctor --keygen-family printed: $(cat "$tmp/famB.out")"
[ "$(stat -c %a "$tmp/famB.secret_family_key")" = 600 ] &&
    [ "$(stat -c %s "$tmp/famB.secret_family_key")" = 96 ] ||
    it_fail "pctor's family key file is not tor's (mode 600, 96 bytes)"
if (cd "$tmp" && "$PCTOR" --keygen-family famB > /dev/null 2>&1); then
    it_fail "pctor --keygen-family overwrote a family key"
fi

it_net_start --authorities 3 --relays 0 --exit-relays 0
auth_dirport=$(awk '$7 == "authority" { print $3; exit }' "$nodes")

# The pctor relay on d1 (tor's encrypted identity): its family keys in a
# FamilyKeyDirectory of their own.
fk=$tmp/fk
mkdir -m 700 "$fk"
cp "$tmp/famA.secret_family_key" "$tmp/famB.secret_family_key" "$fk/"
read -r node pport pdport _ < <(it_privnet reserve "$net" --role pctor --nickname famp) ||
    it_fail "reserve failed"
p=$net/$node
{
    echo "DataDirectory $d1"
    echo "ORPort 127.0.0.1:$pport"
    echo "DirPort 127.0.0.1:$pdport"
    echo "Address 127.0.0.1"
    echo "Nickname famp"
    echo "ContactInfo pctor family test"
    echo "Log info file $p/info.log"
    echo "TestingTorNetwork 1"
    echo "AssumeReachable 1"
    cat "$net/dirauth.torrc"
    echo "FamilyKeyDirectory $fk"
    echo "FamilyId $idA"
    echo "FamilyId $idB"
} > "$p/torrc"
"$PCTOR" -f "$p/torrc" > "$p/stderr" 2>&1 &
echo $! > "$p/pid"
it_register_pid "$(cat "$p/pid")" || it_fail "famp did not start: $(cat "$p/stderr")"
it_wait_port 127.0.0.1 "$pport" 30 || it_fail "famp did not open its ORPort: $(tail -3 "$p/stderr")"
fp_p=$(awk '{ print $2 }' "$d1/fingerprint")
grep -q "offline" "$p/info.log" || it_fail "pctor did not run with its master key offline"

# A tor relay with both keys in its KeyDirectory and FamilyId *.
read -r node tport _ _ < <(it_privnet reserve "$net" --role relay --nickname famt) ||
    it_fail "reserve failed"
t=$net/$node
mkdir -m 700 "$t/data" "$t/data/keys"
cp "$tmp/famA.secret_family_key" "$tmp/famB.secret_family_key" "$t/data/keys/"
{
    grep -v '^#' "$net/common.torrc"
    echo "DataDirectory $t/data"
    echo "ORPort 127.0.0.1:$tport"
    echo "Address 127.0.0.1"
    echo "Nickname famt"
    echo "ContactInfo pctor family test"
    echo "SocksPort 0"
    echo "FamilyId *"
    echo "Log notice file $t/tor.log"
} > "$t/torrc"
"$TOR" -f "$t/torrc" > "$t/tor.out" 2>&1 &
echo $! > "$t/pid"
it_register_pid "$(cat "$t/pid")" || it_fail "tor did not start: $(tail -3 "$t/tor.out")"
it_wait_port 127.0.0.1 "$tport" 60 || it_fail "tor did not open its ORPort: $(tail -5 "$t/tor.log")"

# own_certs: the family-cert lines of the descriptor famp serves itself.
own_certs() {
    curl -sf --max-time 5 "http://127.0.0.1:$pdport/tor/server/authority" |
        grep -c '^family-cert$'
}
consensus() {
    curl -sf --max-time 5 --compressed \
        "http://127.0.0.1:$auth_dirport/tor/status-vote/current/consensus${1-}"
}
# listed NICK: auth0's consensus lists NICK Running and Valid.
listed() {
    consensus | awk -v n="$1" '$1 == "r" { cur = ($2 == n) } cur && $1 == "s" { print }' |
        grep -w Running | grep -qw Valid
}
it_wait_until 150 listed famp && it_wait_until 60 listed famt ||
    it_fail "the consensus does not list famp and famt Running and Valid"
it_log "consensus lists famp (pctor) and famt (tor) Running and Valid"
fp_t=$(awk '{ print $2 }' "$t/data/fingerprint")

desc=$(curl -sf --max-time 5 "http://127.0.0.1:$auth_dirport/tor/server/fp/$fp_p") ||
    it_fail "auth0 does not serve famp's descriptor"
[ "$(printf '%s\n' "$desc" | grep -c '^family-cert$')" = 2 ] ||
    it_fail "famp's descriptor has not two family-cert lines"
[ "$(own_certs)" = 2 ] || it_fail "famp's DirPort serves no descriptor with two family-cert lines"

# microdesc NICK: NICK's microdescriptor as auth0 serves it.
microdesc() {
    local d
    d=$(consensus -microdesc | awk -v n="$1" '$1 == "r" { cur = ($2 == n) } cur && $1 == "m" { print $2; exit }')
    [ -n "$d" ] || return 1
    curl -sf --max-time 5 "http://127.0.0.1:$auth_dirport/tor/micro/d/$d"
}
# has_ids NICK: its microdescriptor lists both family IDs.
has_ids() {
    local m line
    m=$(microdesc "$1") || return 1
    line=$(printf '%s\n' "$m" | grep '^family-ids ') || return 1
    printf '%s\n' "$line" | grep -qF "ed25519:$idA" &&
        printf '%s\n' "$line" | grep -qF "ed25519:$idB"
}
if ! it_wait_until 60 has_ids famp || ! it_wait_until 30 has_ids famt; then
    it_log "famp: $(microdesc famp | grep -i family)"
    it_log "famt: $(microdesc famt | grep -i family)"
    it_fail "the microdescriptors do not list both families"
fi
it_log "famp's and famt's microdescriptors: $(microdesc famp | grep '^family-ids')"
it_log "pctor $fp_p and tor $fp_t are in families A (tor's key) and B (pctor's)"
# SIGHUP with family B dropped from the torrc: pctor makes a descriptor
# with only family A's certificate (read from its own DirPort: the
# authorities may keep the previous one, whose differences they can deem
# cosmetic).
grep -v "^FamilyId $idB\$" "$p/torrc" > "$p/torrc.new" && mv "$p/torrc.new" "$p/torrc"
rm "$fk/famB.secret_family_key" # (else pctor warns about it, as tor does)
kill -HUP "$(cat "$p/pid")"
one_cert() { [ "$(own_certs)" = 1 ]; }
it_wait_until 30 one_cert ||
    it_fail "after SIGHUP, famp's descriptor has $(own_certs) family-cert lines, not 1"
it_log "after SIGHUP without FamilyId B, famp's descriptor has one family-cert"
kill -0 "$(cat "$p/pid")" || it_fail "pctor died"
if grep -E '\[(warn|err)\]' "$p/info.log"; then it_fail "pctor logged warnings"; fi
it_log "OK"
