"""The tool mechanism: a tool is a pydantic argument model plus a function; its schema comes from the model.

``Toolbox.call`` never raises for a bad call: unknown tools, invalid JSON and invalid arguments are answered
to the model with the error and the expected schema.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ValidationError
from pydantic_ai.tools import ToolDefinition

from l2mac.checks.env import ToolEnv
from l2mac.errors import WorkspaceError
from l2mac.types import ToolResult


def _not_run(_: Any, __: ToolEnv) -> ToolResult:  # pragma: no cover - such calls are intercepted
    raise NotImplementedError("this tool's calls are handled by whoever offers it")


@dataclass(frozen=True)
class Tool:
    """A tool: its name, what it does, its arguments (a pydantic model: the schema the model sees) and the
    function that runs it. A tool whose calls its caller handles itself (``step_complete``, the agents' tools)
    has no function."""

    name: str
    description: str
    args: type[BaseModel]
    run: Callable[[Any, ToolEnv], ToolResult] = _not_run

    def definition(self) -> ToolDefinition:
        """The tool as a model sees it: the one place a schema becomes a tool definition."""
        schema = self.args.model_json_schema()
        schema.pop("title", None)
        return ToolDefinition(name=self.name, description=self.description, parameters_json_schema=schema)


def _schema_hint(tool: Tool) -> str:
    return json.dumps(tool.definition().parameters_json_schema, separators=(",", ":"))


def parse_arguments(raw: str | Mapping[str, Any] | None) -> dict[str, Any]:
    """Arguments as a dict; raises ValueError with a readable reason."""
    if raw is None or raw == "":
        return {}
    if isinstance(raw, Mapping):
        return dict(raw)
    try:
        value = json.loads(raw)
    except json.JSONDecodeError as e:
        raise ValueError(f"the arguments are not valid JSON ({e.msg} at line {e.lineno} column {e.colno})") from e
    if not isinstance(value, dict):
        raise ValueError("the arguments must be a JSON object")
    return value


class Toolbox:
    """The tools one context may call."""

    def __init__(self, tools: list[Tool], env: ToolEnv) -> None:
        self.tools = {t.name: t for t in tools}
        self.env = env

    def definitions(self) -> list[ToolDefinition]:
        return [t.definition() for t in self.tools.values()]

    def validate(self, name: str, raw: str | Mapping[str, Any] | None) -> BaseModel | ToolResult:
        """The validated arguments, or the error answer for the model."""
        tool = self.tools.get(name)
        if tool is None:
            return ToolResult(f"Error: unknown tool {name!r}. Available tools: {', '.join(self.tools)}.", ok=False)
        try:
            return tool.args.model_validate(parse_arguments(raw))
        except ValueError as e:
            if isinstance(e, ValidationError):
                problems = "; ".join(
                    f"{'.'.join(str(p) for p in err['loc']) or 'arguments'}: {err['msg']}" for err in e.errors()
                )
                reason = f"invalid arguments ({problems})"
            else:
                reason = str(e)
            return ToolResult(
                f"Error calling {name}: {reason}. Call it again with arguments matching this JSON schema: "
                f"{_schema_hint(tool)}",
                ok=False,
            )

    def call(self, name: str, raw: str | Mapping[str, Any] | None) -> ToolResult:
        args = self.validate(name, raw)
        if isinstance(args, ToolResult):
            return args
        try:
            return self.tools[name].run(args, self.env)
        except (WorkspaceError, FileNotFoundError, IsADirectoryError, NotADirectoryError, UnicodeError) as e:
            return ToolResult(f"Error: {e}", ok=False)
        except OSError as e:
            return ToolResult(f"Error: {type(e).__name__}: {e}", ok=False)
