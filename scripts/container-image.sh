#!/usr/bin/env bash
# Build (once) the Debian bookworm container image the molecule scenarios run in.
#
# Interface (molecule/default and molecule/fanout rely on it):
#   scripts/container-image.sh           build if needed; print the image name on stdout
#   scripts/container-image.sh --name    print the image name only (no podman, no build)
#
#   stdout: one line, the content-addressed name  localhost/ckptio-nfs-test:<hash>
#   The same image is also tagged               localhost/ckptio-nfs-test:current
#   so a molecule.yml can name a fixed image (`pre_build_image: true`).
#   Everything else (progress, errors) goes to stderr. Exit status non-zero on failure.
#
# The hash covers the package list and this script, so editing either builds a new image;
# otherwise the run is a no-op (`podman image exists`). A tarball of the root filesystem is
# kept under $CKPTIO_CACHE/images/ (default ~/.cache/ckptio/images/) so a wiped podman store
# re-imports in seconds instead of re-running mmdebstrap (~1 min).
#
# sshd is enabled (no keys authorised): molecule/default/prepare.yml installs a key with
# `podman cp` and then talks ssh to the container's address.
# Running a container from it (rootful podman on this host; what molecule.yml sets):
#   podman run -d --runtime=runc --systemd=always \
#     --ulimit nofile=16384:16384 --ulimit nproc=16384:16384 IMAGE /sbin/init
# The host kernel has no NFS: containers can test files (fstab, nfs.conf, modprobe.d), never a
# live slot table, a mount or knfsd (../shared/docs/lab.md).
set -euo pipefail

SCRIPT_PATH=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/$(basename "${BASH_SOURCE[0]}")
CKPTIO_CACHE=${CKPTIO_CACHE:-$HOME/.cache/ckptio}
IMAGE_REPO=localhost/ckptio-nfs-test
SUITE=bookworm

# systemd-sysv: systemd as PID 1 (nfs-server unit, handlers); python3: Ansible modules;
# nfs-common / nfs-kernel-server: the real /etc/nfs.conf, nfs.conf.d and unit files the roles edit;
# kmod/procps/iproute2/psmisc/mount: tools the modules and testinfra call (modprobe, ps, ss, fuser);
# openssh-server: Ansible over ssh with pipelining is ~10x faster per task than the podman
# connection (which runs 4-5 `podman exec` per module).
PACKAGES=(systemd-sysv python3 nfs-common nfs-kernel-server kmod procps iproute2 psmisc mount
  util-linux ca-certificates openssh-server)

log() { printf '[container-image] %s\n' "$*" >&2; }

# Comment lines are left out of the hash: editing the documentation above rebuilds nothing.
image_hash() {
  { printf '%s\n' "$SUITE" "${PACKAGES[@]}"; grep -v '^[[:space:]]*#' "$SCRIPT_PATH"; } | sha256sum | cut -c1-12
}

IMAGE="$IMAGE_REPO:$(image_hash)"
if [ "${1:-}" = "--name" ]; then
  printf '%s\n' "$IMAGE"
  exit 0
fi

# The first URIs line of the host's deb822 sources is the configured (possibly snapshot) mirror.
debian_mirror() {
  local uri
  uri=$(awk '/^URIs:/ {print $2; exit}' /etc/apt/sources.list.d/debian.sources 2>/dev/null || true)
  if [ -z "$uri" ]; then
    uri=$(awk '/^deb / && $0 !~ /security/ {print $2; exit}' /etc/apt/sources.list 2>/dev/null || true)
  fi
  printf '%s\n' "${uri:-http://deb.debian.org/debian}"
}

TARBALL="$CKPTIO_CACHE/images/ckptio-nfs-test-$(image_hash).tar"

build_tarball() {
  local mirror tmp
  mirror=$(debian_mirror)
  mkdir -p "$(dirname "$TARBALL")"
  tmp="$TARBALL.tmp.$$"
  log "mmdebstrap $SUITE minbase from $mirror (about a minute)"
  # Written under a temporary name: an interrupted build must never look like a cached one.
  # The hooks' "$1" is expanded by mmdebstrap (the chroot directory), not by this shell.
  # The host kernel has no nfsd/sunrpc: their pseudo-filesystems cannot mount in a container, so
  # those units are masked and systemd reports "running" instead of "degraded".
  # shellcheck disable=SC2016
  if ! mmdebstrap --quiet --format=tar --variant=minbase --include="$(IFS=,; echo "${PACKAGES[*]}")" \
      --customize-hook='chroot "$1" systemctl mask getty@tty1.service console-getty.service systemd-logind.service proc-fs-nfsd.mount run-rpc_pipefs.mount' \
      --customize-hook='rm -f "$1"/etc/hostname "$1"/etc/machine-id && touch "$1"/etc/machine-id' \
      "$SUITE" "$tmp" "$mirror" >&2; then
    rm -f "$tmp"
    return 1
  fi
  mv -f "$tmp" "$TARBALL"
}

if podman image exists "$IMAGE"; then
  log "image $IMAGE present"
else
  [ -s "$TARBALL" ] || build_tarball
  log "podman import $TARBALL"
  podman import --change 'CMD ["/sbin/init"]' --change 'STOPSIGNAL SIGRTMIN+3' \
    "$TARBALL" "$IMAGE" >/dev/null
fi
podman tag "$IMAGE" "$IMAGE_REPO:current"
printf '%s\n' "$IMAGE"
