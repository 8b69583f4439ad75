"""Power-cut a lab VM the moment a file changes: a reboot in the middle of a rollout.

Usage: crash_after_change.py WATCHED MARKER SECONDS
Polls WATCHED (appears, disappears or is replaced) every 10 ms; when it changes, writes this
boot's id to MARKER (fsynced, so it survives the crash) and resets the machine through
sysrq 'b' - no sync, no unmount, like pulling the plug. Gives up after SECONDS without a crash.
"""
import os
import sys
import time


def identity(path):
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return None
    return (st.st_ino, st.st_mtime_ns, st.st_size)


def write_durably(path, text):
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.write(fd, text.encode())
        os.fsync(fd)
    finally:
        os.close(fd)
    dir_fd = os.open(os.path.dirname(path) or ".", os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


def main(watched, marker, seconds):
    with open("/proc/sys/kernel/random/boot_id") as handle:
        boot_id = handle.read()
    before = identity(watched)
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if identity(watched) != before:
            write_durably(marker, boot_id)
            with open("/proc/sysrq-trigger", "w") as trigger:
                trigger.write("b")
            time.sleep(60)
        time.sleep(0.01)
    print("no change of %s within %ss: no crash" % (watched, seconds))
    return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2], float(sys.argv[3])))
