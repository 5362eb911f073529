# SPDX-License-Identifier: BSD-3-Clause
# keycache.py -- the key cache of the Shadow engine (scripts/pctor-shadow):
# the authorities' keys and certificates and every relay's identity keys
# are made once and reused by every later run that needs the same thing,
# so that a network of hundreds of relays is not keyed again for every
# configuration and seed, and every configuration and seed of an
# experiment sees the same relay identities (fingerprints).
#
# Design:
# - Location: $PCTOR_SHADOW_CACHE, else ~/.cache/pctor-shadow; entries in
#   KIND/NAME-DIGEST/ (KIND "authority" or "relay"), where DIGEST is the
#   first 16 hex digits of the SHA-256 of the entry's dependencies (a flat
#   dict of strings and numbers, canonical JSON). The dependencies are
#   whatever changes the files: the cache's own FORMAT, the generator (tor
#   or pctor, and its version line), the certificate date and lifetime,
#   the host's name and, where the files hold it, its address and ports.
#   A change of any of them gives a new entry, never a stale one.
# - An entry is a directory with the files and deps.json (the dependencies
#   in full, for `pctor-shadow cache` and for checking): it is used only
#   when deps.json equals the wanted dependencies and every file the caller
#   needs is present and non-empty; otherwise it is made again and
#   replaced.
# - Making an entry: the caller's make(tmpdir) writes the files into a
#   private temporary directory beside the entry, which is renamed into
#   place only when complete, so a crash or a failing generator leaves no
#   half entry (leftover .tmp-* directories are ignored and removed by
#   `clear`). Two runs making the same entry at once: the first rename
#   wins, the other run uses it.
# - Invalidation: by dependencies as above; by hand with `pctor-shadow
#   cache --clear` (everything) or by removing an entry directory.
import hashlib
import json
import os
import shutil

FORMAT = 1   # bump when what an entry holds changes
KINDS = ("authority", "relay")


class KeyCacheError(Exception):
    pass


def cache_root():
    return os.path.abspath(os.environ.get("PCTOR_SHADOW_CACHE") or
                           os.path.expanduser("~/.cache/pctor-shadow"))


def digest(deps):
    text = json.dumps(dict(deps, format=FORMAT), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def entry_dir(kind, name, deps, root=None):
    if kind not in KINDS:
        raise KeyCacheError(f"unknown cache kind {kind!r}")
    if not name or "/" in name or name.startswith("."):
        raise KeyCacheError(f"bad cache entry name {name!r}")
    return os.path.join(root or cache_root(), kind, f"{name}-{digest(deps)}")


def _valid(d, deps, files):
    try:
        with open(os.path.join(d, "deps.json")) as f:
            have = json.load(f)
    except (OSError, ValueError):
        return False
    if have != dict(deps, format=FORMAT):
        return False
    return all(os.path.isfile(os.path.join(d, p)) and os.path.getsize(os.path.join(d, p)) > 0
               for p in files)


def get(kind, name, deps, files, make, root=None):
    """The entry directory for (kind, name, deps), made with make(tmpdir)
    when missing or incomplete. files: the paths (relative to the entry)
    that must exist. Returns (directory, made: bool)."""
    d = entry_dir(kind, name, deps, root)
    if _valid(d, deps, files):
        return d, False
    parent = os.path.dirname(d)
    os.makedirs(parent, mode=0o700, exist_ok=True)
    tmp = os.path.join(parent, f".tmp-{os.path.basename(d)}-{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    os.makedirs(tmp, mode=0o700)
    try:
        make(tmp)
        missing = [p for p in files if not os.path.isfile(os.path.join(tmp, p))]
        if missing:
            raise KeyCacheError(f"making the {kind} keys of {name} left no "
                                f"{', '.join(missing)}")
        with open(os.path.join(tmp, "deps.json"), "w") as f:
            json.dump(dict(deps, format=FORMAT), f, indent=1, sort_keys=True)
        if os.path.exists(d) and not _valid(d, deps, files):
            shutil.rmtree(d, ignore_errors=True)   # broken: replace it
        try:
            os.rename(tmp, d)
        except OSError:
            # another run made it meanwhile: use theirs if it is whole
            if not _valid(d, deps, files):
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return d, True


def entries(root=None):
    """Every entry: (kind, directory name, deps or None when unreadable)."""
    root = root or cache_root()
    out = []
    for kind in KINDS:
        kd = os.path.join(root, kind)
        if not os.path.isdir(kd):
            continue
        for n in sorted(os.listdir(kd)):
            if n.startswith("."):
                continue
            try:
                with open(os.path.join(kd, n, "deps.json")) as f:
                    deps = json.load(f)
            except (OSError, ValueError):
                deps = None
            out.append((kind, n, deps))
    return out


def clear(root=None):
    """Remove the whole cache (only its own KIND directories)."""
    root = root or cache_root()
    n = 0
    for kind in KINDS:
        kd = os.path.join(root, kind)
        if os.path.isdir(kd):
            n += len([x for x in os.listdir(kd) if not x.startswith(".")])
            shutil.rmtree(kd)
    return n
