"""The chat format of the embedded model: pydantic-ai messages as the role/content dicts its chat template
renders, an answer begun for the model, tools as the template's schemas, and a reply read back into text and
the ``<tool_call>`` blocks (or a bare JSON call) it holds."""

from __future__ import annotations

import json
import re
import uuid
from typing import Any

from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    RetryPromptPart,
    SystemPromptPart,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.tools import ToolDefinition

_TOOL_CALL = re.compile(r"<tool_call>\s*(.*?)\s*(?:</tool_call>|$)", re.DOTALL)
_NAME = re.compile(r'"name"\s*:\s*"([^"]+)"')


def openai_messages(messages: list[ModelMessage]) -> list[dict[str, Any]]:
    """pydantic-ai messages as the role/content dicts a chat template expects."""
    out: list[dict[str, Any]] = []
    for m in messages:
        if isinstance(m, ModelRequest):
            for p in m.parts:
                if isinstance(p, SystemPromptPart):
                    out.append({"role": "system", "content": p.content})
                elif isinstance(p, UserPromptPart):
                    out.append({"role": "user", "content": p.content if isinstance(p.content, str) else str(p.content)})
                elif isinstance(p, ToolReturnPart):
                    out.append({"role": "tool", "content": p.model_response_str()})
                elif isinstance(p, RetryPromptPart):
                    out.append({"role": "user", "content": p.model_response()})
        elif isinstance(m, ModelResponse):
            calls = []
            for c in m.tool_calls:
                try:
                    args: Any = c.args_as_dict()
                except ValueError:
                    args = c.args
                calls.append({"type": "function", "function": {"name": c.tool_name, "arguments": args}})
            out.append({"role": "assistant", "content": m.text or "", "tool_calls": calls})
    # the template wants one leading system message
    systems = [i for i, msg in enumerate(out) if msg["role"] == "system"]
    if len(systems) > 1 or (systems and systems[0] != 0):
        merged = "\n\n".join(out[i]["content"] for i in systems)
        out = [{"role": "system", "content": merged}] + [msg for msg in out if msg["role"] != "system"]
    return out


def answer_begun(messages: list[ModelMessage]) -> str | None:
    """The text an answer was begun with, when the last message is a response of text alone (a prefill)."""
    last = messages[-1] if messages else None
    if isinstance(last, ModelResponse) and last.parts and all(isinstance(p, TextPart) for p in last.parts):
        return "".join(p.content for p in last.parts if isinstance(p, TextPart))
    return None


def tool_schemas(tools: list[ToolDefinition]) -> list[dict[str, Any]]:
    return [
        {
            "type": "function",
            "function": {"name": t.name, "description": t.description or "", "parameters": t.parameters_json_schema},
        }
        for t in tools
    ]


def parse_reply(text: str, tool_names: set[str]) -> list[TextPart | ToolCallPart]:
    """Text and tool calls from the model's raw output. Broken JSON is kept raw so the control unit can answer it."""
    parts: list[TextPart | ToolCallPart] = []
    calls = list(_TOOL_CALL.finditer(text))
    prose = _TOOL_CALL.sub("", text).strip()
    if not calls:
        bare = _bare_json_call(text, tool_names)
        if bare is not None:
            return [bare]
    if prose:
        parts.append(TextPart(prose))
    for m in calls:
        body = m.group(1).strip()
        call_id = f"call_{uuid.uuid4().hex[:12]}"
        try:
            obj = json.loads(body)
            name = str(obj.get("name", ""))
            args = obj.get("arguments", {})
            raw = args if isinstance(args, str) else json.dumps(args)
        except (json.JSONDecodeError, AttributeError):
            found = _NAME.search(body)
            name = found.group(1) if found else "unknown"
            after = body.split('"arguments"', 1)
            raw = after[1].lstrip(" :") if len(after) == 2 else body
            raw = raw.rstrip().removesuffix("}") if raw.rstrip().endswith("}}") else raw
        parts.append(ToolCallPart(name, raw, tool_call_id=call_id))
    return parts


def _bare_json_call(text: str, tool_names: set[str]) -> ToolCallPart | None:
    """A tool call written as a bare (or fenced) JSON object, as small models sometimes do."""
    stripped = text.strip()
    fenced = re.fullmatch(r"```(?:json)?\s*(\{.*\})\s*```", stripped, re.DOTALL)
    candidate = fenced.group(1) if fenced else stripped
    if not (candidate.startswith("{") and candidate.endswith("}")):
        return None
    try:
        obj = json.loads(candidate)
    except json.JSONDecodeError:
        return None
    if not isinstance(obj, dict) or obj.get("name") not in tool_names:
        return None
    args = obj.get("arguments", {})
    return ToolCallPart(
        str(obj["name"]),
        args if isinstance(args, str) else json.dumps(args),
        tool_call_id=f"call_{uuid.uuid4().hex[:12]}",
    )
