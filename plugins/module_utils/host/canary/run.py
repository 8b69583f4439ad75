# -*- coding: utf-8 -*-
# Copyright: ckptio.nfs contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""checkpoint_canary's run, after main()'s check-mode gate: make the work directories (host/canary/
cleanup.py), fork the ranks (host/canary/ranks.py), start them together at the go (the barrier's,
barrier_files), watch them with a D-state sampler until they finish or the timeout, kill and report the
stalled ones (processes), with restore=true run the read phase the same way, with local_path the drain,
then settle (cleanup) and write done.json. Each phase is an outcome.Phase; run() returns the frozen
outcome.Outcome, which main() turns into the result (outcome.report); nothing here exits.
"""

from __future__ import annotations

import dataclasses
import os
import resource
import time

from ansible_collections.ckptio.nfs.plugins.module_utils.canary import barrier
from ansible_collections.ckptio.nfs.plugins.module_utils.canary import outcome
from ansible_collections.ckptio.nfs.plugins.module_utils.canary import restore
from ansible_collections.ckptio.nfs.plugins.module_utils.canary import shapes
from ansible_collections.ckptio.nfs.plugins.module_utils.host import barrier_files
from ansible_collections.ckptio.nfs.plugins.module_utils.host.canary import ranks as canary_ranks
from ansible_collections.ckptio.nfs.plugins.module_utils.host.canary import shapes as canary_shapes
from ansible_collections.ckptio.nfs.plugins.module_utils.host.canary.cleanup import WorkdirError
from ansible_collections.ckptio.nfs.plugins.module_utils.host import dstate_scan
from ansible_collections.ckptio.nfs.plugins.module_utils.host import processes
from ansible_collections.ckptio.nfs.plugins.module_utils.host import sunrpc_sampler
from ansible_collections.ckptio.nfs.plugins.module_utils.host.host_reader import read_host_sample
from ansible_collections.ckptio.nfs.plugins.module_utils.kernel_text import dstate

DSTATE_INTERVAL = 1.0


class Sampler:
    """The D-state sampler; a pass's own cost stretches the interval to the next (dstate.sampling_interval)."""

    def __init__(self, proc, rpc=None):
        self.proc = proc
        # The sunrpc views (sunrpc_sampler.RpcSampler), read on their own cadence during the write window (sample_rpc).
        self.rpc = rpc
        self.passes = 0
        self.cpu_seconds = 0.0
        self.interval_seconds = DSTATE_INTERVAL
        self.longest_interval_seconds = DSTATE_INTERVAL

    def sample(self, rank_pids):
        """Every task in D state right now: {epoch, count, wchans, rank_pids}."""
        tasks, cpu_seconds = dstate_scan.scan(self.proc)
        wchans = sorted(task["wchan"] for task in tasks)
        self.passes += 1
        self.cpu_seconds += cpu_seconds
        self.interval_seconds = dstate.sampling_interval(DSTATE_INTERVAL, cpu_seconds)
        self.longest_interval_seconds = max(self.longest_interval_seconds, self.interval_seconds)
        return {"epoch": round(time.time(), 3), "count": len(wchans), "wchans": wchans,
                "rank_pids": sorted(task["pid"] for task in tasks if task["pid"] in rank_pids)}

    def sample_rpc(self):
        """A pass of the sunrpc views when their own interval is due (none otherwise); when the next is due, or None."""
        if self.rpc is None:
            return None
        self.rpc.sample()
        return self.rpc.due_at()

    def cost(self):
        return {"passes": self.passes, "cpu_seconds": round(self.cpu_seconds, 3),
                "longest_interval_seconds": round(self.longest_interval_seconds, 3),
                "max_share": dstate.SAMPLER_MAX_SHARE}


class Run:
    """The forked ranks of one canary and what the phases need: the options, the NFS servers, the host (a host_root.HostRoot)."""

    def __init__(self, module, ranks, servers, host):
        self.module = module
        self.params = module.params
        self.ranks = ranks
        self.servers = servers
        self.host = host
        self.sampler = Sampler(host.proc, sunrpc_sampler.RpcSampler(host, module.params.get("rpc_sampling", "queues")))

    def host_sample(self):
        return read_host_sample(self.host, self.servers)

    def monitor(self, deadline, start_at, first_line=False, on_stall=canary_ranks.stalled_write):
        """Collect rank results, sampling D state every interval, until done or deadline.

        Host samples (CPU, disks, links) are taken when the ranks start and when the last one
        ends, so the diagnosis measures this host over the checkpoint itself, not over the
        whole play with Ansible's own launch and polling in it. first_line: a rank is done at
        its first line, not at EOF (restore=true's write phase). on_stall(rank): the result of
        a rank that did not finish.
        """
        pending = dict((rank.child.output_fd, rank) for rank in self.ranks if rank.child.output_fd is not None)
        rank_pids = set(rank.child.pid for rank in self.ranks)
        results, samples, host_samples = [], [], {}
        next_sample = time.time()
        while pending and time.time() < deadline:
            now = time.time()
            if "start" not in host_samples and now >= start_at:
                host_samples["start"] = self.host_sample()
            if now >= next_sample:
                samples.append(self.sampler.sample(rank_pids))
                next_sample = now + self.sampler.interval_seconds
            rpc_due = self.sampler.sample_rpc()
            wake = min(next_sample, deadline) if "start" in host_samples else min(next_sample, deadline, start_at)
            wake = wake if rpc_due is None else min(wake, rpc_due)
            for fd in processes.readable(list(pending), max(0.0, wake - time.time())):
                if processes.read_output(pending[fd].child, first_line):
                    results.append(canary_ranks.rank_result(pending.pop(fd)))
        host_samples["end"] = self.host_sample()
        stalled = self.stop_stalled(list(pending.values()), rank_pids, samples) if pending else []
        for rank in pending.values():
            processes.close_output(rank.child)
            results.append(on_stall(rank))
        for rank in self.ranks:
            processes.reap(rank.child.pid)
        return outcome.Phase(sorted(results, key=lambda r: r["rank"]), stalled, samples, host_samples)

    def stop_stalled(self, stalled_ranks, rank_pids, samples):
        """SIGKILL the stalled ranks, wait at most kill_grace for them, never longer; each with its state and wchan."""
        rows = []
        for rank in stalled_ranks:
            state, wchan, _start = processes.task_state(rank.child.pid)
            rows.append({"rank": rank.number, "pid": rank.child.pid, "state": state, "wchan": wchan, "exited": False})
        next_sample = [time.time() + self.sampler.interval_seconds]

        def keep_sampling():
            if time.time() >= next_sample[0]:
                samples.append(self.sampler.sample(rank_pids))
                next_sample[0] = time.time() + self.sampler.interval_seconds
            self.sampler.sample_rpc()

        exited = processes.kill_children([row["pid"] for row in rows], self.params["kill_grace"], keep_sampling)
        for row in rows:
            row["exited"] = exited[row["pid"]]
            if not row["exited"]:
                # Report where it is stuck now, after the kill, not only before it.
                state, wchan, _start = processes.task_state(row["pid"])
                row["state"] = state or row["state"]
                row["wchan"] = wchan or row["wchan"]
        return rows

    def write_phase(self, go_at, children_before, run=None):
        """Release the ranks at go and monitor them; the harness's own CPU over the ranks' run.

        With restore=true a rank is done writing at its first line (its pipe stays open for the read).
        run: the run of a job's done markers (shapes.run_token), sent to the ranks with go.
        """
        restoring = bool(self.params["restore"])
        processes.send_go([rank.child for rank in self.ranks], go_at, last=not restoring, run=run)
        own_before = resource.getrusage(resource.RUSAGE_SELF)
        self.sampler.rpc.begin(go_at)
        try:
            phase = self.monitor(max(go_at, time.time()) + self.params["timeout"], go_at, first_line=restoring)
        finally:
            self.sampler.rpc.end()
        own_after = resource.getrusage(resource.RUSAGE_SELF)
        children_after = resource.getrusage(resource.RUSAGE_CHILDREN)
        ranks_cpu = (children_after.ru_utime + children_after.ru_stime) - (children_before.ru_utime + children_before.ru_stime)
        if restoring:
            # The ranks live on to read: each reported its own CPU with its write result (rank_result).
            ranks_cpu = sum(rank.write_cpu_seconds or 0.0 for rank in self.ranks)
        harness = barrier.harness_cost(
            (own_after.ru_utime + own_after.ru_stime) - (own_before.ru_utime + own_before.ru_stime),
            ranks_cpu, phase.host_samples.get("start"), phase.host_samples.get("end"))
        return dataclasses.replace(phase, harness=dict(harness, dstate_sampler=self.sampler.cost()))

    def read_phase(self, workdir, written):
        """The read phase, once every rank of this host has written: release the reads together (at
        read_go.json's go_at with barrier_dir, else now) and monitor them as the writes were, with
        their own timeout. skipped says why no rank read (the write failed or stalled, or the
        controller called the read off). (the Phase, the read barrier's record or None.)
        """
        skipped = restore.skip_reason(written.results, written.stalled)
        read_at = info = None
        if skipped is None:
            read_at, info = self.wait_for_read_go(workdir)
            if read_at is None:
                skipped = "not run: aborted: %s" % info["abort"]
        else:
            self.announce_unread(workdir, skipped)
        if skipped is not None:
            return outcome.Phase([restore.complete_read(r) for r in written.results], [], [], {}, skipped=skipped), info
        processes.send_go([rank.child for rank in self.ranks], read_at)
        phase = self.monitor(max(read_at, time.time()) + self.params["timeout"], read_at, on_stall=canary_ranks.stalled_read)
        return dataclasses.replace(
            phase, stalled=[dict(item, phase="read") for item in phase.stalled], read_at=read_at,
            results=[restore.complete_read(r, "rank exited without a read result") for r in phase.results]), info

    def drain_phase(self, places, plan, written):
        """The burst buffer's drain, once every rank has written locally: a child per rank copies its
        files to its NFS path (drain_rate_limit shared between them), monitored as the writes were."""
        if written.stalled or any(r.get("error") for r in written.results):
            return outcome.Phase([], [], [], {}, skipped="not run: a rank failed or stalled writing to local_path")
        rate = self.params["drain_rate_limit"] / float(len(plan)) if self.params["drain_rate_limit"] else 0
        drainers = canary_ranks.start_ranks(
            plan, lambda entry: canary_ranks.drain_body(places.local_fd, places.nfs_fds, entry, self.params, rate),
            places.control_fds())
        writers, self.ranks = self.ranks, drainers
        try:
            go_at = time.time()
            processes.send_go([rank.child for rank in drainers], go_at)
            phase = self.monitor(go_at + self.params["timeout"], go_at)
        finally:
            self.ranks = writers + drainers
        return dataclasses.replace(phase, stalled=[dict(item, phase="drain") for item in phase.stalled])

    def wait_for_go(self, workdir, start_at):
        """(go epoch on this host's clock or None to abort, barrier record or None without a barrier)."""
        if self.params["barrier_dir"] is None:
            return start_at, None
        return barrier_files.wait_for_go(
            self.module, self.params["barrier_dir"],
            barrier.ready_document(time.time(), os.getpid(), len(self.ranks), workdir), self.params["barrier_timeout"])

    def wait_for_read_go(self, workdir):
        if self.params["barrier_dir"] is None:
            return time.time(), None
        return barrier_files.wait_for_read_go(
            self.module, self.params["barrier_dir"],
            barrier.written_document(time.time(), os.getpid(), len(self.ranks), workdir), self.params["barrier_timeout"])

    def announce_unread(self, workdir, skipped):
        """written.json with read_ready false (barrier.WRITTEN_READY_PATTERN): the controller's wait
        for this host ends now, and it leaves the host out of the read go; nothing waits here."""
        if self.params["barrier_dir"] is None:
            return
        try:
            barrier_files.write_json(self.module, self.params["barrier_dir"], barrier.WRITTEN_FILE,
                                     barrier.written_document(time.time(), os.getpid(), len(self.ranks), workdir, skipped))
        except OSError as exc:
            self.module.warn("could not write %s in %s: %s" % (barrier.WRITTEN_FILE, self.params["barrier_dir"], exc))

    def let_go(self):
        """Any rank not released yet (abort, or an error before go) is told to exit unwritten; with
        restore=true one still waiting for its read go is told to exit unread."""
        processes.send_go([rank.child for rank in self.ranks], None)
        for rank in self.ranks:
            processes.close_output(rank.child)

    def rank_ids(self):
        return [(rank.child.pid, rank.child.starttime) for rank in self.ranks]


def run_phases(module, places, planned, servers, host):
    """Fork the ranks, start them together, write; with restore=true then read back; with local_path drain.

    Returns (the Run, the Outcome's fields so far: barrier, start_at, written, read, drained; written is
    None when the run was called off before go). A fork that fails raises canary_ranks.RankStartError.
    """
    params = module.params
    plan = planned.result["plan"]
    supervised = Run(module, [], servers, host)
    phases = dict(barrier=None, start_at=None, written=None, read=None, drained=None, rpc_samples=None)
    write_fds = places.write_fds()
    barrier = canary_shapes.PipeBarrier(len(plan)) if any(entry.get("ops") for entry in plan) else None
    # The read-back checks each file's size too (restore.planned_sizes): the ranks get it with their options.
    rank_params = dict(params, planned_sizes=restore.planned_sizes(plan)) if params["restore"] else params
    try:
        for path_index, name in planned.shape.shared_files:
            os.close(canary_shapes.open_below(write_fds[path_index], name, os.O_WRONLY | os.O_CREAT | os.O_EXCL))
        children_before = resource.getrusage(resource.RUSAGE_CHILDREN)
        supervised.ranks = canary_ranks.start_ranks(
            plan, lambda entry: canary_ranks.rank_body(write_fds, entry, rank_params, barrier), places.control_fds())
        # The sunrpc sampler's set-up (a tracing instance) while the ranks wait for their go, after their fork (so
        # they do not hold its watchdog's pipe); write_phase() opens and closes its window.
        supervised.sampler.rpc.prepare()
        go_at, signal_info = supervised.wait_for_go(places.path(), planned.start_at)
        phases.update(barrier=signal_info, start_at=go_at)
        if go_at is not None:
            run = shapes.run_token(params, go_at, (signal_info or {}).get("go_controller"))
            written = phases["written"] = supervised.write_phase(go_at, children_before, run)
            phases["rpc_samples"] = supervised.sampler.rpc.result()
            if params["restore"]:
                phases["read"], read_info = supervised.read_phase(places.path(), written)
                if read_info is not None and signal_info is not None:
                    phases["barrier"] = dict(signal_info, read=read_info)
            if places.local is not None:
                phases["drained"] = supervised.drain_phase(places, plan, written)
    finally:
        supervised.sampler.rpc.end()
        supervised.let_go()
        if barrier is not None:
            barrier.close()
        places.close_fds()
    return supervised, phases


def settle(module, places, supervised, phases):
    """After the phases: reap the ranks, let the cleanup helpers finish (or defer); the frozen Outcome."""
    params = module.params
    written = phases["written"]
    if written is None:
        # The controller (or barrier_timeout) called the run off: ranks exit unwritten, the directories go.
        processes.reap_within([pid for pid, _start in supervised.rank_ids()], params["kill_grace"])
        cleanup = places.finish(params["kill_grace"], module.warn)
    else:
        stalled = written.stalled + [item for phase in (phases["read"], phases["drained"]) if phase for item in phase.stalled]
        # After a stall the ranks may never exit soon: give the helpers only the grace period.
        cleanup = places.finish(params["kill_grace"] if stalled else max(params["timeout"], 30.0), module.warn)
        for pid, _start in supervised.rank_ids():
            processes.reap(pid)
        for rank in written.results:
            if rank.get("other_run_markers"):
                module.warn("job_id %s: done markers of other runs in %s ignored (only this run's count): %s"
                            % (params["job_id"], places.path(), shapes.describe_markers(rank["other_run_markers"])))
    workdirs = tuple(workdir.path() for workdir in places.every) if len(places.every) > 1 else ()
    return outcome.Outcome(cleanup=cleanup, workdir=places.path(), workdirs=workdirs,
                           nfs_paths=tuple(workdir.real for workdir in places.nfs), **phases)


def run(module, host, target, planned):
    """The canary as planned (preflight.Plan) on its target (host/canary/target.Target); the frozen
    outcome.Outcome, with `stopped` naming why when it failed before any rank ran."""
    params = module.params
    places = target.places
    if planned.nofile_soft is not None:
        resource.setrlimit(resource.RLIMIT_NOFILE, (planned.nofile_soft, target.facts.nofile[1]))
    if params["barrier_dir"] is not None:
        # Before the work directories: a refused barrier_dir leaves nothing behind.
        error = barrier_files.prepare_dir(params["barrier_dir"])
        if error:
            return outcome.Outcome(stopped=error)
    try:
        places.make()
    except WorkdirError as exc:
        return outcome.Outcome(stopped=str(exc))
    try:
        supervised, phases = run_phases(module, places, planned, list(target.facts.servers), host)
    except canary_ranks.RankStartError as exc:
        return outcome.Outcome(stopped=str(exc), cleanup={"cleaned_up": places.cleaned_after_failed_start()})
    ran = settle(module, places, supervised, phases)
    if params["barrier_dir"] is not None:
        # done.json: the role's one wait after go returns on it.
        barrier_files.write_done(module, params["barrier_dir"], outcome.report(params, planned, ran)[1] is not None)
    return ran
