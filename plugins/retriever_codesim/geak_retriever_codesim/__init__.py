"""geak_retriever_codesim plugin for geak-core."""
