"""TritonBench-G / TritonBench-revised as a geak-core suite (``[suite] name = "tritonbench"``)."""
