#!/usr/bin/env bash
# Prepare a fresh Debian/Ubuntu machine to run and test ckptio.nfs.
#
# Everything expensive lives outside the repository, under $CKPTIO_CACHE (default
# ~/.cache/ckptio), keyed on what built it, so a second run is fast and a changed pin rebuilds.
#
#   scripts/setup.sh            apt packages, venv, collections, staged collection tree
#   source scripts/activate     put the venv and the collection on this shell's paths
#
# Prints nothing on stdout but the environment file path, so other scripts can `source` it.
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
CKPTIO_CACHE=${CKPTIO_CACHE:-$HOME/.cache/ckptio}
mkdir -p "$CKPTIO_CACHE"

# shellcheck source=scripts/lib.sh
source "$REPO/scripts/lib.sh"  # log, quiet, make_venv, ansible_test_pip_bootstrap

# --- Debian packages -------------------------------------------------------------------------
# podman/runc/mmdebstrap: molecule containers; qemu*/e2fsprogs/openssh-client: the real-kernel
# lab; shellcheck: ansible-test sanity; fio: canary benchmark; nfs-common: nfs-utils'
# `mountstats`, the reference our deltas are checked against; iperf3: the tcp_probe module's
# end-to-end test on loopback.
APT_PACKAGES=(podman runc mmdebstrap debian-archive-keyring qemu-system-x86 qemu-utils e2fsprogs
  openssh-client shellcheck fio nfs-common iperf3 rsync git python3-venv)

install_apt_packages() {
  local missing=()
  for pkg in "${APT_PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'install ok installed' || missing+=("$pkg")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  if [ "$(id -u)" -ne 0 ]; then
    log "missing Debian packages: ${missing[*]} (run as root or install them with sudo)"
    return 1
  fi
  log "installing Debian packages: ${missing[*]}"
  apt-get update -qq >&2
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
}

if [ "${CKPTIO_SKIP_APT:-0}" != 1 ]; then
  install_apt_packages
fi

# --- Python virtual environment --------------------------------------------------------------
PYTHON=${CKPTIO_PYTHON:-python3}
VENV=$(make_venv venv "$REPO/requirements-dev.txt" "$REPO/requirements-constraints.txt")

# --- Collections we depend on for tests (Galaxy is unreachable: take them from the wheel) ----
ANSIBLE_WHEEL_VERSION=12.3.0
DEPS="$CKPTIO_CACHE/collections-ansible-$ANSIBLE_WHEEL_VERSION"
if [ ! -d "$DEPS/ansible_collections/containers/podman" ]; then
  log "extracting containers.podman and ansible.posix from ansible==$ANSIBLE_WHEEL_VERSION"
  tmp=$(mktemp -d)
  quiet "$VENV/bin/pip" download -q --no-deps --disable-pip-version-check -d "$tmp" "ansible==$ANSIBLE_WHEEL_VERSION"
  "$VENV/bin/python" - "$tmp" "$DEPS.tmp" <<'PY'
import glob, sys, zipfile
wheel = glob.glob(sys.argv[1] + "/ansible-*.whl")[0]
wanted = ("ansible_collections/containers/podman/", "ansible_collections/ansible/posix/")
with zipfile.ZipFile(wheel) as zf:
    zf.extractall(sys.argv[2], [n for n in zf.namelist() if n.startswith(wanted)])
PY
  rm -rf "$DEPS" "$tmp"
  mv "$DEPS.tmp" "$DEPS"
fi

# --- promtool and node_exporter (Debian packages), for the textfile collector's checks -------
# promtool checks the exposition text and the alert rules (unit tests); node_exporter is the
# series-count bench's reference (tests/bench/bench_metric_series.py); prometheus serves the
# HTTP API that `ckptio.nfs.diagnose` reads a past checkpoint from (its tests and the lab). Taken out of the .debs
# into the cache rather than installed: installing the packages would start their services on
# this machine. Keyed on the package versions apt offers.
# extract_deb_binary PACKAGE PATH-IN-DEB NAME: prints the cached binary's path (empty when apt has none).
extract_deb_binary() {
  local package=$1 inside=$2 name=$3 version dir tmp deb
  version=$(apt-cache policy "$package" 2>/dev/null | awk '/Candidate:/ {print $2; exit}')
  [ -n "$version" ] && [ "$version" != "(none)" ] || return 0
  # One directory per binary: a package gives two (prometheus: promtool and prometheus).
  dir="$CKPTIO_CACHE/$package-$version-$name"
  if [ ! -x "$dir/$name" ]; then
    log "extracting $name from $package $version"
    tmp=$(mktemp -d)
    (cd "$tmp" && quiet apt-get download "$package=$version") || true
    deb=$(find "$tmp" -maxdepth 1 -name "${package}_*.deb" | head -1)
    if [ -z "$deb" ]; then
      log "could not download $package $version: the checks that need $name will fail"
      rm -rf "$tmp"
      return 0
    fi
    dpkg-deb --fsys-tarfile "$deb" | tar -x -C "$tmp" "./$inside"
    mkdir -p "$dir.tmp" && mv "$tmp/$inside" "$dir.tmp/$name"
    rm -rf "$dir" "$tmp" && mv "$dir.tmp" "$dir"
  fi
  printf '%s\n' "$dir/$name"
}
PROMTOOL=$(extract_deb_binary prometheus usr/bin/promtool promtool)
NODE_EXPORTER=$(extract_deb_binary prometheus-node-exporter usr/bin/prometheus-node-exporter node_exporter)
PROMETHEUS=$(extract_deb_binary prometheus usr/bin/prometheus prometheus)

# --- Put this checkout where Ansible and ansible-test expect a collection -------------------
# Playbooks only need ckptio.nfs on ANSIBLE_COLLECTIONS_PATH: a symlink to the checkout keeps
# edits live. ansible-test insists on a real .../ansible_collections/ckptio/nfs directory, so
# scripts/test.sh syncs a copy into $CKPTIO_STAGE before it runs.
repo_key=$(printf '%s' "$REPO" | sha256sum | cut -c1-12)
LINKS="$CKPTIO_CACHE/link-$repo_key"
mkdir -p "$LINKS/ansible_collections/ckptio"
ln -sfn "$REPO" "$LINKS/ansible_collections/ckptio/nfs"
ENV_FILE="$CKPTIO_CACHE/env-$repo_key.sh"
# Written to a temp file and renamed: several shells may run setup at once.
cat > "$ENV_FILE.$$" <<EOF
export CKPTIO_REPO='$REPO'
export CKPTIO_CACHE='$CKPTIO_CACHE'
export CKPTIO_VENV='$VENV'
# A caller may choose its own stage (parallel test runs must not share one).
export CKPTIO_STAGE="\${CKPTIO_STAGE:-$CKPTIO_CACHE/stage-$repo_key}"
export CKPTIO_DEPS='$DEPS'
export CKPTIO_PROMTOOL='$PROMTOOL'
export CKPTIO_NODE_EXPORTER='$NODE_EXPORTER'
export CKPTIO_PROMETHEUS='$PROMETHEUS'
export VIRTUAL_ENV='$VENV'
export PATH='$VENV/bin':"\$PATH"
export ANSIBLE_COLLECTIONS_PATH='$LINKS:$DEPS'
EOF
mv -f "$ENV_FILE.$$" "$ENV_FILE"
printf '%s\n' "$ENV_FILE"
