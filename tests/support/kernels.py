"""Kernel sources the retriever's tests share."""

# A task reference nothing in the built-in corpus resembles: a row-wise "squared hinge" loss.
HINGE_ROWS = """
import triton
import triton.language as tl


@triton.jit
def hinge_rows_kernel(score_ptr, label_ptr, loss_ptr, n_cols, stride, margin, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    valid = cols < n_cols
    score = tl.load(score_ptr + row * stride + cols, mask=valid, other=0.0).to(tl.float32)
    label = tl.load(label_ptr + row * stride + cols, mask=valid, other=0.0).to(tl.float32)
    gap = tl.maximum(margin - label * score, 0.0)
    tl.store(loss_ptr + row, tl.sum(gap * gap, axis=0) / n_cols)
"""
