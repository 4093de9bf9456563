"""The api wing: the data model and the contracts plugins are written against.

The component protocols, their base classes and the table of kinds (``components``), the
hook specifications (``hookspecs``), the data model (``model``, ``llm``, ``tasks``), the
harness contract (``harness``), the errors (``errors``), a lineage's state (``lineage``), the
figures a run is judged by (``scaling``) and how a reply's code is found (``extract``, with
the one parse every in-process parse goes through, ``astutil``). It imports nothing of the
other wings; docs/architecture.md says what may import what.
"""
