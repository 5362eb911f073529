#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# torrc-corpus.sh -- realistic operator torrcs (tests/data/torrcs: guard,
# exit, exit with tor's reduced policy, family, accounting, dual stack
# (ORPort lines, or Address lines per family),
# dual-stack exit (IPv6Exit), a middle relay with an offline master key, an
# older guide's DirPort and ControlPort, Debian's defaults file with a
# torrc.d directory) that tor 0.4.9's --verify-config accepts. pctor's
# --verify-config must accept each one, or refuse it with exactly one line
# that names the file and line of a tor option pctor does not support.
# For the accepted ones, --dump-config shows that the values were read as
# tor reads them.
#
# Only --verify-config and --dump-config run: nothing listens or connects.
# The tor runs still get TestingTorNetwork 1 and a private (unreachable)
# authority, as every tor a test starts.

. "$(dirname "$0")/lib.sh"
set -u

PCTOR=${PCTOR:-${top_builddir:?}/src/app/pctor}
command -v tor > /dev/null || it_skip "tor is not installed"
data=$IT_TOP_SRCDIR/tests/data/torrcs
dir=$(it_tmpdir)
test_net=(--TestingTorNetwork 1 --DirAuthority
          "test orport=9 no-v2 v3ident=0000000000000000000000000000000000000001 127.0.0.1:9 0000000000000000000000000000000000000002")
mkdir -p "$dir/torrc.d"
printf 'Nickname DebRelay\nORPort 9001\nExitPolicy reject *:*\n' > "$dir/torrc.d/50-relay.conf"
printf 'Nickname Hidden\n' > "$dir/torrc.d/.hidden"
echo "nameserver 127.0.0.1" > "$dir/resolv.conf"
sed "s|@DIR@|$dir|g" "$data/debian-defaults" > "$dir/debian-defaults"
mkdir -m 700 "$dir/famkeys"
cp "$IT_TOP_SRCDIR/tests/data/torkeys/torkeystest.secret_family_key" "$dir/famkeys/"
# offline-master.torrc runs on a signing key made where the master key is
# (--keygen on a copy of tests/data/torkeys' master key, now: the stored
# certificate expires), beside the master's public key, as tor needs.
touch "$dir/empty.torrc"
mkdir -m 700 "$dir/keys" "$dir/master" "$dir/master/keys" "$dir/other"
cp "$IT_TOP_SRCDIR/tests/data/torkeys/ed25519_master_id_secret_key" \
    "$IT_TOP_SRCDIR/tests/data/torkeys/ed25519_master_id_public_key" "$dir/master/keys/"
keygen() { # DATADIR
    "$PCTOR" -f "$dir/empty.torrc" --keygen --DataDirectory "$1" --no-passphrase \
        --hush < /dev/null > "$1.keygen" 2>&1 || it_fail "--keygen in $1: $(cat "$1.keygen")"
}
keygen "$dir/master"
cp "$dir/master/keys/ed25519_master_id_public_key" "$dir/master/keys/ed25519_signing_secret_key" \
    "$dir/master/keys/ed25519_signing_cert" "$dir/keys/"
keygen "$dir/other" # another identity, for a certificate that is not ours

declare -A verdict
for f in "$data"/*.torrc; do
    name=${f##*/}
    sed "s|@DIR@|$dir|g" "$f" > "$dir/$name"
    defaults=(--defaults-torrc /nonexistent/torrc-defaults)
    [ "$name" = debian.torrc ] && defaults=(--defaults-torrc "$dir/debian-defaults")
    tor "${defaults[@]}" --verify-config -f "$dir/$name" "${test_net[@]}" \
        > "$dir/$name.tor" 2>&1 || it_fail "tor rejects $name: $(tail -3 "$dir/$name.tor")"
    if "$PCTOR" "${defaults[@]}" --verify-config -f "$dir/$name" "${test_net[@]}" \
        --hush > "$dir/$name.out" 2>&1; then
        grep -qx "Configuration was valid" "$dir/$name.out" ||
            it_fail "$name: $(cat "$dir/$name.out")"
        verdict[$name]=accepted
        continue
    fi
    [ "$(grep -c . "$dir/$name.out")" = 1 ] ||
        it_fail "$name: more than one line: $(cat "$dir/$name.out")"
    re="Option '([A-Za-z0-9]+)' on line ([0-9]+) of ([^:]+): pctor does not support tor's option"
    [[ $(cat "$dir/$name.out") =~ $re ]] ||
        it_fail "$name: not a clear refusal: $(cat "$dir/$name.out")"
    key=${BASH_REMATCH[1]} ln=${BASH_REMATCH[2]} file=${BASH_REMATCH[3]}
    [ "$(sed -n "${ln}p" "$file" | awk '{print $1}')" = "$key" ] ||
        it_fail "$name: line $ln of $file is not $key"
    verdict[$name]="refused $key"
    it_log "$name: $(sed 's/^.*\] //' "$dir/$name.out")"
done

want() { # NAME VERDICT
    [ "${verdict[$1]}" = "$2" ] || it_fail "$1: ${verdict[$1]}, expected $2"
}
want guard.torrc accepted
want exit.torrc accepted
want family.torrc accepted
want family-keys.torrc accepted
want dual-stack.torrc accepted
want dual-stack-address.torrc accepted
want exit-ipv6.torrc accepted
want debian.torrc accepted
want exit-reduced.torrc accepted
want accounting.torrc accepted
want older-guide.torrc accepted
want offline-master.torrc accepted

# The accepted values, as tor reads them (base units).
dump() { # NAME [ARGS]: pctor's --dump-config short for a corpus file
    local name=$1
    shift
    "$PCTOR" --dump-config short -f "$dir/$name" "${test_net[@]}" --hush "$@"
}
has() { # NAME LINE [ARGS]
    local name=$1 line=$2
    shift 2
    dump "$name" "$@" | grep -Fqx -- "$line" ||
        it_fail "$name: no '$line' in --dump-config: $(dump "$name" "$@" | tr '\n' ';')"
}
has guard.torrc "RelayBandwidthRate 10485760" --defaults-torrc /nonexistent
has guard.torrc "MaxAdvertisedBandwidth 8388608" --defaults-torrc /nonexistent
has guard.torrc "HeartbeatPeriod 43200" --defaults-torrc /nonexistent
has guard.torrc "ExitRelay 0" --defaults-torrc /nonexistent
has guard.torrc "Log [handshake,channel]info [~net]notice-warn file $dir/links.log" --defaults-torrc /nonexistent
has guard.torrc "LogMessageDomains 1" --defaults-torrc /nonexistent
has exit.torrc "BandwidthRate 6553600" --defaults-torrc /nonexistent
has exit-reduced.torrc "ReducedExitPolicy 1" --defaults-torrc /nonexistent
has exit.torrc "ShutdownWaitLength 60" --defaults-torrc /nonexistent
has dual-stack.torrc "ORPort [2001:db8::1]:9001" --defaults-torrc /nonexistent
has dual-stack-address.torrc "Address [2001:db8::14]" --defaults-torrc /nonexistent
has dual-stack-address.torrc "Address 192.0.2.14" --defaults-torrc /nonexistent
has exit-ipv6.torrc "IPv6Exit 1" --defaults-torrc /nonexistent
has exit-ipv6.torrc "AssumeReachableIPv6 1" --defaults-torrc /nonexistent
has accounting.torrc "AccountingMax 536870912000" --defaults-torrc /nonexistent
has accounting.torrc "AccountingStart week 3 10:00" --defaults-torrc /nonexistent --AccountingStart "week 3 10:00"
has older-guide.torrc "DirPort 9030" --defaults-torrc /nonexistent
has guard.torrc "ORPort 9001" --defaults-torrc /nonexistent
has family-keys.torrc "FamilyId d4oTC4vFd1y4rCprLDItP/hk2PcVZWuRNwIdEmy6n7w" --defaults-torrc /nonexistent
has family-keys.torrc "KeyDirectoryGroupReadable 1" --defaults-torrc /nonexistent
has offline-master.torrc "OfflineMasterKey 1" --defaults-torrc /nonexistent
has offline-master.torrc "SigningKeyLifetime 5184000" --defaults-torrc /nonexistent
has offline-master.torrc "KeyDirectory $dir/keys" --defaults-torrc /nonexistent
# Without its signing key and certificate it could not start: pctor says so
# at --verify-config (tor only at start).
if "$PCTOR" --verify-config -f "$dir/offline-master.torrc" "${test_net[@]}" --hush \
    --defaults-torrc /nonexistent --KeyDirectory "$dir/famkeys" > "$dir/nosign.out" 2>&1; then
    it_fail "offline-master.torrc without a signing key passed --verify-config"
fi
grep -q "OfflineMasterKey is set but $dir/famkeys/ed25519_signing_secret_key cannot be read" \
    "$dir/nosign.out" || it_fail "no clear refusal of a missing signing key: $(cat "$dir/nosign.out")"
# A signing certificate from another master identity, or no master public
# key: start-up refuses both; so does --verify-config.
mkdir -m 700 "$dir/keys2"
cp "$dir/other/keys/ed25519_signing_secret_key" "$dir/other/keys/ed25519_signing_cert" \
    "$dir/keys/ed25519_master_id_public_key" "$dir/keys2/"
if "$PCTOR" --verify-config -f "$dir/offline-master.torrc" "${test_net[@]}" --hush \
    --defaults-torrc /nonexistent --KeyDirectory "$dir/keys2" > "$dir/othercert.out" 2>&1; then
    it_fail "offline-master.torrc with another identity's certificate passed --verify-config"
fi
grep -q "ed25519_signing_cert.*certificate is not signed by our ed25519 identity" "$dir/othercert.out" ||
    it_fail "no clear refusal of another identity's certificate: $(cat "$dir/othercert.out")"
rm "$dir/keys2/ed25519_master_id_public_key"
if "$PCTOR" --verify-config -f "$dir/offline-master.torrc" "${test_net[@]}" --hush \
    --defaults-torrc /nonexistent --KeyDirectory "$dir/keys2" > "$dir/nopub.out" 2>&1; then
    it_fail "offline-master.torrc without the master public key passed --verify-config"
fi
grep -q "OfflineMasterKey is set but $dir/keys2 holds no ed25519 identity" "$dir/nopub.out" ||
    it_fail "no clear refusal of a missing master public key: $(cat "$dir/nopub.out")"
# A FamilyId whose key is not there: tor refuses to start ("No key was
# found for listed FamilyID"); pctor already refuses at --verify-config.
if "$PCTOR" --verify-config -f "$dir/family-keys.torrc" "${test_net[@]}" --hush \
    --defaults-torrc /nonexistent --FamilyKeyDirectory "$dir" > "$dir/nokey.out" 2>&1; then
    it_fail "family-keys.torrc without its key passed --verify-config"
fi
grep -q "FamilyId d4oTC4vFd1y4rCprLDItP/hk2PcVZWuRNwIdEmy6n7w: no \*.secret_family_key file in $dir" "$dir/nokey.out" ||
    it_fail "no clear refusal of a missing family key: $(cat "$dir/nokey.out")"
# Debian's layout: the defaults file, the torrc.d file (not the dot file).
has debian.torrc "Nickname DebRelay" --defaults-torrc "$dir/debian-defaults"
"$PCTOR" --dump-config non-builtin -f "$dir/debian.torrc" "${test_net[@]}" --hush \
    --defaults-torrc "$dir/debian-defaults" | grep -qx "PidFile $dir/tor.pid" ||
    it_fail "debian.torrc: the defaults file's PidFile is not in non-builtin"
if dump debian.torrc --defaults-torrc "$dir/debian-defaults" | grep -q "^PidFile"; then
    it_fail "debian.torrc: --dump-config short shows the defaults file's PidFile"
fi
it_log "corpus: ${#verdict[@]} torrcs, tor accepts all; pctor accepts $(printf '%s\n' "${verdict[@]}" | grep -c accepted), refuses the rest with one line"
