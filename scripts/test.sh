#!/usr/bin/env bash
# Set up (scripts/setup.sh) and run the ckptio.nfs test suite.
#
#   scripts/test.sh                 every stage, in order (what CI runs)
#   scripts/test.sh units sanity    only the named stages
#   scripts/test.sh units -- -k fstab     extra arguments go to the last named stage
#
# Stages: sanity units lint compat package molecule-default molecule-fanout molecule-lab
#   lab-matrix  (not in the default list, ~15 min a kernel) scripts/lab-matrix.sh: the lab on
#               Debian 11, 12 and 13, kernel facts into tests/output/lab-matrix/matrix.md
#   compat   sanity and units on the oldest ansible-core requires_ansible names (own venv)
#   package  the Galaxy tarball: build test, galaxy-importer, antsibull-docs, EE introspection
# Each stage prints a line `stage NAME: passed|failed (Ns)`; the run ends with
# `N passed, N failed` and exits non-zero if any stage failed.
set -uo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
ALL_STAGES=(sanity units lint compat package molecule-default molecule-fanout molecule-lab)

stages=()
extra=()
while [ $# -gt 0 ]; do
  case "$1" in
    --) shift; extra=("$@"); break ;;
    *) stages+=("$1"); shift ;;
  esac
done
[ ${#stages[@]} -eq 0 ] && stages=("${ALL_STAGES[@]}")

env_file=$("$REPO/scripts/setup.sh") || { echo "setup failed" >&2; exit 1; }
# shellcheck disable=SC1090
source "$env_file"
# shellcheck source=scripts/lib.sh
source "$REPO/scripts/lib.sh"  # make_venv for the compat and package stages
cd "$REPO" || exit 1

# ansible-test wants a real ansible_collections/ckptio/nfs tree: copy the checkout's files
# (tracked and new, minus ignored ones and files deleted in the work tree) into a fresh stage.
stage_collection() {
  local dest="$CKPTIO_STAGE/ansible_collections/ckptio/nfs"
  rm -rf "$dest"
  mkdir -p "$dest"
  git -C "$REPO" ls-files --cached --others --exclude-standard --deduplicate \
    | while IFS= read -r f; do [ -e "$REPO/$f" ] && printf '%s\n' "$f"; done \
    | tar -C "$REPO" -cf - -T - | tar -C "$dest" -xf -
  printf '%s\n' "$dest"
}

run_sanity() {
  local dest
  dest=$(stage_collection)
  (cd "$dest" && ansible-test sanity --venv --python 3.11 --color no "${extra[@]}")
}

# The unit tests spread over one pytest-xdist worker per core (CKPTIO_TEST_WORKERS=N to choose,
# 0 for none): on this 2-core machine 311 s -> 241 s for the stage, the same 4,005 tests, side by side
# (`CKPTIO_TEST_WORKERS=0 scripts/test.sh units` then `scripts/test.sh units`, 2026-12-03).
workers_args=(-n "${CKPTIO_TEST_WORKERS:-auto}")

run_units() {
  local dest
  dest=$(stage_collection)
  # Plain pytest on the staged tree: the collection imports as ansible_collections.ckptio.nfs.
  # With no arguments pytest collects testpaths from pytest.ini (tests/unit).
  (cd "$dest" && PYTHONPATH="$CKPTIO_STAGE" python -m pytest -p no:cacheprovider -p no:pytest-ansible "${workers_args[@]}" "${extra[@]}")
}

run_lint() {
  ansible-lint --offline --profile production "${extra[@]}"
}

# The oldest supported ansible-core (requirements-compat.txt, = requires_ansible in
# meta/runtime.yml): the code must import, compile and document itself there, and the unit
# tests pass through the same harness (tests/unit/utils.py). Skipped sanity tests:
# pylint (style: the sanity stage runs the newest; 2.15's older pylint reports a false positive,
# invalid-unary-operand-type in module_utils/host/file_write.py), future-import-boilerplate and
# metaclass-boilerplate (Python 2 boilerplate, removed from ansible-test in 2.17).
run_compat() {
  local venv dest rc=0
  venv=$(make_venv venv-compat "$REPO/requirements-compat.txt") || return 1
  dest=$(stage_collection)
  (cd "$dest" && PATH="$venv/bin:$PATH" VIRTUAL_ENV="$venv" ansible-test sanity --venv --python 3.11 --color no \
    --skip-test pylint --skip-test future-import-boilerplate --skip-test metaclass-boilerplate) || rc=1
  # ansible-test sanity left tests/output in the stage; the tests run from a clean copy.
  dest=$(stage_collection)
  (cd "$dest" && PATH="$venv/bin:$PATH" VIRTUAL_ENV="$venv" PYTHONPATH="$CKPTIO_STAGE" \
    "$venv/bin/python" -m pytest -p no:cacheprovider "${workers_args[@]}" "${extra[@]}") || rc=1
  return $rc
}

# What a user installs: the tarball holds the runtime content only (tests/packaging, from a tree
# holding the lab's key, reports and caches), the changelog is released and renders, Galaxy's
# importer accepts the tarball (with ansible-lint; its ansible-test needs containers, the sanity
# stages run it), the plugin docs lint clean, and an execution-environment build finds
# requirements.txt.
run_package() {
  local venv dest dist tarball rc=0 out
  venv=$(make_venv venv-package "$REPO/requirements-package.txt") || return 1
  dest=$(stage_collection)
  (cd "$dest" && PYTHONPATH="$CKPTIO_STAGE" python -m pytest -p no:cacheprovider -p no:pytest-ansible tests/packaging "${extra[@]}") || rc=1
  dist="$CKPTIO_STAGE/dist"
  rm -rf "$dist"
  ansible-galaxy collection build --output-path "$dist" "$dest" >/dev/null || return 1
  tarball=$(ls "$dist"/ckptio-nfs-*.tar.gz)
  out=$(cd "$dist" && PATH="$venv/bin:$PATH" GALAXY_IMPORTER_RUN_ANSIBLE_TEST=false \
    GALAXY_IMPORTER_RUN_ANSIBLE_LINT=true "$venv/bin/python" -m galaxy_importer.main "$tarball" 2>&1)
  local importer_rc=$?
  printf '%s\n' "$out" | grep -v '^Loading '
  # Galaxy shows every importer warning (ansible-lint findings among them) to users: none allowed.
  if [ $importer_rc -ne 0 ] || printf '%s\n' "$out" | grep -q 'WARNING'; then
    echo "galaxy-importer: failed or warned" >&2
    rc=1
  fi
  (cd "$dest" && PATH="$venv/bin:$PATH" antsibull-docs lint-collection-docs --plugin-docs .) || rc=1
  ANSIBLE_COLLECTIONS_PATH="$dist/collections" ansible-galaxy collection install --force -p "$dist/collections" \
    "$tarball" >/dev/null || return 1
  run_installed "$dist" || rc=1
  out=$("$venv/bin/ansible-builder" introspect --sanitize "$dist/collections" 2>&1)
  printf '%s\n' "$out"
  printf '%s\n' "$out" | grep -q "^- 'matplotlib.*# from collection ckptio.nfs'" \
    || { echo "ansible-builder introspect did not find requirements.txt's packages" >&2; rc=1; }
  return $rc
}

# What a user of the installed tarball runs, with nothing else: from an empty project directory,
# only the installed collection on the collections path (no checkout, no ansible.posix), every
# playbook by its FQCN with --syntax-check, and ckptio.nfs.diagnose for real on a sample bundle.
run_installed() {
  local dist=$1 project="$1/project" pb rc=0
  rm -rf "$project" && mkdir -p "$project"
  cp -r "$REPO/tests/fixtures/captures/healthy" "$project/bundle"
  printf 'localhost ansible_connection=local\n[nfs_clients]\n[nfs_servers]\n' > "$project/hosts.ini"
  for pb in audit capture compare_architectures diagnose paste tune_clients tune_servers validate_checkpoint; do
    (cd "$project" && env -u ANSIBLE_CONFIG ANSIBLE_COLLECTIONS_PATH="$dist/collections" ANSIBLE_COLLECTIONS_SCAN_SYS_PATH=false \
      ansible-playbook -i hosts.ini "ckptio.nfs.$pb" --syntax-check >/dev/null) \
      || { echo "ckptio.nfs.$pb: --syntax-check failed from the installed collection" >&2; rc=1; }
  done
  (cd "$project" && env -u ANSIBLE_CONFIG ANSIBLE_COLLECTIONS_PATH="$dist/collections" ANSIBLE_COLLECTIONS_SCAN_SYS_PATH=false \
    ansible-playbook -i hosts.ini ckptio.nfs.diagnose -e ckptio_bundle=bundle) \
    || { echo "ckptio.nfs.diagnose failed from the installed collection" >&2; rc=1; }
  [ -s "$project/bundle/diagnosis.md" ] || { echo "ckptio.nfs.diagnose wrote no diagnosis.md" >&2; rc=1; }
  return $rc
}

run_molecule() {
  local scenario=$1
  # molecule ships no ansible.cfg for our layout: it needs the collection paths from setup.
  molecule test -s "$scenario" "${extra[@]}"
}

passed=0
failed=0
failed_names=()
for stage in "${stages[@]}"; do
  start=$(date +%s)
  echo "=== stage $stage"
  case "$stage" in
    sanity) run_sanity ;;
    units) run_units ;;
    lint) run_lint ;;
    compat) run_compat ;;
    package) run_package ;;
    molecule-default) run_molecule default ;;
    molecule-fanout) run_molecule fanout ;;
    molecule-lab) run_molecule lab ;;
    lab-matrix) "$REPO/scripts/lab-matrix.sh" "${extra[@]}" ;;
    *) echo "unknown stage: $stage (known: ${ALL_STAGES[*]} lab-matrix)" >&2; false ;;
  esac
  rc=$?
  secs=$(( $(date +%s) - start ))
  if [ $rc -eq 0 ]; then
    echo "stage $stage: passed (${secs}s)"
    passed=$((passed + 1))
  else
    echo "stage $stage: failed with exit $rc (${secs}s)"
    failed=$((failed + 1))
    failed_names+=("$stage")
  fi
done

[ $failed -gt 0 ] && echo "failed stages: ${failed_names[*]}"
echo "stages: $passed passed, $failed failed"
[ $failed -eq 0 ]
