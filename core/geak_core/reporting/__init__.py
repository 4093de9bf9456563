"""The reporting wing: stored runs read back and shown, on api, kit and engine.

One row per candidate from a run's store (``rundata``), and what is built from it: the
HTML report (``html_report``, its page template in ``assets/``), the exported data set
(``export``), the transcript of ``runs log`` (``transcript``) and a candidate as an
installable PyTorch op package (``kernel_package``, with ``kernel_probe``).
"""
