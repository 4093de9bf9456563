"""The ``tools`` generator: GEAK's prompts, and a round held as a conversation in which the
model has its drafts judged before it answers.

Each round starts from GEAK's prompt (the generator's for generate, restart and optimize
rounds, the reflector's for a reflect round), with a note on the tools added to its system
message. The model is offered the judge's tools through its backend's native tool calling
(``show_task``, ``judge``, and ``profile`` and ``tune`` where they can run: the agent's
``ToolSession`` says which) and may call them, turn after turn, until it answers without a
call. Each call is run by the run's own judge and stored (``engine.tool_round``); a call that
is wrong in any way gets an error result back, and the model may try again.

A round's tools are bounded twice: by this generator's options (``max_tool_calls`` and
``max_tool_seconds`` per round: once either is spent, further calls are refused with an error
result and the next turn forbids tools, so the model must answer) and by the run's
``[run] max_tool_calls`` and ``max_tool_seconds`` (spent: the run stops, as when its LLM
calls are spent). The round's candidate is chosen by the agent: the last draft the judge
found correct, else the code of the final answer, else the last draft.
"""

from __future__ import annotations

from dataclasses import dataclass

from geak_agent_geak.generator import GeakGenerator
from geak_core.api.components import RoundContext, ToolSession
from geak_core.api.llm import Message


@dataclass
class ToolsOptions:
    """Recipe keys of ``[generator] name = "tools"``."""

    # tool calls one round may run; later calls of the round are refused and the model must answer
    max_tool_calls: int = 8
    # seconds of tool time (judging, profiling, tuning) one round may spend; then the same
    max_tool_seconds: float = 600.0

    def __post_init__(self) -> None:
        if self.max_tool_calls < 1:
            raise ValueError("max_tool_calls must be at least 1 (a round without tools is the geak generator's)")
        if self.max_tool_seconds <= 0:
            raise ValueError("max_tool_seconds must be more than 0")


CODE_TOOLS = ("judge", "profile", "tune")


def tools_note(names: list[str], options: ToolsOptions) -> str:
    """The paragraph a round's system message gains: which tools there are, what they are
    for, what the round may spend on them, and which draft is taken as the round's answer."""
    listed = ", ".join(f"`{name}`" for name in names)
    coded = [f"`{name}`" for name in names if name in CODE_TOOLS]
    lines = [
        "## Tools",
        f"Before your final answer you may call these tools: {listed}.",
        "Have your module judged (`judge`) and fix it until the judge finds it correct"
        + ("; `profile` tells where a correct module spends its time" if "profile" in names else "")
        + ("; `tune` searches its launch configuration" if "tune" in names else "") + ".",
        f"Give {' and '.join(coded)} the complete module as `code`." if coded else "",
        f"This round allows at most {options.max_tool_calls} tool calls and {options.max_tool_seconds:g} s of "
        "tool time; after that you must answer.",
        "The round's answer is the last module the judge found correct; without one, the module in your final "
        "answer, written in the format above.",
    ]
    return "\n".join(line for line in lines if line)


def with_tools_note(messages: list[Message], note: str) -> list[Message]:
    """``messages`` with ``note`` at the end of the system message (a system message of its
    own first, where there is none)."""
    at = next((i for i, m in enumerate(messages) if m.role == "system"), None)
    if at is None:
        return [Message("system", note), *messages]
    system = messages[at]
    return [*messages[:at], Message("system", f"{system.content.rstrip()}\n\n{note}"), *messages[at + 1:]]


class ToolsGenerator(GeakGenerator):
    """GEAK's generator whose rounds are conversations with the judge's tools."""

    needs_tool_calling = True

    def __init__(self, options: ToolsOptions | None = None) -> None:
        super().__init__(options)
        self.options = options or ToolsOptions()

    def converse(self, round: RoundContext, messages: list[Message], session: ToolSession) -> str:
        """Ask, run the calls the model asks for, and ask again with their results, until it
        answers without a call; once the round's tools are spent, refuse what it still asks
        and ask for its answer with tools forbidden. Returns its final answer."""
        options = self.options
        conversation = with_tools_note(messages, tools_note([t.name for t in session.tools], options))
        calls_left, seconds_left = options.max_tool_calls, options.max_tool_seconds
        choice = "auto"
        while True:
            response = session.ask(conversation, tool_choice=choice)
            calls = response.tool_calls[0]
            if not calls or choice == "none":
                return response.texts[0]
            conversation.append(response.message(0))
            for call in calls:
                if calls_left <= 0 or seconds_left <= 0:
                    outcome = session.refuse(call, f"this round's tools are spent ({options.max_tool_calls} calls, "
                                                   f"{options.max_tool_seconds:g} s): answer now")
                else:
                    outcome = session.call(call)
                    calls_left -= 1
                    seconds_left -= outcome.seconds
                conversation.append(Message.tool_result(call, outcome.content, is_error=outcome.is_error))
            if calls_left <= 0 or seconds_left <= 0:
                choice = "none"
