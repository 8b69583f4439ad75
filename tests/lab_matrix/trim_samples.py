# Copyright: ckptio.nfs contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Keep every Nth sample of a sample file (sunrpc_xprt.txt, rpc_tasks.txt): python3 trim_samples.py FILE N.

Each kept sample is verbatim; a fixture stays small while still spanning the whole window.
"""

import sys


def main(path, every):
    with open(path) as handle:
        text = handle.read()
    samples = ["=== sample" + part for part in text.split("=== sample")[1:]]
    kept = [sample for index, sample in enumerate(samples) if index % every == 0]
    with open(path, "w") as handle:
        handle.write("".join(kept))
    print("%s: kept %d of %d samples" % (path, len(kept), len(samples)))


main(sys.argv[1], int(sys.argv[2]))
