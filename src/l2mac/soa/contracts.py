"""Function contracts for self-organised agents: what a child must implement, frozen while it works.

A mother writes a skeleton: a module where the functions it delegates have a signature, a docstring and a
stub body. Each such function is a ``Contract``. A child's answer is merged by name with ``put_function``;
an answer that changes the contract's signature is refused (the child must ask its mother instead).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from l2mac.checks.demands import is_stub_shaped

_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef)


class ContractError(ValueError):
    """Code that does not fit its contract or cannot be merged."""


@dataclass(frozen=True)
class Contract:
    module: str  # workspace-relative path of the module that holds the function
    name: str
    signature: str  # "def name(a: int, b: int) -> int:"
    docstring: str

    def text(self) -> str:
        doc = f'    """{self.docstring}"""\n' if self.docstring else ""
        return f"{self.signature}\n{doc}    ..."


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
    """The top-level functions of ``source`` left as stubs: the contracts a mother delegates."""
    tree = _parse(source, module)
    return [
        Contract(module, n.name, signature_of(n), ast.get_docstring(n) or "")
        for n in tree.body
        if isinstance(n, _DEFS) and is_stub_shaped(n)
    ]


def put_function(source: str, contract: Contract, code: str) -> str:
    """``source`` with ``contract``'s function replaced by the one in ``code``; other functions ``code`` defines
    (helpers) are added right after it, and its imports at the top. Raises ContractError on a changed signature,
    a missing function, or a helper whose name is taken."""
    tree, new = _parse(source, contract.module), _parse(code, f"the code for {contract.name}")
    old_defs = {n.name: n for n in tree.body if isinstance(n, (*_DEFS, ast.ClassDef))}
    new_defs = [n for n in new.body if isinstance(n, _DEFS)]
    target = next((n for n in new_defs if n.name == contract.name), None)
    if target is None:
        raise ContractError(f"the code does not define {contract.name}")
    if signature_of(target) != contract.signature:
        raise ContractError(
            f"the signature changed: the contract is `{contract.signature}`, the code has `{signature_of(target)}`;"
            " keep the contract, or ask for a change with request_contract_change"
        )
    helpers = [n for n in new_defs if n is not target]
    taken = [n.name for n in helpers if n.name in old_defs]
    if taken:
        raise ContractError(f"helper names already used in {contract.module}: {', '.join(taken)}; rename them")
    if contract.name not in old_defs:
        raise ContractError(f"{contract.module} no longer defines {contract.name}")
    lines, code_lines = source.splitlines(), code.splitlines()

    def span(node: ast.stmt) -> tuple[int, int]:
        first = min([node.lineno, *(d.lineno for d in getattr(node, "decorator_list", []))])
        return first - 1, node.end_lineno or node.lineno

    a, b = span(old_defs[contract.name])
    block: list[str] = []
    for node in [target, *helpers]:
        s, e = span(node)
        block += [*code_lines[s:e], "", ""]
    lines[a:b] = block[:-2]
    have = {ast.unparse(n) for n in tree.body if isinstance(n, (ast.Import, ast.ImportFrom))}
    missing = [ast.unparse(n) for n in new.body if isinstance(n, (ast.Import, ast.ImportFrom))]
    missing = [m for m in dict.fromkeys(missing) if m not in have]
    head = _after_imports(tree)
    lines[head:head] = missing
    return "\n".join(lines).rstrip() + "\n"


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
    return Contract(old.module, old.name, signature_of(node), old.docstring)


def replace_signature(source: str, old: Contract, new: Contract) -> str:
    """``source`` with ``old``'s stub signature line(s) replaced by ``new``'s (the body is kept)."""
    tree = _parse(source, old.module)
    node = next((n for n in tree.body if isinstance(n, _DEFS) and n.name == old.name), None)
    if node is None:
        raise ContractError(f"{old.module} does not define {old.name}")
    lines = source.splitlines()
    first_body = node.body[0].lineno - 1
    lines[node.lineno - 1 : first_body] = [new.signature]
    return "\n".join(lines) + "\n"


def outline(source: str, hide: set[str] | None = None) -> str:
    """The module with every function body cut to its docstring and ``...``, without the top-level functions
    in ``hide``: what an agent sees of its module (so its context does not grow with the codebase)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return source
    if hide:
        defs = (ast.FunctionDef, ast.AsyncFunctionDef)
        tree.body = [n for n in tree.body if not (isinstance(n, defs) and n.name in hide)]
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            doc = ast.get_docstring(node)
            node.body = [ast.Expr(ast.Constant(doc))] if doc else []
            node.body.append(ast.Expr(ast.Constant(Ellipsis)))
    return ast.unparse(tree)


def test_path_for(module: str, function: str | None = None) -> str:
    """The test file of a module's lead (``tests/test_core.py``) or of a function's agent once it splits its
    function (``tests/test_core_parse.py``)."""
    stem = module.rsplit("/", 1)[-1].removesuffix(".py")
    return f"tests/test_{stem}{'_' + function.strip('_') if function else ''}.py"
