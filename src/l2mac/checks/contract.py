"""The skeleton a step gives is a contract: its functions keep the signatures, decorators and docstrings it gives.

A step's text may give a file's skeleton: a Python block that defines the file's functions (and classes with
methods) as stubs with docstrings, as ClassEval's classes, HumanEval's functions and the interfaces planned from
a specification do. Other code and the task's own tests call those definitions as given. A small model writing
the file whole changes them: seen on ClassEval_37 at 42ff847, told that ``shift`` was undefined in
``vigenere_cipher(self, plaintext)``, the 1.5B model added a parameter ``shift`` to the signature (and a made-up
example to another method's docstring), and every hidden test calling it as given failed. A written file gets
the given heads back; a body that used what its head no longer has is then a code problem inside that function,
which is rewritten there.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator

from l2mac.checks.demands import is_stub_definition
from l2mac.fenced import fenced_blocks

_Function = ast.FunctionDef | ast.AsyncFunctionDef


def given_skeleton(instruction: str, names: list[str], path: str | None = None) -> str | None:
    """The skeleton a step gives for a file: the first Python block in its text that parses and defines one of
    ``names`` (or a class holding one) as a stub; never a block labelled as another file's."""
    wanted = set(names)
    for label, body in fenced_blocks(instruction):
        if label is not None and path is not None and label != path:
            continue
        body = mended(body)
        try:
            tree = ast.parse(body)
        except SyntaxError:
            continue
        if any(
            (fn.name in wanted or (owner is not None and owner.name in wanted)) and is_stub_definition(fn, owner)
            for fn, owner in functions_and_methods(tree)
        ):
            return body.strip("\n") + "\n"
    return None


#: typographic quotes, as a word processor or a chat window writes them
_CURLY_DOUBLE = re.compile("[\u201c\u201d\u201e\u201f]")
_CURLY_SINGLE = re.compile("[\u2018\u2019\u201a\u201b]")
_DEFINITION = re.compile(r"(\s*)(?:@|(?:async\s+)?def\s|class\s)")


def mended(code: str) -> str:
    """``code`` as given, or, when it does not parse, mended of what copying code by hand leaves: typographic
    quotes where Python's are meant (three of them opening a docstring first, then any), and a docstring left
    unclosed before the next definition. Only a mending that makes it parse is kept. Seen in ClassEval's
    skeletons: ClassEval_43 and _46 open docstrings with “”“, and ClassEval_22's register_class docstring has
    no closing quotes; their skeletons gave l2mac nothing to begin answers from."""
    if parses(code):
        return code
    tries = [
        _CURLY_DOUBLE.sub('"', re.sub("[\u201c-\u201f]{3}", '"""', code)),
        _CURLY_SINGLE.sub("'", _CURLY_DOUBLE.sub('"', code)),
    ]
    tries += [_closed_docstrings(t) for t in [code, *tries]]
    return next((t for t in tries if parses(t)), code)


def _closed_docstrings(code: str) -> str:
    """``code`` with each docstring that runs into the next definition (at its function's indentation or less)
    closed before it."""
    lines = code.splitlines()
    out: list[str] = []
    open_at: int | None = None  # the indentation of the function whose docstring is open
    quote = ""
    for line in lines:
        found = _DEFINITION.match(line)
        if open_at is not None and found and len(found.group(1)) <= open_at:
            blank = 0
            while out and not out[-1].strip():
                out.pop()
                blank += 1
            out += [" " * (open_at + 4) + quote, *[""] * blank]
            open_at = None
        stripped = line.strip()
        if open_at is None and stripped.startswith(('"""', "'''")) and out and out[-1].rstrip().endswith(":"):
            quote = stripped[:3]
            if stripped.count(quote) == 1:  # opened, not closed on this line
                open_at = len(out[-1]) - len(out[-1].lstrip())
        elif open_at is not None and quote in stripped:
            open_at = None
        out.append(line)
    return "\n".join(out) + ("\n" if code.endswith("\n") else "")


def given_heads(source: str, skeleton: str) -> tuple[str, list[str]]:
    """``source`` with each function that ``skeleton`` gives (at the top level, or as a method of a class it gives)
    given back the skeleton's head (decorators, signature and docstring) where the source changed its decorators,
    its parameters or its docstring; and the names of the functions changed. Annotations the source added are
    kept when nothing else differs. ``source`` as it was when either does not parse or the result would not."""
    try:
        tree, given = ast.parse(source), ast.parse(skeleton)
    except SyntaxError:
        return source, []
    heads = _unique(given)
    mine = _unique(tree)
    lines, given_lines = source.splitlines(), skeleton.splitlines()
    edits: list[tuple[int, int, list[str], str]] = []
    for key, fn in mine.items():
        want = heads.get(key)
        if want is None or one_line(fn) or one_line(want) or _shape(fn) == _shape(want):
            continue
        start, end = _head_span(fn)
        given_start, given_end = _head_span(want)
        shift = fn.col_offset - want.col_offset
        new = [_shifted(line, shift) for line in given_lines[given_start:given_end]]
        edits.append((start, end, new, f"{key[0]}.{key[1]}" if key[0] is not None else key[1]))
    changed: list[str] = []
    for start, end, new, name in sorted(edits, reverse=True):  # from the end: earlier line numbers hold
        tried = [*lines[:start], *new, *lines[end:]]
        if parses("\n".join(tried)):  # each on its own: one that would not parse leaves the others be
            lines = tried
            changed.append(name)
    if not changed:
        return source, []
    return "\n".join(lines) + ("\n" if source.endswith("\n") else ""), changed[::-1]  # in the file's order


def functions_and_methods(tree: ast.Module) -> Iterator[tuple[_Function, ast.ClassDef | None]]:
    """The module's top-level functions and its classes' methods, each with its class."""
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            yield node, None
        elif isinstance(node, ast.ClassDef):
            for member in node.body:
                if isinstance(member, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    yield member, node


def _key(fn: _Function, owner: ast.ClassDef | None) -> tuple[str | None, str]:
    return (owner.name if owner is not None else None, fn.name)


def _unique(tree: ast.Module) -> dict[tuple[str | None, str], _Function]:
    """The functions of ``tree`` by (class, name), but those defined more than once there (a property's getter
    and setter, overloads): which head is whose cannot be told."""
    found: dict[tuple[str | None, str], _Function] = {}
    twice: set[tuple[str | None, str]] = set()
    for fn, owner in functions_and_methods(tree):
        key = _key(fn, owner)
        if key in found:
            twice.add(key)
        found[key] = fn
    return {k: fn for k, fn in found.items() if k not in twice}


def parses(source: str) -> bool:
    """Whether ``source`` is Python that parses."""
    try:
        ast.parse(source)
    except SyntaxError:
        return False
    return True


def _shape(fn: _Function) -> tuple[object, ...]:
    """What callers rely on in a head: its decorators, its parameters (names, kinds and defaults, annotations
    aside) and its docstring."""
    args = fn.args
    defaults = [ast.unparse(d) for d in args.defaults]
    kw_defaults = [ast.unparse(d) if d is not None else None for d in args.kw_defaults]
    return (
        [ast.unparse(d) for d in fn.decorator_list],
        [a.arg for a in args.posonlyargs],
        [a.arg for a in args.args],
        args.vararg.arg if args.vararg else None,
        [a.arg for a in args.kwonlyargs],
        args.kwarg.arg if args.kwarg else None,
        defaults,
        kw_defaults,
        isinstance(fn, ast.AsyncFunctionDef),
        ast.get_docstring(fn),
    )


def one_line(fn: _Function) -> bool:
    """Whether ``fn``'s body begins on its ``def`` line (``def f(x): ...``): such a head is not put back."""
    return fn.body[0].lineno == fn.lineno


def _head_span(fn: _Function) -> tuple[int, int]:
    """The 0-based line range of ``fn``'s head: its first decorator to the end of its docstring (to the end of its
    signature when it has none)."""
    start = min([fn.lineno, *(d.lineno for d in fn.decorator_list)]) - 1
    first = fn.body[0]
    documented = ast.get_docstring(fn, clean=False) is not None
    end = (first.end_lineno or first.lineno) if documented else first.lineno - 1
    return start, end


def _shifted(line: str, shift: int) -> str:
    if not line.strip() or shift == 0:
        return line
    if shift > 0:
        return " " * shift + line
    return line[min(-shift, len(line) - len(line.lstrip())) :]
