"""Copy one suite's matrix results into tests/fixtures/kernels/<suite>/ (the unit tests' input).

Usage: python3 tests/lab_matrix/keep_fixtures.py tests/output/lab-matrix/bullseye tests/fixtures/kernels/bullseye
Kept: the facts JSON, the raw kernel files of each phase, packages.txt (the image's versions) and
the canary's bundle without what the report made from it (report.*, diagnosis.*).
"""
import glob
import os
import shutil
import sys

DROPPED = ("report.md", "report.json", "report.png", "diagnosis.md", "diagnosis.json")


def main():
    source, dest = sys.argv[1], sys.argv[2]
    shutil.rmtree(dest, ignore_errors=True)
    os.makedirs(dest)
    kept = glob.glob(os.path.join(source, "*.json")) + glob.glob(os.path.join(source, "starvation-*.txt"))
    for path in sorted(kept) + [os.path.join(source, "packages.txt")]:
        shutil.copy(path, dest)
    for path in sorted(glob.glob(os.path.join(source, "raw-*"))):
        shutil.copytree(path, os.path.join(dest, os.path.basename(path)))
    bundles = sorted(glob.glob(os.path.join(source, "reports", "*-matrix-*")))
    if bundles:
        shutil.copytree(bundles[-1], os.path.join(dest, "bundle"), ignore=shutil.ignore_patterns(*DROPPED))


if __name__ == "__main__":
    main()
