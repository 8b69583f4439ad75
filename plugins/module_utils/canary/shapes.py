# -*- coding: utf-8 -*-
# Copyright: ckptio.nfs contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Checkpoint shapes: what each real writer does on the file system, resolved into a pure plan."""

from __future__ import annotations

MLPERF_SHAPES = ("mlperf_llama3_8b", "mlperf_llama3_70b", "mlperf_llama3_405b", "mlperf_llama3_1t")
SHAPES = ("shared_file", "file_per_rank", "torch_dcp", "megatron") + MLPERF_SHAPES
