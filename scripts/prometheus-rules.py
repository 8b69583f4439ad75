# Copyright: ckptio.nfs contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Write prometheus/ckptio-nfs.rules.yml and ckptio-nfs-dashboard.json from plugins/module_utils/telemetry (issue 48).

    python scripts/prometheus-rules.py [--check]

--check exits 1 when a file differs from what the code writes (the unit tests check it too).
Run from an activated checkout (`source scripts/activate`).
"""

import argparse
import os
import sys

# The activated checkout (scripts/activate) puts the collection on ANSIBLE_COLLECTIONS_PATH, not on sys.path.
sys.path[:0] = [path for path in os.environ.get("ANSIBLE_COLLECTIONS_PATH", "").split(os.pathsep) if path]

from ansible_collections.ckptio.nfs.plugins.module_utils.telemetry import alert_rules, dashboard  # noqa: E402 pylint: disable=wrong-import-position

FOLDER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "prometheus")
FILES = {"ckptio-nfs.rules.yml": alert_rules.rules_text, "ckptio-nfs-dashboard.json": dashboard.dashboard_text}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="compare, write nothing")
    args = parser.parse_args()
    status = 0
    for name, make in FILES.items():
        path = os.path.join(FOLDER, name)
        text = make()
        if args.check:
            try:
                with open(path, encoding="utf-8") as stream:
                    current = stream.read()
            except FileNotFoundError:
                current = None
            if current != text:
                sys.stderr.write("%s is not what the code writes: run scripts/prometheus-rules.py\n" % path)
                status = 1
            continue
        temp = path + ".tmp"
        with open(temp, "w", encoding="utf-8") as stream:
            stream.write(text)
        os.replace(temp, path)
    return status


if __name__ == "__main__":
    sys.exit(main())
