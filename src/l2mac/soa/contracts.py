"""Function contracts for self-organised agents: what a child must implement, frozen while it works.

A mother writes a skeleton: a module where the functions it delegates have a signature, a docstring and a
stub body. Each such function is a ``Contract``: a top-level function, or a method of a top-level class (most
code is classes: an agent owns one method, as it owns one function). A child's answer is merged by name with
``put_function``; an answer that changes the contract's signature is refused (the child must ask its mother
instead).
"""

from __future__ import annotations

import ast
import textwrap
from dataclasses import dataclass

from l2mac.checks.demands import is_stub_definition, is_stub_shaped

_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef)


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
    def label(self) -> str:
        """``module:name``, or ``module:Class.name`` for a method."""
        return f"{self.module}:{self.owner + '.' if self.owner else ''}{self.name}"

    def text(self) -> str:
        """The function as a stub; a method inside its class."""
        doc = f'    """{self.docstring}"""\n' if self.docstring else ""
        stub = "".join(f"@{d}\n" for d in self.decorators) + f"{self.signature}\n{doc}    ..."
        return f"class {self.owner}:\n{textwrap.indent(stub, '    ')}" if self.owner else stub

    @property
    def constructor(self) -> bool:
        return self.owner is not None and self.name == "__init__"


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
                if isinstance(m, _DEFS) and is_stub_definition(m, n)
            ]
    return found


def _scope(tree: ast.Module, owner: str | None) -> list[ast.stmt] | None:
    """The statements a contract's function is among: the module's, or its class's (None: no such class)."""
    if owner is None:
        return tree.body
    cls = next((n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == owner), None)
    return cls.body if cls is not None else None


def put_function(source: str, contract: Contract, code: str) -> str:
    """``source`` with ``contract``'s function replaced by the one in ``code``; other functions ``code`` defines
    (helpers) are added right after it, and its imports at the top. For a method, ``code`` may be the method
    alone or inside its class; its helpers become methods, and what it defines that the class already has (a
    small model sends the whole class) is left as the class has it: the other methods are other agents'.
    Raises ContractError on a changed signature, a missing function, or a helper whose name is taken."""
    tree = _parse(source, contract.module)
    new = _parse(textwrap.dedent(code), f"the code for {contract.name}")
    scope = _scope(tree, contract.owner)
    if scope is None:
        raise ContractError(f"{contract.module} no longer defines class {contract.owner}")
    new_scope = _scope(new, contract.owner) if contract.owner is not None else None
    new_defs = [n for n in (new_scope if new_scope is not None else new.body) if isinstance(n, _DEFS)]
    target = next((n for n in new_defs if n.name == contract.name), None)
    if target is None:
        raise ContractError(f"the code does not define {contract.name}")
    if signature_of(target) != contract.signature:
        raise ContractError(
            f"the signature changed: the contract is `{contract.signature}`, the code has `{signature_of(target)}`;"
            " keep the contract, or ask for a change with request_contract_change"
        )
    old_defs = {n.name: n for n in scope if isinstance(n, (*_DEFS, ast.ClassDef))}
    helpers = [n for n in new_defs if n is not target]
    if contract.owner is not None:
        helpers = [n for n in helpers if n.name not in old_defs]
    taken = [n.name for n in helpers if n.name in old_defs]
    if taken:
        raise ContractError(f"helper names already used in {contract.module}: {', '.join(taken)}; rename them")
    if contract.name not in old_defs:
        raise ContractError(f"{contract.module} no longer defines {contract.name}")
    lines, code_lines = source.splitlines(), textwrap.dedent(code).splitlines()
    old = old_defs[contract.name]
    a, b = _span(old)
    gap = [""] if contract.owner is not None else ["", ""]  # methods are one blank line apart
    block: list[str] = []
    for node in [target, *helpers]:
        s, e = _span(node)
        block += [*_indented(code_lines[s:e], old.col_offset), *gap]
    if old.decorator_list and not target.decorator_list:  # kept: the contract's (a small model leaves them out)
        block[:0] = lines[a : old.lineno - 1]
    lines[a:b] = block[: -len(gap)]
    have = {ast.unparse(n) for n in tree.body if isinstance(n, (ast.Import, ast.ImportFrom))}
    missing = [ast.unparse(n) for n in new.body if isinstance(n, (ast.Import, ast.ImportFrom))]
    missing = [m for m in dict.fromkeys(missing) if m not in have]
    head = _after_imports(tree)
    lines[head:head] = missing
    return "\n".join(lines).rstrip() + "\n"


def _span(node: ast.stmt) -> tuple[int, int]:
    first = min([node.lineno, *(d.lineno for d in getattr(node, "decorator_list", []))])
    return first - 1, node.end_lineno or node.lineno


def _indented(lines: list[str], column: int) -> list[str]:
    """``lines`` (a definition) moved so that its first line starts at ``column``."""
    text = textwrap.dedent("\n".join(lines))
    return textwrap.indent(text, " " * column).splitlines() if column else text.splitlines()


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
    return Contract(old.module, old.name, signature_of(node), old.docstring, old.owner)


def replace_signature(source: str, old: Contract, new: Contract) -> str:
    """``source`` with ``old``'s stub signature line(s) replaced by ``new``'s (the body is kept)."""
    tree = _parse(source, old.module)
    scope = _scope(tree, old.owner) or []
    node = next((n for n in scope if isinstance(n, _DEFS) and n.name == old.name), None)
    if node is None:
        raise ContractError(f"{old.module} does not define {old.name}")
    lines = source.splitlines()
    first_body = node.body[0].lineno - 1
    lines[node.lineno - 1 : first_body] = [" " * node.col_offset + new.signature]
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


def test_path_for(module: str, function: str | None = None) -> str:
    """The test file of a module's lead (``tests/test_core.py``) or of a function's agent once it splits its
    function (``tests/test_core_parse.py``)."""
    stem = module.rsplit("/", 1)[-1].removesuffix(".py")
    return f"tests/test_{stem}{'_' + function.strip('_') if function else ''}.py"
