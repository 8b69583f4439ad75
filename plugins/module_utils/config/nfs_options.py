# -*- coding: utf-8 -*-
# Copyright: ckptio.nfs contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""NFS mount options: validate, normalise, render and compare (wanted, fstab, live).

Pure functions: callers read fstab, mountinfo and mountstats and pass the text or dicts in.

Canonical form: an ordered dict of option name -> value, where a value is a string for
`name=value` options and True/False for flags. Negated flags are folded into their base name
(`nolock` -> `lock: False`, `soft` -> `hard: False`, `rw` -> `ro: False`), and `nfsvers`,
`minorversion` and the `tcp`/`udp`/`rdma` shorthands into `vers` and `proto`, so the same
setting compares equal however fstab or the kernel spells it.
"""

from __future__ import annotations

import re

from ansible_collections.ckptio.nfs.plugins.module_utils.config import mountinfo


class OptionError(ValueError):
    """A wanted option is invalid; the message names the option."""


# nfs(5) and mount(8): every option the module accepts by name; anything else is most likely a
# typo (`wsise`) that mount.nfs would reject only at mount time, after fstab was written.
VALUED_OPTIONS = frozenset((
    "vers", "nfsvers", "minorversion", "nconnect", "max_connect", "rsize", "wsize", "timeo", "retrans",
    "acregmin", "acregmax", "acdirmin", "acdirmax", "actimeo", "proto", "port", "sec", "lookupcache",
    "local_lock", "clientaddr", "addr", "mountaddr", "mounthost", "mountport", "mountproto", "mountvers",
    "namlen", "retry", "xprtsec", "write", "fsc", "comment",
))
# Flags with a `no` form: `lock: false` renders `nolock`, and `nolock` reads back as lock=False.
NEGATABLE_FLAGS = frozenset((
    "ac", "cto", "lock", "acl", "rdirplus", "sharecache", "resvport", "intr", "softreval", "trunkdiscovery",
    "migration", "posix", "fsc", "atime", "diratime", "relatime", "strictatime", "lazytime", "exec", "suid",
    "dev", "auto", "user", "users", "fail", "symfollow", "iversion", "mand",
))
# Pairs where the "off" spelling is another word, not no<flag>.
OPPOSITE_FLAGS = {"soft": "hard", "rw": "ro", "async": "sync", "fg": "bg"}
PLAIN_FLAGS = frozenset(("hard", "ro", "sync", "bg", "softerr", "sloppy", "owner", "group", "_netdev", "defaults", "silent", "loud"))
PROTO_FLAGS = {"tcp": "tcp", "udp": "udp", "rdma": "rdma"}

KNOWN_VERSIONS = ("3", "4", "4.0", "4.1", "4.2")

# Ranges from nfs(5) and the kernel: nconnect is capped at NFS_MAX_CONNECTIONS = 16
# (fs/nfs/fs_context.c); rsize/wsize are rounded to a page and capped at NFS_MAX_FILE_IO_SIZE
# = 1 MiB, so anything else is silently changed by the kernel and would never verify.
MAX_NCONNECT = 16
MIN_IO_SIZE = 4096
MAX_IO_SIZE = 1048576
INTEGER_RANGES = {
    "nconnect": (1, MAX_NCONNECT),
    "max_connect": (1, MAX_NCONNECT),
    "timeo": (1, 6000),
    "retrans": (0, 1000),
    "acregmin": (0, 3600), "acregmax": (0, 3600), "acdirmin": (0, 3600), "acdirmax": (0, 3600),
    "actimeo": (0, 3600),
    "port": (0, 65535), "mountport": (0, 65535),
    "mountvers": (1, 3),
    "namlen": (1, 255),
    "retry": (0, 100000),
}
ENUMS = {
    "proto": ("tcp", "udp", "rdma", "tcp6", "udp6", "rdma6"),
    "mountproto": ("tcp", "udp", "tcp6", "udp6"),
    "lookupcache": ("all", "none", "pos", "positive"),
    "local_lock": ("none", "all", "flock", "posix"),
    "write": ("lazy", "eager", "wait"),
    "xprtsec": ("none", "tls", "mtls"),
}

# Values end up inside one comma-separated fstab field and one `mount -o` argument. Allowing
# only this set means a value cannot add an option (`,`), split the fstab line (space, tab,
# newline), fake an assignment (`=`) or mean anything to a shell (`;`, `$`, quotes, ...).
_SAFE_VALUE = re.compile(r"^[A-Za-z0-9._:/@+%-]+$")
_SAFE_NAME = re.compile(r"^(?:[a-z_][a-z0-9_]*|x-[a-z0-9][a-z0-9._-]*)$")

# Options that are never visible in /proc/self/mountinfo: mount(8) and systemd consume them.
FSTAB_ONLY = frozenset(("auto", "user", "users", "owner", "group", "fail", "_netdev", "bg", "retry",
                        "defaults", "comment", "sloppy", "mounthost", "silent", "loud"))

# A plain `mount -o remount` applies only VFS flags to an NFS mount. The NFS ones are either
# silently ignored (nconnect: the transport exists already) or refused with EINVAL
# (fs/nfs/super.c nfs_compare_remount_data: rsize, wsize, vers, timeo, retrans, ac*, sec,
# port, address); ansible.posix.mount issue #85 is the user-visible result. Everything not in
# this set therefore needs umount + mount, and even these are verified after the remount.
REMOUNT_CAPABLE = frozenset(("ro", "sync", "atime", "diratime", "relatime", "strictatime", "lazytime",
                             "exec", "suid", "dev", "symfollow", "iversion", "mand"))

# What the kernel uses when an option is absent (nfs(5), kernel 6.1): fstab lines often omit
# them and must still compare equal to `hard: true`.
KERNEL_DEFAULTS = {
    "hard": True, "ro": False, "sync": False, "ac": True, "cto": True, "lock": True, "acl": True,
    "rdirplus": True, "sharecache": True, "resvport": True, "fsc": False, "softerr": False,
    "auto": True, "fail": True, "bg": False, "user": False, "users": False, "_netdev": False,
    "atime": True, "diratime": True, "exec": True, "suid": True, "dev": True, "lazytime": False,
    "nconnect": "1",
}


def _is_flag_name(name):
    return name in NEGATABLE_FLAGS or name in PLAIN_FLAGS or name in OPPOSITE_FLAGS or name in PROTO_FLAGS


def _is_known(name):
    if name.startswith("x-") or _is_flag_name(name) or name in VALUED_OPTIONS:
        return True
    return name.startswith("no") and name[2:] in NEGATABLE_FLAGS


def _version_text(value, label):
    """YAML turns `vers: 4.1` into a float and `vers: 4` into an int; accept both."""
    if isinstance(value, bool):
        raise OptionError("%s: expected an NFS version (one of %s), got %r" % (label, ", ".join(KNOWN_VERSIONS), value))
    text = repr(value) if isinstance(value, float) else str(value)
    if text not in KNOWN_VERSIONS:
        raise OptionError("%s: unknown NFS version %r; known: %s" % (label, text, ", ".join(KNOWN_VERSIONS)))
    return text


def _integer(value, label):
    if isinstance(value, bool):
        raise OptionError("%s: expected an integer, got %r" % (label, value))
    if isinstance(value, int):
        return value
    text = str(value)
    if not re.match(r"^[0-9]+$", text):
        raise OptionError("%s: expected an integer, got %r" % (label, value))
    return int(text)


def _checked_value(name, value, label):
    """Validate one valued option and return its canonical string."""
    if isinstance(value, bool) or value is None:
        raise OptionError("%s: needs a value (%s=VALUE), got %r" % (label, name, value))
    if name in ("rsize", "wsize"):
        size = _integer(value, label)
        if size % MIN_IO_SIZE or not MIN_IO_SIZE <= size <= MAX_IO_SIZE:
            raise OptionError("%s: %d is not a multiple of %d between %d and %d (the kernel would round or cap it)"
                              % (label, size, MIN_IO_SIZE, MIN_IO_SIZE, MAX_IO_SIZE))
        return str(size)
    if name in INTEGER_RANGES:
        low, high = INTEGER_RANGES[name]
        number = _integer(value, label)
        if not low <= number <= high:
            raise OptionError("%s: %d is outside %d..%d" % (label, number, low, high))
        return str(number)
    text = str(value)
    if not _SAFE_VALUE.match(text):
        raise OptionError("%s: value %r may only contain letters, digits and . _ : / @ + %% - "
                          "(no commas, spaces, newlines, '=' or shell characters)" % (label, text))
    if name in ENUMS and text not in ENUMS[name]:
        raise OptionError("%s: %r is not one of %s" % (label, text, ", ".join(ENUMS[name])))
    return text


def _fold(name, value):
    """Map one (name, value) onto its canonical (name, value); flags are True/False."""
    if name in OPPOSITE_FLAGS:
        return OPPOSITE_FLAGS[name], not value
    if name in PROTO_FLAGS:
        return "proto", PROTO_FLAGS[name]
    if name.startswith("no") and name[2:] in NEGATABLE_FLAGS and isinstance(value, bool):
        return name[2:], not value
    if name == "nfsvers":
        return "vers", value
    return name, value


def normalize_wanted(opts, fstype="nfs4"):
    """Validate the user's opts dict and return it in canonical form.

    Raises OptionError naming the option (as `opts.NAME`) on the first problem, so nothing is
    written or mounted with an option the kernel would reject, reinterpret or split.
    """
    canonical = {}
    origin = {}
    for name, value in (opts or {}).items():
        label = "opts.%s" % name
        if not isinstance(name, str) or not _SAFE_NAME.match(name):
            raise OptionError("%s: option names may only contain lowercase letters, digits and _ "
                              "(or x-name for mount(8)/systemd options)" % (label,))
        if not _is_known(name):
            raise OptionError("%s: unknown NFS mount option (see nfs(5)); check the spelling" % (label,))
        if name in ("vers", "nfsvers"):
            value = _version_text(value, label)
        elif name == "minorversion":
            value = str(_integer(value, label))
            if value not in ("0", "1", "2"):
                raise OptionError("%s: %s is outside 0..2" % (label, value))
        elif _is_flag_name(name) or (name.startswith("no") and name[2:] in NEGATABLE_FLAGS):
            if name in PROTO_FLAGS:
                if value is not True:
                    raise OptionError("%s: use proto=... to choose a transport; %s only accepts true" % (label, name))
            elif not isinstance(value, bool):
                raise OptionError("%s: is a flag: use true or false, got %r" % (label, value))
        elif name.startswith("x-") and isinstance(value, bool):
            pass
        else:
            value = _checked_value(name, value, label)
        key, folded = _fold(name, value)
        if key in canonical:
            raise OptionError("%s: sets %s a second time (already set by opts.%s)" % (label, key, origin[key]))
        canonical[key] = folded
        origin[key] = name
    if "minorversion" in canonical:
        minor = canonical.pop("minorversion")
        vers = canonical.get("vers", "4")
        if vers != "4":
            raise OptionError("opts.minorversion: only combines with vers 4, not %s" % (vers,))
        canonical["vers"] = "4.%s" % minor
    vers = canonical.get("vers")
    if fstype == "nfs4" and vers == "3":
        raise OptionError("opts.vers: 3 conflicts with fstype nfs4; use fstype nfs for NFSv3")
    return canonical


def canonical_options(options):
    """Canonical form of options as read from fstab or mountinfo (split_options(): flags are None).

    Lenient: what the kernel or an admin wrote is reported, never rejected.
    """
    canonical = {}
    for name, value in options.items():
        if value is None:
            key, folded = _fold(name, True)
        elif name in ("vers", "nfsvers"):
            key, folded = "vers", value
        else:
            key, folded = name, value
        canonical[key] = folded
    minor = canonical.pop("minorversion", None)
    if minor is not None and canonical.get("vers") == "4":
        canonical["vers"] = "4.%s" % minor
    canonical.pop("defaults", None)
    return canonical


def render_options(canonical):
    """The comma-separated option string for fstab and `mount -o` ("defaults" when empty)."""
    items = []
    reverse_opposites = {base: other for other, base in OPPOSITE_FLAGS.items()}
    for name, value in canonical.items():
        if value is True:
            items.append(name)
        elif value is False:
            items.append(reverse_opposites.get(name, "no" + name))
        else:
            items.append("%s=%s" % (name, value))
    return ",".join(items) or "defaults"


def _effective(options, name):
    if name in options:
        return options[name]
    return KERNEL_DEFAULTS.get(name)


def _versions_match(wanted, actual):
    # vers=4 asks the kernel to negotiate the highest minor version: any 4.x satisfies it.
    if wanted == "4" and actual is not None:
        return actual == "4" or actual.startswith("4.")
    if wanted == "4.0" and actual == "4":
        return True
    return wanted == actual


def values_match(name, wanted, actual):
    if name == "vers":
        return _versions_match(wanted, actual)
    return wanted == actual


def fstab_drift(wanted, fstab):
    """Options whose fstab value differs from the wanted one, including extra fstab options.

    Returns {name: {"wanted": ..., "fstab": ...}}; the fstab line is ours, so an option
    present only in fstab is drift too, unless it only restates a kernel default.
    """
    drift = {}
    for name in list(wanted) + [name for name in fstab if name not in wanted]:
        # Exact, unlike live: fstab should say what was asked (vers=4 stays 4, not 4.1).
        if _effective(wanted, name) != _effective(fstab, name):
            drift[name] = {"wanted": wanted.get(name), "fstab": fstab.get(name)}
    return drift


def live_drift(wanted, live):
    """Wanted options the live mount does not show with the wanted value.

    Options the kernel never shows (FSTAB_ONLY, x-*) are skipped: they cannot be verified live.
    Returns {name: {"wanted": ..., "live": ...}}.
    """
    drift = {}
    for name, want in wanted.items():
        if name in FSTAB_ONLY or name.startswith("x-"):
            continue
        have = _effective(live, name)
        if not values_match(name, want, have):
            drift[name] = {"wanted": want, "live": live.get(name)}
    return drift


def negotiated_down(wanted, live):
    """rsize/wsize the kernel shows lower than wanted: the server's max_block_size caps them."""
    capped = {}
    for name in ("rsize", "wsize"):
        if name in wanted and name in live:
            try:
                want, have = int(wanted[name]), int(live[name])
            except ValueError:
                continue
            if have < want:
                capped[name] = {"wanted": wanted[name], "live": live[name]}
    return capped


def needs_fresh_mount(names):
    """The subset of option names a `mount -o remount` cannot change."""
    return sorted(name for name in names if name not in REMOUNT_CAPABLE)


def remount_options(wanted, names):
    """Option string for `mount -o remount,...` carrying only the remount-capable changes."""
    return render_options({name: wanted[name] for name in wanted if name in names and name in REMOUNT_CAPABLE})


def validate_src(src):
    """server:/export (IPv6 as [addr]:/export). Returns the server part; raises OptionError."""
    if not isinstance(src, str) or not src:
        raise OptionError("src: required as server:/export")
    if any(char in src for char in "\n\r\t\0") or src.startswith("-"):
        raise OptionError("src: %r must not contain tabs, newlines or NUL, nor start with '-'" % (src,))
    if src.startswith("["):
        end = src.find("]")
        server, rest = src[1:end], src[end + 1:] if end > 0 else ""
        if end < 0 or not rest.startswith(":"):
            raise OptionError("src: %r is not [address]:/export" % (src,))
        export = rest[1:]
    else:
        server, sep, export = src.partition(":")
        if not sep:
            raise OptionError("src: %r has no ':'; expected server:/export" % (src,))
    if not server or not re.match(r"^[A-Za-z0-9._:%-]+$", server):
        raise OptionError("src: %r has no valid server name before ':'" % (src,))
    if not export.startswith("/"):
        raise OptionError("src: %r: the export after ':' must be an absolute path" % (src,))
    return server


def validate_path(path):
    """The mount point in normal form (mountinfo.normal_path); raises OptionError naming `path`.

    The same rule as the fstab reader and writer use (mountinfo.path_character_error,
    mountinfo.normal_path), so what we write is what we read back: one entry per mount point.
    """
    if not isinstance(path, str) or not path.startswith("/"):
        raise OptionError("path: %r must be an absolute path" % (path,))
    if "\0" in path:
        raise OptionError("path: must not contain NUL")
    if any(part in (".", "..") for part in path.split("/")):
        raise OptionError("path: %r must not contain . or .. components" % (path,))
    error = mountinfo.path_character_error(path)
    if error:
        raise OptionError("path: %r %s" % (path, error))
    return mountinfo.normal_path(path)
