"""KernelBench-X's category folders, as recorded from its data.

The benchmark keeps each task as ``data/kernelbenchx/<Category>/<task>.py``.
``TASKS_PER_FOLDER`` counts the task files of each folder in the release (184 in
all), in folder order; ``FOLDERS`` lists those folders, and
``geak_core.api.tasks.CATEGORIES`` must equal it (a test checks both, and checks them
against a checkout when one is present).
"""

from __future__ import annotations

# Task files per folder in the release (the test against a checkout compares these too).
TASKS_PER_FOLDER: dict[str, int] = {
    "Activation": 16,
    "Convolution": 2,
    "Fusion": 60,
    "Index": 6,
    "LinearAlgebra": 17,
    "Loss": 6,
    "Math": 38,
    "MatrixMultiply": 10,
    "Normalization": 5,
    "Optimizer": 5,
    "Pooling": 2,
    "Quantization": 6,
    "Random": 2,
    "Reduce": 6,
    "SpatialOps": 3,
}

FOLDERS: tuple[str, ...] = tuple(TASKS_PER_FOLDER)
