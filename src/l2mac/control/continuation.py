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

    def prefill(self) -> str:
        """The beginning of the answer: the path, the fence, and the file up to the stub's docstring."""
        return f"{self.path}\n```python\n{self.head}\n"

    def begun(self) -> ModelResponse:
        """The begun answer, as the last message of a request: the model continues it."""
        return ModelResponse(parts=[TextPart(self.prefill())])

    def complete(self, continuation: str) -> str | None:
        """The file with the stub completed by ``continuation`` (what the model wrote after the prefill): its
        indented lines are the body; after them, new top-level definitions and imports are kept (for a function
        at the top level). None when the continuation holds no body."""
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
        helpers, imports = self._helpers(rest) if self.indent == 0 else ([], [])
        head = "\n".join([*imports, self.head]) if imports else self.head
        gap = "\n\n\n" if self.indent == 0 else "\n\n"  # blank lines between definitions, as PEP 8 has them
        text = "\n".join([head, *body]) + "".join(f"{gap}{h}" for h in helpers)
        tail = self.tail.strip("\n")
        return f"{text}{gap}{tail}\n" if tail.strip() else f"{text}\n"

    def _helpers(self, rest: list[str]) -> tuple[list[str], list[str]]:
        """New top-level functions and classes, and new imports, written after the body (up to the fence)."""
        end = next((i for i, x in enumerate(rest) if _FENCE_END.match(x)), len(rest))
        try:
            tree = ast.parse("\n".join(rest[:end]))
        except SyntaxError:
            return [], []
        source = "\n".join(rest[:end])
        known = _defined(f"{self.head}\n{self.tail}")
        helpers = [
            ast.get_source_segment(source, n) or ""
            for n in tree.body
            if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and n.name not in known
        ]
        have = f"{self.head}\n{self.tail}"
        imports = [
            seg
            for n in tree.body
            if isinstance(n, (ast.Import, ast.ImportFrom))
            and (seg := ast.get_source_segment(source, n) or "")
            and seg not in have
        ]
        return [h for h in helpers if h], imports


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
                    return _opening(path, source, m)
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


def _opening(path: str, source: str, fn: ast.FunctionDef | ast.AsyncFunctionDef) -> Opening:
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
    return Opening(path, fn.name, "\n".join(head_lines), tail, fn.col_offset, body_indent)


def _is_docstring(node: ast.stmt) -> bool:
    return isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)


def _column(line: str) -> int:
    return len(line) - len(line.lstrip())


def _defined(source: str) -> set[str]:
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return set()
    return {n.name for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))}
