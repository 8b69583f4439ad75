"""Render scripts/lab-matrix.sh's results as the Markdown table docs/kernels.md quotes.

Usage: python3 tests/lab_matrix/table.py tests/output/lab-matrix > matrix.md
Each column is one suite directory; a fact that was not measured there says so.
"""
import glob
import json
import os
import re
import sys

UNMEASURED = "not measured"


def load(directory, name):
    try:
        with open(os.path.join(directory, name)) as handle:
            return json.load(handle)
    except (OSError, ValueError):
        return None


def header_columns(pool_stats):
    for line in (pool_stats or "").splitlines():
        if line.startswith("#"):
            return " ".join(line.lstrip("#").split())
    return UNMEASURED


def mount_options(facts):
    for line in (facts or {}).get("mountinfo_nfs", []):
        if " - nfs4 " not in line and " - nfs " not in line:
            continue
        options = line.split(" - ", 1)[1].split()[-1]
        found = dict(item.partition("=")[::2] for item in options.split(","))
        return "vers=%s nconnect=%s wsize=%s" % (found.get("vers"), found.get("nconnect", "1 (not shown)"), found.get("wsize"))
    return UNMEASURED


def threads_row(result):
    if result is None:
        return "n/a"
    verdict = "kept" if result["live_after_restart"] == result["persisted"] else "**reset**"
    return "%s live after restart (persisted %s): %s" % (result["live_after_restart"], result["persisted"], verdict)


def grant(slots, server):
    if not slots or slots.get("error") or not slots.get("highest_slotid"):
        return (slots or {}).get("error", UNMEASURED)
    granted = max(slots["highest_slotid"]) + 1
    threads = (server or {}).get("threads", "?")
    return "%d granted of %s requested (server: %s threads, %d MiB); highest slot used %s in %d SEQUENCE replies" % (
        granted, slots.get("max_session_slots"), str(threads).strip(), (server or {}).get("mem_total_kib", 0) // 1024,
        slots.get("max_slot_nr_used"), slots.get("sequence_replies", 0))


def pool_totals(directory, name):
    try:
        with open(os.path.join(directory, name)) as handle:
            lines = [line.split() for line in handle if line.strip()]
    except OSError:
        return None
    columns = lines[0][1:]
    return {column: sum(int(row[index]) for row in lines[1:]) for index, column in enumerate(columns) if column != "pool"}


def starvation(directory, threads):
    before = pool_totals(directory, "starvation-%d-before.txt" % threads)
    after = pool_totals(directory, "starvation-%d-after.txt" % threads)
    if not before or not after:
        return UNMEASURED
    delta = {key: after[key] - before.get(key, 0) for key in after}
    packets, enqueued, woken = delta.get("packets-arrived", 0), delta.get("sockets-enqueued", 0), delta.get("threads-woken", 0)
    return "Δpackets %d, Δenqueued %d, Δwoken %d: 1 − woken/packets %.0f %% (1 − woken/enqueued %.0f %%)" % (
        packets, enqueued, woken, 100 * max(0.0, 1 - woken / float(packets)) if packets else 0,
        100 * max(0.0, 1 - woken / float(enqueued)) if enqueued else 0)


def persisted_vs_live(result):
    if result is None:
        return UNMEASURED
    return "all equal" if not result["mismatches"] else "**differ**: " + "; ".join(result["mismatches"])


def nfsd_stats(directory):
    """ckptio.nfs.nfsd_stats's result: the json callback's document, or an older run's oneline text."""
    try:
        with open(os.path.join(directory, "nfsd_stats.json")) as handle:
            document = json.load(handle)
        return document["plays"][0]["tasks"][0]["hosts"]["nfs1"]
    except (OSError, ValueError, KeyError, IndexError):
        pass
    try:
        with open(os.path.join(directory, "nfsd_stats.txt")) as handle:
            text = handle.read()
    except OSError:
        return None
    match = re.search(r"=> (\{.*\})", text)
    if not match:
        return None
    try:
        return json.loads(match.group(1))
    except ValueError:
        return None


def diagnosis(directory):
    paths = sorted(glob.glob(os.path.join(directory, "reports", "*", "diagnosis.json")))
    if not paths:
        return UNMEASURED
    with open(paths[-1]) as handle:
        result = json.load(handle)
    achieved = (result.get("achieved_bytes_per_second") or 0) / 1e6
    return "%s, limiting %s (confidence %s), %.2f MB/s" % (result.get("verdict"), result.get("limiting_layer"), result.get("confidence"), achieved)


def column(directory):
    server = load(directory, "server-baseline.json") or {}
    tuned_server = load(directory, "server-tuned.json") or {}
    client = load(directory, "client-baseline.json") or {}
    tuned = load(directory, "client-tuned.json") or {}
    slots = load(directory, "slots.json")
    stats = nfsd_stats(directory) or {}
    files = server.get("proc_fs_nfsd_files")
    after_slots = load(directory, "server-after-slots.json") or {}
    return {
        "kernel (uname -r)": server.get("kernel_release", UNMEASURED),
        "userland": "%s; nfs-utils %s" % (server.get("os_release"), server.get("nfs_kernel_server")),
        "nfs-server ExecStart": "`%s`" % re.sub(r".*argv\[\]=([^;]*);.*", r"\1", tuned_server.get("nfs_server_execstart", "")).strip()
        if tuned_server else UNMEASURED,
        "nfs-utils_env.sh": "yes" if server.get("nfs_utils_env_sh") else "no",
        "persisted threads, nfs.conf drop-in only": threads_row(load(directory, "threads-restart.json")),
        "persisted threads, with persist_command_line": threads_row(load(directory, "threads-restart-command-line.json")),
        "/proc/fs/nfsd/min_threads": UNMEASURED if files is None else ("present" if "min_threads" in files else "absent"),
        "/proc/fs/nfsd/max_connections": UNMEASURED if files is None else ("present" if "max_connections" in files else "absent"),
        "pool_stats header": "`%s`" % header_columns(server.get("pool_stats")),
        "pool_stats over 4 x 16 MiB, 1 nfsd thread": starvation(directory, 1),
        "pool_stats over 4 x 16 MiB, 8 nfsd threads": starvation(directory, 8),
        "nfsd_stats parsed columns": ", ".join(stats.get("pool_stats", {}).get("columns", [])) or UNMEASURED,
        "clients/*/info keys": ", ".join(sorted({line.split(":", 1)[0] for text in after_slots.get("clients_info", {}).values()
                                                 for line in (text or "").splitlines() if ":" in line})) or UNMEASURED,
        "v4.1 session grant (nfs4_sequence_done)": grant(slots, after_slots),
        "client max_session_slots baseline -> tuned": "%s -> %s" % (
            client.get("parameters", {}).get("nfs.max_session_slots", "?"), tuned.get("parameters", {}).get("nfs.max_session_slots", "?")),
        "client after reboot: persisted vs live": persisted_vs_live(load(directory, "client-persisted-vs-live.json")),
        "mount after tuning": mount_options(tuned),
        "xprt: counters after the protocol": ", ".join(str(count - 1) for count in tuned.get("xprt_fields", [])) or UNMEASURED,
        "canary diagnosis": diagnosis(directory),
    }


def main():
    root = sys.argv[1]
    order = ["bullseye", "bookworm", "trixie"]
    suites = sorted((name for name in os.listdir(root) if os.path.isdir(os.path.join(root, name))),
                    key=lambda name: (order.index(name) if name in order else len(order), name))
    columns = {suite: column(os.path.join(root, suite)) for suite in suites}
    rows = list(next(iter(columns.values()), {}).keys())
    print("| fact | %s |" % " | ".join(suites))
    print("|---|%s" % ("---|" * len(suites)))
    for row in rows:
        print("| %s | %s |" % (row, " | ".join(str(columns[suite][row]).replace("|", "\\|") for suite in suites)))


if __name__ == "__main__":
    main()
