"""Completing a stub by continuation: the model's answer is started inside the function, after its docstring.

Asked to write a function while shown its signature and docstring, a small model answers with the same stub
(seen on most HumanEval+ tasks at 51f1ba8: the 1.5B model sent ``def f(...): \"\"\"...\"\"\"`` back, unchanged,
four to five times, and the step ended with no body). A code model is trained to *continue* code, so here the
answer is begun for it: the file's path, the opening fence, and the file up to the end of the stub's docstring.
What it writes next can only be the body. The body (and any new helper it writes after it) is put in place of
the stub; the rest of the file is kept as it was.

The stub comes from the file when it exists, else from the skeleton the step gives (a Python block in its text
that defines the file's functions as stubs): a given skeleton becomes the file's first state. It is used only
with a model that continues an answer the request begins (``ModelClient.continues``: the embedded model).
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass

from pydantic_ai.messages import ModelResponse, TextPart

from l2mac.checks.demands import is_stub_definition, names_for_file
from l2mac.fenced import fenced_blocks

_FENCE_END = re.compile(r"^\s*```")
_DEFINITIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


@dataclass(frozen=True)
class Opening:
    """Where an answer is begun: a stub (``name``) in ``path``, the file up to the end of its docstring
    (``head``), the file after the stub (``tail``), and the indentation of the stub's ``def``."""

    path: str
    name: str
    head: str
    tail: str
    indent: int
    body_indent: int
    owner: str | None = None  # the class the stub is a method of

    def prefill(self) -> str:
        """The beginning of the answer: the path, the fence, and the file up to the stub's docstring."""
        return f"{self.path}\n```python\n{self.head}\n"

    def begun(self) -> ModelResponse:
        """The begun answer, as the last message of a request: the model continues it."""
        return ModelResponse(parts=[TextPart(self.prefill())])

    def complete(self, continuation: str) -> str | None:
        """The file with the stub completed by ``continuation`` (what the model wrote after the prefill): its
        indented lines are the body; what follows them is kept where it completes the file (see ``_with``).
        None when the continuation holds no body."""
        lines = continuation.splitlines()
        if lines and lines[0].strip() and _column(lines[0]) <= self.indent:  # its indentation was stripped
            lines[0] = " " * self.body_indent + lines[0].lstrip()
        body: list[str] = []
        rest: list[str] = []
        for i, line in enumerate(lines):
            if _FENCE_END.match(line):
                break
            if line.strip() and _column(line) <= self.indent:
                rest = lines[i:]
                break
            body.append(line)
        while body and not body[-1].strip():
            body.pop()
        if not any(x.strip() for x in body):
            return None
        gap = "\n\n\n" if self.indent == 0 else "\n\n"  # blank lines between definitions, as PEP 8 has them
        text = "\n".join([self.head, *body])
        tail = self.tail.strip("\n")
        text = f"{text}{gap}{tail}\n" if tail.strip() else f"{text}\n"
        return self._with(text, rest[: next((i for i, x in enumerate(rest) if _FENCE_END.match(x)), len(rest))])

    def _with(self, text: str, rest: list[str]) -> str:
        """``text`` with what the model wrote after the body, at the same level (the module, or the stub's
        class): a definition of a later stub replaces that stub, a new definition goes after the completed
        function, a new import to the top; the rest is dropped (the file's own definitions are kept)."""
        pad = " " * self.indent
        written = "\n".join(x[self.indent :] if x.startswith(pad) else x for x in rest)
        try:
            wrote, tree = ast.parse(written), ast.parse(text)
        except SyntaxError:
            return text
        owner = next((n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == self.owner), None)
        scope = owner.body if owner is not None else tree.body
        members = {n.name: n for n in scope if isinstance(n, _DEFINITIONS)}
        done = members.get(self.name)
        if done is None or (self.owner is not None and owner is None):
            return text
        lines, source = text.splitlines(), written.splitlines()
        edits: list[tuple[int, int, list[str]]] = []  # replace lines[start:end] with the lines given
        for node in wrote.body:
            if isinstance(node, (ast.Import, ast.ImportFrom)) and self.indent == 0:
                line = ast.get_source_segment(written, node) or ""
                edits += [(0, 0, [line])] if line and line not in text else []
            elif isinstance(node, _DEFINITIONS) and node.name != self.name:
                new = [pad + x if x.strip() else x for x in source[_first_line(node) - 1 : node.end_lineno]]
                old = members.get(node.name)
                if old is None:
                    at = done.end_lineno or done.lineno
                    edits.append((at, at, ["", *([""] if self.indent == 0 else []), *new]))
                elif isinstance(old, (ast.FunctionDef, ast.AsyncFunctionDef)) and is_stub_definition(old, owner):
                    edits.append((_first_line(old) - 1, old.end_lineno or old.lineno, new))
        for start, end, new in sorted(edits, key=lambda e: e[0], reverse=True):
            lines[start:end] = new
        return "\n".join(lines) + "\n"


def find_opening(path: str, source: str, names: list[str]) -> Opening | None:
    """The first stub in ``source`` (file ``path``) of a function named in ``names``, or of a method of a class
    named there (interfaces and abstract methods are meant to be stubs); None when there is none."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return None
    wanted = set(names)
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name in wanted:
            if is_stub_definition(node):
                return _opening(path, source, node)
        elif isinstance(node, ast.ClassDef):
            methods = [m for m in node.body if isinstance(m, (ast.FunctionDef, ast.AsyncFunctionDef))]
            for m in methods:
                if (node.name in wanted or m.name in wanted) and is_stub_definition(m, node):
                    return _opening(path, source, m, node.name)
    return None


def step_opening(instruction: str, path: str) -> Opening | None:
    """Where an answer writing ``path`` afresh is begun: the first stub of the skeleton the step gives it."""
    names = names_for_file(instruction, path)
    skeleton = given_skeleton(instruction, names)
    return find_opening(path, skeleton, names) if skeleton else None


def given_skeleton(instruction: str, names: list[str]) -> str | None:
    """The skeleton a step gives for a file: the first Python block in its text that parses and defines one of
    ``names`` (or a class holding one) as a stub."""
    for _, body in fenced_blocks(instruction):
        if find_opening("", body, names) is not None:
            return body.strip("\n") + "\n"
    return None


def _opening(path: str, source: str, fn: ast.FunctionDef | ast.AsyncFunctionDef, owner: str | None = None) -> Opening:
    lines = source.splitlines()
    doc = fn.body[0] if fn.body and _is_docstring(fn.body[0]) else None
    # the head ends after the docstring, else after the signature (the line before the first body statement)
    last = doc.end_lineno if doc is not None and doc.end_lineno else fn.body[0].lineno - 1
    if doc is None and fn.body and fn.body[0].lineno == fn.lineno:  # ``def f(): pass`` on one line
        signature = lines[fn.lineno - 1]
        head_lines = [*lines[: fn.lineno - 1], signature[: signature.rindex(":") + 1]]
    else:
        head_lines = lines[: max(last, fn.lineno)]
    tail = "\n".join(lines[fn.end_lineno or fn.lineno :])
    body_indent = doc.col_offset if doc is not None else fn.col_offset + 4
    return Opening(path, fn.name, "\n".join(head_lines), tail, fn.col_offset, body_indent, owner)


def _is_docstring(node: ast.stmt) -> bool:
    return isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)


def _column(line: str) -> int:
    return len(line) - len(line.lstrip())


def _first_line(node: ast.stmt) -> int:
    """A definition's first line, its decorators included."""
    decorators: list[ast.expr] = getattr(node, "decorator_list", [])
    return min([node.lineno, *(d.lineno for d in decorators)])
