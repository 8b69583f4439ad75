#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: ckptio.nfs contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: checkpoint_canary
short_description: Write a checkpoint-shaped load to an NFS mount and time every rank
version_added: 0.1.0
description:
  - Forks O(ranks) writer processes that write O(bytes_per_rank) each in O(block_size) blocks, either
    into disjoint ranges of one shared file with C(pwrite) (O(layout=shared_file), the pattern of a
    single-file checkpoint) or into files of their own (O(layout=file_per_rank), the PyTorch DCP and
    MLPerf Storage pattern), then C(fsync) and close, as a real checkpoint does.
  - Two-phase start with O(barrier_dir) (roles/canary_validation) - prepare, write C(ready.json), wait for C(go.json)
    (C(go_at), this host's clock) or C(abort.json), write C(done.json) at the end; without it the ranks wait for O(start_at).
    Each rank reports start, end, bytes and error; the aggregate is MLPerf Storage's rule (bytes / (latest end - earliest start)).
  - Samples the tasks in D state and their C(wchan) once a second. Ranks not done within O(timeout) get SIGKILL; after at
    most O(kill_grace) more seconds the module fails naming each with its state and C(wchan), never waiting on a D state.
  - Writes only inside a 0700 directory it makes under O(path) (C(O_NOFOLLOW)), removed afterwards, after a failure too, unless
    O(keep=true), by a detached helper that waits for every rank first. Blocks are random, each stamped with its offset.
  - With O(restore=true) the canary also measures the checkpoint's load (MLPerf Storage times save and load). Once every
    rank of this host has fsynced, the reads are released together (a second go line; with O(barrier_dir) after
    C(written.json) and the controller's C(read_go.json) or C(abort.json), waited for at most O(barrier_timeout)) and
    each rank reads back exactly what it wrote from a cold client cache (O(restore_cache)), timed by the same rule
    (RV(summary.restore)), with its own O(timeout). Every block is verified; a torn, stale or missing block fails naming
    the rank, file and offset. A failed or stalled write skips the reads (C(written.json) then says C(read_ready=false)).
  - O(shape) reproduces a real writer's files and metadata operations, O(paths) spreads the ranks over several NFS
    mounts, O(local_path) writes to a burst buffer and times the drain to NFS (RV(per_path), RV(blocking_seconds),
    RV(drain)); C(docs/validation.md) "Shapes", "Placement", "Burst buffer".
author:
  - ckptio.nfs maintainers (@ckptio)
extends_documentation_fragment:
  - ckptio.nfs.attributes
  - ckptio.nfs.attributes.platform
  - ckptio.nfs.rpc_sampling
attributes:
  check_mode:
    support: full
    details: Validates the options and the target and returns the plan; creates and writes nothing.
  diff_mode:
    support: partial
    details: With O(keep=true) the diff lists the files left behind.
  platform:
    platforms: linux
options:
  path:
    description:
      - Existing directory on the NFS mount to test. The canary creates its own 0700 directory inside.
      - Must be absolute and must not pass through a symbolic link (give the real path).
    type: path
    required: true
  ranks: {description: "Writer processes on this host (GPUs per node in a training job).", type: int, default: 1}
  bytes_per_rank: {description: "Bytes each rank writes (its checkpoint shard).", type: int, default: 67108864}
  block_size: {description: "Bytes per write call. With O(direct=true) a multiple of 4096.", type: int, default: 1048576}
  layout:
    description:
      - V(shared_file) - every rank C(pwrite)s its own disjoint range of one file.
      - V(file_per_rank) - every rank writes O(files_per_rank) files of its own.
    type: str
    choices: [shared_file, file_per_rank]
    default: shared_file
  files_per_rank: {description: "Files per rank with O(layout=file_per_rank); O(bytes_per_rank) is split between them.", type: int, default: 1}
  fsync: {description: "C(fsync) every file before the rank's end time, as MLPerf Storage requires.", type: bool, default: true}
  direct: {description: "Open with C(O_DIRECT) (page-aligned buffers), bypassing the client page cache.", type: bool, default: false}
  start_at:
    description:
      - Unix epoch (seconds, may have a fraction) at which every rank starts writing. Set it once on
        the controller a few seconds ahead so all hosts start together. Omitted means now.
      - It must be finite and within O(barrier_timeout) seconds of now; a go file's C(go_at) is held to the
        same bound and must echo the run id of C(ready.json).
    type: float
  barrier_dir:
    description:
      - Directory on a local file system (tmpfs such as C(/dev/shm) or C(/run), never the NFS mount under
        test) for the two-phase start. The canary creates it (mode 0700; an existing one must be a real
        directory of this user without group or other write), writes C(ready.json) when prepared, waits for
        C(go.json) or C(abort.json) and writes C(done.json) at the end. O(start_at) is then ignored.
      - With O(restore=true) also the read barrier - C(written.json) after the writes, then C(read_go.json)
        or C(abort.json), waited for at most O(barrier_timeout).
      - Omitted means no barrier - the ranks start at O(start_at).
    type: path
  barrier_timeout:
    description:
      - Seconds the prepared canary waits for C(go.json) before it gives up, cleans up and fails, so a
        controller that died does not leave ranks waiting (a finite number above 0, at most 86400).
      - With O(restore=true) also the longest wait for C(read_go.json) after C(written.json).
    type: float
    default: 600
  timeout:
    description:
      - Seconds from the start until every rank must have finished (a finite number above 0, at most 86400).
      - With O(restore=true) the read phase gets its own O(timeout), counted from the read go (so a run may
        take twice O(timeout), plus the wait for C(read_go.json)).
    type: float
    default: 600
  kill_grace: {description: "Seconds to wait for stalled ranks after SIGKILL before failing anyway (0 to 3600).", type: float, default: 5}
  allow_local: {description: "Allow a O(path) that is not on an NFS mount (tests, benchmarks against local disks).", type: bool, default: false}
  keep: {description: "Leave the written files in place (in the directory named by RV(workdir)).", type: bool, default: false}
  restore:
    description:
      - After the writes, read everything back (the checkpoint's load) and verify every block; see the description.
      - Needs O(fsync=true) (a checkpoint read back after a failure was fsynced, and dirty pages can neither be
        dropped nor read around). Each rank then holds a second block in memory (the copy it compares with),
        which the memory bound counts.
    type: bool
    default: false
  restore_cache:
    description:
      - How the read phase starts from a cold client page cache (ignored unless O(restore=true); C(docs/validation.md)
        "Restore (read-back)" says what each guarantees). Neither empties the NFS server's cache.
      - V(fadvise) - after its fsync each rank calls C(posix_fadvise(POSIX_FADV_DONTNEED)) over its own range (not the
        whole shared file, which would start writeback of ranks still writing), outside both timed windows; then ordinary
        buffered reads with readahead. The call is guaranteed, not that every page goes;
        M(ckptio.nfs.diagnose_bundle) measures the result (C(restore.cold_cache)).
      - V(direct) - C(O_DIRECT) reads into a page-aligned buffer, each block a READ to the server, no readahead. Needs
        O(block_size) a multiple of 4096 and O(bytes_per_rank) a multiple of O(block_size); tmpfs fails with C(EINVAL).
      - V(none) - a warm read, the control case.
    type: str
    choices: [fadvise, direct, none]
    default: fadvise
  shape:
    description:
      - The checkpoint writer whose I/O the ranks reproduce (files, sizes, metadata operations, fsync; C(docs/validation.md)
        "Shapes"). Omitted means O(layout) and O(files_per_rank) as given. V(shared_file) and V(file_per_rank) are those layouts.
      - V(torch_dcp) - PyTorch DCP's FileSystemWriter (every rank C(mkdir -p) and checks C(.metadata); O(thread_count) C(.distcp)
        files per rank; the coordinator writes C(.metadata.tmp), fsyncs, unlinks the old C(.metadata), renames).
      - V(megatron) - Megatron-LM / NeMo C(torch_dist) (rank 0 makes the directory, two files per rank, rank 0 rewrites the tracker
        file in place).
      - V(mlperf_llama3_8b), V(mlperf_llama3_70b), V(mlperf_llama3_405b), V(mlperf_llama3_1t) - MLPerf Storage v2.0's checkpoint
        workload (a C(global_epoch…_step…) directory per checkpoint made by every rank; per-rank bytes from the model, times
        O(shape_scale); O(bytes_per_rank) is then ignored).
      - The job's rank 0 (O(first_rank=0)) alone coordinates; with O(job_id) after every rank of every host (done markers).
    type: str
    choices: [shared_file, file_per_rank, torch_dcp, megatron, mlperf_llama3_8b, mlperf_llama3_70b, mlperf_llama3_405b, mlperf_llama3_1t]
  shape_scale: {description: "Factor on the MLPerf shapes' per-rank bytes (the model's size), above 0, at most 1000.", type: float, default: 1.0}
  thread_count: {description: "Writer threads of O(shape=torch_dcp) (files per rank, FileSystemWriter's C(thread_count)).", type: int, default: 1}
  num_checkpoints: {description: "Checkpoints the MLPerf shapes write one after another (a 5 s pause and a barrier before each).", type: int, default: 1}
  first_rank:
    description: Global rank of this host's rank 0 (host index x O(ranks)); names the files and spreads ranks over O(paths).
    type: int
    default: 0
  paths:
    description:
      - Several existing directories on NFS mounts (other servers or exports); ranks go round-robin by global rank.
        Each is checked as O(path) is, and gets its own work directory. Given, it replaces O(path) (which stays
        required; give it the first entry). Empty means O(path) alone.
    type: list
    elements: path
    default: []
  local_path:
    description:
      - Burst buffer - a node-local directory (NVMe, tmpfs) the ranks write to; then a drain copies the files to their NFS
        path and RV(drain) times it. Refused when this host's bytes do not fit its free space. Empty means direct writes.
    type: path
  drain_rate_limit: {description: "Bytes per second the drain may use on this host (shared by its ranks); 0 means no cap.", type: int, default: 0}
  checkpoint_interval_seconds:
    description:
      - Seconds between checkpoints in training; 0 means not given. With O(local_path), RV(drain) says whether the drain fits.
      - Refused when O(drain_rate_limit) makes the drain provably longer (this host's bytes / rate > interval).
    type: int
    default: 0
  job_id:
    description:
      - One checkpoint directory per path shared by the job's hosts, C(ckptio-canary-job-<job_id>), files named by global rank;
        made by the first host, never removed here (the caller removes it once every host is done; roles/canary_validation does).
      - Not with V(shared_file); V(torch_dcp), V(megatron) need O(job_ranks) (rank 0 waits for every rank's done marker); omitted, this host's own.
      - V(torch_dcp), V(megatron) need O(barrier_dir) or O(start_at) - a marker carries the run's go (C(go_controller), else O(start_at)),
        only this run's count; another run's are ignored and named (RV(ranks)' C(other_run_markers), a warning).
    type: str
    version_added: 0.5.0
  job_ranks: {description: "Ranks of the whole job (hosts x O(ranks)) with O(job_id); 0 means not given.", type: int, default: 0, version_added: 0.5.0}
  recovery_rank_shift:
    description:
      - MLPerf's read-back (DLIO's C(recovery_rank_shift)); with O(restore=true), O(job_id) and O(job_ranks) global rank g reads
        the files of rank (g + shift) mod O(job_ranks). O(ranks) makes the reader another host, whose client never cached them.
    type: int
    version_added: 0.5.0
    default: 0
notes:
  - Ranks are forked processes; results, samples and cleanup do not depend on the play's connection.
seealso:
  - name: MLPerf Storage checkpointing rules
    description: Duration is the slowest rank; throughput is total bytes over that duration.
    link: https://github.com/mlcommons/storage
"""

EXAMPLES = r"""
- name: Eight ranks write 1 GiB each into one shared file, starting together
  ckptio.nfs.checkpoint_canary:
    path: /mnt/checkpoints
    ranks: 8
    bytes_per_rank: 1073741824
    layout: shared_file
    start_at: "{{ canary_start_at }}"
    timeout: 300

- name: PyTorch DCP's shape over two NFS exports, through a node-local burst buffer capped at 1 GB/s
  ckptio.nfs.checkpoint_canary:
    path: /mnt/ckpt-a
    paths: [/mnt/ckpt-a, /mnt/ckpt-b]
    ranks: 8
    shape: torch_dcp
    local_path: /local/nvme/ckpt
    drain_rate_limit: 1000000000
    checkpoint_interval_seconds: 1800
  register: canary
"""

RETURN = r"""
workdir:
  description: The 0700 directory the canary wrote into (removed unless O(keep=true)).
  returned: always
  type: str
  sample: /mnt/checkpoints/ckptio-canary-node01-4711-1a2b3c4d
mount:
  description:
    - The mount holding O(path), from C(/proc/self/mountinfo), which is read as bytes, so other mounts of the host
      whose names are not UTF-8 do not matter.
    - A byte of its source or mount point that is not UTF-8 is shown as a backslash and three octal digits (C(\351)).
  returned: always
  type: dict
  sample: {mount_point: /mnt/checkpoints, fstype: nfs4, source: "10.0.0.1:/srv/nfs"}
plan:
  description: Per rank - C(files) (offsets and lengths), C(global_rank), C(path_index), C(outputs); a shape's C(ops) in order.
  returned: always
  type: list
  elements: dict
ranks:
  description:
    - Per-rank results; start and end are Unix epochs, error is null on success. With O(num_checkpoints) > 1 one record
      a rank and checkpoint (C(checkpoint), its index; RV(summary) then has C(checkpoints), one aggregate each).
    - With O(restore=true) also C(read_start), C(read_end) (epochs), C(read_bytes), C(read_error) (null on success),
      C(verify_errors) (at most 8 bad blocks, each C({file, offset, problem})), C(verify_error_count) (all of them) and,
      with O(recovery_rank_shift), C(read_from_rank) (the global rank whose files it read).
    - A job's rank 0 - C(other_run_markers), the done markers of other runs it ignored, each C({file, run}) (run null when none).
  returned: when the ranks ran
  type: list
  elements: dict
  sample: [{rank: 0, pid: 4712, start: 1760000000.001, end: 1760000004.2, bytes: 1073741824, error: null}]
summary:
  description:
    - MLPerf Storage aggregate over this host's ranks. C(seconds) is latest end minus earliest start,
      C(throughput_bytes_per_second) total bytes over that, C(max_start_delay_seconds) the largest
      distance of a rank's start from O(start_at).
  returned: when the ranks ran
  type: dict
  contains:
    restore:
      description:
        - With O(restore=true) - the same aggregate over the read fields (C(read_start), C(read_end), C(read_bytes);
          a rank with a read or verify error is left out of the span), computed by the same function, with
          C(max_start_delay_seconds) measured from C(read_go_at) (the read go on this host's clock), plus
          C(restore_cache) (the method used), C(verify_error_count) and C(skipped) (null, or why no rank read).
        - C(read_from) - C(recovery_rank_shift), C(other_host) (every rank read another host's files) and C(cache_risk)
          (null, or why a cache could serve the read - flag the figure then, never average it with cold reads).
      returned: when O(restore=true) and the ranks ran
      type: dict
restore:
  description:
    - The read phase's plan - C(restore_cache), C(guarantee) (what the method guarantees), C(block_size),
      C(total_read_bytes), C(blocks), C(files), C(start) (when the reads start) and C(verify).
    - In check mode this is what would be done; nothing is written or read.
  returned: when O(restore=true)
  type: dict
restore_host_samples:
  description: The host samples (as RV(host_samples)) at the read go and when the last rank finished reading.
  returned: when O(restore=true) and the read phase ran
  type: dict
stalled:
  description:
    - Ranks that did not finish within O(timeout), with state, C(wchan) and whether they exited after SIGKILL.
    - A rank that stalled reading (O(restore=true)) has C(phase) C(read).
  returned: always
  type: list
  elements: dict
dstate_samples: {description: "Samples of tasks in D, C({epoch, count, wchans, rank_pids}).", returned: when the ranks ran, type: list, elements: dict}
host_samples:
  description:
    - CPU, disk and network evidence of this host when the ranks started (C(start), taken at O(start_at)) and when the
      last rank ended or the timeout hit (C(end)), in the capture-bundle host sample format (C(docs/capture-bundle.md)).
      C(start) is missing when no rank was still running at O(start_at).
  returned: when the ranks ran
  type: dict
dstate_text: {description: "The same samples in the capture-bundle C(dstate.txt) format (C(EPOCH COUNT wchan1,wchan2,...)).", returned: always, type: str}
dstate_summary: {description: "Samples, samples with a task in D, peak count, longest run and C(wchan) counts.", returned: when the ranks ran, type: dict}
rpc_samples:
  description: "C(sunrpc_xprt), C(rpc_tasks), C(rpc_latency) (texts, null when not seen), C(mode), C(notes) (what was not seen, tracing's clean-up), C(cost)."
  returned: when the ranks ran
  type: dict
dstate_peak: {description: "Most tasks seen in D state in one sample.", returned: always, type: int}
cleaned_up: {description: "True when the work directory was removed before the module returned.", returned: always, type: bool}
cleanup_deferred_pid:
  description: Pid of the helper still waiting for stalled ranks before it removes the work directory.
  returned: when removal could not finish in time
  type: int
start_at: {description: "The start epoch the ranks waited for (the go time on this host's clock with O(barrier_dir)).", returned: always, type: float}
barrier:
  description:
    - With O(barrier_dir) - C(ready_at) (when the canary was prepared), C(signal) (C(go) or C(abort)), C(go_at),
      C(go_late_seconds) (how long after go the go file was read; 0 when it came in time), C(abort) (the reason),
      C(go_controller) (go on the controller's clock, null when the go file had none).
    - With O(restore=true) also C(read) - the read barrier's record, C(written_at) (when C(written.json) was
      written) and C(signal), C(go_at), C(go_late_seconds), C(abort) as above for C(read_go.json).
  returned: when O(barrier_dir) is set and the canary got that far
  type: dict
shape:
  description: C(name) and the resolved plan - C(files_per_rank), C(bytes_per_file), C(metadata_ops_per_rank), C(directory_by).
  returned: always
  type: dict
workdirs:
  description: Every work directory (one per path, then the local path's), when there is more than one.
  returned: when the ranks ran on several paths or a local path
  type: list
  elements: str
per_path:
  description: One row per NFS path - C(path), C(ranks), C(bytes), C(start), C(end), C(seconds) (the MLPerf rule over its ranks).
  returned: when the ranks ran
  type: list
  elements: dict
blocking_seconds:
  description: Seconds the ranks were blocked writing (the local write with O(local_path), else the NFS write).
  returned: when the ranks ran
  type: float
drain:
  description:
    - With O(local_path) - C(seconds), C(bytes), C(start), C(end), C(rate_limit) and C(fits_interval) (null without an interval).
  returned: when the ranks ran
  type: dict
harness:
  description:
    - The harness's own CPU while the ranks ran - C(canary_cpu_seconds), C(ranks_cpu_seconds), C(host_busy_cpu_seconds),
      C(other_cpu_seconds) (busy CPU that was neither) and C(dstate_sampler) (its passes, their C(cpu_seconds), and the
      C(longest_interval_seconds) a costly pass stretched the 1 s interval to, at most 10 s).
  returned: when the ranks ran
  type: dict
"""


import time

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.ckptio.nfs.plugins.module_utils.canary import outcome, preflight, restore, shapes
from ansible_collections.ckptio.nfs.plugins.module_utils.canary import plan as canary
from ansible_collections.ckptio.nfs.plugins.module_utils.host import host_root
from ansible_collections.ckptio.nfs.plugins.module_utils.host.canary import run as canary_run
from ansible_collections.ckptio.nfs.plugins.module_utils.host.canary import target as canary_target


def main():
    module = AnsibleModule(
        argument_spec=dict(
            path=dict(type="path", required=True),
            ranks=dict(type="int", default=1), bytes_per_rank=dict(type="int", default=64 * 1024 * 1024),
            block_size=dict(type="int", default=1024 * 1024),
            layout=dict(type="str", default="shared_file", choices=list(canary.LAYOUTS)),
            files_per_rank=dict(type="int", default=1),
            fsync=dict(type="bool", default=True), direct=dict(type="bool", default=False),
            start_at=dict(type="float"),
            barrier_dir=dict(type="path"), barrier_timeout=dict(type="float", default=600.0),
            timeout=dict(type="float", default=600.0), kill_grace=dict(type="float", default=5.0),
            allow_local=dict(type="bool", default=False), keep=dict(type="bool", default=False),
            restore=dict(type="bool", default=False),
            restore_cache=dict(type="str", default="fadvise", choices=list(restore.CACHE_METHODS)),
            shape=dict(type="str", choices=list(shapes.SHAPES)),
            shape_scale=dict(type="float", default=1.0), thread_count=dict(type="int", default=1),
            num_checkpoints=dict(type="int", default=1),
            first_rank=dict(type="int", default=0),
            paths=dict(type="list", elements="path", default=[]),
            local_path=dict(type="path"), drain_rate_limit=dict(type="int", default=0),
            checkpoint_interval_seconds=dict(type="int", default=0),
            job_id=dict(type="str"), job_ranks=dict(type="int", default=0),
            recovery_rank_shift=dict(type="int", default=0),
            rpc_sampling=dict(type="str", default="queues", choices=["off", "queues", "trace"]), rpc_mount_debugfs=dict(type="bool", default=False),
        ),
        supports_check_mode=True,
    )
    params, host = module.params, host_root.at_root()
    # request -> target -> pure plan: a refusal is a value, returned before anything is made.
    target = preflight.request_refusal(params) or canary_target.read(params, host)
    plan = preflight.plan(params, target, time.time())
    ran = None
    if isinstance(plan, preflight.Plan):
        for warning in plan.warnings:
            module.warn(warning)
        if not module.check_mode:
            ran = canary_run.run(module, host, target, plan)
    result, failure = outcome.report(params, plan, ran, module._diff)
    if failure is not None:
        module.fail_json(msg=failure, **result)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
