# Copyright: ckptio.nfs contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Write prometheus/ckptio-nfs.rules.yml from plugins/module_utils/telemetry/alert_rules.py (issue 48).

    python scripts/prometheus-rules.py [--check]

--check exits 1 when the file differs from what the code writes (the unit tests check it too).
Run from an activated checkout (`source scripts/activate`).
"""

import argparse
import os
import sys

from ansible_collections.ckptio.nfs.plugins.module_utils.telemetry import alert_rules

RULES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "prometheus", "ckptio-nfs.rules.yml")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="compare, write nothing")
    args = parser.parse_args()
    text = alert_rules.rules_text()
    with open(RULES, encoding="utf-8") as stream:
        current = stream.read() if args.check else None
    if args.check:
        if current != text:
            sys.stderr.write("%s is not what alert_rules.py writes: run scripts/prometheus-rules.py\n" % RULES)
            return 1
        return 0
    temp = RULES + ".tmp"
    with open(temp, "w", encoding="utf-8") as stream:
        stream.write(text)
    os.replace(temp, RULES)
    return 0


if __name__ == "__main__":
    sys.exit(main())
