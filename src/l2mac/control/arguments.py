"""Recovering tool calls from what a small model wrote instead: Python-literal arguments re-encoded as JSON, and
an answer in prose whose fenced blocks name their files read as the ``write_files`` call it meant.

Only the tool-call protocol's answers, and a text-protocol answer that holds a ``write_files`` call written out
as JSON, go through here.
"""

from __future__ import annotations

import ast
import json
import textwrap
import uuid
from typing import Any

from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart

from l2mac.fenced import blocks, fenced_files


def lenient_json(text: str) -> Any:
    """``text`` parsed as JSON, or failing that as the Python literal small models often write instead
    (triple-quoted strings, single quotes, trailing commas); None when it is neither."""
    try:
        return json.loads(text, strict=False)
    except json.JSONDecodeError:
        pass
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except (SyntaxError, ValueError):
        return None
    consts = {"true": True, "false": False, "null": None}

    class _JsonNames(ast.NodeTransformer):
        def visit_Name(self, node: ast.Name) -> ast.AST:
            return ast.Constant(consts[node.id]) if node.id in consts else node

    try:
        return ast.literal_eval(_JsonNames().visit(tree))
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return None


def _clean_content(content: str) -> str:
    """File content from a triple-quoted string: no leading blank line, common indentation removed."""
    return textwrap.dedent(content.lstrip("\n")).rstrip() + "\n"


def json_files(text: str) -> list[dict[str, str]]:
    """Files from a ``write_files`` call written as text (bare or fenced JSON, or a Python-style literal)."""
    out: list[dict[str, str]] = []
    for candidate in [block.body for block in blocks(text)] or [text]:
        start, end = candidate.find("{"), candidate.rfind("}")
        if start < 0 or end <= start:
            continue
        value = lenient_json(candidate[start : end + 1])
        if isinstance(value, dict) and isinstance(value.get("arguments"), dict):
            value = value["arguments"]
        files = value.get("files") if isinstance(value, dict) else None
        for f in files if isinstance(files, list) else []:
            path, content = (f.get("path"), f.get("content")) if isinstance(f, dict) else (None, None)
            if isinstance(path, str) and isinstance(content, str) and ".." not in path.split("/"):
                out.append({"path": path, "content": _clean_content(content)})
    return out


def recover_arguments(raw: str) -> str | None:
    """Arguments that are not JSON but a readable literal, re-encoded as JSON; None if nothing is recoverable."""
    try:
        json.loads(raw)
        return None
    except json.JSONDecodeError:
        pass
    value = lenient_json(raw)
    if not isinstance(value, dict):
        return None
    files = value.get("files")
    if isinstance(files, list):
        for f in files:
            if isinstance(f, dict) and isinstance(f.get("content"), str):
                f["content"] = _clean_content(f["content"])
    return json.dumps(value)


def recover_tool_calls(response: ModelResponse) -> ModelResponse | None:
    """The response with a ``write_files`` call for its named code blocks, or None if there is nothing to save."""
    if response.tool_calls:
        return None
    files = fenced_files(response.text or "") or json_files(response.text or "")
    if not files:
        return None
    call = ToolCallPart("write_files", json.dumps({"files": files}), tool_call_id=f"recovered_{uuid.uuid4().hex[:8]}")
    note = TextPart((response.text or "").strip())
    return ModelResponse(parts=[note, call], usage=response.usage, model_name=response.model_name)
