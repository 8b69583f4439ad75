"""The readers added for the paste corpus (issue 44) on issue 45's hostile pastes and on hostile strings of their own
kind: each recognise and read runs in time linear in its input, under test_hostile_paste.LIMIT_SECONDS, and raises
nothing."""
from __future__ import annotations

import pytest

from ansible_collections.ckptio.nfs.plugins.module_utils.paste import (
    ganesha, io_errors, kernel_catalogue, mount_errors, nfsslower, readings, ss_sockets)
from ansible_collections.ckptio.nfs.tests.unit.plugins.module_utils.paste.test_hostile_paste import HOSTILE, LIMIT_SECONDS, timed

# Each about 1 MB, the size of test_hostile_paste's largest inputs (the whole path's cost is linear; a 4 MB text of valid
# lines takes read_file 3-5 s on the shared machine, mostly recognise.kind_of and kernel_log.recognise).
OWN = {
    "ss_one_line": "0 0 10.0.0.1:2049 " * 60000,
    "ss_lines": "ESTAB 4194304 0 10.0.0.1:2049 10.0.0.2:700\n" * 25000,
    "ss_info_lines": ("ESTAB 0 0 10.0.0.2:700 10.0.0.1:2049\n\t bytes_sent:9 bytes_retrans:1 rtt:1.0/0.5\n") * 12000,
    "errno_one_line": "[Errno 5] " * 60000,
    "errno_lines": "OSError: [Errno 14] Bad address\n: No space left on device\n" * 18000,
    "mount_one_line": "mount.nfs: " * 60000,
    "mount_lines": "mount.nfs: Connection timed out\n" * 30000,
    "ganesha_one_line": " :NFS4 :DEBUG :" * 60000,
    "ganesha_health": ("01/01/2024 00:00:00 : epoch 1 : h : ganesha.nfsd-1[dbus_heartbeat] nfs_health :DBUS :WARN :Health "
                       "status is unhealthy. enq new: 9, old: 1; deq new: 1, old: 1\n") * 6000,
    "ganesha_dbus": "org.ganesha.nfsd.exportstats.GetNFSv41IO\n" + "struct {\n" + "uint64 7\n" * 120000 + "}\n",
    "nfsslower_rows": "Tracing NFS operations\nTIME COMM PID T BYTES OFF_KB LAT(ms) FILENAME\n" + (
        "16:46:37 kworker/u8:5   1207   C 0       0        27449.05 testfile\n" * 15000),
    "nfsslower_csv": "ENDTIME_us,TASK,PID,TYPE,BYTES,OFFSET_b,LATENCY_us,FILE\n" + "1,dd,2,W,3,4,5,f\n" * 50000,
    "proc_stack": "[<0>] nfs_set_open_stateid_locked+0xfc/0x370 [nfsv4]\n" * 20000,
    "arm_frames": "INFO: task a:1 blocked for more than 120 seconds.\n" + "[<1>] (a) from [<2>] (b+0x1/0x2)\n" * 30000,
}
TEXTS = dict(HOSTILE, **OWN)
FUNCTIONS = dict(("%s.%s" % (module.__name__.rsplit(".", 1)[-1], name), getattr(module, name))
                 for module in (ganesha, io_errors, mount_errors, nfsslower, ss_sockets) for name in ("recognise", "read"))
FUNCTIONS["kernel_catalogue.find_stack_frames"] = kernel_catalogue.find_stack_frames
FUNCTIONS["readings.read_file"] = lambda text: readings.read_file("pasted.txt", text)


@pytest.mark.parametrize("text", sorted(TEXTS))
@pytest.mark.parametrize("function", sorted(FUNCTIONS))
def test_each_new_reader_is_linear_on_hostile_pastes(function, text):
    seconds = timed(FUNCTIONS[function], TEXTS[text])
    assert seconds < LIMIT_SECONDS, "%s on %s: %.2f s" % (function, text, seconds)
