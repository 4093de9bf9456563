"""The ``triton`` evaluator: a judge for Triton kernels that candidates cannot fool.

See docs/evaluator.md for the threat model, the checks and the metrics.
"""
