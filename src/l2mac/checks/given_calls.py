"""A test that calls a function the task gives otherwise than the task gives it is wrong, and is taken away.

The heads of the functions a step's skeleton gives are the task's: a written file gets them back
(:func:`l2mac.checks.contract.given_heads`), and the task's own tests call them as given. So a test calling one
with arguments its given signature does not take can never pass, whatever the code does; the type check's advice
("call it with the parameters it declares, or change the definition") then sends the model to change a head
that is put back at once. Seen on ClassEval_1 at 9e7c0bc: the model's test built ``AreaCalculator(2, 3)`` where
the task gives ``__init__(self, radius)``, and called ``calculate_annulus_area()`` where it takes
``inner_radius, outer_radius``; all 5 checks of the step reported those two lines and the model never changed
them. On ClassEval_3 a test called ``select_all`` on the class, not on an instance, 5 times.

Only calls whose callee is certain are weighed: a given function or class imported from the project, a given
method called on the class or on an instance the test (its fixture, or its ``setUp``) made of a given class.
"""

from __future__ import annotations

import ast
import inspect
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal, TypeVar

from l2mac.checks.consensus import remove_tests, test_functions
from l2mac.checks.contract import functions_and_methods, mended, one_line
from l2mac.checks.demands import is_stub_definition
from l2mac.fenced import fenced_blocks

_Function = ast.FunctionDef | ast.AsyncFunctionDef
_K = TypeVar("_K")
_V = TypeVar("_V")


class _Source(str):
    """A default value shown as the source gives it."""

    def __repr__(self) -> str:
        return str(self)


@dataclass(frozen=True)
class _Callable:
    """A given function as its callers see it: its name, its signature, and whether a call through an instance
    binds its first parameter (a plain method) or a call through the class does (a classmethod)."""

    name: str
    signature: inspect.Signature
    kind: Literal["function", "method", "staticmethod", "classmethod"] = "function"

    def shown(self) -> str:
        """The function as the task gives it: a class by what its constructor takes."""
        constructor = self.kind == "method" and "." not in self.name
        return f"{self.name}{self.called(through_instance=True) if constructor else self.signature}"

    def called(self, *, through_instance: bool) -> inspect.Signature:
        """The signature a call sees: the first parameter is bound for a method called on an instance and for a
        classmethod."""
        bound = (self.kind == "method" and through_instance) or self.kind == "classmethod"
        params = list(self.signature.parameters.values())
        return self.signature.replace(parameters=params[1:] if bound and params else params)


@dataclass
class GivenInterface:
    """The functions, classes (by their constructors) and methods a step's skeletons give."""

    functions: dict[str, _Callable] = field(default_factory=dict)
    constructors: dict[str, _Callable | None] = field(default_factory=dict)  # None: the class gives none
    methods: dict[tuple[str, str], _Callable] = field(default_factory=dict)

    def __bool__(self) -> bool:
        return bool(self.functions or self.constructors)


def given_interface(instruction: str) -> GivenInterface:
    """What the Python blocks of ``instruction`` that give stubs define at their top level (functions, classes and
    their methods). A name given twice with different signatures is left out: which one a call means is not
    known."""
    given = GivenInterface()
    twice: set[object] = set()
    for _, body in fenced_blocks(instruction):
        try:
            tree = ast.parse(mended(body))
        except SyntaxError:
            continue
        if not any(is_stub_definition(fn, owner) for fn, owner in functions_and_methods(tree)):
            continue
        for node in tree.body:  # a one-line head (``def f(x): ...``) is not put back: the code may change it
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and not one_line(node):
                _add(given.functions, node.name, _callable(node, None), twice)
            elif isinstance(node, ast.ClassDef):
                init = next((m for m in _methods(node) if m.name == "__init__"), None)
                if init is None or not one_line(init):
                    _add(given.constructors, node.name, _callable(init, node) if init else None, twice)
                for method in (m for m in _methods(node) if not one_line(m)):
                    _add(given.methods, (node.name, method.name), _callable(method, node), twice)
    return given


def _add(found: dict[_K, _V], key: _K, value: _V, twice: set[object]) -> None:
    if key in twice:
        return
    if key in found and found[key] != value:
        twice.add(key)
        del found[key]
        return
    found[key] = value


def _methods(cls: ast.ClassDef) -> list[_Function]:
    return [m for m in cls.body if isinstance(m, (ast.FunctionDef, ast.AsyncFunctionDef))]


def _callable(fn: _Function, owner: ast.ClassDef | None) -> _Callable:
    decorators = {ast.unparse(d) for d in fn.decorator_list}
    kind: Literal["function", "method", "staticmethod", "classmethod"] = "function"
    if owner is not None:
        kind = (
            "staticmethod"
            if "staticmethod" in decorators
            else "classmethod"
            if "classmethod" in decorators
            else "method"
        )
    name = f"{owner.name}.{fn.name}" if owner is not None else fn.name
    if owner is not None and fn.name == "__init__":
        name = owner.name
    return _Callable(name, _signature(fn.args), kind)


def _signature(args: ast.arguments) -> inspect.Signature:
    P = inspect.Parameter
    positional = [*args.posonlyargs, *args.args]
    defaults: list[ast.expr | None] = [None] * (len(positional) - len(args.defaults)) + list(args.defaults)
    params = [
        P(a.arg, P.POSITIONAL_ONLY if i < len(args.posonlyargs) else P.POSITIONAL_OR_KEYWORD, default=_default(d))
        for i, (a, d) in enumerate(zip(positional, defaults, strict=True))
    ]
    if args.vararg:
        params.append(P(args.vararg.arg, P.VAR_POSITIONAL))
    params += [
        P(a.arg, P.KEYWORD_ONLY, default=_default(d)) for a, d in zip(args.kwonlyargs, args.kw_defaults, strict=True)
    ]
    if args.kwarg:
        params.append(P(args.kwarg.arg, P.VAR_KEYWORD))
    return inspect.Signature(params)


def _default(node: ast.expr | None) -> object:
    return inspect.Parameter.empty if node is None else _Source(ast.unparse(node))


def miscalls(source: str, given: GivenInterface, owners: Mapping[str, str]) -> dict[tuple[str, ...], str]:
    """The tests of ``source`` (by their pytest key) that call a given function with arguments its given
    signature does not take, each with the first such call and why it does not fit. ``owners``: the project
    module that defines each top-level name (defined by one only): a given name counts where the test imports
    it from there (``numpy.mean`` is not the task's ``mean``)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return {}
    names, modules = _imported(tree, owners)
    own = {n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))}
    names = {alias: real for alias, real in names.items() if alias not in own}
    reader = _Reader(given, names, modules, owners)
    fixtures = {
        fn.name: cls
        for fn in (n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)))
        if not fn.name.startswith("test") and (cls := reader.made_by(fn)) is not None
    }
    found: dict[tuple[str, ...], str] = {}
    for key, fn in test_functions(tree).items():
        if not key[-1].startswith("test"):
            continue
        instances = {p.arg: fixtures[p.arg] for p in [*fn.args.args, *fn.args.kwonlyargs] if p.arg in fixtures}
        owner = _owner(tree, key)
        if owner is not None:  # what the class's setUp (or setup_method) keeps on self
            for method in _methods(owner):
                if method.name in ("setUp", "setup_method", "setup"):
                    instances.update(reader.kept_on_self(method))
        if (why := reader.first_miscall(fn, instances)) is not None:
            found[key] = why
    return found


def drop_miscalling_tests(
    source: str, given: GivenInterface, owners: Mapping[str, str], path: str
) -> tuple[str, list[str]]:
    """``source`` (a test file at ``path``) without the tests that call a given function otherwise than given;
    and, for each one removed, ``path::test: the call and why it does not fit``."""
    found = miscalls(source, given, owners)
    if not found:
        return source, []
    ids = {"::".join((path, *key)): why for key, why in found.items()}
    fixed, removed = remove_tests(source, list(ids))
    return fixed, [f"{test}: {ids[test]}" for test in removed]


def _owner(tree: ast.Module, key: tuple[str, ...]) -> ast.ClassDef | None:
    body: list[ast.stmt] = tree.body
    owner: ast.ClassDef | None = None
    for part in key[:-1]:
        owner = next((n for n in body if isinstance(n, ast.ClassDef) and n.name == part), None)
        if owner is None:
            return None
        body = owner.body
    return owner


def _imported(tree: ast.Module, owners: Mapping[str, str]) -> tuple[dict[str, str], dict[str, str]]:
    """The names imported from the project module that defines them (alias -> name), and the aliases of the
    project's modules imported whole."""
    names: dict[str, str] = {}
    modules: dict[str, str] = {}
    ours = set(owners.values())
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.update({a.asname or a.name: a.name for a in node.names if owners.get(a.name) == node.module})
        elif isinstance(node, ast.Import):
            modules.update({a.asname or a.name: a.name for a in node.names if a.name in ours})
    return names, modules


class _Reader:
    """Reads a test's calls against the given interface."""

    def __init__(
        self, given: GivenInterface, names: dict[str, str], modules: dict[str, str], owners: Mapping[str, str]
    ) -> None:
        self.given, self.names, self.modules, self.owners = given, names, modules, owners  # modules: alias -> name

    def given_name(self, node: ast.expr) -> str | None:
        """The given function or class ``node`` names: a name imported from the module defining it, or one read
        off that module imported whole."""
        if isinstance(node, ast.Name):
            return self.names.get(node.id)
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            module = self.modules.get(node.value.id)
            return node.attr if module is not None and self.owners.get(node.attr) == module else None
        return None

    def class_made(self, node: ast.expr | None) -> str | None:
        """The given class ``node`` makes an instance of (``Given(...)``), if it does."""
        if isinstance(node, ast.Call) and (name := self.given_name(node.func)) in self.given.constructors:
            return name
        return None

    def made_by(self, fn: _Function) -> str | None:
        """The given class a fixture returns (or yields) an instance of."""
        for node in ast.walk(fn):
            if isinstance(node, (ast.Return, ast.Yield)) and (cls := self.class_made(node.value)) is not None:
                return cls
        return None

    def kept_on_self(self, fn: _Function) -> dict[str, str]:
        """``self.attr`` -> the given class, for each instance ``fn`` keeps on ``self``."""
        kept: dict[str, str] = {}
        for node in ast.walk(fn):
            if isinstance(node, ast.Assign) and (cls := self.class_made(node.value)) is not None:
                for target in node.targets:
                    if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name):
                        kept[f"{target.value.id}.{target.attr}"] = cls
        return kept

    def first_miscall(self, fn: _Function, instances: dict[str, str]) -> str | None:
        """The first call in ``fn`` (in the order of its lines) that does not fit its given signature, and why."""
        instances = dict(instances)
        expected = _expecting_errors(fn)
        nodes = sorted(
            (n for n in ast.walk(fn) if isinstance(n, (ast.Assign, ast.Call)) and id(n) not in expected),
            key=lambda n: (n.lineno, n.col_offset),
        )
        for node in ast.walk(fn):  # bound otherwise (``for calc in ...``, ``with ... as calc``): not known
            targets = [t.target for t in [node] if isinstance(t, (ast.AnnAssign, ast.For, ast.AsyncFor))]
            targets += [i.optional_vars for i in getattr(node, "items", []) if i.optional_vars is not None]
            for target in targets:
                instances.pop(ast.unparse(target), None)
        for node in nodes:
            if isinstance(node, ast.Assign):
                cls = self.class_made(node.value)
                for target in node.targets:
                    if isinstance(target, (ast.Name, ast.Attribute)):
                        if cls is not None:
                            instances[ast.unparse(target)] = cls
                        else:  # no longer what it held (``self.calc = MagicMock()``)
                            instances.pop(ast.unparse(target), None)
                continue
            if (why := self._misfit(node, instances)) is not None:
                return why
        return None

    def _misfit(self, call: ast.Call, instances: dict[str, str]) -> str | None:
        if any(isinstance(a, ast.Starred) for a in call.args) or any(k.arg is None for k in call.keywords):
            return None  # what *args or **kwargs hold is not known
        target = self._callee(call.func, instances)
        if target is None:
            return None
        given, signature = target
        try:
            signature.bind(*call.args, **{k.arg: k.value for k in call.keywords if k.arg is not None})
        except TypeError as error:
            return f"`{ast.unparse(call)}`: {error}; the task gives {given.shown()}"
        return None

    def _callee(self, func: ast.expr, instances: dict[str, str]) -> tuple[_Callable, inspect.Signature] | None:
        given = self.given
        name = self.given_name(func)
        if name is not None and (function := given.functions.get(name)) is not None:
            return function, function.called(through_instance=False)
        if name is not None and (init := given.constructors.get(name)) is not None:
            return init, init.called(through_instance=True)
        if not isinstance(func, ast.Attribute):
            return None
        receiver = func.value
        cls = self.class_made(receiver) or instances.get(ast.unparse(receiver))
        if cls is not None and (method := given.methods.get((cls, func.attr))) is not None:
            return method, method.called(through_instance=True)
        owner = self.given_name(receiver)
        if owner is not None and (method := given.methods.get((owner, func.attr))) is not None:
            return method, method.called(through_instance=False)
        return None


def _expecting_errors(fn: _Function) -> set[int]:
    """The nodes (by ``id``) where a wrong call may be meant: inside ``with pytest.raises(...)`` or
    ``with self.assertRaises(...)``, and inside a ``try`` that catches a TypeError (or any exception)."""
    inside: set[int] = set()
    for node in ast.walk(fn):
        expects = isinstance(node, (ast.With, ast.AsyncWith)) and any(
            "raises" in ast.unparse(item.context_expr).lower() for item in node.items
        )
        expects = expects or (isinstance(node, ast.Try) and any(_catches_type_errors(h) for h in node.handlers))
        if expects:
            inside.update(id(n) for statement in getattr(node, "body", []) for n in ast.walk(statement))
    return inside


def _catches_type_errors(handler: ast.ExceptHandler) -> bool:
    if handler.type is None:
        return True
    caught = handler.type.elts if isinstance(handler.type, ast.Tuple) else [handler.type]
    return any(ast.unparse(t).rsplit(".", 1)[-1] in ("TypeError", "Exception", "BaseException") for t in caught)
