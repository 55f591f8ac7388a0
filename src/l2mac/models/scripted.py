"""Scripted models for tests and demos: replies played in order, every request recorded.

A reply is a ``ModelResponse``, or a function of the request's messages that returns one (to answer what the
model was actually shown, e.g. a failing test with a fix).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.usage import RequestUsage

from l2mac.context import estimate_messages

Reply = ModelResponse | Callable[[list[ModelMessage]], ModelResponse]


def call(tool: str, args: dict[str, Any] | str | None = None, text: str = "") -> ModelResponse:
    """A response calling one tool (``args`` as a dict, or a raw string to play malformed JSON)."""
    raw = args if isinstance(args, str) else json.dumps(args or {})
    parts: list[Any] = [TextPart(text)] if text else []
    parts.append(ToolCallPart(tool, raw))
    return ModelResponse(parts=parts)


def calls(*pairs: tuple[str, dict[str, Any]]) -> ModelResponse:
    return ModelResponse(parts=[ToolCallPart(name, json.dumps(args)) for name, args in pairs])


def text(content: str) -> ModelResponse:
    return ModelResponse(parts=[TextPart(content)])


def last_tool_return(messages: Sequence[ModelMessage]) -> str:
    for m in reversed(messages):
        if isinstance(m, ModelRequest):
            for p in m.parts:
                if isinstance(p, ToolReturnPart):
                    return str(p.content)
    return ""


def last_user_text(messages: Sequence[ModelMessage]) -> str:
    for m in reversed(messages):
        if isinstance(m, ModelRequest):
            for p in reversed(m.parts):
                if isinstance(p, UserPromptPart) and isinstance(p.content, str):
                    return p.content
    return ""


@dataclass
class ScriptedModel:
    """Plays ``replies`` in order; raises AssertionError (a test failure) if the script runs out."""

    replies: list[Reply]
    name: str = "scripted"
    requests: list[list[ModelMessage]] = field(default_factory=list)
    tool_names: list[list[str]] = field(default_factory=list)
    temperatures: list[float | None] = field(default_factory=list)
    model: FunctionModel = field(init=False)

    def _answer(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        self.requests.append(list(messages))
        self.tool_names.append([t.name for t in info.function_tools])
        self.temperatures.append((info.model_settings or {}).get("temperature"))
        if not self.replies:
            raise AssertionError(f"script exhausted after {len(self.requests) - 1} replies")
        reply = self.replies.pop(0)
        response = reply(messages) if callable(reply) else reply
        # Deterministic usage: the estimate of what was sent, and of the answer.
        out = estimate_messages([response])
        return ModelResponse(
            parts=response.parts,
            usage=RequestUsage(input_tokens=estimate_messages(messages), output_tokens=out),
            model_name=self.name,
            finish_reason=response.finish_reason,
        )

    def __post_init__(self) -> None:
        self.model = FunctionModel(self._answer, model_name=self.name)

    @property
    def remaining(self) -> int:
        return len(self.replies)
