#!/usr/bin/env bash
# Set up (scripts/setup.sh) and run the ckptio.nfs test suite.
#
#   scripts/test.sh                 every stage, in order (what CI runs)
#   scripts/test.sh units sanity    only the named stages
#   scripts/test.sh units -- -k fstab     extra arguments go to the last named stage
#
# Stages: sanity units lint molecule-default molecule-fanout molecule-lab
# Each stage prints a line `stage NAME: passed|failed (Ns)`; the run ends with
# `N passed, N failed` and exits non-zero if any stage failed.
set -uo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
ALL_STAGES=(sanity units lint molecule-default molecule-fanout molecule-lab)

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

run_units() {
  local dest
  dest=$(stage_collection)
  # Plain pytest on the staged tree: the collection imports as ansible_collections.ckptio.nfs.
  # With no arguments pytest collects testpaths from pytest.ini (tests/unit).
  (cd "$dest" && PYTHONPATH="$CKPTIO_STAGE" python -m pytest -p no:cacheprovider -p no:pytest-ansible "${extra[@]}")
}

run_lint() {
  ansible-lint --offline --profile production "${extra[@]}"
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
    molecule-default) run_molecule default ;;
    molecule-fanout) run_molecule fanout ;;
    molecule-lab) run_molecule lab ;;
    *) echo "unknown stage: $stage (known: ${ALL_STAGES[*]})" >&2; false ;;
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
