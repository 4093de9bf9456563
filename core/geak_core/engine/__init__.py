"""The engine wing: what runs a recipe, on api and kit.

The plugin manager (``plugins``, with core's own components in ``builtin``), the recipe
loader (``recipe``, ``selection``), the run store (``store``), the agent loop (``agent``)
and what it uses: recorded LLM calls and the budget (``recording``), the display
(``progress``), prompts (``prompts``), hardware profiles (``hardware``) and the run's
summary (``report``, ``category_view``).
"""
