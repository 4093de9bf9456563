"""geak_agent_tools plugin for geak-core: a generator that gives the model the judge as tools,
so that it drafts, judges and re-drafts its kernel within each round."""
