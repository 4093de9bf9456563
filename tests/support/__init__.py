"""Helpers shared by tests: loopback servers that speak the LLM providers' wire protocols."""
