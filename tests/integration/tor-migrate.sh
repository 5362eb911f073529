#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# tor-migrate.sh -- a relay moves from tor 0.4.9 to pctor and back on the
# same DataDirectory, keeping its identity.
#
# In a private network of 3 tor authorities:
#  1. tor runs the relay "migrant" until a consensus lists it Running and
#     Valid; the test notes its RSA fingerprint, its ed25519 identity and a
#     checksum of every file in DataDirectory/keys.
#  2. tor is stopped and pctor starts on the same DataDirectory with the
#     equivalent pctor torrc. The test waits until the authorities serve
#     pctor's descriptor (platform pctor) for the same RSA fingerprint with
#     the same master-key-ed25519, and until a consensus lists exactly that
#     descriptor (its publication time) Running and Valid. pctor must have
#     created no key and changed no key file (the signing certificate tor
#     made is still valid). Then the same again with the master secret
#     key moved away (offline master key): pctor must say so and be listed
#     on tor's signing key and certificate.
#  3. pctor is stopped and tor starts again on the same keys: it must log
#     the same RSA and ed25519 fingerprints, and a consensus must list its
#     own descriptor (platform Tor) Running and Valid again.
#  4. The other way round: a relay "newborn" whose keys pctor made (in an
#     empty DataDirectory) is listed, then stopped, and tor starts on its
#     DataDirectory with the same fingerprints and is listed too.
# About a minute (60 s on a loaded 2-core machine).

. "$(dirname "$0")/lib.sh"
set -u

it_require_tor
PCTOR=${PCTOR:-${top_builddir:?}/src/app/pctor}
[ -x "$PCTOR" ] || it_fail "pctor is not built ($PCTOR)"
TOR=${TOR:-tor}
[ "$TOR" = no ] && TOR=tor

net=$(it_tmpdir)/net
it_privnet_start "$net" --authorities 3 --relays 0 --exit-relays 0 \
    --base-port auto || it_fail "pctor-privnet start failed"
auth_dirport=$(awk '$7 == "authority" { print $3; exit }' "$net/nodes.txt")

# new_relay NICK: reserve a node for relay NICK and write its configuration,
# once for tor and once for pctor; sets d and port.
new_relay() {
    local nick=$1 node
    read -r node port _ _ < <(it_privnet reserve "$net" --role relay \
        --nickname "$nick") || it_fail "reserve failed"
    d=$net/$node
    mkdir -m 700 "$d/data"
    echo "$nick" > "$d/nick"
    {
        grep -v '^#' "$net/common.torrc"
        echo "DataDirectory $d/data"
        echo "ORPort 127.0.0.1:$port"
        echo "Address 127.0.0.1"
        echo "Nickname $nick"
        echo "ContactInfo pctor migration test"
        echo "SocksPort 0"
        echo "ShutdownWaitLength 0"
        echo "Log notice file $d/tor.log"
    } > "$d/tor.torrc"
    {
        echo "DataDirectory $d/data"
        echo "ORPort 127.0.0.1:$port"
        echo "Address 127.0.0.1"
        echo "Nickname $nick"
        echo "ContactInfo pctor migration test"
        echo "TestingTorNetwork 1"
        echo "AssumeReachable 1"
        cat "$net/dirauth.torrc"
        echo "Log info file $d/pctor.log"
    } > "$d/pctor.torrc"
}
new_relay migrant
nick=migrant

consensus() {
    curl -sf --max-time 5 --compressed \
        "http://127.0.0.1:$auth_dirport/tor/status-vote/current/consensus"
}
# entry_of NICK: the r and s lines of NICK in auth0's current consensus.
entry_of() {
    consensus | awk -v n="$1" '$1 == "r" { cur = ($2 == n) } cur && ($1 == "r" || $1 == "s") { print }'
}
descriptor() {
    curl -sf --max-time 5 "http://127.0.0.1:$auth_dirport/tor/server/fp/$fp"
}
# listed_as PUBLISHED: auth0's consensus lists $nick Running and Valid
# with the descriptor published at PUBLISHED ("YYYY-MM-DD HH:MM:SS").
listed_as() {
    local e
    e=$(entry_of "$nick")
    printf '%s\n' "$e" | grep -q "^r $nick .* $1 127\.0\.0\.1 $port " &&
        printf '%s\n' "$e" | grep '^s ' | grep -qw Running &&
        printf '%s\n' "$e" | grep '^s ' | grep -qw Valid
}
# served PLATFORM-PREFIX: auth0 serves a descriptor for fp from that
# platform; prints its published time.
served() {
    local desc
    desc=$(descriptor) || return 1
    printf '%s\n' "$desc" | grep -q "^platform $1" || return 1
    printf '%s\n' "$desc" | grep -qxF "master-key-ed25519 $ed" ||
        it_fail "auth0 serves a descriptor for $fp with another ed25519 identity"
    printf '%s\n' "$desc" | awk '$1 == "published" { print $2 " " $3 }'
}
start_pctor() {
    "$PCTOR" -f "$d/${1:-pctor.torrc}" > "$d/pctor.out" 2>&1 &
    echo $! > "$d/pid"
    it_register_pid "$(cat "$d/pid")" || it_fail "pctor did not start: $(cat "$d/pctor.out")"
    it_wait_port 127.0.0.1 "$port" 30 || it_fail "pctor did not open its ORPort: $(tail -5 "$d/pctor.out")"
}
start_tor() {
    "$TOR" -f "$d/tor.torrc" > "$d/tor.out" 2>&1 &
    echo $! > "$d/pid"
    it_register_pid "$(cat "$d/pid")" || it_fail "tor did not start: $(tail -3 "$d/tor.out")"
    it_wait_port 127.0.0.1 "$port" 60 || it_fail "tor did not open its ORPort"
}
stop_pid() {
    local pid
    pid=$(cat "$d/pid")
    kill -TERM "$pid" 2>/dev/null
    for _ in $(seq 100); do
        kill -0 "$pid" 2>/dev/null || return 0
        sleep 0.1
    done
    it_fail "process $pid did not exit on SIGTERM"
}
keysums() { (cd "$d/data/keys" && sha256sum -- *); }
# published_wait PLATFORM-PREFIX [NOT-THIS-TIME]: wait until auth0 serves
# that platform's descriptor for fp (published at another time than
# NOT-THIS-TIME); prints its published time.
published_wait() {
    local p=""
    for _ in $(seq 120); do
        p=$(served "$1") && [ -n "$p" ] && [ "$p" != "${2-}" ] &&
            { echo "$p"; return 0; }
        sleep 1
    done
    return 1
}

# --- 1. tor ------------------------------------------------------------------
start_tor
it_wait_until 30 test -s "$d/data/fingerprint-ed25519" -a -s "$d/data/keys/secret_onion_key_ntor" ||
    it_fail "tor wrote no fingerprint files"
fp=$(awk '{ print $2 }' "$d/data/fingerprint")
ed=$(awk '{ print $2 }' "$d/data/fingerprint-ed25519")
ntor=$(tail -c 32 "$d/data/keys/secret_onion_key_ntor" | base64 -w0 | tr -d '=')
echo "migrant $port 0 $fp $ed $ntor relay" >> "$net/nodes.txt"
it_privnet wait "$net" --timeout 150 --flags Running,Valid ||
    it_fail "the consensus does not list tor's relay Running and Valid"
pub_tor=$(published_wait "Tor ") || it_fail "auth0 does not serve tor's descriptor"
it_wait_until 60 listed_as "$pub_tor" || it_fail "auth0's consensus does not list tor's relay"
it_log "tor's relay $fp ($ed) is listed Running and Valid"
[ -f "$d/data/keys/ed25519_master_id_secret_key" ] ||
    it_fail "tor made no ed25519_master_id_secret_key"
stop_pid
sums_tor=$(keysums)

# --- 2. pctor on tor's DataDirectory -------------------------------------------
start_pctor
grep -qF "identity key fingerprint is 'migrant $(echo "$fp" | sed 's/..../& /g; s/ $//')'" "$d/pctor.log" ||
    it_fail "pctor does not report tor's RSA fingerprint: $(grep fingerprint "$d/pctor.log")"
grep -qF "Ed25519 identity is 'migrant $ed'" "$d/pctor.log" ||
    it_fail "pctor does not report tor's ed25519 identity"
pub_pctor=$(published_wait "pctor ") ||
    it_fail "auth0 never served pctor's descriptor for $fp; it serves: $(descriptor | grep -E '^(platform|published) ' | tr '\n' ' ')"
it_wait_until 90 listed_as "$pub_pctor" ||
    it_fail "no consensus lists pctor's descriptor ($pub_pctor) Running and Valid: $(entry_of migrant)"
it_log "pctor on tor's keys is listed Running and Valid: $(entry_of migrant | tr '\n' ' ')"
[ "$(awk '{ print $2 }' "$d/data/fingerprint")" = "$fp" ] || it_fail "fingerprint file changed"
[ "$(awk '{ print $2 }' "$d/data/fingerprint-ed25519")" = "$ed" ] || it_fail "fingerprint-ed25519 changed"
if grep -q "Generating a new\|Made a new ed25519 signing key\|Converted" "$d/pctor.log"; then
    it_fail "pctor made keys in tor's directory: $(grep 'Generating\|Made a new\|Converted' "$d/pctor.log")"
fi
kill -0 "$(cat "$d/pid")" || it_fail "pctor died"
stop_pid
[ "$(keysums)" = "$sums_tor" ] || it_fail "pctor changed tor's key files:
$(diff <(echo "$sums_tor") <(keysums))"

# The same with the master key offline (moved away, as OfflineMasterKey
# operators keep it): pctor runs on tor's signing key and certificate.
mkdir -m 700 "$d/offline"
mv "$d/data/keys/ed25519_master_id_secret_key" "$d/offline/"
: > "$d/pctor.log"
# (A family line, so that the authorities take the new descriptor: one
# that differs only cosmetically from the last is dropped.)
auth_fp=$(awk '$7 == "authority" { print $4; exit }' "$net/nodes.txt")
{ cat "$d/pctor.torrc"; echo "MyFamily \$$auth_fp"; } > "$d/pctor-offline.torrc"
start_pctor pctor-offline.torrc
grep -q "master identity key is offline" "$d/pctor.log" ||
    it_fail "pctor does not say that the master key is offline"
pub_off=$(published_wait "pctor " "$pub_pctor") ||
    it_fail "auth0 never served the offline pctor's descriptor"
descriptor | grep -qxF "family \$$auth_fp" ||
    it_fail "auth0 serves another descriptor than the offline pctor's"
it_wait_until 90 listed_as "$pub_off" ||
    it_fail "pctor with an offline master key is not listed: $(entry_of migrant)"
[ -e "$d/data/keys/ed25519_master_id_secret_key" ] &&
    it_fail "pctor made a master secret key although the master key is offline"
stop_pid
mv "$d/offline/ed25519_master_id_secret_key" "$d/data/keys/"
[ "$(keysums)" = "$sums_tor" ] || it_fail "pctor (offline) changed tor's key files"
it_log "pctor with the master key offline is listed Running and Valid"

# --- 3. back to tor --------------------------------------------------------------
: > "$d/tor.log"
start_tor
it_wait_until 30 grep -qF "fingerprint is 'migrant $fp'" "$d/tor.log" ||
    it_fail "tor does not start with the same RSA identity: $(grep -i 'fingerprint\|warn\|err' "$d/tor.log" | head)"
grep -qF "ed25519 fingerprint is 'migrant $ed'" "$d/tor.log" ||
    it_fail "tor does not start with the same ed25519 identity"
pub_tor2=$(published_wait "Tor " "$pub_tor") || it_fail "auth0 never served tor's new descriptor"
it_wait_until 90 listed_as "$pub_tor2" ||
    it_fail "no consensus lists tor's relay again: $(entry_of migrant)"
if grep -E '\[(warn|err)\].*(key|cert|signing)' "$d/tor.log"; then
    it_fail "tor complained about the keys"
fi
it_log "tor is back on the same keys, listed Running and Valid"

# --- 4. a relay born under pctor moves to tor ------------------------------------
stop_pid
new_relay newborn
nick=newborn
start_pctor
it_wait_until 30 test -s "$d/data/fingerprint-ed25519" || it_fail "pctor wrote no fingerprint files"
fp=$(awk '{ print $2 }' "$d/data/fingerprint")
ed=$(awk '{ print $2 }' "$d/data/fingerprint-ed25519")
for f in secret_id_key ed25519_master_id_secret_key ed25519_master_id_public_key \
         ed25519_signing_secret_key ed25519_signing_cert secret_onion_key_ntor \
         secret_onion_key; do
    [ -s "$d/data/keys/$f" ] || it_fail "pctor did not write tor's $f"
done
pub_pctor=$(published_wait "pctor ") || it_fail "auth0 never served newborn's descriptor"
it_wait_until 90 listed_as "$pub_pctor" || it_fail "newborn is not listed under pctor"
stop_pid
sums_pctor=$(keysums)
start_tor
it_wait_until 30 grep -qF "fingerprint is 'newborn $fp'" "$d/tor.log" ||
    it_fail "tor does not start with pctor's RSA identity: $(grep -i 'fingerprint\|warn\|err' "$d/tor.log" | head)"
grep -qF "ed25519 fingerprint is 'newborn $ed'" "$d/tor.log" ||
    it_fail "tor does not start with pctor's ed25519 identity"
pub_tor=$(published_wait "Tor ") || it_fail "auth0 never served tor's descriptor for newborn"
it_wait_until 90 listed_as "$pub_tor" || it_fail "newborn is not listed under tor: $(entry_of newborn)"
if grep -E '\[(warn|err)\].*(key|cert|signing)' "$d/tor.log"; then
    it_fail "tor complained about pctor's keys"
fi
[ "$(keysums)" = "$sums_pctor" ] || it_fail "tor replaced keys pctor made:
$(diff <(echo "$sums_pctor") <(keysums))"
it_log "tor runs on the keys pctor made, listed Running and Valid"
