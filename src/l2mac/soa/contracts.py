"""Function contracts for self-organised agents: what a child must implement, frozen while it works.

A mother writes a skeleton: a module where the functions it delegates have a signature, a docstring and a
stub body. Each such function is a ``Contract``: a top-level function, or a method of a top-level class (most
code is classes: an agent owns one method, as it owns one function). A child's answer is merged by name with
``put_function``; an answer that changes the contract's signature is refused (the child must ask its mother
instead).
"""

from __future__ import annotations

import ast
import re
import textwrap
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass

from l2mac.checks.demands import is_stub_definition, is_stub_shaped
from l2mac.checks.repairs import definition_span

_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef)
_Def = ast.FunctionDef | ast.AsyncFunctionDef
_DEF_LINE = re.compile(r"\s*(?:@|(?:async\s+)?def\s|class\s)")


class ContractError(ValueError):
    """Code that does not fit its contract or cannot be merged."""


@dataclass(frozen=True)
class Contract:
    module: str  # workspace-relative path of the module that holds the function
    name: str
    signature: str  # "def name(a: int, b: int) -> int:"
    docstring: str
    owner: str | None = None  # the class the function is a method of
    decorators: tuple[str, ...] = ()  # as written, without the ``@``: ``staticmethod``, ``property``

    @property
    def key(self) -> tuple[str, str | None, str]:
        return self.module, self.owner, self.name

    @property
    def qualname(self) -> str:
        """``name``, or ``Class.name`` for a method (as the task's examples name them)."""
        return f"{self.owner}.{self.name}" if self.owner else self.name

    @property
    def label(self) -> str:
        """``module:name``, or ``module:Class.name`` for a method."""
        return f"{self.module}:{self.qualname}"

    def text(self) -> str:
        """The function as a stub; a method inside its class."""
        doc = f"    {_string(self.docstring)}\n" if self.docstring else ""
        stub = "".join(f"@{d}\n" for d in self.decorators) + f"{self.signature}\n{doc}    ..."
        return f"class {self.owner}:\n{textwrap.indent(stub, '    ')}" if self.owner else stub

    @property
    def constructor(self) -> bool:
        return self.owner is not None and self.name == "__init__"


def _string(text: str) -> str:
    """``text`` as a triple-quoted literal, or as ``repr`` gives it where quotes or backslashes would change it."""
    return repr(text) if '"""' in text or text.endswith('"') or "\\" in text else f'"""{text}"""'


def _parse(source: str, what: str) -> ast.Module:
    try:
        return ast.parse(source)
    except SyntaxError as e:
        raise ContractError(f"{what} does not parse: {e.msg} (line {e.lineno})") from e


def signature_of(node: ast.FunctionDef | ast.AsyncFunctionDef) -> str:
    prefix = "async def" if isinstance(node, ast.AsyncFunctionDef) else "def"
    returns = f" -> {ast.unparse(node.returns)}" if node.returns else ""
    return f"{prefix} {node.name}({ast.unparse(node.args)}){returns}:"


def stubs(source: str, module: str) -> list[Contract]:
    """The top-level functions of ``source`` left as stubs, and the stub methods of its top-level classes (not
    an interface's, an abstract one, or a constructor that takes and says nothing): the contracts a mother
    delegates."""
    tree = _parse(source, module)
    found: list[Contract] = []
    for n in tree.body:
        if isinstance(n, _DEFS) and is_stub_shaped(n):
            found.append(Contract(module, n.name, signature_of(n), ast.get_docstring(n) or ""))
        elif isinstance(n, ast.ClassDef):
            found += [
                Contract(
                    module,
                    m.name,
                    signature_of(m),
                    ast.get_docstring(m) or "",
                    n.name,
                    tuple(ast.unparse(d) for d in m.decorator_list),
                )
                for m in n.body
                if isinstance(m, _DEFS) and is_stub_definition(m, n) and _once(m.name, n)
            ]
    return found


def current_code(source: str, contract: Contract) -> str | None:
    """The code of ``contract``'s function as ``source`` has it with a body (a method, dedented); None when
    ``source`` has no such function, or has it as a stub."""
    node = _function(_parse(source, contract.module), contract)
    if node is None or is_stub_shaped(node):
        return None
    return _text(source.splitlines(), node)


def _function(tree: ast.Module, contract: Contract) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
    """``contract``'s function in ``tree``, if it defines it."""
    scope = _scope(tree, contract.owner) or []
    return next((n for n in scope if isinstance(n, _DEFS) and n.name == contract.name), None)


def _text(lines: list[str], node: ast.stmt) -> str:
    """A definition's source (its decorators included), dedented."""
    return textwrap.dedent("\n".join(lines[slice(*definition_span(node))]))


def graft(source: str, draft: str, contracts: list[Contract]) -> tuple[str, list[Contract]]:
    """``source`` with each of ``contracts`` that ``draft`` (the module written whole, by a step or one answer)
    implements put in its place as an agent's answer is (:func:`put_function`), with the draft's imports and the
    functions it adds beside it (helpers); the rest of ``source`` stays as it is: the code it gives with bodies (a
    constructor whose attributes the task's tests read), its class attributes, decorators and docstrings. A
    function the draft leaves a stub, or gives another signature, stays a stub. Returns the source and the
    contracts put in place."""
    tree = _parse(draft, "the draft")
    lines = draft.splitlines()
    imports = [ast.unparse(n) for n in tree.body if isinstance(n, (ast.Import, ast.ImportFrom))]
    placed: list[Contract] = []
    for contract in contracts:
        node = _function(tree, contract)
        if node is None or is_stub_shaped(node):
            continue
        known = {getattr(n, "name", "") for n in _scope(_parse(source, contract.module), contract.owner) or []}
        known |= {c.name for c in contracts}
        scope = _scope(tree, contract.owner) or []
        helpers = [n for n in scope if isinstance(n, _DEFS) and n.name not in known]  # put with the first
        code = "\n\n".join(_text(lines, n) for n in [node, *helpers])
        if contract.owner is not None:  # as a small model sends a method: inside its class
            code = f"class {contract.owner}:\n" + textwrap.indent(code, "    ")
        try:
            source = put_function(source, contract, "\n".join([*imports, "", code]))
        except ContractError:
            continue
        placed.append(contract)
    return source, placed


def changed_in(old: str, new: str, snippet: str, module: str) -> list[Contract]:
    """The contracts of a change to an existing module: ``old`` as it was, ``new`` with the lead's ``snippet``
    merged into it. Each stub ``new`` has that ``old`` did not, and each stub of ``snippet`` for a function
    ``old`` has with a body whose signature or docstring it changes (the merge keeps that body; an agent
    rewrites it to the stub's). The module's own stubs (an interface's, say) are not the change's."""
    before = {c.key for c in stubs(old, module)}
    added = [c for c in stubs(new, module) if c.key not in before]
    taken = {c.key for c in added}
    rewritten = [c for c in stubs(snippet, module) if c.key not in taken and _rewrites(old, c)]
    return added + rewritten


def _rewrites(old: str, stub: Contract) -> bool:
    """Whether a stub of a function ``old`` has with a body asks for a change: its signature or docstring
    differs (a lead shown the module's outline copies its functions back as stubs, unchanged)."""
    node = _function(_parse(old, stub.module), stub)
    if node is None or is_stub_shaped(node):
        return False
    return (signature_of(node), ast.get_docstring(node) or "") != (stub.signature, stub.docstring)


def _once(name: str, cls: ast.ClassDef) -> bool:
    """Whether ``cls`` defines ``name`` once: a property's getter and setter share a name, and are left to the
    lead (one agent could not own one of them)."""
    return sum(1 for m in cls.body if isinstance(m, _DEFS) and m.name == name) == 1


def _scope(tree: ast.Module, owner: str | None) -> list[ast.stmt] | None:
    """The statements a contract's function is among: the module's, or its class's (None: no such class)."""
    if owner is None:
        return tree.body
    cls = next((n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == owner), None)
    return cls.body if cls is not None else None


def _as_run(nodes: list[_Def]) -> list[_Def]:
    """``nodes`` (the definitions of one scope, in order) as Python keeps them: of a name defined more than once,
    the last definition. Seen on ClassEval_18 at df81376: the one answer in 40 that converted a key to camel case
    right defined _to_camel_case three times; the first was taken as the function and the others as helpers whose
    name was taken, and the answer was refused. Decorated definitions of one name (a property and its setter,
    overloads) are each kept: Python builds one from the other."""
    last = {n.name: n for n in nodes}
    decorated = {n.name for n in nodes if n.decorator_list}
    return [n for n in nodes if last[n.name] is n or n.name in decorated]


def put_function(source: str, contract: Contract, code: str, siblings: Collection[str] = ()) -> str:
    """``source`` with ``contract``'s function replaced by the one in ``code``; other functions ``code`` defines
    (helpers) are added right after it, and its imports at the top. Raises ContractError on a changed
    signature, a missing function, or a helper whose name is taken.

    For a method, ``code`` may be the method alone (indented or not) or inside its class (a small model sends
    the whole class). The functions it defines in the class, or at the top level with ``self`` or ``cls``
    first, are methods: its new ones are its helpers, and what the class already has is left as the class has
    it when it is one of the ``siblings`` (the other agents' methods) or sent unchanged. Its other top-level
    functions are the module's helpers, put after the class."""
    tree = _parse(source, contract.module)
    code = _dedented(code)
    new = _parse(code, f"the code for {contract.name}")
    scope = _scope(tree, contract.owner)
    if scope is None:
        raise ContractError(f"{contract.module} no longer defines class {contract.owner}")
    old_defs = {n.name: n for n in scope if isinstance(n, (*_DEFS, ast.ClassDef))}
    if contract.name not in old_defs:
        raise ContractError(f"{contract.module} no longer defines {contract.name}")
    top = [n for n in new.body if isinstance(n, _DEFS)]
    classes = [n for n in new.body if isinstance(n, ast.ClassDef)]
    wrapper = next((c for c in classes if c.name == contract.owner), classes[0] if len(classes) == 1 else None)
    if contract.owner is None:
        own, outside = top, []
    elif wrapper is not None:
        own, outside = [n for n in wrapper.body if isinstance(n, _DEFS)], top
    else:
        own = [n for n in top if _takes_self(n) or n.name == contract.name]
        outside = [n for n in top if n not in own]
    own, outside = _as_run(own), _as_run(outside)
    target = next((n for n in own if n.name == contract.name), None)
    if target is None:
        raise ContractError(f"the code does not define {contract.name}")
    if signature_of(target) != contract.signature:
        raise ContractError(
            f"the signature changed: the contract is `{contract.signature}`, the code has `{signature_of(target)}`;"
            " keep the contract, or ask for a change with request_contract_change"
        )
    lines, code_lines = source.splitlines(), code.splitlines()

    def text(node: ast.stmt) -> str:
        return "\n".join(code_lines[slice(*definition_span(node))])

    def left_alone(node: ast.stmt) -> bool:  # another agent's method, or a method sent back as the class has it
        name = getattr(node, "name", "")
        old = old_defs.get(name)
        return old is not None and (name in siblings or ast.dump(old) == ast.dump(node))

    helpers = [n for n in own if n is not target and not (contract.owner and left_alone(n))]
    module_defs = {n.name for n in tree.body if isinstance(n, (*_DEFS, ast.ClassDef))}
    outside = [n for n in outside if not (n.name in module_defs and left_alone(n))]
    taken = [n.name for n in helpers if n.name in old_defs] + [n.name for n in outside if n.name in module_defs]
    if taken:
        raise ContractError(f"helper names already used in {contract.module}: {', '.join(taken)}; rename them")
    old = old_defs[contract.name]
    a, b = definition_span(old)
    gap = [""] if contract.owner is not None else ["", ""]  # methods are one blank line apart
    block: list[str] = []
    # the stub's docstring, where it is the contract's (a change's stub may give a function a new one, which the
    # module does not have yet)
    stub_doc = _docstring_lines(lines, old) if ast.get_docstring(old) == contract.docstring else None
    for node in [target, *helpers]:
        moved = _moved(text(node), node, old.col_offset)
        if node is target and stub_doc is not None:
            moved = _docstring_kept(moved, node, code_lines, stub_doc, old.col_offset)
        block += [*moved, *gap]
    if old.decorator_list and not target.decorator_list:  # kept: the contract's (a small model leaves them out)
        block[:0] = lines[a : old.lineno - 1]
    if outside:  # after the class, at the module's level
        end = next(c for c in tree.body if isinstance(c, ast.ClassDef) and c.name == contract.owner).end_lineno
        assert end is not None
        lines[end:end] = [line for n in outside for line in ["", "", *_moved(text(n), n, 0)]]
    lines[a:b] = block[: -len(gap)]
    have = {ast.unparse(n) for n in tree.body if isinstance(n, (ast.Import, ast.ImportFrom))}
    missing = [ast.unparse(n) for n in new.body if isinstance(n, (ast.Import, ast.ImportFrom))]
    missing = [m for m in dict.fromkeys(missing) if m not in have]
    head = _after_imports(tree)
    lines[head:head] = missing
    merged = "\n".join(lines).rstrip() + "\n"
    if contract.name not in {
        getattr(n, "name", "") for n in _scope(_parse(merged, contract.module), contract.owner) or []
    }:
        raise ContractError(f"{contract.name} could not be put in its place: write it again, indented as a method")
    return merged


def _docstring(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> ast.Expr | None:
    first = fn.body[0] if fn.body else None
    if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str):
        return first
    return None


def _docstring_lines(lines: list[str], fn: ast.stmt) -> list[str] | None:
    """The lines of ``fn``'s docstring as ``lines`` (its module) has them; None when it has none, or when the
    docstring begins on a line with other code (the ``def``'s, or a signature's last)."""
    if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return None
    doc = _docstring(fn)
    if doc is None or doc.end_lineno is None or lines[doc.lineno - 1][: doc.col_offset].strip():
        return None
    return lines[doc.lineno - 1 : doc.end_lineno]


def _docstring_kept(
    moved: list[str], fn: ast.FunctionDef | ast.AsyncFunctionDef, code: list[str], doc_lines: list[str], column: int
) -> list[str]:
    """``moved`` (``fn``'s lines, from the answer ``code``, moved to ``column``) with the docstring its stub has
    (``doc_lines``), indented as the answer's body: the contract freezes the docstring, and a model copying it
    from its prompt re-indents its lines (seen on ClassEval: every method's docstring after the first line four
    columns off, or at column 0). A function without one gets it, unless its body shares a line with its
    header. Unchanged where the result would not parse."""
    first = definition_span(fn)[0] + 1
    doc = _docstring(fn)
    body = fn.body[0]
    start = min([body.lineno, *(d.lineno for d in getattr(body, "decorator_list", []))])
    if code[start - 1][: body.col_offset].strip() or (doc is not None and doc.end_lineno is None):
        return moved  # the body (or its docstring) begins on the header's line
    at = start - first
    end = at if doc is None else (doc.end_lineno or doc.lineno) - first + 1
    line = moved[at]
    indent, stub_indent = (
        line[: len(line) - len(line.lstrip())],
        doc_lines[0][: len(doc_lines[0]) - len(doc_lines[0].lstrip())],
    )
    kept = [indent + x[len(stub_indent) :] if x.startswith(stub_indent) else x for x in doc_lines]
    result = [*moved[:at], *kept, *moved[end:]]
    try:
        text = "\n".join(result)
        ast.parse(text if column == 0 else "class _:\n" + text)
    except SyntaxError:
        return moved
    return result


def _takes_self(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    first = fn.args.posonlyargs[:1] or fn.args.args[:1]
    return bool(first) and first[0].arg in {"self", "cls"}


def _dedented(code: str) -> str:
    """``code`` moved left by the indentation of its first definition (a method answered alone is indented as
    in its class); lines indented less (a comment, an import at column 0) stay where they are."""
    lines = code.splitlines()
    first = next((line for line in lines if _DEF_LINE.match(line)), "")
    n = len(first) - len(first.lstrip(" "))
    return "\n".join(line[n:] if line[:n].isspace() else line for line in lines) + "\n" if n else code


def _moved(text: str, node: ast.stmt, column: int) -> list[str]:
    """A definition's ``text`` (its first line at ``node``'s column) moved to start at ``column``; the lines
    inside its multi-line strings keep their text, and lines indented less than the move takes stay."""
    shift = column - node.col_offset
    first = definition_span(node)[0] + 1
    inside = {
        line
        for n in ast.walk(node)
        if isinstance(n, (ast.Constant, ast.JoinedStr)) and (n.end_lineno or n.lineno) > n.lineno
        for line in range(n.lineno + 1, (n.end_lineno or n.lineno) + 1)
    }
    out = []
    for number, line in enumerate(text.splitlines(), start=first):
        if number in inside or not line.strip():
            out.append(line)
        elif shift >= 0:
            out.append(" " * shift + line)
        else:
            out.append(line[-shift:] if line[:-shift].isspace() else line)
    return out


def _after_imports(tree: ast.Module) -> int:
    """The line index after the module's docstring and leading imports."""
    end = 0
    for node in tree.body:
        is_doc = isinstance(node, ast.Expr) and isinstance(getattr(node, "value", None), ast.Constant) and end == 0
        if isinstance(node, (ast.Import, ast.ImportFrom)) or is_doc:
            end = node.end_lineno or node.lineno
        else:
            break
    return end


def changed_contract(old: Contract, signature: str) -> Contract:
    """``old`` with a new signature (after its mother agreed to the change)."""
    tree = _parse(signature.strip().rstrip(":") + ":\n    ...\n", "the new signature")
    node = tree.body[0] if tree.body else None
    if not isinstance(node, _DEFS) or node.name != old.name:
        raise ContractError(f"the new signature must define {old.name}")
    return Contract(old.module, old.name, signature_of(node), old.docstring, old.owner, old.decorators)


def replace_signature(source: str, old: Contract, new: Contract) -> str:
    """``source`` with ``old``'s stub signature line(s) replaced by ``new``'s (the body is kept)."""
    tree = _parse(source, old.module)
    scope = _scope(tree, old.owner) or []
    node = next((n for n in scope if isinstance(n, _DEFS) and n.name == old.name), None)
    if node is None:
        raise ContractError(f"{old.module} does not define {old.name}")
    lines = source.splitlines()
    header = [" " * node.col_offset + new.signature]
    first = node.body[0]
    shared = lines[first.lineno - 1].encode()  # col_offset counts UTF-8 bytes
    if shared[: first.col_offset].decode().rstrip().endswith(":"):  # `def f(x): ...`, or `): ...` ending it
        header.append(" " * (node.col_offset + 4) + shared[first.col_offset :].decode())
        lines[node.lineno - 1 : first.lineno] = header
    else:
        lines[node.lineno - 1 : first.lineno - 1] = header
    return "\n".join(lines) + "\n"


def outline(source: str, hide: set[str] | None = None) -> str:
    """The module with every function body cut to its docstring and ``...``, without the top-level functions
    in ``hide``: what an agent sees of its module (so its context does not grow with the codebase). A class's
    constructor keeps its body: the attributes it sets are what the class's methods share."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return source
    if hide:
        defs = (ast.FunctionDef, ast.AsyncFunctionDef)
        tree.body = [n for n in tree.body if not (isinstance(n, defs) and n.name in hide)]
    constructors = {
        id(m)
        for c in tree.body
        if isinstance(c, ast.ClassDef)
        for m in c.body
        if isinstance(m, _DEFS) and m.name == "__init__"
    }
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and id(node) not in constructors:
            doc = ast.get_docstring(node)
            node.body = [ast.Expr(ast.Constant(doc))] if doc else []
            node.body.append(ast.Expr(ast.Constant(Ellipsis)))
    return ast.unparse(tree)


def test_path_for(module: str, function: str | None = None, owner: str | None = None) -> str:
    """The test file of a module's lead (``tests/test_core.py``) or of a function's agent once it splits its
    function (``tests/test_core_parse.py``; a method's, ``tests/test_core_parser_parse.py``)."""
    stem = module.rsplit("/", 1)[-1].removesuffix(".py")
    names = [n.strip("_").lower() for n in (owner, function) if n]
    return f"tests/test_{'_'.join([stem, *names])}.py"


#: a call by name in code or an example's text: ``f(`` or ``obj.f(``
_CALLED = re.compile(r"(\w+)\(")


def reached_stubs(sources: Mapping[str, str], texts: Iterable[str], pending: Collection[str]) -> set[str]:
    """Which of the ``pending`` functions (by name: those no agent has written yet) ``texts`` (code, or an
    example's doctest) call, directly or through the functions of ``sources`` they call: what must be written
    before they can run."""
    calls: dict[str, set[str]] = {}
    for source in sources.values():
        try:
            tree = ast.parse(source)
        except SyntaxError:
            continue
        for node in ast.walk(tree):
            if isinstance(node, _DEFS):
                called = {c.func.id if isinstance(c.func, ast.Name) else c.func.attr for c in ast.walk(node)
                          if isinstance(c, ast.Call) and isinstance(c.func, (ast.Name, ast.Attribute))}  # fmt: skip
                calls.setdefault(node.name, set()).update(called)
    todo = {name for text in texts for name in _CALLED.findall(text)}
    seen: set[str] = set()
    while todo:
        name = todo.pop()
        if name not in seen:
            seen.add(name)
            todo |= calls.get(name, set())
    return seen & set(pending)
