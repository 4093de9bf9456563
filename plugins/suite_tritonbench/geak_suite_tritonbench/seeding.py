"""Seeding every generator a TritonBench test may draw from.

The original tests set no seed; the reference and the candidate run in
different processes, so both must draw the same inputs from the same seed.
"""

from __future__ import annotations


def seed_all(seed: int) -> None:
    import random

    import numpy as np
    import torch

    random.seed(seed)
    np.random.seed(seed % 2**32)
    torch.manual_seed(seed)  # also seeds every CUDA / HIP device
