"""GEAK's agent modules: the generator, the reflector (with Reflexion memory) and the
debugging-trap policy, registered as the ``geak`` generator, reflector and policy."""
