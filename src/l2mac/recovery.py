"""Recoveries for small models that answer in prose: a fenced code block that names its file becomes a write.

A 1.5B model often writes ```python blocks instead of calling ``write_files``. When the file name is clear (on
the line before the fence, or as a comment on the block's first line) the control unit turns the answer into
the ``write_files`` call the model meant, so the work is kept and the conversation stays well-formed.
"""

from __future__ import annotations

import json
import re
import uuid

from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart

_FENCE = re.compile(r"```[\w+-]*[^\n]*\n(.*?)```", re.DOTALL)
_PATH = r"([\w][\w./-]*\.(?:py|md|txt|json|toml|cfg|ini|yaml|yml|html|css|js|sh))"
_BEFORE = re.compile(r"(?:^|[\s*`'\"(:])" + _PATH + r"[\s*`'\"):]*$")
_FIRST_LINE = re.compile(r"^\s*(?:#|//|<!--)\s*(?:file(?:name)?\s*:\s*)?" + _PATH + r"\s*(?:-->)?\s*$", re.I)


def fenced_files(text: str) -> list[dict[str, str]]:
    """``[{"path", "content"}]`` for each fenced block whose file name is given."""
    files: dict[str, str] = {}
    for m in _FENCE.finditer(text):
        body = m.group(1)
        lines = body.splitlines()
        path = None
        if lines and (first := _FIRST_LINE.match(lines[0])):
            path = first.group(1)
        else:
            before = text[: m.start()].rstrip().splitlines()
            if before and (found := _BEFORE.search(before[-1].strip())):
                path = found.group(1)
        if path and ".." not in path.split("/"):
            files[path.lstrip("./") if path.startswith("./") else path] = body
    return [{"path": p, "content": c} for p, c in files.items()]


def recover_tool_calls(response: ModelResponse) -> ModelResponse | None:
    """The response with a ``write_files`` call for its named code blocks, or None if there is nothing to save."""
    if response.tool_calls:
        return None
    files = fenced_files(response.text or "")
    if not files:
        return None
    call = ToolCallPart("write_files", json.dumps({"files": files}), tool_call_id=f"recovered_{uuid.uuid4().hex[:8]}")
    note = TextPart((response.text or "").strip())
    return ModelResponse(parts=[note, call], usage=response.usage, model_name=response.model_name)
