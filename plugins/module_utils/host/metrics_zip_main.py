# -*- coding: utf-8 -*-
# Copyright: ckptio.nfs contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The collector's zip application starts here: install.program_bytes() stores this file as __main__.py."""

from __future__ import annotations

from ansible_collections.ckptio.nfs.plugins.module_utils.host import metrics_collector as collector

if __name__ == "__main__":
    # SystemExit, not sys.exit: module_utils files may not call sys.exit (ansible-test's pylint plugin).
    raise SystemExit(collector.main())
