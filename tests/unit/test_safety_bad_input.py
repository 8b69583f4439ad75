"""Bad input over every module and every role entry point (issue 7, "Bad input").

One table: each row is an entry point, the option it attacks, and the bad value. A row passes
only when the input is refused with a message that names the option, nothing in the fake
/etc, /proc and /sys tree changed (sha256 of every file) and no command ran.

Modules run through their real main() against the fake tree (the kernel's files under one
host root, the fake_root fixture of tests/unit/conftest.py; config paths are module-level
constants, monkeypatched). Roles first go through Ansible's own role argument validation
(ArgumentSpecValidator on meta/argument_specs.yml, as the validate_argument_spec task does);
what the spec lets through is walked task by task the way ansible-playbook would reach it:
include_vars, set_fact and assert are evaluated with Ansible's Templar, ckptio.nfs modules run
in-process on the fake tree with the arguments the task renders. So a role row proves that
the role refuses the value before its first change, not only that some module would.

The tree builder and the role walker are shared with test_safety_check_mode.py and
test_safety_files.py.
"""
from __future__ import annotations

import base64
import copy
import functools
import importlib
import os
import re
import shutil
import sys
import time

import pytest
import yaml

from ansible.errors import AnsibleError
from ansible.module_utils import basic
from ansible.module_utils.common.arg_spec import ArgumentSpecValidator
from ansible.parsing.dataloader import DataLoader
from ansible.plugins.loader import init_plugin_loader
from ansible.utils.collection_loader import AnsibleCollectionConfig

from ansible_collections.ckptio.nfs.plugins.module_utils.config.mountinfo import escape_path
from ansible_collections.ckptio.nfs.plugins.module_utils.host import host_root
from ansible_collections.ckptio.nfs.tests.unit.utils import (
    AnsibleExitJson, AnsibleFailJson, Templar, _invoke, fail_module, read_sample, sample_path, tree_checksums,
    trust_as_template,
)

COLLECTION = os.path.normpath(os.path.join(os.path.dirname(__file__), "..", ".."))
MODULES = ("sunrpc_slot_table", "nfsd_threads", "nfs_mount", "nfs_client_stats", "nfsd_stats",
           "diagnose_bundle", "checkpoint_canary", "checkpoint_report", "tcp_probe", "tcp_probe_listener",
           "saved_stats_bundle")


def module_named(name):
    return importlib.import_module("ansible_collections.ckptio.nfs.plugins.modules.%s" % name)


# ---------------------------------------------------------------------------------------------
# The fake host: one tree with everything the eight modules read or write.
# ---------------------------------------------------------------------------------------------
# Debian 12 guest values (docs/nfs-facts.md, docs/lab.md "Guest facts").
GUEST_SUNRPC = {"tcp_slot_table_entries": "2", "tcp_max_slot_table_entries": "65536", "udp_slot_table_entries": "16",
                "min_resvport": "665", "max_resvport": "1023"}
LIVE_NFS_OPTIONS = ("rw,vers=4.1,rsize=1048576,wsize=1048576,namlen=255,hard,proto=tcp,nconnect=4,timeo=600,retrans=2,"
                    "sec=sys,clientaddr=10.0.0.2,local_lock=none,addr=10.0.0.1")
# nfs-utils 2.6.2's stock /etc/nfs.conf, [nfsd] part (threads commented out: the default 8).
STOCK_NFS_CONF = ("#\n# This is a general configuration for the\n# NFS daemons and tools\n#\n[general]\n"
                  "pipefs-directory=/run/rpc_pipefs\n#\n[nfsd]\n# debug=0\n# threads=8\n# host=\n# port=0\n"
                  "# grace-time=90\n# lease-time=90\n# udp=n\n# tcp=y\n# vers3=y\n# vers4=y\n")
SITE_MODPROBE = "# site\noptions\tlockd nlm_timeout=10\n\nblacklist floppy"


def write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as handle:
        handle.write(text)


class World:
    """Paths of the fake host and the commands modules tried to run."""

    def __init__(self, root):
        self.root = root
        self.commands = []

    def path(self, *parts):
        return os.path.join(self.root, *parts)

    @property
    def mount_point(self):
        return self.path("mnt", "nfs")

    def fstab_text(self):
        return ("# /etc/fstab: static file system information.\n#\n"
                "UUID=0a3e5c1e-8d2b-4f8e-9c55-1e0f7a2b3c4d /               ext4    errors=remount-ro 0       1\n"
                "LABEL=scratch\t/scratch\txfs\tdefaults,noatime\t0\t2\n"
                "/srv/data       /export/data    none    bind    0       0\n"
                "\n"
                "10.0.0.1:/srv/nfs %s nfs4 vers=4.1,nconnect=4,rsize=1048576,wsize=1048576,hard,proto=tcp,timeo=600,retrans=2 0 0\n"
                % escape_path(self.mount_point))

    def snapshot(self):
        return tree_checksums(self.root)


def build_world(host, monkeypatch):
    """The safety tests' host, on the fake host of tests/unit/conftest.py (fake_root): every module reads its
    kernel files and its /etc, /usr and /run files there (host_root.HostRoot)."""
    world = World(str(host.root))
    for name, value in GUEST_SUNRPC.items():
        write(world.path("proc/sys/sunrpc", name), value + "\n")
        write(world.path("sys/module/sunrpc/parameters", name), value + "\n")
    write(world.path("sys/module/nfs/parameters/max_session_slots"), "64\n")
    # The NFS mount's MAJ:MIN is the real device of the tree: checkpoint_canary checks the
    # device of the directory it opened against the NFS mounts' devices.
    st_dev = os.stat(world.root).st_dev
    write(world.path("proc/self/mountinfo"),
          "22 1 254:0 / / rw,relatime shared:1 - ext4 /dev/vda rw,errors=remount-ro\n"
          "40 22 %d:%d / %s rw,relatime shared:80 - nfs4 10.0.0.1:/srv/nfs %s\n"
          % (os.major(st_dev), os.minor(st_dev), escape_path(world.mount_point), LIVE_NFS_OPTIONS))
    write(world.path("proc/self/mountstats"),
          "device /dev/vda mounted on / with fstype ext4\n"
          + read_sample("mountstats-v41-nconnect4-after-2GiB-write.txt").replace(" /mnt/nfs ", " %s " % world.mount_point))
    write(world.path("proc/fs/nfsd/threads"), "8\n")
    write(world.path("proc/fs/nfsd/max_block_size"), "262144\n")
    write(world.path("proc/fs/nfsd/pool_threads"), "8\n")
    write(world.path("proc/fs/nfsd/pool_stats"), read_sample("bundles/seed_like_baseline/servers/nfs1/pool_stats_after.txt"))
    write(world.path("proc/net/rpc/nfsd"), read_sample("bundles/seed_like_baseline/servers/nfs1/nfsd_after.txt"))
    write(world.path("etc/modprobe.d/site.conf"), SITE_MODPROBE)
    os.makedirs(world.path("etc/modules-load.d"))
    write(world.path("etc/nfs.conf"), STOCK_NFS_CONF)
    os.makedirs(world.path("etc/nfs.conf.d"))
    write(world.path("etc/fstab"), world.fstab_text())
    os.makedirs(world.mount_point)
    os.makedirs(world.path("local"))
    os.symlink(world.mount_point, world.path("mnt/link"))
    shutil.copytree(sample_path("bundles", "seed_like_baseline"), world.path("reports/bundle"))
    # Files an operator saved by hand (saved_stats_bundle): the seed client's two snapshots.
    for name, sample in (("ms-1.txt", "mountstats_before.txt"), ("ms-2.txt", "mountstats_after.txt")):
        write(world.path("reports/saved", name), read_sample("bundles/seed_like_baseline/clients/nfs2", sample))
    # Relative paths resolve here, inside the checksummed tree: a stray write cannot hide.
    os.makedirs(world.path("cwd"))
    monkeypatch.chdir(world.path("cwd"))

    # The tuning modules' /etc, /usr and /run files are HostRoot's: all of them under the fake root.
    host = host_root.at_root()
    for path in (host.nfs_conf, host.nfs_server_dropin, host.rpcnfsdcount_record) + host.modprobe_dirs + host.systemd_unit_dirs:
        assert path.startswith(world.root + os.sep), "%s is outside the fake host: the safety tests would touch the real host" % path

    def record_command(self, argv, **kwargs):
        world.commands.append(list(argv))
        return 1, "", "commands are not run in the safety tests"

    def record_fork():
        world.commands.append(["fork()"])
        raise OSError("fork refused in the safety tests")

    monkeypatch.setattr(basic.AnsibleModule, "run_command", record_command)
    monkeypatch.setattr(os, "fork", record_fork)
    return world


@pytest.fixture
def world(fake_root, monkeypatch):
    return build_world(fake_root, monkeypatch)


def base_args(world, entry):
    """Valid arguments of each module on the fake host; a row changes one option."""
    return {
        "sunrpc_slot_table": {"tcp_max_slot_table_entries": 128, "modprobe_conf": world.path("etc/modprobe.d/ckptio-nfs.conf"),
                              "modules_load_conf": world.path("etc/modules-load.d/ckptio-nfs.conf")},
        "nfsd_threads": {"threads": 64, "conf_file": world.path("etc/nfs.conf.d/ckptio-nfsd.conf")},
        "nfs_mount": {"src": "10.0.0.1:/srv/nfs", "path": world.mount_point, "fstab": world.path("etc/fstab"),
                      "opts": {"vers": "4.1", "nconnect": 8}},
        "nfs_client_stats": {"mount_points": [world.mount_point], "dstate_samples": 0},
        "nfsd_stats": {},
        "diagnose_bundle": {"bundle": world.path("reports/bundle")},
        "saved_stats_bundle": {"src": world.path("reports/saved"), "dest": world.path("reports/saved-bundle"),
                               "checkpoint_bytes": 2400000000, "window_seconds": 300},
        "checkpoint_report": {"bundle": world.path("reports/bundle"), "png": False},
        "checkpoint_canary": {"path": world.mount_point, "bytes_per_rank": 8192, "block_size": 4096, "timeout": 5},
        "tcp_probe": {"mode": "send", "mount_point": world.mount_point, "seconds": 1},
        "tcp_probe_listener": {"state": "stopped", "seconds": 1, "state_dir": world.path("run/ckptio-tcp-probe")},
    }[entry]


# ---------------------------------------------------------------------------------------------
# Role walker
# ---------------------------------------------------------------------------------------------
class Rejected(Exception):
    """A role refused its input: by its argument spec, an assert, a fail task or a module."""

    def __init__(self, by, msg):
        super().__init__("%s: %s" % (by, msg))
        self.by = by
        self.msg = msg


@functools.lru_cache(maxsize=None)
def _yaml_text(path):
    with open(path) as handle:
        return yaml.load(handle, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))


def load_yaml(path):
    """Parsed YAML; a fresh copy each time, since walks update what they load."""
    return copy.deepcopy(_yaml_text(path))


_PLUGINS = []


def load_plugins():
    """Ansible's plugin loader (lookups, filters) with this tree's collection root, once."""
    if not _PLUGINS:
        # pytest may import this file twice (as a test module and from test_safety_check_mode):
        # a second init would replace the plugin loaders the first one set up.
        if AnsibleCollectionConfig.collection_finder is None:
            init_plugin_loader([os.path.dirname(os.path.dirname(os.path.dirname(COLLECTION)))])
        # pytest imported ansible_collections.ckptio.nfs from PYTHONPATH before the collection
        # finder existed, so the package lacks the routing metadata the finder attaches, and
        # every ckptio.nfs.* filter in a role would be "not found". Attach it from meta/runtime.yml.
        package = importlib.import_module("ansible_collections.ckptio.nfs")
        if getattr(package, "_collection_meta", None) is None:
            package._collection_meta = load_yaml(os.path.join(COLLECTION, "meta", "runtime.yml")) or {}
        # Filter files a unit test imported by path cannot be loaded as plugins ("Skipping filter
        # plugins in ckptio.nfs.nfs_stats"); forgetting them lets the finder import its own copies.
        for name in [name for name in sys.modules if name.startswith("ansible_collections.ckptio.nfs.plugins.filter")]:
            del sys.modules[name]
        _PLUGINS.append(True)


def role_dir(role):
    return os.path.join(COLLECTION, "roles", role)


def role_spec(role, entry):
    """The options an entry point validates: its own spec, or `main`'s for a task file that is no entry point
    (canary_validation and checkpoint_capture document one entry point; each task file the playbook runs
    validates `main`'s options itself with ansible.builtin.validate_argument_spec)."""
    specs = load_yaml(os.path.join(role_dir(role), "meta", "argument_specs.yml"))["argument_specs"]
    return specs[entry]["options"] if entry in specs else specs["main"]["options"]


def task_action(task):
    keywords = {"name", "when", "register", "loop", "loop_control", "vars", "check_mode", "changed_when", "failed_when",
                "run_once", "delegate_to", "async", "poll", "until", "retries", "delay", "tags", "block", "rescue", "no_log",
                "timeout", "ignore_errors"}
    actions = [key for key in task if key not in keywords]
    assert len(actions) == 1, "cannot tell the action of task %r" % task.get("name")
    return actions[0], task[actions[0]]


class RoleWalk:
    """Reach a role entry point's guards in task order, changing only the fake tree.

    Tasks the walker does not model (file, command, include_tasks, copy ...) end the walk:
    a row that gets that far was not refused before the role started to act. In check mode
    copy and file report a change and write nothing, as Ansible's do; with write_files=True
    they write into the fake tree, for tests that follow a role through real runs.
    """

    READ_ONLY = {"ansible.builtin.debug", "ansible.builtin.find"}
    FILES = {"ansible.builtin.copy", "ansible.builtin.file"}

    def __init__(self, world, role, entry, params, check_mode=False, write_files=False):
        self.world = world
        self.role = role
        self.entry = entry
        self.params = params
        self.check_mode = check_mode
        self.write_files = write_files
        self.variables = {}
        self.changes = []

    def run(self):
        load_plugins()
        validation = ArgumentSpecValidator(role_spec(self.role, self.entry)).validate(
            dict(self.params), validate_role_argument_spec=True)
        if validation.error_messages:
            raise Rejected("argument spec", "; ".join(validation.error_messages))
        base = role_dir(self.role)
        for name in ("defaults", "vars"):
            path = os.path.join(base, name, "main.yml")
            if os.path.exists(path):
                # Role files are trusted templates in a play; nested "{{ }}" in them get rendered.
                self.variables.update(self.trusted(load_yaml(path) or {}))
        # Role params win over defaults and role vars, as they do in a play.
        self.variables.update(self.params)
        self.variables.update({"role_path": base, "ansible_search_path": [base], "ansible_check_mode": self.check_mode,
                               "inventory_hostname": "localhost", "ansible_play_hosts_all": ["localhost"],
                               "ansible_forks": 5, "ansible_playbook_python": "python3"})
        # A play always has them; a walk has no other hosts (tests that need some set their own).
        self.variables.setdefault("groups", {"all": ["localhost"], "ungrouped": ["localhost"]})
        self.variables.setdefault("hostvars", {})
        self.loader = DataLoader()
        self.loader.set_basedir(base)
        tasks_file = "main.yml" if self.entry == "main" else "%s.yml" % self.entry
        self.walk(load_yaml(os.path.join(base, "tasks", tasks_file)) or [])

    def templar(self, extra=None):
        variables = dict(self.variables)
        variables.update(extra or {})
        return Templar(loader=self.loader, variables=variables)

    @staticmethod
    def trusted(value):
        if isinstance(value, str):
            return trust_as_template(value)
        if isinstance(value, dict):
            return dict((key, RoleWalk.trusted(item)) for key, item in value.items())
        if isinstance(value, list):
            return [RoleWalk.trusted(item) for item in value]
        return value

    def render(self, value, extra=None):
        return self.templar(extra).template(self.trusted(value))

    def condition(self, text, extra=None):
        if isinstance(text, bool):
            return text
        return bool(self.templar(extra).evaluate_conditional(trust_as_template(str(text))))

    def applies(self, task, extra=None):
        when = task.get("when", [])
        return all(self.condition(item, extra) for item in (when if isinstance(when, list) else [when]))

    def walk(self, tasks):
        for task in tasks:
            if "block" in task:
                if self.applies(task):
                    try:
                        self.walk(task["block"])
                    except Rejected as exc:
                        # As Ansible does: a failed task in a block runs its rescue with ansible_failed_result.
                        if "rescue" not in task:
                            raise
                        self.variables["ansible_failed_result"] = {"failed": True, "msg": exc.msg}
                        self.walk(task["rescue"])
                continue
            action, args = task_action(task)
            # As Ansible does, `when` decides before the task's vars are rendered (they may name
            # facts that only exist when the task runs); vars stay lazy templates for it.
            if "loop" not in task and not self.applies(task, self.trusted(task.get("vars") or {})):
                if task.get("register"):
                    self.variables[task["register"]] = {}
                continue
            # Task vars stay lazy templates, as in Ansible: one is rendered only when the task reads
            # it (an assert's var may name a fact its earlier condition proves is there).
            task_vars = self.trusted(task.get("vars") or {})
            items = self.render(task["loop"], task_vars) if "loop" in task else [None]
            loop_var = task.get("loop_control", {}).get("loop_var", "item")
            results = []
            for item in items:
                extra = dict(task_vars)
                if item is not None:
                    extra[loop_var] = item
                if not self.applies(task, extra):
                    continue
                result = self.run_task(task, action, args, extra)
                results.append(dict(result, item=item) if "loop" in task else result)
            if task.get("register"):
                self.variables[task["register"]] = {"results": results} if "loop" in task else (results[0] if results else {})

    def run_task(self, task, action, args, extra):
        name = task.get("name", action)
        if action == "ansible.builtin.include_vars":
            data = self.trusted(load_yaml(os.path.join(role_dir(self.role), "vars", self.render(args["file"], extra))))
            if args.get("name"):
                self.variables[args["name"]] = data
            else:
                self.variables.update(data or {})
            return {}
        if action == "ansible.builtin.set_fact":
            for key, value in args.items():
                try:
                    self.variables[key] = self.render(value, extra)
                except AnsibleError:
                    # A fact built from results the walker does not model; no guard reads it.
                    continue
            return {}
        if action == "ansible.builtin.assert":
            for condition in args["that"] if isinstance(args["that"], list) else [args["that"]]:
                if not self.condition(condition, extra):
                    raise Rejected(name, self.render(args.get("fail_msg", condition), extra))
            return {}
        if action == "ansible.builtin.fail":
            raise Rejected(name, self.render(args["msg"], extra))
        if action == "ansible.builtin.validate_argument_spec":
            # What the action plugin does: every option of the spec the play defines, templated, validated.
            spec = self.render(args["argument_spec"], extra)
            values = dict((key, self.render(self.variables[key], extra)) for key in spec if key in self.variables)
            validation = ArgumentSpecValidator(spec).validate(values, validate_role_argument_spec=True)
            if validation.error_messages:
                raise Rejected(name, "; ".join(validation.error_messages))
            return {}
        if action in self.READ_ONLY:
            # Reads feed only the role's report; an empty answer keeps the walk going.
            return {"files": [], "content": ""}
        if action == "ansible.builtin.stat":
            return self.stat(self.render(args, extra))
        if action == "ansible.builtin.slurp":
            return self.slurp(self.render(args, extra), task)
        if action in self.FILES and (self.check_mode or task.get("check_mode") is True):
            return {"changed": True}
        if action in self.FILES and self.write_files:
            self.changes.append(name)
            return self.apply_file(action, self.render(args, extra))
        if action == "ckptio.nfs.clock_offset":
            # An action plugin (no module main()): it only reads the host's clock. Here the host
            # is this machine, so one bracket of the local clock is its honest answer.
            from ansible_collections.ckptio.nfs.plugins.module_utils.canary import clock
            now = time.time()
            return clock.best_offset([(now, now, now)])
        if action.startswith("ckptio.nfs."):
            return self.run_module(task, name, action, args, extra)
        raise Unmodelled(name)

    @staticmethod
    def stat(args):
        """The part of ansible.builtin.stat's answer the roles read (a read: it changes nothing)."""
        path = args["path"]
        if not os.path.lexists(path):
            return {"stat": {"exists": False}}
        info = os.stat(path)
        return {"stat": {"exists": True, "path": path, "isdir": os.path.isdir(path), "mode": "%04o" % (info.st_mode & 0o7777)}}

    @staticmethod
    def slurp(args, task):
        try:
            with open(args["src"], "rb") as handle:
                return {"content": base64.b64encode(handle.read()).decode(), "encoding": "base64", "source": args["src"]}
        except OSError as exc:
            if "failed_when" in task:
                return {"failed": True, "msg": str(exc)}
            raise Rejected(task.get("name", "slurp"), str(exc))

    def apply_file(self, action, args):
        if action == "ansible.builtin.copy":
            path = args["dest"]
            with open(path, "w") as handle:
                handle.write(args["content"])
            os.chmod(path, int(str(args["mode"]), 8))
        elif args["state"] == "directory":
            os.makedirs(args["path"], mode=int(str(args["mode"]), 8))
            os.chmod(args["path"], int(str(args["mode"]), 8))
        elif args["state"] == "absent":
            os.remove(args["path"])
        else:
            raise Unmodelled("file state=%s" % args["state"])
        return {"changed": True}

    def run_module(self, task, name, action, args, extra):
        module_args = self.render(args, extra)
        check = self.check_mode or bool(task.get("check_mode")) or "async" in task
        before = self.world.snapshot()
        try:
            _invoke(module_named(action.split(".")[-1]), module_args, check_mode=check)
        except AnsibleFailJson as exc:
            raise Rejected(name, exc.args[0]["msg"])
        except AnsibleExitJson as exc:
            result = exc.args[0]
            if self.world.snapshot() != before or result.get("changed") and not check:
                self.changes.append(name)
            if "async" in task:
                # The async launch was validated (in check mode here); what follows waits on the job.
                raise Unmodelled(name)
            return result
        pytest.fail("%s returned without exit_json" % action)


class Unmodelled(Exception):
    """The walk reached a task it does not model; the input got that far unrefused."""


def role_base(world, role):
    """Valid role parameters pointing every file the role writes into the fake tree."""
    return {
        "client_tuning": {"client_tuning_mounts": [{"src": "10.0.0.1:/srv/nfs", "path": world.mount_point}],
                          "client_tuning_fstab": world.path("etc/fstab"),
                          "client_tuning_state_file": world.path("var/lib/ckptio/client_tuning-mounts.json"),
                          "client_tuning_modprobe_conf": world.path("etc/modprobe.d/ckptio-nfs.conf"),
                          "client_tuning_modules_load_conf": world.path("etc/modules-load.d/ckptio-nfs.conf")},
        "server_tuning": {"server_tuning_conf_file": world.path("etc/nfs.conf.d/ckptio-nfsd.conf"),
                          "server_tuning_exports_file": world.path("etc/exports"),
                          "server_tuning_exports_dir": world.path("etc/exports.d")},
        "canary_validation": {"canary_validation_path": world.mount_point, "canary_validation_mount_point": world.mount_point,
                              "canary_validation_reports_dir": world.path("reports"), "canary_validation_ranks": 2,
                              "canary_validation_bytes_per_rank": 8192, "canary_validation_block_size": 4096},
        "checkpoint_capture": {"checkpoint_capture_mount_point": world.mount_point, "checkpoint_capture_seconds": 30,
                               "checkpoint_capture_reports_dir": world.path("reports")},
    }[role]


# ---------------------------------------------------------------------------------------------
# The table
# ---------------------------------------------------------------------------------------------
# Values that could add an option, split a line or mean something to a shell.
INJECTIONS = (("comma", "128,256"), ("space", "128 256"), ("newline", "128\n256"), ("equals", "x=128"),
              ("semicolon", "128;reboot"), ("subshell", "$(reboot)"), ("backtick", "`reboot`"), ("pipe", "128|reboot"))
WORDS = (("comma", "sys,rw"), ("space", "sys krb5"), ("newline", "sys\nrw"), ("equals", "sys=rw"),
         ("semicolon", "sys;reboot"), ("subshell", "$(reboot)"), ("backtick", "`reboot`"), ("pipe", "sys|reboot"))

ROWS = []


def row(entry, option, case, value, names=None, marks=()):
    """entry: module name or (role, entry point); value: dict merged into the base args."""
    label = entry if isinstance(entry, str) else "%s.%s" % entry
    names = (option,) if names is None else (option, names)
    ROWS.append(pytest.param(entry, value, names, id="%s-%s-%s" % (label, option, case), marks=marks))


def int_rows(entry, option, low, high, wrap=None):
    """Out of range on both sides, wrong type, a bool, and every injection string."""
    def value(item):
        return wrap(item) if wrap else {option: item}
    for case, item in (("below", low), ("above", high), ("type", "many"), ("bool", True)) + INJECTIONS:
        row(entry, option, case, value(item))


def path_rows(entry, option, good_dir, name="ckptio.conf"):
    """Relative, with spaces, outside the allowed directory, and with shell characters in the name.

    `{dir}` is the allowed directory in the fake tree, `{root}` the tree itself.
    """
    for case, item in (("relative", "%s/%s" % (good_dir, name)), ("dotdot", "../" + name),
                       ("space", "{dir}/my " + name), ("outside", "{root}/outside/" + name),
                       ("semicolon", "{dir}/a;reboot.conf"), ("subshell", "{dir}/$(reboot).conf"),
                       ("backtick", "{dir}/`reboot`.conf"), ("newline", "{dir}/a\nb.conf")):
        row(entry, option, case, Deferred(lambda w, i=item: {option: i.replace("{dir}", w.path(good_dir)).replace("{root}", w.root)}))


def choice_rows(entry, option, good):
    for case, item in (("unknown", "bogus"), ("semicolon", good + ";reboot"), ("space", good + " x"), ("type", ["a"])):
        row(entry, option, case, {option: item})


def bool_rows(entry, option):
    row(entry, option, "type", {option: "maybe"})


def unknown_row(entry, option):
    row(entry, option, "unknown-option", {option: 1})


class Deferred:
    """A value that needs the fake tree's paths; resolved by the test."""

    def __init__(self, build):
        self.build = build


# -- sunrpc_slot_table ------------------------------------------------------------------------
for _option in ("tcp_slot_table_entries", "tcp_max_slot_table_entries", "udp_slot_table_entries"):
    int_rows("sunrpc_slot_table", _option, 1, 65537)
int_rows("sunrpc_slot_table", "nfs_max_session_slots", 0, 1025)
path_rows("sunrpc_slot_table", "modprobe_conf", "etc/modprobe.d")
path_rows("sunrpc_slot_table", "modules_load_conf", "etc/modules-load.d")
choice_rows("sunrpc_slot_table", "state", "present")
for _option in ("apply_live", "persist", "backup", "force"):
    bool_rows("sunrpc_slot_table", _option)
unknown_row("sunrpc_slot_table", "tcp_slot_table_entrys")
row("sunrpc_slot_table", "tcp_slot_table_entries", "none-given", {"tcp_max_slot_table_entries": None})

# -- nfsd_threads -----------------------------------------------------------------------------
int_rows("nfsd_threads", "threads", 0, 8193)
row("nfsd_threads", "threads", "negative", {"threads": -1})
row("nfsd_threads", "threads", "missing", {"threads": None})
int_rows("nfsd_threads", "min_threads", 0, 65)
int_rows("nfsd_threads", "max_connections", -1, 4294967296)
# The fake kernel (6.1) has no /proc/fs/nfsd/min_threads: a valid number is refused too.
row("nfsd_threads", "min_threads", "no-kernel-support", {"min_threads": 4})
path_rows("nfsd_threads", "conf_file", "etc/nfs.conf.d")
row("nfsd_threads", "conf_file", "hidden", Deferred(lambda w: {"conf_file": w.path("etc/nfs.conf.d/.ckptio.conf")}))
row("nfsd_threads", "conf_file", "not-conf", Deferred(lambda w: {"conf_file": w.path("etc/nfs.conf.d/ckptio.txt")}))
choice_rows("nfsd_threads", "state", "present")
for _option in ("apply_live", "persist", "backup", "persist_command_line"):
    bool_rows("nfsd_threads", _option)
unknown_row("nfsd_threads", "thread")


# -- nfs_mount --------------------------------------------------------------------------------
def _opts(**values):
    return {"opts": dict({"vers": "4.1"}, **values)}


int_rows("nfs_mount", "opts.nconnect", 0, 17, wrap=lambda item: _opts(nconnect=item))
for _size in ("wsize", "rsize"):
    for _case, _value in (("small", 1000), ("big", 2097152), ("unaligned", 1048577), ("zero", 0), ("type", "max"),
                          ("bool", True), ("comma", "1048576,rw")):
        row("nfs_mount", "opts.%s" % _size, _case, _opts(**{_size: _value}))
for _case, _value in (("five", "5"), ("4.3", "4.3"), ("float", 4.3), ("bool", True), ("semicolon", "4.1;reboot")):
    row("nfs_mount", "opts.vers", _case, {"opts": {"vers": _value}})
row("nfs_mount", "opts.vers", "v3-on-nfs4", {"opts": {"vers": 3}, "fstype": "nfs4"})
for _case, _value in WORDS:
    row("nfs_mount", "opts.sec", _case, _opts(sec=_value))
    row("nfs_mount", "opts.comment", _case, _opts(comment=_value))
row("nfs_mount", "opts.proto", "unknown", _opts(proto="sctp"))
row("nfs_mount", "opts.hard", "type", _opts(hard="yes"))
row("nfs_mount", "opts.timeo", "zero", _opts(timeo=0))
row("nfs_mount", "opts.retrans", "negative", _opts(retrans=-1))
for _case, _name in (("unknown", "wsise"), ("upper", "NConnect"), ("comma", "hard,rw"), ("space", "hard rw"),
                     ("equals", "nconnect=16"), ("semicolon", "x;reboot"), ("subshell", "$(reboot)"), ("newline", "hard\nrw")):
    row("nfs_mount", "opts.%s" % _name, "name-" + _case, {"opts": {_name: True}})
row("nfs_mount", "opts", "type", {"opts": ["nconnect=4"]})
row("nfs_mount", "opts.nfsvers", "twice", {"opts": {"vers": "4.1", "nfsvers": "4.2"}}, names="opts.nfsvers")
for _case, _value in (("no-colon", "nfs1"), ("no-colon-path", "/srv/nfs"), ("relative-export", "nfs1:srv/nfs"),
                      ("empty-server", ":/srv/nfs"), ("semicolon", "nfs1;reboot:/srv/nfs"), ("subshell", "$(reboot):/srv/nfs"),
                      ("backtick", "`reboot`:/srv/nfs"), ("pipe", "nfs1|reboot:/srv/nfs"), ("space", "nfs 1:/srv/nfs"),
                      ("comma", "nfs1,rw:/srv/nfs"), ("equals", "a=b:/srv/nfs"), ("newline", "nfs1:/srv/nfs\nnfs2:/x"),
                      ("tab", "nfs1:/srv\tnfs"), ("dash", "-oremount:/srv/nfs"), ("type", ["nfs1:/srv/nfs"])):
    row("nfs_mount", "src", _case, {"src": _value})
row("nfs_mount", "src", "missing", {"src": None})
for _case, _value in (("relative", "mnt/nfs"), ("dot", "./nfs"), ("dotdot", "/mnt/../etc"),
                      ("missing", Deferred(lambda w: {"path": w.path("mnt/absent")})),
                      ("missing-space", Deferred(lambda w: {"path": w.path("mnt/no such dir")})),
                      ("missing-semicolon", Deferred(lambda w: {"path": w.path("mnt/a;reboot")})),
                      ("missing-newline", Deferred(lambda w: {"path": w.path("mnt/a\nb")})),
                      ("not-nfs", "/")):
    row("nfs_mount", "path", _case, _value if isinstance(_value, Deferred) else {"path": _value})
for _case, _value in (("relative-dir", "etc/fstab"), ("bare-name", "fstab"), ("missing-dir", "/nonexistent/dir/fstab"),
                      ("missing-dir-space", "/no such dir/fstab")):
    row("nfs_mount", "fstab", _case, {"fstab": _value})
choice_rows("nfs_mount", "fstype", "nfs4")
choice_rows("nfs_mount", "state", "mounted")
choice_rows("nfs_mount", "apply_policy", "when_idle")
for _option in ("dump", "passno"):
    for _case, _value in (("below", -1), ("above", 10), ("type", "x")):
        row("nfs_mount", _option, _case, {_option: _value})
bool_rows("nfs_mount", "backup")
bool_rows("nfs_mount", "replace_foreign")
unknown_row("nfs_mount", "options")

# -- read-only modules ------------------------------------------------------------------------
for _option in ("dstate_samples", "dstate_interval"):
    for _case, _value in (("negative", -1), ("type", "soon"), ("semicolon", "1;reboot")):
        row("nfs_client_stats", _option, _case, {_option: _value})
row("nfs_client_stats", "mount_points", "type", {"mount_points": {"a": 1}})
row("nfs_client_stats", "mount_points", "relative", {"mount_points": ["mnt/nfs"]})
row("nfs_client_stats", "dstate_stop_path", "relative", {"dstate_stop_path": "dev/shm/ckpt-done"})
unknown_row("nfs_client_stats", "mountpoints")
unknown_row("nfsd_stats", "threads")
row("nfsd_stats", "wait_until", "type", {"wait_until": "soon"})
row("nfsd_stats", "wait_until", "too-far", {"wait_until": 1e12})

for _option in ("bundle", "output_dir"):
    for _case, _value in (("relative-missing", "reports/none"), ("missing-space", "/no such/bundle"),
                          ("missing-semicolon", "/tmp/x;reboot")):
        row("diagnose_bundle", _option, _case, {_option: _value})
row("diagnose_bundle", "bundle", "not-a-bundle", Deferred(lambda w: {"bundle": w.path("etc")}))
row("diagnose_bundle", "fallback_output_dir", "a-file", Deferred(lambda w: {"fallback_output_dir": w.path("etc/fstab")}))
bool_rows("diagnose_bundle", "write")
unknown_row("diagnose_bundle", "bundles")

for _case, _value in (("relative-missing", "reports/none"), ("missing-space", "/no such/saved"),
                      ("missing-semicolon", "/tmp/x;reboot"), ("a-file", Deferred(lambda w: {"src": w.path("etc/fstab")}))):
    row("saved_stats_bundle", "src", _case, _value if isinstance(_value, Deferred) else {"src": _value})
row("saved_stats_bundle", "dest", "a-file", Deferred(lambda w: {"dest": w.path("etc/fstab")}))
row("saved_stats_bundle", "dest", "foreign-dir", Deferred(lambda w: {"dest": w.path("etc")}))
row("saved_stats_bundle", "dest", "other-bundle", Deferred(lambda w: {"dest": w.path("reports/bundle")}))
row("saved_stats_bundle", "dest", "is-src", Deferred(lambda w: {"dest": w.path("reports/saved")}))
for _option in ("checkpoint_bytes", "window_seconds", "server_link_gbps", "client_link_gbps"):
    for _case, _value in (("zero", 0), ("negative", -1), ("type", "much"), ("semicolon", "1;reboot")):
        row("saved_stats_bundle", _option, _case, {_option: _value})
for _option in ("client", "server"):
    for _case, _value in (("slash", "a/b"), ("dotdot", ".."), ("dot", "."), ("empty", "")):
        row("saved_stats_bundle", _option, _case, {_option: _value})
for _case, _value in (("relative", "mnt/nfs"), ("not-in-files", "/mnt/other")):
    row("saved_stats_bundle", "mount_point", _case, {"mount_point": _value})
bool_rows("saved_stats_bundle", "skip_unusable")
bool_rows("saved_stats_bundle", "partial")
unknown_row("saved_stats_bundle", "source")

for _option in ("bundle", "compare_to"):
    for _case, _value in (("relative-missing", "reports/none"), ("missing-space", "/no such/bundle"),
                          ("missing-semicolon", "/tmp/x;reboot")):
        row("checkpoint_report", _option, _case, {_option: _value})
row("checkpoint_report", "bundle", "not-a-bundle", Deferred(lambda w: {"bundle": w.path("etc")}))
for _option in ("output_dir", "fallback_output_dir"):
    row("checkpoint_report", _option, "a-file", Deferred(lambda w, _option=_option: {_option: w.path("etc/fstab")}))
row("checkpoint_report", "output_dir", "missing-space", {"output_dir": "/no such/out"})
bool_rows("checkpoint_report", "png")
unknown_row("checkpoint_report", "baseline")

# -- checkpoint_canary ------------------------------------------------------------------------
for _option, _low in (("ranks", 0), ("bytes_per_rank", 0), ("block_size", 0), ("files_per_rank", 0)):
    for _case, _value in (("below", _low), ("type", "many"), ("semicolon", "1;reboot")):
        row("checkpoint_canary", _option, _case, {_option: _value})
row("checkpoint_canary", "ranks", "above", {"ranks": 100000})
row("checkpoint_canary", "block_size", "direct-unaligned", {"direct": True, "block_size": 1000, "bytes_per_rank": 8000})
row("checkpoint_canary", "files_per_rank", "shared-file", {"files_per_rank": 2, "bytes_per_rank": 16384})
row("checkpoint_canary", "bytes_per_rank", "smaller-than-block", {"bytes_per_rank": 100})
row("checkpoint_canary", "block_size", "below-stamp", {"block_size": 4, "bytes_per_rank": 64})
for _option in ("timeout", "kill_grace", "start_at", "barrier_timeout"):
    row("checkpoint_canary", _option, "type", {_option: "soon"})
row("checkpoint_canary", "timeout", "zero", {"timeout": 0})
row("checkpoint_canary", "barrier_timeout", "zero", {"barrier_timeout": 0})
row("checkpoint_canary", "barrier_dir", "relative", {"barrier_dir": "run/barrier"})
row("checkpoint_canary", "kill_grace", "negative", {"kill_grace": -1})
choice_rows("checkpoint_canary", "layout", "shared_file")
for _option in ("fsync", "direct", "allow_local", "keep", "restore", "rpc_mount_debugfs"):
    bool_rows("checkpoint_canary", _option)
choice_rows("checkpoint_canary", "restore_cache", "fadvise")
row("checkpoint_canary", "restore", "without-fsync", {"restore": True, "fsync": False})
row("checkpoint_canary", "restore_cache", "direct-unaligned",
    {"restore": True, "restore_cache": "direct", "block_size": 1000, "bytes_per_rank": 8000})
row("checkpoint_canary", "restore_cache", "direct-uneven", {"restore": True, "restore_cache": "direct", "bytes_per_rank": 8192 + 100})
for _case, _value in (("relative", "mnt/nfs"), ("missing", Deferred(lambda w: {"path": w.path("mnt/absent")})),
                      ("missing-space", Deferred(lambda w: {"path": w.path("mnt/no such dir")})),
                      ("symlink", Deferred(lambda w: {"path": w.path("mnt/link")})),
                      ("not-nfs", Deferred(lambda w: {"path": w.path("local")}))):
    row("checkpoint_canary", "path", _case, _value if isinstance(_value, Deferred) else {"path": _value})
# Issue 28: shapes, paths, the burst buffer.
choice_rows("checkpoint_canary", "shape", "torch_dcp")
row("checkpoint_canary", "shape_scale", "zero", {"shape": "mlperf_llama3_8b", "shape_scale": 0})
row("checkpoint_canary", "shape_scale", "too-small", {"shape": "mlperf_llama3_8b", "shape_scale": 1e-12})
row("checkpoint_canary", "thread_count", "below", {"shape": "torch_dcp", "thread_count": 0})
row("checkpoint_canary", "thread_count", "not-torch-dcp", {"thread_count": 2})
row("checkpoint_canary", "num_checkpoints", "below", {"num_checkpoints": 0})
row("checkpoint_canary", "num_checkpoints", "not-mlperf", {"num_checkpoints": 2})
row("checkpoint_canary", "first_rank", "negative", {"first_rank": -1})
for _option in ("shape_scale", "thread_count", "num_checkpoints", "first_rank", "drain_rate_limit", "checkpoint_interval_seconds"):
    row("checkpoint_canary", _option, "type", {_option: "many"})
row("checkpoint_canary", "paths", "missing", Deferred(lambda w: {"paths": [w.path("mnt/absent")]}))
row("checkpoint_canary", "paths", "not-nfs", Deferred(lambda w: {"paths": [w.path("local")]}))
row("checkpoint_canary", "paths", "twice", Deferred(lambda w: {"paths": [w.mount_point, w.mount_point]}))
row("checkpoint_canary", "local_path", "missing", Deferred(lambda w: {"local_path": w.path("mnt/absent")}))
row("checkpoint_canary", "local_path", "relative", {"local_path": "local/nvme"})
row("checkpoint_canary", "local_path", "on-nfs", Deferred(lambda w: {"local_path": w.mount_point}))
row("checkpoint_canary", "drain_rate_limit", "negative", {"drain_rate_limit": -1})
row("checkpoint_canary", "drain_rate_limit", "without-local-path", {"drain_rate_limit": 1000})
row("checkpoint_canary", "checkpoint_interval_seconds", "negative", {"checkpoint_interval_seconds": -1})
row("checkpoint_canary", "checkpoint_interval_seconds", "shorter-than-drain",
    Deferred(lambda w: {"local_path": w.path("local"), "drain_rate_limit": 1, "checkpoint_interval_seconds": 1}))
row("checkpoint_canary", "job_id", "bad-chars", {"shape": "file_per_rank", "job_id": "../x"})
row("checkpoint_canary", "job_id", "coordinator-without-job_ranks", {"shape": "torch_dcp", "job_id": "j1"})
row("checkpoint_canary", "job_ranks", "not-a-multiple", {"shape": "file_per_rank", "ranks": 2, "job_id": "j1", "job_ranks": 3})
row("checkpoint_canary", "recovery_rank_shift", "negative", {"recovery_rank_shift": -1})
row("checkpoint_canary", "recovery_rank_shift", "without-restore", {"recovery_rank_shift": 1})
for _option in ("job_ranks", "recovery_rank_shift"):
    row("checkpoint_canary", _option, "type", {_option: "many"})
choice_rows("checkpoint_canary", "rpc_sampling", "queues")
unknown_row("checkpoint_canary", "rank")

# -- tcp_probe --------------------------------------------------------------------------------
# Every value ends up as one argv word of iperf3 or timeout, never in a shell: the rows prove
# it is refused before anything starts, and a server cannot pose as an option.
choice_rows("tcp_probe", "mode", "send")


def _listen(**values):
    return dict({"state": "started", "addresses": ["127.0.0.1"], "ports": [5201]}, **values)


for _case, _value in (("type", {"a": 1}), ("hostname", ["nfs1.example"]), ("semicolon", ["10.0.0.1;reboot"]),
                      ("space", ["10.0.0.1 10.0.0.2"]), ("none-local", ["192.0.2.1"]), ("empty", [])):
    row("tcp_probe_listener", "addresses", _case, _listen(addresses=_value))
for _case, _value in (("duplicate", [5201, 5201]), ("zero", [0]), ("above", [65536]), ("type", ["many"]),
                      ("semicolon", ["5201;reboot"]), ("empty", [])):
    row("tcp_probe_listener", "ports", _case, _listen(ports=_value))
for _case, _value in (("zero", 0), ("negative", -1), ("type", "soon"), ("semicolon", "1;reboot")):
    row("tcp_probe", "seconds", _case, {"seconds": _value})
    row("tcp_probe_listener", "seconds", _case, {"seconds": _value})
row("tcp_probe_listener", "state_dir", "relative", {"state_dir": "run/ckptio-tcp-probe"})
choice_rows("tcp_probe_listener", "state", "started")
unknown_row("tcp_probe_listener", "mode")
row("tcp_probe", "barrier_dir", "relative", {"barrier_dir": "run/barrier"})
for _case, _value in (("zero", 0), ("negative", -1), ("type", "soon")):
    row("tcp_probe", "barrier_timeout", _case, {"barrier_timeout": _value})
for _case, _value in (("dash", "-oremount"), ("long-option", "--logfile=/etc/passwd"), ("semicolon", "nfs1;reboot"),
                      ("space", "nfs 1"), ("newline", "nfs1\nnfs2"), ("subshell", "$(reboot)"), ("backtick", "`reboot`")):
    row("tcp_probe", "server", _case, {"server": _value})
row("tcp_probe", "server", "missing", {"mount_point": None}, names="mount_point")
for _case, _value in (("relative", "mnt/nfs"), ("missing", Deferred(lambda w: {"mount_point": w.path("mnt/absent")})),
                      ("not-nfs", Deferred(lambda w: {"mount_point": w.path("local")}))):
    row("tcp_probe", "mount_point", _case, _value if isinstance(_value, Deferred) else {"mount_point": _value})
for _case, _value in (("zero", 0), ("above", 65536), ("type", "http"), ("semicolon", "5201;reboot")):
    row("tcp_probe", "port", _case, {"port": _value})
for _case, _value in (("negative", -1), ("above", 129), ("type", "many")):
    row("tcp_probe", "streams", _case, {"streams": _value})
row("tcp_probe", "start_at", "type", {"start_at": "soon"})
unknown_row("tcp_probe", "address")

# -- roles ------------------------------------------------------------------------------------
CLIENT = ("client_tuning", "main")
SERVER = ("server_tuning", "main")

choice_rows(CLIENT, "client_tuning_profile", "checkpoint")
for _option in ("client_tuning_mount_state", "client_tuning_apply_policy"):
    choice_rows(CLIENT, _option, "mounted" if "state" in _option else "when_idle")
for _option in ("client_tuning_apply_live", "client_tuning_persist", "client_tuning_backup"):
    bool_rows(CLIENT, _option)
row(CLIENT, "client_tuning_sunrpc", "type", {"client_tuning_sunrpc": "many"})
row(CLIENT, "client_tuning_sunrpc", "unknown-key", {"client_tuning_sunrpc": {"tcp_slots": 128}}, names="tcp_slots")
for _key, _low, _high in (("tcp_slot_table_entries", 1, 65537), ("tcp_max_slot_table_entries", 1, 65537),
                          ("udp_slot_table_entries", 1, 65537), ("nfs_max_session_slots", 0, 1025)):
    for _case, _value in (("below", _low), ("above", _high), ("semicolon", "128;reboot"), ("bool", True)):
        row(CLIENT, "client_tuning_sunrpc.%s" % _key, _case, {"client_tuning_sunrpc": {_key: _value}}, names=_key)
for _case, _value in (("nconnect-0", {"nconnect": 0}), ("nconnect-17", {"nconnect": 17}), ("wsize-1000", {"wsize": 1000}),
                      ("wsize-2MiB", {"wsize": 2097152}), ("sec-comma", {"sec": "sys,rw"}), ("sec-space", {"sec": "sys krb5"}),
                      ("sec-subshell", {"sec": "$(reboot)"}), ("unknown", {"wsise": 1048576})):
    row(CLIENT, "client_tuning_mount_options", _case, {"client_tuning_mount_options": _value},
        names="opts.%s" % list(_value)[0])
row(CLIENT, "client_tuning_mount_options", "type", {"client_tuning_mount_options": ["nconnect=4"]})
row(CLIENT, "client_tuning_mounts", "type", {"client_tuning_mounts": "nfs1:/srv/nfs"})
row(CLIENT, "client_tuning_mounts", "missing-src", Deferred(lambda w: {"client_tuning_mounts": [{"path": w.mount_point}]}),
    names="src")
row(CLIENT, "client_tuning_mounts", "unknown-key",
    Deferred(lambda w: {"client_tuning_mounts": [{"src": "10.0.0.1:/srv/nfs", "path": w.mount_point, "options": {}}]}),
    names="options")
row(CLIENT, "client_tuning_mounts", "fstype",
    Deferred(lambda w: {"client_tuning_mounts": [{"src": "10.0.0.1:/srv/nfs", "path": w.mount_point, "fstype": "ext4"}]}),
    names="fstype")
for _case, _src in (("no-colon", "nfs1"), ("subshell", "$(reboot):/srv/nfs"), ("newline", "nfs1:/srv/nfs\nx")):
    row(CLIENT, "client_tuning_mounts.src", _case,
        Deferred(lambda w, s=_src: {"client_tuning_mounts": [{"src": s, "path": w.mount_point}]}), names="src")
for _case, _path in (("relative", "mnt/nfs"), ("missing-space", "mnt/no such dir")):
    row(CLIENT, "client_tuning_mounts.path", _case,
        Deferred(lambda w, p=_path: {"client_tuning_mounts": [
            {"src": "10.0.0.1:/srv/nfs", "path": p if p == "mnt/nfs" else w.path(p)}]}),
        names="path")
row(CLIENT, "client_tuning_fstab", "missing-dir", {"client_tuning_fstab": "/nonexistent/dir/fstab"}, names="fstab")
for _option, _dir in (("client_tuning_modprobe_conf", "etc/modprobe.d"), ("client_tuning_modules_load_conf", "etc/modules-load.d")):
    _module_option = _option[len("client_tuning_"):]
    for _case, _value in (("relative", "%s/ckptio.conf" % _dir), ("space", "my ckptio.conf"), ("subshell", "$(reboot).conf")):
        row(CLIENT, _option, _case,
            Deferred(lambda w, o=_option, d=_dir, v=_value: {o: v if v.startswith("etc") else w.path(d, v)}), names=_module_option)
row(CLIENT, "client_tuning_drain_command", "string", {"client_tuning_drain_command": "systemctl stop slurmd; reboot"})
row(CLIENT, "client_tuning_drain_tasks", "missing-file", {"client_tuning_drain_tasks": "no such tasks.yml"})
unknown_row(CLIENT, "client_tuning_sunrcp")

choice_rows(SERVER, "server_tuning_profile", "checkpoint")
for _option in ("server_tuning_apply_live", "server_tuning_persist", "server_tuning_backup"):
    bool_rows(SERVER, _option)
for _case, _value in (("zero", 0), ("negative", -1), ("above", 8193), ("type", "many"), ("semicolon", "64;reboot")):
    row(SERVER, "server_tuning_threads", _case, {"server_tuning_threads": _value}, names="threads")
row(SERVER, "server_tuning_threads", "bool", {"server_tuning_threads": True}, names="threads")
row(SERVER, "server_tuning_min_threads", "zero", {"server_tuning_min_threads": 0}, names="min_threads")
for _case, _value in (("relative", "etc/nfs.conf.d/ckptio.conf"), ("space", "my ckptio.conf"),
                      ("subshell", "$(reboot).conf"), ("outside", "/tmp/ckptio.conf")):
    row(SERVER, "server_tuning_conf_file", _case,
        Deferred(lambda w, v=_value: {"server_tuning_conf_file": v if "/" in v else w.path("etc/nfs.conf.d", v)}),
        names="conf_file")
for _option in ("server_tuning_exports_file", "server_tuning_exports_dir"):
    row(SERVER, _option, "relative", {_option: "etc/exports"})
for _option in ("server_tuning_max_connections", "server_tuning_extra_connections", "server_tuning_connection_margin_percent"):
    for _case, _value in (("negative", -1), ("bool", True), ("type", "many"), ("semicolon", "5000;reboot"), ("float", 1.5)):
        row(SERVER, _option, _case, {_option: _value})
row(SERVER, "server_tuning_clients_group", "type", {"server_tuning_clients_group": ["nfs_clients"]})
row(SERVER, "server_tuning_server_names", "type", {"server_tuning_server_names": {"nfs01": True}})
unknown_row(SERVER, "server_tuning_thread")

PREPARE = ("canary_validation", "prepare")
CLIENTS = ("canary_validation", "clients")
for _case, _value in (("semicolon", "run;reboot"), ("space", "run one"), ("slash", "../run"), ("newline", "run\nx"),
                      ("subshell", "$(reboot)")):
    row(PREPARE, "canary_validation_label", _case, {"canary_validation_label": _value})
row(PREPARE, "canary_validation_compare_to", "missing", {"canary_validation_compare_to": "/no such/bundle"})
row(PREPARE, "canary_validation_ranks", "zero", {"canary_validation_ranks": 0})
row(PREPARE, "canary_validation_ranks", "type", {"canary_validation_ranks": "many"})
# 0 = no target given (the diagnosis says so); below 0 is refused.
row(PREPARE, "canary_validation_target_window_seconds", "negative", {"canary_validation_target_window_seconds": -1})
row(PREPARE, "canary_validation_target_checkpoint_bytes", "negative", {"canary_validation_target_checkpoint_bytes": -1})
row(PREPARE, "canary_validation_mount_point", "relative", {"canary_validation_mount_point": "mnt/nfs"})
# No mount at all (ckptio_checkpoint_mount unset): refused on the client naming the inventory variable.
row(CLIENTS, "canary_validation_mount_point", "empty", {"canary_validation_mount_point": ""}, names="ckptio_checkpoint_mount")
choice_rows(PREPARE, "canary_validation_layout", "shared_file")
choice_rows(PREPARE, "canary_validation_restore_cache", "fadvise")
row(PREPARE, "canary_validation_restore_window_seconds", "negative", {"canary_validation_restore_window_seconds": -1})
row(PREPARE, "canary_validation_restore", "without-fsync", {"canary_validation_restore": True, "canary_validation_fsync": False})
unknown_row(PREPARE, "canary_validation_rank")
row(("canary_validation", "server_stats"), "canary_validation_phase", "unknown", {"canary_validation_phase": "during"})
for _option, _module_option, _value in (("canary_validation_bytes_per_rank", "bytes_per_rank", 0),
                                        ("canary_validation_block_size", "block_size", 0),
                                        ("canary_validation_files_per_rank", "files_per_rank", 0),
                                        ("canary_validation_timeout", "timeout", 0),
                                        ("canary_validation_kill_grace", "kill_grace", -1)):
    row(CLIENTS, _option, "bad", {_option: _value}, names=_module_option)
row(CLIENTS, "canary_validation_restore_cache", "direct-unaligned",
    {"canary_validation_restore": True, "canary_validation_restore_cache": "direct", "canary_validation_block_size": 1000,
     "canary_validation_bytes_per_rank": 8000}, names="block_size")
for _case, _value in (("relative", "mnt/nfs"), ("missing-space", Deferred(lambda w: w.path("mnt/no such dir"))),
                      ("symlink", Deferred(lambda w: w.path("mnt/link"))), ("not-nfs", Deferred(lambda w: w.path("local")))):
    row(CLIENTS, "canary_validation_path", _case,
        Deferred(lambda w, v=_value: {"canary_validation_path": v.build(w) if isinstance(v, Deferred) else v}), names="path")

# -- checkpoint_capture: every window option is refused in prepare, before any host is read ----
CAPTURE_PREPARE = ("checkpoint_capture", "prepare")
for _case, _value in (("semicolon", "cap;reboot"), ("space", "cap one"), ("slash", "../cap"), ("subshell", "$(reboot)")):
    row(CAPTURE_PREPARE, "checkpoint_capture_label", _case, {"checkpoint_capture_label": _value})
row(CAPTURE_PREPARE, "checkpoint_capture_compare_to", "missing", {"checkpoint_capture_compare_to": "/no such/bundle"})
row(CAPTURE_PREPARE, "checkpoint_capture_mount_point", "relative", {"checkpoint_capture_mount_point": "mnt/nfs"})
row(CAPTURE_PREPARE, "checkpoint_capture_target_window_seconds", "negative", {"checkpoint_capture_target_window_seconds": -1})
row(CAPTURE_PREPARE, "checkpoint_capture_checkpoint_bytes", "negative", {"checkpoint_capture_checkpoint_bytes": -1})
for _case, _value in (("negative", -5), ("type", "soon"), ("over-max", 7200)):
    row(CAPTURE_PREPARE, "checkpoint_capture_seconds", _case, {"checkpoint_capture_seconds": _value},
        names="checkpoint_capture_max_seconds" if _case == "over-max" else None)
row(CAPTURE_PREPARE, "checkpoint_capture_start", "past",
    {"checkpoint_capture_seconds": 0, "checkpoint_capture_start": "1000000000", "checkpoint_capture_end": "1000000100"})
row(CAPTURE_PREPARE, "checkpoint_capture_start", "no-zone",
    {"checkpoint_capture_seconds": 0, "checkpoint_capture_start": "2099-01-01T00:00:00", "checkpoint_capture_end": "2099-01-01T00:01:00Z"})
row(CAPTURE_PREPARE, "checkpoint_capture_start", "too-far",
    {"checkpoint_capture_seconds": 0, "checkpoint_capture_start": "2099-01-01T00:00:00Z", "checkpoint_capture_end": "2099-01-01T00:01:00Z"},
    names="checkpoint_capture_max_lead_seconds")
row(CAPTURE_PREPARE, "checkpoint_capture_end", "before-start",
    Deferred(lambda w: {"checkpoint_capture_seconds": 0, "checkpoint_capture_start": str(time.time() + 120),
                        "checkpoint_capture_end": str(time.time() + 60)}))
row(CAPTURE_PREPARE, "checkpoint_capture_end", "alone", {"checkpoint_capture_seconds": 0, "checkpoint_capture_end": "2099-01-01T00:01:00Z"},
    names="checkpoint_capture_start")
row(CAPTURE_PREPARE, "checkpoint_capture_marker", "two-forms", {"checkpoint_capture_marker": "/dev/shm/ckpt-done"})
for _case, _value in (("relative", "dev/shm/done"), ("newline", "/dev/shm/a\nb")):
    row(CAPTURE_PREPARE, "checkpoint_capture_marker", _case, {"checkpoint_capture_seconds": 0, "checkpoint_capture_marker": _value})
row(CAPTURE_PREPARE, "checkpoint_capture_max_seconds", "zero", {"checkpoint_capture_max_seconds": 0})
row(CAPTURE_PREPARE, "checkpoint_capture_max_lead_seconds", "zero", {"checkpoint_capture_max_lead_seconds": 0})
row(CAPTURE_PREPARE, "checkpoint_capture_dstate_interval", "too-small", {"checkpoint_capture_dstate_interval": 0.01})
unknown_row(CAPTURE_PREPARE, "checkpoint_capture_second")
row(("checkpoint_capture", "server_stats"), "checkpoint_capture_phase", "unknown", {"checkpoint_capture_phase": "during"})


def resolve(value, world):
    return value.build(world) if isinstance(value, Deferred) else value


def names_option(message, option):
    """The option's name appears as a word of its own (not as part of another name)."""
    return re.search(r"(?<![A-Za-z0-9_.])%s(?![A-Za-z0-9_])" % re.escape(option), message) is not None


@pytest.mark.parametrize("entry, bad, names", ROWS)
def test_bad_input_is_refused_naming_the_option_before_anything_changes(world, entry, bad, names):
    before = world.snapshot()
    bad = resolve(bad, world)
    if isinstance(entry, str):
        args = base_args(world, entry)
        args.update(bad)
        args = dict((key, value) for key, value in args.items() if value is not None)
        message = fail_module(module_named(entry), args)["msg"]
    else:
        role, point = entry
        params = role_base(world, role)
        params.update(bad)
        walk = RoleWalk(world, role, point, params)
        try:
            walk.run()
        except Rejected as exc:
            message = exc.msg
        except Unmodelled as exc:
            pytest.fail("%s accepted %r up to task %r (changed before: %s)" % (role, bad, str(exc), walk.changes))
        else:
            pytest.fail("%s accepted %r" % (role, bad))
        assert walk.changes == [], "refused only after %s changed something" % walk.changes
    assert any(names_option(message, name) for name in names), "message does not name %s: %s" % (" or ".join(names), message)
    assert world.snapshot() == before
    assert world.commands == []


@pytest.mark.parametrize("role, point", [CLIENT, SERVER, PREPARE, CLIENTS, CAPTURE_PREPARE])
def test_role_walk_accepts_the_valid_base_input(world, role, point):
    """Without this the role rows could pass because the walk fails on everything."""
    walk = RoleWalk(world, role, point, role_base(world, role), check_mode=True)
    try:
        walk.run()
    except Unmodelled:
        pass
    except Rejected as exc:
        pytest.fail("valid input refused: %s" % exc)
    assert world.commands == []


@pytest.mark.parametrize("entry", MODULES)
def test_every_module_has_rows_for_every_option(entry, monkeypatch):
    """A new option without a bad-input row fails here, so the table keeps covering everything."""
    spec = module_argument_spec(entry, monkeypatch)
    covered = set()
    for param in ROWS:
        if param.values[0] == entry:
            covered.add(param.values[2][0].split(".")[0])
    uncovered = sorted(set(spec) - covered - FREE_TEXT.get(entry, set()))
    assert uncovered == [], "%s options without a bad-input row: %s" % (entry, uncovered)
    assert any("unknown-option" in param.id for param in ROWS if param.values[0] == entry)


@pytest.mark.parametrize("role, point", [CLIENT, SERVER, PREPARE, CLIENTS, ("canary_validation", "server_stats"),
                                         CAPTURE_PREPARE, ("checkpoint_capture", "server_stats")])
def test_every_role_entry_point_is_in_the_table(role, point):
    assert any(param.values[0] == (role, point) for param in ROWS)
    assert any(param.values[0] == (role, point) and "unknown-option" in param.id for param in ROWS) or point in (
        "clients", "server_stats")


# Options that are free text by design: never parsed, never part of a command or a file name.
FREE_TEXT = {"checkpoint_report": {"label"}, "saved_stats_bundle": {"label"}}


class _Captured(Exception):
    """Stops main() right after it built its AnsibleModule."""


def module_argument_spec(entry, monkeypatch):
    """The argument_spec main() builds, captured at the AnsibleModule constructor."""
    captured = {}

    def capture(self, argument_spec, **kwargs):
        captured.update(argument_spec)
        raise _Captured()

    monkeypatch.setattr(basic.AnsibleModule, "__init__", capture)
    with pytest.raises(_Captured):
        module_named(entry).main()
    return captured
