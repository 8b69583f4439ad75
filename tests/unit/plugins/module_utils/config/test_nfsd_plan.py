"""nfsd_plan driven directly on views: the conf file, max_connections, live writes, the report.

Live values are the lab's 2 GiB server VM (kernel 6.1): 8 threads, max_block_size 262144.
"""
from __future__ import annotations

import pytest

from ansible_collections.ckptio.nfs.plugins.module_utils.config import nfsd_connections
from ansible_collections.ckptio.nfs.plugins.module_utils.config import nfsd_plan

CONF = "/etc/nfs.conf.d/ckptio-nfsd.conf"
DROPIN = "/etc/systemd/system/nfs-server.service.d/ckptio-max-connections.conf"
VALUE = "/etc/ckptio/nfsd-max-connections"


def request(**extra):
    params = {"threads": 32, "min_threads": None, "max_connections": None, "apply_live": True, "persist": True,
              "state": "present", "conf_file": CONF, "backup": False}
    params.update(extra)
    return nfsd_plan.Request.from_params(params, is_main_conf=False)


def max_view(live=0, supported=True, dropin=None, value=None):
    return {"proc_file": "/proc/fs/nfsd/max_connections", "live": live, "supported": supported, "dropin_path": DROPIN,
            "dropin": dropin, "value_path": VALUE, "value": value, "dd_path": "/usr/bin/dd"}


def planned(req, threads=8, min_threads=None, view=None, before=None, others=()):
    view = view or max_view()
    max_plan = nfsd_plan.plan_max_connections(req, view)
    after = nfsd_plan.plan_file(req, before)
    views = nfsd_plan.Views("/proc/fs/nfsd", threads, min_threads, 262144, view, before,
                            files_after=list(others) + ([(CONF, after)] if after is not None else []),
                            files_now=list(others) + ([(CONF, before)] if before is not None else []))
    return views, nfsd_plan.plan(req, views, after, max_plan)


def test_present_persists_and_plans_the_live_write():
    req = request()
    views, plan = planned(req)
    assert plan.conf_after == nfsd_plan.HEADER + "[nfsd]\nthreads=32\n"
    assert plan.threads_live.writes == [("threads", 32)]
    assert plan.threads_live.unapplied == ((32, None), False, "check mode: live values not written")
    result = nfsd_plan.report(req, views, plan)
    assert result["settings"] == [{"name": "threads", "wanted": 32, "persisted": None, "live": 8, "in_sync": False}]
    assert result["threads_after"] == 32 and result["effective_persisted_threads"] == 32


def test_a_stopped_or_unloaded_nfsd_is_never_started():
    assert planned(request(), threads=0)[1].threads_live == ([], ((0, None), False, "nfsd is not running (threads=0); not "
                                                                  "starting it: the persisted value applies when nfs-server starts"))
    unloaded = planned(request(), threads=None, view=max_view(live=None, supported=None))[1]
    assert unloaded.threads_live.writes == [] and unloaded.threads_live.unapplied.reason.startswith("nfsd is not loaded (no /proc/fs/nfsd/threads)")


def test_min_threads_is_lowered_first_when_threads_shrink_below_it():
    plan = planned(request(threads=4, min_threads=2), threads=16, min_threads=8)[1]
    assert plan.threads_live.writes == [("min_threads", 2), ("threads", 4)]


def test_max_connections_writes_the_value_file_before_the_dropin_and_removes_them_the_other_way():
    plan = planned(request(max_connections=5000))[1]
    assert [edit.path for edit in plan.edits if edit.changed] == [CONF, VALUE, DROPIN]
    assert plan.dropin_changed and plan.max_live.writes == [("max_connections", 5000)]
    ours = nfsd_connections.dropin_text("/usr/bin/dd", VALUE, "/proc/fs/nfsd/max_connections")
    absent = planned(request(threads=None, state="absent"), view=max_view(live=5000, dropin=ours, value="5000\n"),
                     before=nfsd_plan.HEADER + "[nfsd]\nthreads=32\n")[1]
    assert [(edit.path, edit.after) for edit in absent.edits if edit.changed] == [(CONF, None), (DROPIN, None), (VALUE, None)]
    assert absent.max_plan.wanted == 0 and absent.wanted_threads == nfsd_plan.DEFAULT_THREADS


def test_a_dropin_not_ours_stops_the_plan():
    with pytest.raises(nfsd_plan.PlanError, match="was not written by ckptio.nfs"):
        nfsd_plan.plan_max_connections(request(max_connections=5000), max_view(dropin="[Service]\nExecStartPre=/bin/true\n"))


def test_a_kernel_without_max_connections_warns_and_sets_nothing():
    max_plan = nfsd_plan.plan_max_connections(request(max_connections=5000), max_view(live=None, supported=False))
    assert max_plan.wanted is None and "Linux 6.14 removed it" in max_plan.warnings[0]


def test_verified_results_name_what_the_kernel_reports():
    assert nfsd_plan.verified_threads(32, None, 16, None, []) == (
        (16, None), False, "the kernel reports threads=16 min_threads=None after the write")
    assert nfsd_plan.verified_max_connections(5000, 5000, ["writing max_connections=5000 failed: EIO"]) == (
        5000, False, "writing max_connections=5000 failed: EIO")
