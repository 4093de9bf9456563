"""The kit wing: tools a plugin does its work with, standing on api alone.

The sandbox that runs untrusted code in child processes (``sandbox``, with ``confinement``
and ``limits``), the frames tensors travel in between processes (``tensorio``), the HTTP
client of LLM APIs (``llm_http``) and a source's code metrics (``code_metrics``).
"""
