"""Compare what a lab client persisted with what its kernel runs, after a reboot.

Usage: persisted_vs_live.py MOUNT_POINT
Persisted: the module options kmod resolves (`modprobe -c`, later lines win, as the kernel
applies repeated parameters) and the fstab options of MOUNT_POINT. Live: /proc/sys/sunrpc,
/sys/module/nfs/parameters and /proc/self/mountinfo. Prints JSON {persisted, live, mismatches}.
"""
import json
import subprocess
import sys

# Kernel 6.1 defaults for parameters no file sets (docs/nfs-facts.md).
PARAMETERS = {
    ("sunrpc", "tcp_slot_table_entries"): ("/proc/sys/sunrpc/tcp_slot_table_entries", "2"),
    ("sunrpc", "tcp_max_slot_table_entries"): ("/proc/sys/sunrpc/tcp_max_slot_table_entries", "65536"),
    ("sunrpc", "udp_slot_table_entries"): ("/proc/sys/sunrpc/udp_slot_table_entries", "16"),
    ("nfs", "max_session_slots"): ("/sys/module/nfs/parameters/max_session_slots", "64"),
}
# Mount options a fresh mount takes from fstab and the kernel shows; nconnect=1 is not shown.
MOUNT_OPTIONS = {"vers": None, "nconnect": "1", "rsize": None, "wsize": None}


def read(path):
    with open(path) as handle:
        return handle.read()


def persisted_parameters():
    found = {}
    config = subprocess.run(["modprobe", "-c"], check=True, capture_output=True, text=True).stdout
    for line in config.splitlines():
        words = line.split()
        if len(words) < 3 or words[0] != "options":
            continue
        for item in words[2:]:
            name, _sep, value = item.partition("=")
            if (words[1], name) in PARAMETERS:
                found[(words[1], name)] = value
    return {"%s.%s" % key: found.get(key, default) for key, (_path, default) in PARAMETERS.items()}


def live_parameters():
    return {"%s.%s" % key: read(path).strip() for key, (path, _default) in PARAMETERS.items()}


def options_dict(text):
    options = {}
    for item in text.split(","):
        name, _sep, value = item.partition("=")
        options[name] = value
    return options


def fstab_options(mount_point):
    for line in read("/etc/fstab").splitlines():
        fields = line.split()
        if len(fields) >= 4 and not fields[0].startswith("#") and fields[1] == mount_point:
            return options_dict(fields[3])
    return None


def live_options(mount_point):
    for line in read("/proc/self/mountinfo").splitlines():
        left, _sep, right = line.partition(" - ")
        fields = left.split()
        if fields[4] == mount_point:
            return options_dict(right.split()[2])
    return None


def main(mount_point):
    persisted = persisted_parameters()
    live = live_parameters()
    mismatches = ["%s: persisted %s, live %s" % (name, persisted[name], live[name])
                  for name in persisted if persisted[name] != live[name]]
    fstab, mounted = fstab_options(mount_point), live_options(mount_point)
    if fstab is None or mounted is None:
        mismatches.append("%s: fstab entry %s, mounted %s" % (mount_point, fstab is not None, mounted is not None))
    else:
        for name, default in MOUNT_OPTIONS.items():
            want, have = fstab.get(name, default), mounted.get(name, default)
            # rsize/wsize/vers absent from fstab are negotiated: nothing persisted to compare.
            if want is not None and want != have:
                mismatches.append("%s %s: fstab %s, live %s" % (mount_point, name, want, have))
        persisted["fstab"], live["mountinfo"] = fstab, mounted
    print(json.dumps({"persisted": persisted, "live": live, "mismatches": mismatches}, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
