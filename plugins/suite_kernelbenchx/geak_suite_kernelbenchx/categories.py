"""KernelBench-X's category folders, as recorded from its data.

The benchmark keeps each task as ``data/kernelbenchx/<Category>/<task>.py``.
``FOLDERS`` is the list of those folders in the release (184 task files);
``geak_core.tasks.CATEGORIES`` must equal it (a test checks both, and checks
``FOLDERS`` against a checkout when one is present).
"""

from __future__ import annotations

FOLDERS: tuple[str, ...] = (
    "Activation",
    "Convolution",
    "Fusion",
    "Index",
    "LinearAlgebra",
    "Loss",
    "Math",
    "MatrixMultiply",
    "Normalization",
    "Optimizer",
    "Pooling",
    "Quantization",
    "Random",
    "Reduce",
    "SpatialOps",
)

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
