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
from dataclasses import dataclass, replace
from typing import NamedTuple

from pydantic_ai.messages import ModelResponse, TextPart

from l2mac.checks.autofix import DOES_NOTHING, import_line
from l2mac.checks.contract import given_skeleton, parses
from l2mac.checks.demands import SIGNATURE, is_stub_definition, is_stub_shaped, mentioned_files, names_for_file
from l2mac.checks.layout import is_test_file
from l2mac.checks.repairs import definition_span, merge_definitions
from l2mac.fenced import fenced_blocks

_FENCE_END = re.compile(r"^\s*```")
_DEFINITIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
#: a line that starts a definition: the model wrote the function (or another) whole, not a body
_DEFINITION = re.compile(r"(?:async\s+def|def|class)\s|@")


class Completed(NamedTuple):
    """A stub completed by a continuation: the file, and whether its body ``ended`` before the answer did (a line
    back at the ``def``'s indentation, or the block's closing fence). An ended body is whole even when the answer
    was cut off later, in what the model went on to write (seen: a correct body, then copies of it and of its
    tests until the length limit)."""

    text: str
    ended: bool


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
    rewrite: bool = False  # a whole function's new body, not a stub's (an answer that is no body is dropped)
    #: the stubs after this one in its scope (its class, or the module), each as its text up to the end of its
    #: docstring: given to the answer where the model would copy them (see l2mac.models.local.given)
    later_stubs: tuple[tuple[str, str], ...] = ()
    #: the other functions of its scope that have a body: the answer ends where the model begins to copy one
    bodied: tuple[str, ...] = ()
    #: what the answer is begun with inside the body: its indentation, once an answer begun at the docstring's
    #: end held no body (see :meth:`indented`)
    lead: str = ""
    #: the answer only ends the function: its body is kept and the answer is begun at a ``return`` after it
    #: (see :func:`return_opening`)
    ends: bool = False
    #: the file that imports the function, where it is written for that file (see :func:`used_stub`)
    used_by: str = ""

    def prefill(self) -> str:
        """The beginning of the answer: the path, the fence, and the file up to the stub's docstring."""
        return f"{self.path}\n```python\n{self.head}\n{self.lead}"

    def indented(self) -> Opening:
        """This opening, begun one step further: at the body's indentation, so what comes next is a statement.
        Seen on ClassEval at 42ff847: begun after the docstring of a class's last method, where the skeleton
        ends, the 1.5B model closed the block at once, and again each time it was asked (same request, same
        answer), until the step failed with the method still a stub. The lead is one space short: code is
        tokenized with a word's space in the word, so the model's next token is `` return`` (begun at the
        full indentation, Qwen2.5-Coder wrote a ninth space); a first line indented otherwise is re-indented."""
        return replace(self, lead=" " * (self.body_indent - 1))

    def elided(self) -> str:
        """The file with the function's body left out (``...`` in its place): how it is shown while its body
        is rewritten, so the old body is not copied back."""
        tail = self.tail.strip("\n")
        if self.ends:  # its body is kept: the file as it is
            return self.head + (f"{self._gap}{tail}\n" if tail.strip() else "\n")
        return "\n".join([self.head, " " * self.body_indent + "..."]) + (
            f"{self._gap}{tail}\n" if tail.strip() else "\n"
        )

    def given(self) -> dict[str, str]:
        """The later stubs' text by name, and the complete functions' indentation (where the answer ends), for
        the request (``ModelClient.request(given=...)``); the function itself is one of those: an answer that
        writes it again after its body is copying it (seen on a change to python-slugify: unique_slugify's body,
        then the whole function again, with its docstring, eight times, to the answer's token limit)."""
        ends = {name: " " * self.indent for name in (*self.bodied, self.name)}
        return {**ends, **dict(self.later_stubs)}

    def begun(self) -> ModelResponse:
        """The begun answer, as the last message of a request: the model continues it."""
        return ModelResponse(parts=[TextPart(self.prefill())])

    def complete(self, continuation: str) -> str | None:
        """The file with the stub completed by ``continuation`` (see :meth:`completion`), or None."""
        completed = self.completion(continuation)
        return completed.text if completed else None

    def completion(self, continuation: str) -> Completed | None:
        """The file with the stub completed by ``continuation`` (what the model wrote after the prefill): its
        indented lines are the body; what follows them is kept where it completes the file (``_with``). None
        when the continuation holds no body, or the file would not parse (the answer is then read as usual)."""
        lines = (self.lead + continuation).splitlines()
        while lines and not lines[0].strip():
            lines.pop(0)
        if lines and _column(lines[0]) < self.body_indent and not _DEFINITION.match(lines[0].lstrip()):
            lines[0] = " " * self.body_indent + lines[0].lstrip()  # its indentation was stripped on the way
        end = next((i for i, x in enumerate(lines) if _FENCE_END.match(x)), len(lines))
        cut = next((i for i, x in enumerate(lines[:end]) if x.strip() and _column(x) <= self.indent), end)
        body = lines[:cut]
        while body and not body[-1].strip():
            body.pop()
        if all(DOES_NOTHING.match(x.strip()) for x in body):
            return None  # no body, or a stub again (seen on the URL shortener at 5c074b4: `pass`, twice)
        tail = self.tail.strip("\n")
        text = "\n".join([self.head, *body]) + (f"{self._gap}{tail}\n" if tail.strip() else "\n")
        if not parses(text):
            return None
        rest = lines[cut:end]
        top = next((i for i, x in enumerate(rest) if x.strip() and _column(x) == 0), len(rest))
        if self.owner is not None:  # the class's members first, then what the model wrote at the module level
            text = self._with(text, rest[:top], in_class=True)
        text = self._with(text, rest[top:] if self.owner is not None else rest, in_class=False)
        return Completed(text, ended=cut < len(lines))

    @property
    def _gap(self) -> str:
        """Blank lines between definitions, as PEP 8 has them."""
        return "\n\n" if self.indent else "\n\n\n"

    def _with(self, text: str, written: list[str], *, in_class: bool) -> str:
        """``text`` with definitions the model wrote after the body, in the stub's class (``in_class``) or at the
        module level: one for a stub replaces that stub, a new one goes after the completed function (or its
        class), a new import goes where imports go; the file's own complete definitions are kept. ``text`` as
        it was when they do not parse or the result would not."""
        pad = " " * (self.indent if in_class else 0)
        source = "\n".join(x[len(pad) :] if x.startswith(pad) else x for x in written)
        try:
            wrote, tree = ast.parse(source), ast.parse(text)
        except SyntaxError:
            return text
        owner = next((n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == self.owner), None)
        scope = owner.body if in_class and owner is not None else tree.body
        members = {n.name: n for n in scope if isinstance(n, _DEFINITIONS)}
        anchor = owner if owner is not None and not in_class else members.get(self.name)
        if anchor is None:
            return text
        lines, new_lines = text.splitlines(), source.splitlines()
        edits: list[tuple[int, int, list[str]]] = []  # lines[start:end] become the lines given
        after = anchor.end_lineno or anchor.lineno
        code = not is_test_file(self.path)
        # read anywhere (called, passed as a handler, used as a decorator ``@cli.command()``): not litter
        called = {n.id for t in (tree, wrote) for n in ast.walk(t) if isinstance(n, ast.Name)}
        for node in wrote.body:
            if (code and _test_material(node)) or _empty_helper(node, {*members, *called}, in_class):
                continue
            if isinstance(node, _DEFINITIONS) and node.name != self.name:
                start, stop = definition_span(node)
                new = [pad + x if x.strip() else x for x in new_lines[start:stop]]
                old = members.get(node.name)
                if old is None:
                    edits.append((after, after, [*([""] * (len(self._gap) - 1 if in_class else 2)), *new]))
                elif isinstance(old, (ast.FunctionDef, ast.AsyncFunctionDef)) and is_stub_definition(
                    old, owner if in_class else None
                ):
                    edits.append((*definition_span(old), new))
        have = {ast.unparse(n) for n in tree.body if isinstance(n, (ast.Import, ast.ImportFrom))}
        imports = [
            u
            for n in wrote.body
            if isinstance(n, (ast.Import, ast.ImportFrom)) and not (code and _test_material(n))
            if (u := ast.unparse(n))
        ]
        if missing := [u for u in dict.fromkeys(imports) if u not in have]:
            edits.append((import_line(tree), import_line(tree), missing))
        for start, stop, new in sorted(edits, key=lambda e: e[0], reverse=True):
            lines[start:stop] = new
        result = "\n".join(lines) + "\n"
        return result if parses(result) else text


def _empty_helper(node: ast.stmt, known: set[str], in_class: bool) -> bool:
    """Whether ``node``, written after a completed body, is a module-level function with no body that nothing
    names and the file does not have: litter (seen in real runs: ``def parse_args(): pass`` after main()'s body,
    kept in the module)."""
    if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) or node.decorator_list:
        return False  # a decorated one is registered somewhere (``@click.group() def cli(): pass``)
    return is_stub_shaped(node) and not in_class and node.name not in known


def _test_material(node: ast.stmt) -> bool:
    """A test, a test class, a fixture or a pytest import: what a small model writes after a body it completed
    (seen on HumanEval+: test functions and ``import pytest`` carried into solution.py, which the scorer, without
    pytest, could not import); in a code file it is dropped, the tests belong in the test file."""
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        modules = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
        return any(m.split(".")[0] == "pytest" for m in modules)
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        fixture = any("fixture" in ast.unparse(d) for d in node.decorator_list)
        return node.name == "test" or node.name.startswith("test_") or fixture  # not testing_mode()
    if not isinstance(node, ast.ClassDef):
        return False
    tests = any(isinstance(m, ast.FunctionDef) and m.name.startswith("test_") for m in node.body)
    return tests and re.match(r"Test[A-Z_]|Test$", node.name) is not None  # not Testimonial, nor a TestResult


def opens_block(text: str, start: str) -> bool:
    """Whether an answer begun with ``start`` (a file's path and opening fence) opens a block of its own instead
    of continuing: a file's path alone on its first line and a fence on the next (this file's or another's, as
    a small model answers with the file it would rather write), or a fence with its language."""
    head = text.lstrip()
    first, _, rest = head.partition("\n")
    path = first.strip()
    return (mentioned_files(path) == [path] and rest.startswith("```")) or re.match(r"```\w", head) is not None


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
                return _opening(path, source, tree, node)
        elif isinstance(node, ast.ClassDef):
            methods = [m for m in node.body if isinstance(m, (ast.FunctionDef, ast.AsyncFunctionDef))]
            for m in methods:
                if (node.name in wanted or m.name in wanted) and is_stub_definition(m, node):
                    return _opening(path, source, tree, m, node.name)
    return None


def function_opening(path: str, source: str, name: str, owner: str | None = None) -> Opening | None:
    """Where an answer rewriting function ``name`` (a method of ``owner``) of ``source`` is begun: after its
    docstring, its old body left out, so what the model writes is its new body. None when there is no such
    function."""
    found = find_function(source, name, owner)
    if found is None:
        return None
    tree, fn = found
    return replace(_opening(path, source, tree, fn, owner), rewrite=True)


def return_opening(
    path: str, source: str, name: str, owner: str | None = None, flagged: set[int] | None = None
) -> Opening | None:
    """Where an answer ending function ``name`` (a method of ``owner``) with the value it returns is begun: after
    its body (less a bare ``return`` that ends it), at a ``return``: a slot to fill, not a body to write again.
    Seen on ClassEval_8 at 6b6580a: told deposit() returns nothing its docstring says it returns, the 1.5B model
    sent the same body without a ``return`` six times, at rising temperatures. ``flagged``: the lines of
    ``path`` a report names; when one inside the function is not its ``def`` line (where that is said), the
    body has another problem and is not kept: None, as when there is no such function."""
    found = find_function(source, name, owner)
    if found is None:
        return None
    tree, fn = found
    if flagged is not None and flagged & set(range(fn.lineno, (fn.end_lineno or fn.lineno) + 1)) != {fn.lineno}:
        return None
    last = fn.body[-1]
    bare = isinstance(last, ast.Return) and last.value is None and last.lineno > fn.lineno
    end = last.lineno - 1 if bare else fn.end_lineno or fn.lineno
    opening = _opening(path, source, tree, fn, owner)
    head = "\n".join(source.splitlines()[:end])
    return replace(opening, head=head, lead=" " * opening.body_indent + "return", rewrite=True, ends=True)


def find_function(
    source: str, name: str, owner: str | None = None
) -> tuple[ast.Module, ast.FunctionDef | ast.AsyncFunctionDef] | None:
    """The module and function ``name`` of ``source`` (a method of class ``owner``), if it parses and has one."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return None
    scope: list[ast.stmt] = tree.body
    if owner is not None:
        cls = next((n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == owner), None)
        scope = cls.body if cls is not None else []
    fn = next((n for n in scope if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name == name), None)
    return (tree, fn) if fn is not None else None


def without_body(instruction: str, name: str, owner: str | None = None) -> str:
    """``instruction`` with the body the code it shows gives function ``name`` (a method of ``owner``) left out
    (its signature and docstring kept, then ``...``). When that function fails, the body the step gave is what
    failed: seen on a repository, a 1.5B planner wrote a wrong body into the step, and every rewrite begun
    inside the function, and every agreement sample, copied it back."""
    out = instruction
    for _, body in fenced_blocks(instruction):
        try:
            tree = ast.parse(body)
        except SyntaxError:
            continue
        nodes: list[ast.stmt] = list(tree.body)
        if owner is not None:
            nodes = [m for n in tree.body if isinstance(n, ast.ClassDef) and n.name == owner for m in n.body]
        for node in nodes:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == name:
                if node.body[0].lineno == node.lineno:  # def f(x): return x, on one line: left as it is
                    continue
                lines = body.splitlines()
                docstring = ast.get_docstring(node, clean=False) is not None
                start = node.body[1].lineno - 1 if docstring and len(node.body) > 1 else node.body[0].lineno - 1
                if docstring and len(node.body) == 1:
                    continue  # a stub already
                indent = " " * node.body[0].col_offset
                kept = [*lines[:start], f"{indent}...", *lines[node.end_lineno or len(lines) :]]
                out = out.replace(body, "\n".join(kept) + ("\n" if body.endswith("\n") else ""), 1)
    return out


def with_asked_stubs(source: str, names: list[str], *described_in: str) -> str | None:
    """``source`` (an existing module) with a stub for each function of ``names`` (those no project module
    defines or imports) that ``described_in`` (the task, then the step) writes with a signature (``name(a, b)``)
    and does not call a method: that signature, and as its docstring what the first of them says of it, added
    after the module's last definition (before an ``if __name__`` block); None when there is none to add. So a
    new function asked for in a module that exists is begun inside its own stub, under what it must do, as a
    function the task gives is. Seen on a change to python-slugify: begun inside a bare
    ``def unique_slugify(text, taken):`` after slugify(), the 1.5B model wrote slugify()'s body again, four
    times of five. A class (a capitalised name) is left to the model."""
    stubs: list[str] = []
    for name in names:
        if not name.isidentifier() or name[0].isupper() or any(_a_method(name, text) for text in described_in):
            continue
        signature = next((p for text in described_in if (p := _signature(name, text)) is not None), None)
        said = next((d for text in described_in if (d := _said_of(name, text))), "")
        if signature is not None and said:
            stubs.append(f'def {name}({signature}):\n    """{said}\n    """\n')
    return merge_definitions(source, "\n\n".join(stubs), add_new=True) if stubs else None


def used_stub(name: str, user: str, user_source: str) -> str | None:
    """A stub of function ``name`` as module ``user`` calls it: its parameters named after the first call's
    arguments (a name's, an attribute's, a keyword's; else ``arg2``...), its docstring the lines that call it.
    None when ``user_source`` does not parse or never calls it. So a function a step's code imports from a
    module that lacks it is written there, begun inside its stub, as the code using it expects. Seen on the
    notes API at c78c993: app.py imported get_note_by_id and delete_note from notes/store.py, which had neither,
    and the 1.5B model, told so, sent app.py back unchanged three times."""
    try:
        tree = ast.parse(user_source)
    except SyntaxError:
        return None
    calls = [
        n for n in ast.walk(tree) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == name
    ]
    if not calls:
        return None
    params: list[str] = []
    for i, arg in enumerate(calls[0].args, 1):
        said = arg.id if isinstance(arg, ast.Name) else arg.attr if isinstance(arg, ast.Attribute) else ""
        if isinstance(arg, ast.Starred):
            said = "*args"
        params.append(said if said and said not in params else f"arg{i}")
    for keyword in calls[0].keywords:
        params.append(f"{keyword.arg}=None" if keyword.arg else "**kwargs")
    lines = user_source.splitlines()
    shown = list(dict.fromkeys(lines[c.lineno - 1].strip() for c in calls))[:3]
    said = "\n    ".join(line.replace("\\", "\\\\").replace('"""', "'''") for line in shown)
    return f'def {name}({", ".join(params)}):\n    """Called in {user} as:\n    {said}\n    """\n'


def _a_method(name: str, text: str) -> bool:
    """Whether ``text`` calls ``name`` a method (``a method area(self)``, ``the area method``, ``Shape.area``)."""
    n = re.escape(name)
    return re.search(rf"\bmethods?\s+`?{n}\b|\b{n}`?\s+methods?\b|\w\.{n}\(", text, re.IGNORECASE) is not None


def _signature(name: str, text: str) -> str | None:
    """The parameters ``text`` gives ``name`` where it writes ``name(a, b=1)`` as a signature, not as a call with
    values."""
    for m in SIGNATURE.finditer(_BLOCKS.sub(" ", text)):
        if m.group(1) != name:
            continue
        params = " ".join(m.group(2).split())
        try:
            ast.parse(f"def {name}({params}):\n    pass\n")
        except SyntaxError:
            continue
        return params
    return None


#: a fenced block: code, not what is said of a function
_BLOCKS = re.compile(r"```.*?(?:```|$)", re.DOTALL)
#: where a sentence ends: a full stop (not that of "e.g." or "i.e.") before a capital or the end, a blank line,
#: or a line that begins a list item
_SENTENCE_END = re.compile(r"(?<!\be\.g)(?<!\bi\.e)[.!?](?=\s+[A-Z]|\s*$)|\n\s*\n|\n(?=\s*(?:[-*•]|\d+[.)])\s)")
#: a docstring's width
_DOC_WIDTH = 100


def _said_of(name: str, text: str) -> str:
    """The sentences of ``text`` (its code blocks aside) that write ``name(`` (a call or a signature), as a
    docstring's lines; "" when none does. A plan's "It is about name(...)." says nothing of it."""
    text = _BLOCKS.sub(" ", text)
    sentences, start = [], 0
    for end in [*(m.end() for m in _SENTENCE_END.finditer(text)), len(text)]:
        sentence = " ".join(text[start:end].split()).lstrip("-*• ")
        start = end
        if re.search(rf"(?<![\w.]){re.escape(name)}\(", sentence) and not sentence.startswith("It is about "):
            sentence = _described(name, sentence)
            sentences.append(sentence.replace("\\", "\\\\").replace('"""', "'''"))
    lines: list[str] = []
    for word in " ".join(sentences).split():
        if lines and len(lines[-1]) + 1 + len(word) <= _DOC_WIDTH:
            lines[-1] += " " + word
        else:
            lines.append(word)
    return "\n    ".join(lines)


#: a return annotation in a sentence: ``int``, ``list[Note]``, ``dict[str, list[int]]``, ``str | None``; never
#: words beyond it (``-> int, and tests that check it`` ends at ``int``)
_ANNOTATION = r"[\w.]+(?:\[[^\]]*\]+)?(?:\s*\|\s*[\w.]+(?:\[[^\]]*\]+)?)*"


def _described(name: str, sentence: str) -> str:
    """A request as a description, what a docstring says: "Add a function f(x) to m that returns x" as "Returns
    x", "Write m.py with f(x) -> int: returns x" or "... f(x) -> int, which returns x" as "Returns x" (a sentence
    of another form is kept as it is)."""
    asked = re.match(
        r"(?:please\s+)?(?:add|write|create|implement|define)\s+(?:a\s+|an\s+|the\s+)?(?:new\s+)?(?:function\s+)?"
        rf"`?{re.escape(name)}\([^()]*\)`?"
        r"(?:\s+(?:to|in|into)\s+(?:the\s+)?[\w./`-]+(?:\s+(?:module|package|file))?)?,?\s+(?:that|which)\s+(\w)",
        sentence,
        re.IGNORECASE,
    )
    # "Write notes/app.py with create_app(db_path: Path) -> Flask: POST /notes answers 201 ..." (a plan's form)
    asked = asked or re.match(
        r"(?:write|create)\s+`?[\w./-]+\.py`?\s+with\s+(?:a\s+|the\s+)?(?:function\s+)?"
        rf"`?{re.escape(name)}\([^()]*\)(?:\s*->\s*{_ANNOTATION})?`?(?:\s*[:;]|,?\s+(?:that|which))\s+(\w)",
        sentence,
        re.IGNORECASE,
    )
    return sentence if asked is None else asked.group(1).upper() + sentence[asked.end() :]


def step_opening(instruction: str, path: str) -> Opening | None:
    """Where an answer writing ``path`` afresh is begun: the first stub of the skeleton the step gives it."""
    names = names_for_file(instruction, path)
    skeleton = given_skeleton(instruction, names, path)
    return find_opening(path, skeleton, names) if skeleton else None


def _opening(
    path: str, source: str, tree: ast.Module, fn: ast.FunctionDef | ast.AsyncFunctionDef, owner: str | None = None
) -> Opening:
    lines = source.splitlines()
    later, bodied = _scope(lines, tree, fn, owner)
    doc = fn.body[0] if fn.body and _is_docstring(fn.body[0]) else None
    # the head ends after the docstring, else after the signature (the line before the first body statement)
    last = doc.end_lineno if doc is not None and doc.end_lineno else fn.body[0].lineno - 1
    first = fn.body[0]
    if first.lineno == fn.lineno:  # ``def f(): pass`` (or its docstring) on the def's own line
        signature = lines[fn.lineno - 1]
        end = first.end_col_offset if doc is not None else first.col_offset
        head_lines = [*lines[: fn.lineno - 1], signature[:end].rstrip()]
    else:
        head_lines = lines[: max(last, fn.lineno)]
    tail = "\n".join(lines[fn.end_lineno or fn.lineno :])
    inline = doc is None or doc.lineno == fn.lineno
    body_indent = fn.col_offset + 4 if inline or doc is None else doc.col_offset
    head = "\n".join(head_lines)
    return Opening(path, fn.name, head, tail, fn.col_offset, body_indent, owner, later_stubs=later, bodied=bodied)


def _scope(
    lines: list[str], tree: ast.Module, fn: ast.FunctionDef | ast.AsyncFunctionDef, owner: str | None
) -> tuple[tuple[tuple[str, str], ...], tuple[str, ...]]:
    """In ``fn``'s scope (the methods of class ``owner``, else the module's functions): the stubs after it with a
    docstring on lines of its own, each as its lines from its first decorator to the end of its docstring; and
    the names of the other functions, which have bodies."""
    scope: list[ast.stmt] = tree.body
    cls = next((n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == owner), None)
    if owner is not None:
        scope = cls.body if cls is not None else []
    stubs: list[tuple[str, str]] = []
    complete: list[str] = []
    for node in scope:
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) or node.name == fn.name:
            continue
        if not is_stub_definition(node, cls):
            complete.append(node.name)
            continue
        doc = node.body[0] if node.body and _is_docstring(node.body[0]) else None
        if node.lineno < fn.lineno or doc is None or doc.lineno == node.lineno:
            continue
        first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
        stubs.append((node.name, "\n".join(lines[first - 1 : doc.end_lineno]) + "\n"))
    return tuple(stubs), tuple(dict.fromkeys(complete))


def _is_docstring(node: ast.stmt) -> bool:
    return isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)


def _column(line: str) -> int:
    return len(line) - len(line.lstrip())
