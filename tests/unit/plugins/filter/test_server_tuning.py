"""ckptio.nfs.server_tuning_report, called directly with nfsd_threads results as the role registers them."""
from __future__ import annotations

import base64
import dataclasses
import os

import pytest
import yaml

from ansible.errors import AnsibleFilterError

from ansible_collections.ckptio.nfs.plugins.plugin_utils.server_tuning import ASYNC_NOTE, SYNC_NOTE, STEPS, ReportInputs

REPORT = STEPS["server_tuning_report"]
FILTER_DIR = os.path.join(os.path.dirname(__file__), "..", "..", "..", "..", "plugins", "plugin_utils")

# What nfsd_threads returns on a stock Debian 12 server asked for 64 threads (tests/unit/plugins/modules).
NFSD = {"changed": True, "threads_before": 8, "threads_after": 64, "min_threads_before": None, "min_threads_after": None,
        "persisted_threads": 64, "effective_persisted_threads": 64, "conflicts": [], "max_block_size": 1048576,
        "max_connections_before": 0, "max_connections_after": 0, "persisted_max_connections": 0,
        "connection_limit": {"configured": 0, "effective": 1340, "threads": 64, "supported": True},
        "live_applied": True, "live_not_applied_reason": "", "warnings": [],
        "effective_persisted_source": {"path": "/etc/nfs.conf.d/ckptio-nfsd.conf", "line": 3, "value": "64"},
        "persist_mechanism": "nfs_conf",
        "persist_mechanism_reason": "nfs-server runs rpc.nfsd without a thread count: [nfsd] threads in nfs.conf decides",
        "settings": [{"name": "threads", "wanted": 64, "persisted": 64, "live": 64, "in_sync": True}]}
NEED = {"clients": 64, "hosts_checked": 64, "connections": 256, "extra": 0, "margin_percent": 25, "margin": 64, "need": 320}
PLAN = {"max_connections": 0, "default_limit": 1340, "need": 320, "reason": "the default limit (64 + 3) * 20 = 1340 covers the need 320"}


def report(nfsd=None, need=None, exports=(), **kwargs):
    arguments = {"connection_need": NEED if need is None else need, "max_connections_plan": PLAN, "profile": "checkpoint",
                 "conf_file": "/etc/nfs.conf.d/ckptio-nfsd.conf", "clients_group": "nfs_clients", "threads": 64,
                 "exports": list(exports)}
    arguments.update(kwargs)
    return REPORT(dict(NFSD, **(nfsd or {})), arguments)


def read(path, text):
    return {"item": path, "content": base64.b64encode(text.encode()).decode(), "encoding": "base64", "source": path}


def test_tuned_server():
    result = report()
    assert result == {
        "role": "server_tuning", "profile": "checkpoint", "check_mode": False,
        "changed": ["nfsd threads: 64 (live 8 -> 64)"], "pending": [], "warnings": [],
        "settings": [{"name": "threads", "wanted": 64, "persisted": 64, "live": 64, "in_sync": True, "scope": "nfsd"}],
        "exports": [], "max_block_size": 1048576,
        "persist": {"mechanism": "nfs_conf", "reason": NFSD["persist_mechanism_reason"], "effective_threads": 64,
                    "source": NFSD["effective_persisted_source"]},
        "connections": {"clients_group": "nfs_clients", "clients": 64, "connections": 256, "extra": 0, "margin_percent": 25,
                        "margin": 64, "need": 320, "setting": "auto", "max_connections": 0, "reason": PLAN["reason"],
                        "limit": NFSD["connection_limit"], "sufficient": True},
    }


def test_command_line_count_is_shown_with_its_file_and_pending_restart():
    # nfsd_threads on Debian 11 without persist_command_line (tests/unit/plugins/modules/test_nfsd_threads_command_line.py).
    source = {"path": "/etc/default/nfs-kernel-server", "line": 2, "value": "8", "via": "RPCNFSDCOUNT"}
    result = report({"persist_mechanism": "command_line", "effective_persisted_threads": 8, "effective_persisted_source": source,
                     "persist_mechanism_reason": "nfs-utils_env.sh passes rpc.nfsd the count RPCNFSDCOUNT=8"})
    assert result["persist"] == {"mechanism": "command_line", "effective_threads": 8, "source": source,
                                 "reason": "nfs-utils_env.sh passes rpc.nfsd the count RPCNFSDCOUNT=8"}
    assert result["pending"] == ["nfs-server restart would set threads to 8 (live: 64)"]


def test_nothing_changed():
    assert report({"changed": False})["changed"] == []


def test_rollback_names_the_removed_drop_in():
    result = report({"threads_after": 8}, state="absent")
    assert result["changed"] == ["nfsd threads: /etc/nfs.conf.d/ckptio-nfsd.conf removed, live 8 -> 8"]


def test_unknown_live_counts_read_n_a():
    nfsd = dict(NFSD)
    del nfsd["threads_before"], nfsd["threads_after"]
    assert REPORT(nfsd, {"connection_need": NEED, "max_connections_plan": PLAN, "profile": "checkpoint", "conf_file": "/x.conf",
                         "clients_group": "g", "threads": 64})["changed"] == ["nfsd threads: 64 (live n/a -> n/a)"]


def test_connection_limit_change():
    result = report({"changed": False, "max_connections_after": 5000, "persisted_max_connections": 5000})
    assert result["changed"] == ["nfsd max_connections: live 0 -> 5000 (persisted: 5000)"]


def test_live_not_applied_is_pending_only_when_live_was_asked_for():
    nfsd = {"live_applied": False, "live_not_applied_reason": "nfsd is not running", "threads_after": 8}
    assert report(nfsd)["pending"] == ["nfsd live threads not applied: nfsd is not running",
                                       "nfs-server restart would set threads to 64 (live: 8)"]
    assert report(nfsd, apply_live=False)["pending"] == ["nfs-server restart would set threads to 64 (live: 8)"]


def test_restart_pending_compares_numbers():
    assert report({"effective_persisted_threads": "64"})["pending"] == []
    assert report({"effective_persisted_threads": None, "threads_after": 8})["pending"] == []


def test_warnings_in_order():
    nfsd = {"conflicts": [{"key": "threads", "path": "/etc/nfs.conf.d/zz.conf", "line": 2, "value": "16", "overrides_ours": True},
                          "a conflict as text"],
            "max_block_size": 262144, "connection_limit": {"configured": 0, "effective": 1340, "threads": 64, "supported": True},
            "warnings": ["systemctl not found"]}
    need = dict(NEED, clients=1000, connections=4000, margin=1000, need=5000)
    result = report(nfsd, need)
    assert result["warnings"] == [
        'nfs.conf conflict: {"key": "threads", "path": "/etc/nfs.conf.d/zz.conf", "line": 2, "value": "16", "overrides_ours": true}',
        "nfs.conf conflict: a conflict as text",
        "max_block_size is 262144: clients asking rsize/wsize=1048576 get 262144; raise /proc/fs/nfsd/max_block_size "
        "before nfsd starts (EBUSY while it runs)",
        "nfsd allows 1340 connections but the 1000 clients of nfs_clients open 4000 to this server (need with margin: 5000); "
        "over the limit nfsd closes its oldest connection (\"too many open connections\"): set server_tuning_max_connections "
        "(auto sets the need) or raise threads, which raises the default (threads + 3) * 20",
        "systemctl not found",
    ]
    assert result["connections"]["sufficient"] is False


def test_no_connection_limit_on_the_kernel():
    result = report({"connection_limit": {"configured": None, "effective": None, "threads": 64, "supported": False}},
                    dict(NEED, need=100000))
    assert result["connections"]["sufficient"] is None
    assert result["warnings"] == []


def test_exports_rows_and_notes():
    files = [read("/etc/exports", "# site\n/srv/ckpt 10.0.0.0/24(rw,sync) gpu*(rw,async)\n/srv/scratch\n"),
             {"item": "/etc/exports.d/gone.exports", "failed": True, "msg": "file not found"},
             read("/etc/exports.d/www.exports", "/srv/www -async,rw server @external(ro,sync)\n")]
    assert report(exports=files)["exports"] == [
        {"file": "/etc/exports", "path": "/srv/ckpt", "client": "10.0.0.0/24", "options": ["rw", "sync"], "notes": []},
        {"file": "/etc/exports", "path": "/srv/ckpt", "client": "gpu*", "options": ["rw", "async"], "notes": [ASYNC_NOTE]},
        {"file": "/etc/exports", "path": "/srv/scratch", "client": "*", "options": [], "notes": [SYNC_NOTE]},
        {"file": "/etc/exports.d/www.exports", "path": "/srv/www", "client": "server", "options": ["async", "rw"],
         "notes": [ASYNC_NOTE]},
        {"file": "/etc/exports.d/www.exports", "path": "/srv/www", "client": "@external",
         "options": ["async", "rw", "ro", "sync"], "notes": []},
    ]


def test_a_malformed_export_file_is_warned_about():
    result = report(exports=[read("/etc/exports", "/srv/a a(rw)\n/srv/b b(rw\n/srv/c c(rw)\n")])
    assert [row["path"] for row in result["exports"]] == ["/srv/a"]
    assert result["warnings"] == ["/etc/exports line 2: bad option list in 'b(rw'; exportfs exports nothing after it"]


@pytest.mark.parametrize("argument", ["_input", "connection_need", "max_connections_plan"])
def test_inputs_must_be_results(argument):
    arguments = {"connection_need": NEED, "max_connections_plan": PLAN, "profile": "checkpoint", "conf_file": "/x.conf",
                 "clients_group": "g"}
    nfsd = NFSD
    if argument == "_input":
        nfsd = "64"
    else:
        arguments[argument] = None
    with pytest.raises(AnsibleFilterError, match=argument):
        REPORT(nfsd, arguments)


def test_documented_under_its_name():
    with open(os.path.join(FILTER_DIR, "server_tuning_report.yml")) as handle:
        documentation = yaml.safe_load(handle)["DOCUMENTATION"]
    assert documentation["name"] == "server_tuning_report"
    assert set(documentation["options"]) == {"_input", "inputs"}
    # The one dict's suboptions are the typed value's fields, each documented.
    assert set(documentation["options"]["inputs"]["options"]) == set(field.name for field in dataclasses.fields(ReportInputs))


def test_a_setting_given_as_text_keeps_its_number():
    # ansible-core before 2.19 renders a role's vars dict to text: 64 arrives as "64".
    assert report(max_connections_setting="64")["connections"]["setting"] == 64
    assert report(max_connections_setting="auto")["connections"]["setting"] == "auto"
    assert report()["connections"]["setting"] == "auto"
