"""Recoveries for small models that answer in prose: a fenced code block that names its file becomes a write.

A 1.5B model often writes ```python blocks instead of calling ``write_files``. When the file name is clear (on
the line before the fence, or as a comment on the block's first line) the control unit turns the answer into
the ``write_files`` call the model meant, so the work is kept and the conversation stays well-formed.
"""

from __future__ import annotations

import ast
import json
import re
import textwrap
import uuid
from dataclasses import dataclass
from typing import Any

from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart

from l2mac.checks.autofix import import_line

_FENCE = re.compile(r"```[\w+-]*[^\n]*\n(.*?)```", re.DOTALL)
_PATH = r"([\w][\w./-]*\.(?:py|md|txt|json|toml|cfg|ini|yaml|yml|html|css|js|sh))"
_BEFORE = re.compile(r"(?:^|[\s*`'\"(:])" + _PATH + r"[\s*`'\"):]*$")
_ANY_PATH = re.compile(r"(?<![\w/.-])" + _PATH + r"(?![\w/-])")
_FIRST_LINE = re.compile(r"^\s*(?:#|//|<!--)\s*(?:file(?:name)?\s*:\s*)?" + _PATH + r"\s*(?:-->)?\s*$", re.I)


def fenced_files(text: str) -> list[dict[str, str]]:
    """``[{"path", "content"}]`` for each fenced block whose file name is given."""
    files: dict[str, str] = {}
    for path, body in fenced_blocks(text):
        if path is not None:
            files[path] = body
    return [{"path": p, "content": c} for p, c in files.items()]


def unnamed_blocks(text: str, lang: str = "python") -> list[str]:
    """The bodies of fenced blocks that name no file (``lang`` blocks, or blocks with no language)."""
    out = []
    for block in _blocks(text):
        if block.tag in ("", lang) and block.body.strip() and _named(text, block) is None:
            out.append(_body(block))
    return out


@dataclass(frozen=True)
class _Block:
    """One fenced block of an answer: where its opening fence starts, its info string (lower case), its text."""

    start: int
    tag: str
    body: str


#: a line that opens a fenced block inside a Markdown block: a fence with an info string ("```sh")
_INNER_OPEN = re.compile(r"^\s*```+[\w+-]+")
#: a line that is only a fence: closes the innermost open block
_BARE_FENCE = re.compile(r"^\s*```+\s*$")


def _blocks(text: str) -> list[_Block]:
    """The fenced blocks of ``text``. A ``markdown`` block may hold fenced blocks of its own (a README's
    examples): they are part of its text, and only the fence that closes it ends it (seen: README.md cut
    at "To install the todo app, run:", the line before its first ```sh example)."""
    out: list[_Block] = []
    pos = 0
    while m := _FENCE.search(text, pos):
        tag = m.group(0)[3:].split("\n", 1)[0].strip().lower()
        body, pos = m.group(1), m.end()
        if tag in ("markdown", "md"):
            body, pos = _markdown_body(text, m.start(1))
        out.append(_Block(m.start(), tag, body))
    return out


def _markdown_body(text: str, begin: int) -> tuple[str, int]:
    """The text of a Markdown block whose body starts at ``begin``, and where its closing fence ends; an
    unclosed block runs to the end of ``text``."""
    depth, at = 0, begin
    for line in text[begin:].splitlines(keepends=True):
        if _BARE_FENCE.match(line):
            if depth == 0:
                return text[begin:at], at + len(line.rstrip("\n"))
            depth -= 1
        elif _INNER_OPEN.match(line):
            depth += 1
        at += len(line)
    return text[begin:], len(text)


def _body(block: _Block) -> str:
    """A block's text, without the indent every line shares: a block inside a Markdown list item comes
    indented, and a small model then copies that indent into every later answer (seen: "unexpected indent"
    at line 1 of a test file, eight answers in a row)."""
    return textwrap.dedent(block.body)


def _named(text: str, block: _Block) -> str | None:
    lines = block.body.splitlines()
    if lines and (first := _FIRST_LINE.match(lines[0])):
        return first.group(1)
    before = text[: block.start].rstrip().splitlines()
    last = before[-1].strip() if before else ""
    if found := _BEFORE.search(last):
        return found.group(1)
    if last.endswith(":") and len(named := set(_ANY_PATH.findall(last))) == 1:
        return str(named.pop())  # "Here is the corrected `todo/core.py` file:"
    return None


def fenced_blocks(text: str) -> list[tuple[str | None, str]]:
    """Each fenced block with the file it names (or None)."""
    out: list[tuple[str | None, str]] = []
    for block in _blocks(text):
        path = _named(text, block)
        if path and ".." not in path.split("/"):
            out += _split_concatenated(path.removeprefix("./"), _body(block))
        else:
            out.append((None, _body(block)))
    return out


def _split_concatenated(path: str, body: str) -> list[tuple[str | None, str]]:
    """One block holding several files, each introduced by a ``# path`` comment line, split into them."""
    pieces: list[tuple[str | None, str]] = []
    current: str | None = path
    lines: list[str] = []
    for line in body.splitlines(keepends=True):
        found = _FIRST_LINE.match(line.rstrip("\n"))
        if found and lines and found.group(1) != current and any(x.strip() for x in lines):
            pieces.append((current, "".join(lines)))
            current, lines = found.group(1), []
        lines.append(line)
    pieces.append((current, "".join(lines)))
    return pieces


def merge_definitions(source: str, snippet: str) -> str | None:
    """``source`` with the top-level functions and classes of ``snippet`` put in place of those of the same name.

    Small models often answer a failure with just the corrected function. When the snippet holds only
    imports and definitions, and ``source`` already defines every one of them, the result is the whole file
    with those definitions replaced (and the snippet's missing imports added at the top); otherwise None."""
    try:
        new_tree, old_tree = ast.parse(snippet), ast.parse(source)
    except SyntaxError:
        return None
    defs = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
    new_defs = [n for n in new_tree.body if isinstance(n, defs)]
    imports = [n for n in new_tree.body if isinstance(n, (ast.Import, ast.ImportFrom))]
    if not new_defs or len(new_defs) + len(imports) != len(new_tree.body):
        return None
    old_defs = {n.name: n for n in old_tree.body if isinstance(n, defs)}
    if any(n.name not in old_defs for n in new_defs):
        return None
    snippet_lines, lines = snippet.splitlines(), source.splitlines()

    def span(node: ast.stmt) -> tuple[int, int]:
        first = min([node.lineno, *(d.lineno for d in getattr(node, "decorator_list", []))])
        return first - 1, node.end_lineno or node.lineno

    replacements = []
    for node in new_defs:
        a, b = span(node)
        replacements.append((span(old_defs[node.name]), snippet_lines[a:b]))
    for (a, b), new in sorted(replacements, reverse=True):
        lines[a:b] = new
    have = {ast.unparse(n) for n in old_tree.body if isinstance(n, (ast.Import, ast.ImportFrom))}
    missing = [ast.unparse(n) for n in imports if ast.unparse(n) not in have]
    head = import_line(old_tree)  # definitions come after it, so replacing them first leaves it valid
    lines[head:head] = missing
    merged = "\n".join(lines) + "\n"
    return None if merged == source else merged


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
    for candidate in [block.body for block in _blocks(text)] or [text]:
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
