"""Token accounting for one context: how full it is, and whether the next turn still fits."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass

from pydantic_ai.messages import ModelMessage, ModelRequest, ModelResponse, ToolCallPart

CHARS_PER_TOKEN = 3.5
PER_MESSAGE_TOKENS = 6


def estimate_tokens(text: str) -> int:
    """A provider-neutral estimate, deliberately on the high side for code (about 3.5 characters a token)."""
    return int(len(text) / CHARS_PER_TOKEN) + 1


def _part_text(part: object) -> str:
    if isinstance(part, ToolCallPart):
        args = part.args if isinstance(part.args, str) else json.dumps(part.args or {})
        return part.tool_name + args
    content = getattr(part, "content", "")
    return content if isinstance(content, str) else json.dumps(content, default=str)


def estimate_messages(messages: Sequence[ModelMessage]) -> int:
    total = 0
    for m in messages:
        total += PER_MESSAGE_TOKENS
        if isinstance(m, (ModelRequest, ModelResponse)):
            total += sum(estimate_tokens(_part_text(p)) for p in m.parts)
    return total


@dataclass(frozen=True)
class ContextBudget:
    """A window of ``window`` tokens of which ``margin`` (a share) stays free and ``reply`` is kept for answers."""

    window: int
    reply: int
    margin: float = 0.2

    @property
    def limit(self) -> int:
        """Most prompt tokens a request may carry before the context must be summarised and restarted."""
        return max(256, int(self.window * (1 - self.margin)) - self.reply)

    def used(self, messages: Sequence[ModelMessage], reported_input: int = 0) -> int:
        """Tokens the context holds: the estimate, or the provider's count of the last request if larger."""
        return max(estimate_messages(messages), reported_input)

    def fits(self, messages: Sequence[ModelMessage], reported_input: int = 0) -> bool:
        return self.used(messages, reported_input) <= self.limit

    def output_chars(self) -> int:
        """How much tool output one answer may bring in: a tenth of the window, at least 2,000 characters."""
        return max(2000, int(self.window * CHARS_PER_TOKEN / 10))
