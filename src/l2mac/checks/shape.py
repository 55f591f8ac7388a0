"""Checks of a project's shape that small models get wrong: tests written into program code, program code copied
into tests or into another module, a program that parses its arguments and still prompts, a function whose
docstring says what it returns and that returns nothing."""

from __future__ import annotations

import ast
import re

from l2mac.checks.issues import CodeIssue
from l2mac.checks.layout import is_test_file, module_name


def defined_again(trees: dict[str, ast.Module], check: list[str]) -> list[CodeIssue]:
    """A module that imports from another project module and also defines one of that module's functions
    again, with the same parameters, has a copy that drifts from the original (seen: todo/cli.py imported Todo
    from todo.core, then copied load_todos and save_todos, bug included, so fixing core never fixed the CLI).
    A function of the same name with other parameters is a function of its own (a CLI's ``add_todo(file,
    task)`` beside core's ``add_todo(todos, todo)``): the model cannot "delete the copy", so it is not reported.
    Exact copies never get here: the repairs replace them by imports."""
    defs = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
    files = {module_name(rel): rel for rel in trees if not is_test_file(rel)}
    issues: list[CodeIssue] = []
    for rel in check:
        if is_test_file(rel):
            continue
        tree = trees[rel]
        sources = {
            n.module
            for n in ast.walk(tree)
            if isinstance(n, ast.ImportFrom) and not n.level and n.module in files and files[n.module] != rel
        }
        theirs = {
            node.name: (module, node)
            for module in sorted(sources)
            for node in trees[files[module]].body
            if isinstance(node, defs) and not node.name.startswith("_") and node.name != "main"
        }
        for node in tree.body:
            if not isinstance(node, defs) or node.name not in theirs:
                continue
            module, original = theirs[node.name]
            if _parameters(node) != _parameters(original):
                continue
            issues.append(
                CodeIssue(
                    rel,
                    node.lineno,
                    "lint",
                    f"defines {node.name!r} again, with the same parameters as in {files[module]}, which this file "
                    f"imports from: delete this copy and use `from {module} import {node.name}` (mend the original "
                    f"in {files[module]} if it is wrong), or rename it if it does something else",
                )
            )
    return issues


def _parameters(node: ast.stmt) -> list[str] | None:
    """A function's parameter names; None for a class (a class copied is a copy whatever its body)."""
    if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return None
    a = node.args
    return [p.arg for p in [*a.posonlyargs, *a.args, a.vararg, *a.kwonlyargs, a.kwarg] if p is not None]


def tests_in_code(rel: str, tree: ast.Module) -> CodeIssue | None:
    """A code file (not a test file) that imports pytest and defines test functions holds tests where the code
    should be: a small model asked again for a module writes its tests into it (seen: todo/cli.py replaced by
    a copy of tests/test_core.py)."""
    uses_pytest = any(
        (isinstance(n, ast.Import) and any(a.name == "pytest" for a in n.names))
        or (isinstance(n, ast.ImportFrom) and n.module == "pytest")
        for n in tree.body
    )
    if is_test_file(rel) or not uses_pytest:
        return None
    tests = [
        n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name.startswith("test")
    ]
    if not tests:
        return None
    return CodeIssue(
        rel,
        tests[0].lineno,
        "test",
        f"holds pytest tests ({', '.join(t.name for t in tests[:3])}), but it is program code, not a test file: "
        f"write the code {rel} should have here, and tests in a tests/test_*.py file",
    )


def prompts_in_command_line(rel: str, tree: ast.Module) -> CodeIssue | None:
    """A program that parses its arguments with argparse and also calls input() asks for what its arguments
    should carry, and a test cannot type: seen in the demo, ``done`` and ``remove`` sub-commands without an
    argument that prompted for the task instead."""
    calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call)]
    parses = any(isinstance(c.func, ast.Attribute) and c.func.attr == "parse_args" for c in calls)
    prompts = sorted(c.lineno for c in calls if isinstance(c.func, ast.Name) and c.func.id == "input")
    if is_test_file(rel) or not parses or not prompts:
        return None
    also = f" (also line {', '.join(map(str, prompts[1:]))})" if prompts[1:] else ""
    return CodeIssue(
        rel,
        prompts[0],
        "lint",
        f"input() in a program that parses its arguments{also}: a test cannot type, and the value belongs in "
        "the arguments. Add an argument for it (parser.add_argument), use it, and delete the input() call",
    )


def copied_into_tests(trees: dict[str, ast.Module], check: list[str]) -> list[CodeIssue]:
    """A test file that defines a function or class the project defines elsewhere tests its own copy, not the
    project's code (a small model's habit): report it, naming the module to import from."""
    defs = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
    owners: dict[str, str] = {}
    for rel, tree in trees.items():
        if not is_test_file(rel):
            for node in tree.body:
                if isinstance(node, defs) and not node.name.startswith(("_", "test")) and node.name != "main":
                    owners.setdefault(node.name, rel)
    issues = []
    for rel in check:
        if not is_test_file(rel):
            continue
        for node in trees[rel].body:
            if isinstance(node, defs) and node.name in owners:
                module = module_name(owners[node.name])
                issues.append(
                    CodeIssue(
                        rel,
                        node.lineno,
                        "test",
                        f"defines {node.name!r} itself, but {owners[node.name]} defines it: tests must import "
                        f"the code they test (from {module} import {node.name}), not copy it",
                    )
                )
    return issues


#: a docstring's return field (``:return: the balance``, ``Returns:``) or a sentence saying what is returned
_RETURN_FIELD = re.compile(r"^\s*(?::returns?\b[^:]*:|returns?:)\s*(\S.*)?$", re.IGNORECASE | re.MULTILINE)
_RETURN_PROSE = re.compile(
    r"(?<!not )(?<!n't )\breturns?\s+(?:the|a|an|its|their|this|that|whether|true|false)\b", re.IGNORECASE
)
_NOTHING = re.compile(r"^(?:none|nothing|no value)\b", re.IGNORECASE)
#: what :func:`returns_nothing` says of a function, after its name
RETURNS_NOTHING = " returns nothing, but its docstring says what it returns"


def said_to_return_nothing(report: str, path: str, name: str) -> bool:
    """Whether a check report says function ``name`` of ``path`` returns nothing its docstring says it returns."""
    return (
        re.search(rf"^{re.escape(path)}:\d+: lint: {re.escape(name + '()' + RETURNS_NOTHING)}", report, re.M)
        is not None
    )


def returns_nothing(rel: str, tree: ast.Module) -> list[CodeIssue]:
    """Functions (and methods) of a code file whose docstring says what they return, and that return nothing: a
    small model forgets the ``return`` (seen on ClassEval_8 at 5d50fc8: "Deposits ..., return the current
    account balance", and deposit() and withdraw() returned None; seven of its hidden tests failed on that)."""
    if is_test_file(rel):
        return []
    found: list[CodeIssue] = []
    for node in ast.walk(tree):
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) or node.name == "__init__":
            continue
        doc = ast.get_docstring(node) or ""
        if not _says_it_returns(doc) or _returns_a_value(node) or _does_nothing(node):
            continue
        found.append(
            CodeIssue(
                rel,
                node.lineno,
                "lint",
                f"{node.name}(){RETURNS_NOTHING}: return that value",
            )
        )
    return found


def _says_it_returns(doc: str) -> bool:
    fields = [m.group(1) or "" for m in _RETURN_FIELD.finditer(doc)]
    if fields:
        return any(f and not _NOTHING.match(f.strip()) for f in fields)
    summary = re.split(r"\n\s*\n|>>>|^\s*:", doc, maxsplit=1, flags=re.MULTILINE)[0]  # its first paragraph
    return _RETURN_PROSE.search(summary) is not None


def _returns_a_value(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """Whether ``fn`` itself (not a function inside it) returns a value (``return None`` said outright counts),
    yields, or ends by raising."""
    if isinstance(fn.body[-1], ast.Raise):
        return True
    nodes: list[ast.AST] = list(fn.body)
    while nodes:
        node = nodes.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            continue
        if (isinstance(node, ast.Return) and node.value is not None) or isinstance(node, (ast.Yield, ast.YieldFrom)):
            return True
        nodes.extend(ast.iter_child_nodes(node))
    return False


def _does_nothing(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """A stub, abstract or not: what is missing there is a body, which other checks ask for."""
    body = fn.body[1:] if ast.get_docstring(fn) is not None else fn.body
    return all(
        isinstance(s, ast.Pass)
        or (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))
        or (isinstance(s, ast.Raise) and "NotImplementedError" in ast.unparse(s))
        for s in body
    )


def calls_itself_for_another(trees: dict[str, ast.Module], check: list[str]) -> list[CodeIssue]:
    """Functions of the code files ``check`` that call themselves with arguments they cannot take, where another
    project module defines a top-level function of that name (see :func:`hidden_calls`); the autofix
    (``checks.autofix.call_hidden_functions``) leaves only those it could not mend."""
    owners = top_level_functions(trees)
    found: list[CodeIssue] = []
    for rel in check:
        if is_test_file(rel) or rel not in trees:
            continue
        for fn, call, other in hidden_calls(trees[rel], module_name(rel), owners):
            message = (
                f"{fn.name}() calls itself (line {call.lineno}) with arguments it does not take: its name hides "
                f"{other}.{fn.name}, which the call means; import that one under another name (from "
                f"{other} import {fn.name} as ...) or name this function differently"
            )
            found.append(CodeIssue(rel, fn.lineno, "lint", message))
    return found


def top_level_functions(trees: dict[str, ast.Module]) -> dict[str, list[str]]:
    """Function name -> the code modules that define it at their top level."""
    owners: dict[str, list[str]] = {}
    for rel, tree in trees.items():
        if not is_test_file(rel):
            for node in tree.body:
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    owners.setdefault(node.name, []).append(module_name(rel))
    return owners


def hidden_calls(
    tree: ast.Module, module: str, owners: dict[str, list[str]]
) -> list[tuple[ast.FunctionDef | ast.AsyncFunctionDef, ast.Call, str]]:
    """(function, call, other module) for each function of ``tree`` (a module-level one, or one nested in a
    function: a view inside an app factory; never a method, whose bare name is not itself) that calls itself
    with arguments it cannot take, where exactly one ``other`` module defines a function of its name
    (``owners``, see :func:`top_level_functions`): that one was meant, and the new function's name hides it.
    A function whose own scope binds the name some other way (a parameter, an import, a nested ``def``) is
    left alone. Seen on the notes API at 4958ca5: a view ``def list_notes():`` whose body called
    ``list_notes(db_path)``, meaning notes.store.list_notes; it fails only when a request reaches it."""
    found: list[tuple[ast.FunctionDef | ast.AsyncFunctionDef, ast.Call, str]] = []
    todo: list[ast.stmt] = list(tree.body)
    while todo:
        fn = todo.pop()
        if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        own = own_nodes(fn)
        todo.extend(n for n in own if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)))
        others = [m for m in owners.get(fn.name, []) if m != module]
        if len(others) != 1 or fn.name in bound_in(fn, own):
            continue
        call = next((c for c in calls_of(fn, fn.name) if not can_take(fn.args, c)), None)
        if call is not None:
            found.append((fn, call, others[0]))
    return found


def own_nodes(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> list[ast.AST]:
    """The nodes of ``fn``'s body, with the functions and classes defined inside it but not their insides."""
    out: list[ast.AST] = []
    todo: list[ast.AST] = list(fn.body)
    while todo:
        node = todo.pop()
        out.append(node)
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            todo.extend(ast.iter_child_nodes(node))
    return out


def bound_in(fn: ast.FunctionDef | ast.AsyncFunctionDef, own: list[ast.AST]) -> set[str]:
    """The names ``fn``'s own scope binds: its parameters, what it assigns, imports or defines."""
    a = fn.args
    bound = {p.arg for p in [*a.posonlyargs, *a.args, *a.kwonlyargs, a.vararg, a.kwarg] if p is not None}
    for node in own:
        if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            bound.add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bound.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            bound |= {(x.asname or x.name).split(".")[0] for x in node.names}
    return bound


def calls_of(fn: ast.FunctionDef | ast.AsyncFunctionDef, name: str) -> list[ast.Call]:
    """The calls of ``name`` (by that bare name) in ``fn``'s own body (not in the functions it defines)."""
    return [n for n in own_nodes(fn) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == name]


def parameter_defaults(args: ast.arguments) -> dict[str, ast.expr]:
    """Each parameter of ``args`` that has a default (positional or keyword-only), with that default."""
    positional = [*args.posonlyargs, *args.args]
    found = {p.arg: d for p, d in zip(positional[len(positional) - len(args.defaults) :], args.defaults, strict=True)}
    return found | {p.arg: d for p, d in zip(args.kwonlyargs, args.kw_defaults, strict=True) if d is not None}


def can_take(args: ast.arguments, call: ast.Call) -> bool:
    """Whether a function with parameters ``args`` can take ``call``'s arguments (by their number and keywords)."""
    if any(isinstance(a, ast.Starred) for a in call.args) or any(k.arg is None for k in call.keywords):
        return True
    positional = [*args.posonlyargs, *args.args]
    required = len(positional) - len(args.defaults)
    given = len(call.args)
    named = {k.arg for k in call.keywords}
    known = {a.arg for a in [*args.args, *args.kwonlyargs]}
    if (given > len(positional) and args.vararg is None) or (named - known and args.kwarg is None):
        return False
    filled = given + len(named & {a.arg for a in positional[given:required]})
    return filled >= required


def discarded_parameters(
    fn: ast.FunctionDef | ast.AsyncFunctionDef,
) -> list[tuple[str, ast.Assign | ast.AnnAssign]]:
    """(parameter, statement) for each parameter of ``fn`` that a statement of its body sets, before anything reads
    it, to a value that does not use it: the caller's argument is thrown away. Seen on the notes API at 7b721fe:
    ``def create_app(db_path: Path):`` began ``db_path = Path('data.db')``, so every test's app shared one file
    in the project folder and each test saw the notes of the others."""
    a = fn.args
    positional = [*a.posonlyargs, *a.args]
    required = positional[: len(positional) - len(a.defaults)]
    required += [p for p, d in zip(a.kwonlyargs, a.kw_defaults, strict=True) if d is None]
    # a parameter with a default may rightly be set when it is left out: not when its value is thrown away,
    # but telling the two apart needs more than its first statement
    params = {p.arg for p in required} - {"self", "cls"}
    found: list[tuple[str, ast.Assign | ast.AnnAssign]] = []
    previous_end = fn.lineno
    for i, stmt in enumerate(fn.body):
        if not params:
            break
        target = _assigned_name(stmt)
        read = {n.id for n in ast.walk(stmt) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
        next_start = fn.body[i + 1].lineno if i + 1 < len(fn.body) else None
        alone = stmt.lineno > previous_end and (next_start is None or next_start > (stmt.end_lineno or stmt.lineno))
        if target in params and target not in read and isinstance(stmt, (ast.Assign, ast.AnnAssign)) and alone:
            found.append((target, stmt))
        previous_end = stmt.end_lineno or stmt.lineno
        named = read | {n.id for n in ast.walk(stmt) if isinstance(n, ast.Name)}
        params -= named  # read, or set some other way (in a loop, a branch): what follows is not known
    return found


def _assigned_name(stmt: ast.stmt) -> str:
    if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
        return stmt.targets[0].id
    if isinstance(stmt, ast.AnnAssign) and stmt.value is not None and isinstance(stmt.target, ast.Name):
        return stmt.target.id
    return ""


_DEFINITIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


def free_reads(node: ast.AST, local: frozenset[str] = frozenset()) -> set[str]:
    """The names ``node`` reads that are not its functions' own (their parameters and what they assign)."""
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
        a = node.args
        own = {p.arg for p in [*a.posonlyargs, *a.args, *a.kwonlyargs, a.vararg, a.kwarg] if p is not None}
        body: list[ast.AST] = [node.body] if isinstance(node, ast.Lambda) else list(node.body)
        stores = {
            n.id for b in body for n in ast.walk(b) if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load)
        }
        stores -= {g for b in body for n in ast.walk(b) if isinstance(n, (ast.Global, ast.Nonlocal)) for g in n.names}
        inner = local | own | stores | {n.name for b in body for n in ast.walk(b) if isinstance(n, _DEFINITIONS)}
        heads: list[ast.AST] = [*getattr(node, "decorator_list", []), *a.defaults, *filter(None, a.kw_defaults)]
        return set().union(*(free_reads(h, local) for h in heads), *(free_reads(b, frozenset(inner)) for b in body))
    if isinstance(node, ast.Name):
        return {node.id} if isinstance(node.ctx, ast.Load) and node.id not in local else set()
    return set().union(*(free_reads(child, local) for child in ast.iter_child_nodes(node)))
