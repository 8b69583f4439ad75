# -*- coding: utf-8 -*-
# Copyright: ckptio.nfs contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Client RPC slot-table facts: option names, ranges, validation, and who still runs old values.

Pure functions: the module reads /proc and /sys and passes the text in.
"""

from __future__ import annotations

from ansible_collections.ckptio.nfs.plugins.module_utils.config import settings

# net/sunrpc/xprtsock.c: RPC_MIN_SLOT_TABLE .. RPC_MAX_SLOT_TABLE_LIMIT for all three sysctls.
SLOT_TABLE_MIN = 2
SLOT_TABLE_MAX = 65536
# fs/nfs/nfs4session.h: NFS4_MAX_SLOT_TABLE (1024) caps the nfs module's max_session_slots.
SESSION_SLOTS_MIN = 1
SESSION_SLOTS_MAX = 1024

SUNRPC_OPTIONS = ("tcp_slot_table_entries", "tcp_max_slot_table_entries", "udp_slot_table_entries")
SESSION_OPTION = "nfs_max_session_slots"
ALL_OPTIONS = SUNRPC_OPTIONS + (SESSION_OPTION,)

# Option name -> (kernel module, parameter name).
KERNEL_PARAMETER = {
    "tcp_slot_table_entries": ("sunrpc", "tcp_slot_table_entries"),
    "tcp_max_slot_table_entries": ("sunrpc", "tcp_max_slot_table_entries"),
    "udp_slot_table_entries": ("sunrpc", "udp_slot_table_entries"),
    SESSION_OPTION: ("nfs", "max_session_slots"),
}

RANGES = {
    "tcp_slot_table_entries": (SLOT_TABLE_MIN, SLOT_TABLE_MAX),
    "tcp_max_slot_table_entries": (SLOT_TABLE_MIN, SLOT_TABLE_MAX),
    "udp_slot_table_entries": (SLOT_TABLE_MIN, SLOT_TABLE_MAX),
    SESSION_OPTION: (SESSION_SLOTS_MIN, SESSION_SLOTS_MAX),
}

# What a kernel without any configuration runs with (docs/nfs-facts.md, kernel 6.1): used as the
# rollback target for state=absent when no other modprobe.d file sets the parameter.
KERNEL_DEFAULTS = {
    "tcp_slot_table_entries": 2,
    "tcp_max_slot_table_entries": 65536,
    "udp_slot_table_entries": 16,
    SESSION_OPTION: 64,
}

V41_ADVICE = (
    "NFSv4.1+ mounts ignore tcp_max_slot_table_entries: the client creates their transports with "
    "NFS_CS_INFINITE_SLOTS (fs/nfs/nfs4client.c; measured on kernel 6.1), so flow control is the "
    "session slot table. The client cap there is the nfs module parameter max_session_slots "
    "(option nfs_max_session_slots), negotiated at CREATE_SESSION when the first mount to a server "
    "is made; waiting for a session slot shows as per-op queue time, not as xprt backlog."
)


def validate(params):
    """Return a list of error messages, each naming its option; empty when params are usable.

    params holds the option values after Ansible's type conversion (int or None).
    """
    errors = []
    for option in ALL_OPTIONS:
        value = params.get(option)
        if value is None:
            continue
        # bool is an int subclass: `tcp_slot_table_entries: true` must not become 1.
        if isinstance(value, bool) or not isinstance(value, int):
            errors.append("%s must be an integer, got %r" % (option, value))
            continue
        low, high = RANGES[option]
        if not low <= value <= high:
            errors.append("%s must be between %d and %d, got %d" % (option, low, high, value))
    if params.get("state", "present") == "present" and all(params.get(option) is None for option in ALL_OPTIONS):
        errors.append("state=present needs at least one of: %s" % ", ".join(ALL_OPTIONS))
    return errors


def cap_warnings(wanted):
    """Warnings about combinations the kernel accepts but silently reinterprets."""
    warnings = []
    initial = wanted.get("tcp_slot_table_entries")
    cap = wanted.get("tcp_max_slot_table_entries")
    if initial is not None and cap is not None and initial > cap:
        # net/sunrpc/xprt.c xprt_alloc(): max_alloc is raised to num_prealloc.
        warnings.append(
            "tcp_slot_table_entries (%d) is above tcp_max_slot_table_entries (%d): the kernel raises the "
            "cap to the pre-allocated count, so new TCP transports get up to %d slots" % (initial, cap, initial))
    return warnings


def parameters_by_module(values):
    """{option: value} -> {kernel module: {parameter: value}} for the options present."""
    grouped = {}
    for option in ALL_OPTIONS:
        if values.get(option) is None:
            continue
        kmod, parameter = KERNEL_PARAMETER[option]
        grouped.setdefault(kmod, {})[parameter] = values[option]
    return grouped


def parse_int(text):
    """A /proc or /sys value as int; None when empty or not a number."""
    if text is None:
        return None
    try:
        return int(text.strip())
    except ValueError:
        return None


def _version_tuple(vers):
    major, _sep, minor = vers.partition(".")
    try:
        return int(major), (int(minor) if minor else None)
    except ValueError:
        return None, None


def _transport_options(mount):
    """Which sunrpc options a mount's transport read when it was created (UDP or TCP table)."""
    proto = (mount["options"].get("proto") or "tcp").lower()
    if proto.startswith("udp"):
        return ("udp_slot_table_entries",)
    if proto.startswith("rdma"):
        # xprtrdma has its own slot limits (rdma_slot_table_entries), untouched here.
        return ()
    return ("tcp_slot_table_entries", "tcp_max_slot_table_entries")


def classify_mounts(mounts, changing, server_of, version_of):
    """Split NFS mounts into those that keep an old slot table and the NFSv4.1+ session mounts.

    mounts: NFS mounts from mountinfo.parse_mountinfo(); changing: options whose live value
    differs (or differed before this run) from the wanted value; server_of/version_of: the
    mountinfo helpers. Transports and sessions read the values only when they are created, and
    all mounts of one server share them, so the remedy is to unmount every mount of that server.

    Returns (pending, session_mounts), lists of {mount_point, server, vers, reason}.
    """
    pending = []
    session_mounts = []
    for mount in mounts:
        vers = version_of(mount)
        server = server_of(mount)
        row = {"mount_point": mount["mount_point"], "server": server, "vers": vers}
        major, minor = _version_tuple(vers)
        transport_changes = [option for option in _transport_options(mount) if option in changing]
        if major == 4 and minor is not None and minor >= 1:
            reasons = []
            if SESSION_OPTION in changing:
                reasons.append(
                    "its NFSv4.1 session was negotiated at mount time with the old max_session_slots; "
                    "unmount every mount of %s and mount again to get a new session" % server)
            if "tcp_slot_table_entries" in transport_changes:
                reasons.append("its transports keep the old pre-allocated tcp_slot_table_entries until remounted")
            session_mounts.append(dict(row, reason=(
                "NFSv%s ignores tcp_max_slot_table_entries; its cap is the session slot table: set "
                "nfs_max_session_slots" % vers)))
            if reasons:
                pending.append(dict(row, reason="; ".join(reasons)))
            continue
        if not transport_changes:
            continue
        if major == 4 and minor is None:
            note = "mountinfo does not show the NFSv4 minor version; if it is 4.0, "
        else:
            note = ""
        pending.append(dict(row, reason=(
            "%sits RPC transport was created with the old %s and keeps it until every mount of %s "
            "is unmounted and mounted again" % (note, "/".join(transport_changes), server))))
    return pending, session_mounts


def settings_rows(wanted, persisted, live, check_persisted=True, check_live=True, not_loaded=(), unset_is_default=False):
    """The audit table rows (settings.row) for each wanted option, in_sync by settings.in_sync.

    not_loaded: options whose kernel module is not loaded, so they have no live value.
    unset_is_default: nothing persisted means the kernel default applies at the next load (the
    state=absent rollback target), so an unset option compares as its default.
    """
    rows = []
    for option in ALL_OPTIONS:
        if option not in wanted:
            continue
        effective = persisted.get(option)
        if effective is None and unset_is_default:
            effective = KERNEL_DEFAULTS[option]
        synced = settings.in_sync(wanted[option], effective, live.get(option), check_persisted, check_live,
                                  live_applicable=option not in not_loaded)
        rows.append(settings.row(option, wanted[option], persisted.get(option), live.get(option), synced))
    return rows


def render_values(values):
    """Text form of {option: value} for a live diff."""
    return "".join("%s = %s\n" % (option, values[option]) for option in ALL_OPTIONS if option in values)
