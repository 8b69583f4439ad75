# shellcheck shell=bash
# Helpers shared by scripts/setup.sh and scripts/test.sh (sourced, not run). Messages go to
# stderr: both scripts keep stdout for the one path they print.

log() { printf '[setup] %s\n' "$*" >&2; }

# pip's output is noise when it works and essential when it does not: keep it, show it on failure.
quiet() {
  local out
  out=$(mktemp)
  if ! "$@" >"$out" 2>&1; then
    cat "$out" >&2
    rm -f "$out"
    return 1
  fi
  rm -f "$out"
}

# make_venv NAME REQUIREMENTS [CONSTRAINTS...]: print the path of a virtual environment holding
# REQUIREMENTS (pip -r) under the CONSTRAINTS (pip -c), creating it when missing. It lives under
# $CKPTIO_CACHE, named NAME-pyX.Y-<hash of the files' content>, so a changed pin builds a new one
# and a second run is instant. Needs CKPTIO_CACHE and PYTHON (default python3).
make_venv() {
  local name=$1 requirements=$2
  shift 2
  local python=${PYTHON:-python3} py_version key venv args=()
  py_version=$("$python" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
  key=$(cat "$requirements" "$@" | sha256sum | cut -c1-12)
  venv="$CKPTIO_CACHE/$name-py$py_version-$key"
  if [ ! -f "$venv/.ckptio-complete" ]; then
    log "creating virtual environment $venv"
    rm -rf "$venv"
    "$python" -m venv "$venv"
    for constraints in "$@"; do args+=(-c "$constraints"); done
    quiet "$venv/bin/pip" install -q --disable-pip-version-check -r "$requirements" "${args[@]}" || return 1
    touch "$venv/.ckptio-complete"
  fi
  ansible_test_pip_bootstrap "$venv"
  printf '%s\n' "$venv"
}

# ansible-test seeds pip in the venvs it creates with a get-pip.py it downloads from a host this
# machine cannot reach; each ansible-test release pins its own pip. Give the venv's ansible-test
# (if it has one) a local stand-in in its cache: pip from ensurepip, then the pinned version.
ansible_test_pip_bootstrap() {
  local venv=$1 version bootstrap
  version=$("$venv/bin/python" - 2>/dev/null <<'PY'
import sys
from ansible_test._internal.python_requirements import get_venv_packages
class P:  # only .version is read
    version = "%d.%d" % sys.version_info[:2]
print(get_venv_packages(P())["pip"])
PY
) || return 0  # no ansible-test in this venv
  bootstrap="$HOME/.ansible/test/cache/get_pip_${version//./_}.py"
  [ -f "$bootstrap" ] && return 0
  mkdir -p "$(dirname "$bootstrap")"
  cat > "$bootstrap.$$" <<PY
"""Local stand-in for get-pip.py: seed pip from ensurepip, then pin it like get-pip would."""
import subprocess, sys
subprocess.check_call([sys.executable, "-m", "ensurepip", "--upgrade", "--default-pip"])
args = [a for a in sys.argv[1:] if a not in ("--no-setuptools", "--no-wheel")]
subprocess.check_call([sys.executable, "-m", "pip", "install", "pip==$version"] + args)
PY
  mv -f "$bootstrap.$$" "$bootstrap"
}
