#!/usr/bin/env bash
# What one Ansible task costs in a lab VM (TCG), and whether caching the payload's bytecode helps.
#
#   tests/bench/bench_guest_import.sh [SSH_PORT] [ROUNDS]     (a lab from `scripts/lab up`; 22302 is nfs2)
#
# Side by side in one run, ROUNDS times: `python3 -c pass`, then importing ansible.module_utils.basic
# from a zip named like Ansible's per-task payload (ansible-core's own module_utils from this venv),
# then the same import through a path hook that keeps each module's code object in a cache keyed on
# its source (a stand-in for a bytecode cache, which zipimport never writes). Prints seconds.
set -euo pipefail
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
PORT=${1:-22302}
ROUNDS=${2:-3}
# shellcheck disable=SC1091
source "$REPO/scripts/activate"
key=$(awk '/ansible_ssh_private_key_file/ {print $2}' "$REPO/inventories/lab/hosts.yml")
ssh_opts=(-i "$key" -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o LogLevel=ERROR)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
core=$(python -c 'import ansible, os; print(os.path.dirname(ansible.__file__))')
mkdir -p "$work/payload/ansible"
cp -r "$core/module_utils" "$work/payload/ansible/"
touch "$work/payload/ansible/__init__.py"
find "$work/payload" -name __pycache__ -prune -exec rm -rf {} +
(cd "$work/payload" && python -m zipfile -c ../bench_payload.zip ansible)
cat > "$work/code_cache.py" <<'EOF'
import hashlib, marshal, os, sys, zipimport
CACHE = "/var/tmp/ckptio-bench-code-cache"
class CachingZipImporter(zipimport.zipimporter):
    def exec_module(self, module):
        source = self.get_source(module.__spec__.name)
        if source is None:
            return super().exec_module(module)
        origin = module.__spec__.origin
        path = os.path.join(CACHE, hashlib.sha256((origin.rsplit(".zip", 1)[-1] + "\0" + source).encode()).hexdigest())
        try:
            with open(path, "rb") as handle:
                code = marshal.load(handle)
        except OSError:
            code = compile(source, origin, "exec", dont_inherit=True)
            os.makedirs(CACHE, mode=0o700, exist_ok=True)
            with open(path + ".tmp", "wb") as handle:
                marshal.dump(code, handle)
            os.replace(path + ".tmp", path)
        exec(code, module.__dict__)
def hook(path):
    if not path.endswith("_payload.zip"):
        raise ImportError(path)
    return CachingZipImporter(path)
sys.path_hooks.insert(0, hook)
sys.path_importer_cache.clear()
EOF
scp -q -P "$PORT" "${ssh_opts[@]}" "$work/bench_payload.zip" "$work/code_cache.py" root@127.0.0.1:/var/tmp/
ssh -p "$PORT" "${ssh_opts[@]}" root@127.0.0.1 python3 - "$ROUNDS" <<'EOF'
import subprocess, sys, time
IMPORT = "import sys; sys.path.insert(0, '/var/tmp/bench_payload.zip'); import ansible.module_utils.basic"
CASES = (("python3 -c pass", "pass"), ("import basic from the payload", IMPORT),
         ("same, code objects cached", "exec(open('/var/tmp/code_cache.py').read()); " + IMPORT))
for round_number in range(int(sys.argv[1])):
    row = []
    for name, code in CASES:
        start = time.time()
        subprocess.run(["python3", "-c", code], check=True)
        row.append("%s %.2f s" % (name, time.time() - start))
    print("round %d: %s" % (round_number + 1, "; ".join(row)))
EOF
