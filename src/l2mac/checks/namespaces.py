"""Classes that only host functions, turned back into the module-level functions a task names.

A specification's UML often draws its module's functions as a class (DevBench's "fake class to host global
functions", ``Global_functions``), and a small model writes that class, its functions as static methods or
methods that never use ``self``, so ``from module import get_args`` fails.
"""

from __future__ import annotations

import ast
import copy
import re

from l2mac.checks.python import top_level_definitions


def unwrap_namespace_classes(source: str, wanted: set[str], elsewhere: str = "") -> tuple[str, list[str]]:
    """``source`` with each class that only hosts functions the task names as module-level functions turned back
    into those functions (comments inside them are not kept); returns the source and the classes unwrapped.

    A class is unwrapped only when
    it is not itself among ``wanted`` (the names the step gives the file), holds nothing but such methods (and
    a docstring), at least one of them is wanted and not defined at the module's top level, and the file uses
    the class only to call them (``Global_functions.main()`` becomes ``main()``); anything else is left. When
    ``elsewhere`` (the project's other files) names the class, it stays too, as those functions under their
    old names (``get_args = staticmethod(get_args)``), for the code that calls them through it (seen: a lead's
    tests calling ``Global_functions().main(...)``)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return source, []
    top = top_level_definitions(tree)
    lines = source.splitlines()
    done: list[str] = []
    for cls in reversed([n for n in tree.body if isinstance(n, ast.ClassDef)]):
        functions = _hosted_functions(cls)
        names = {f.name for f in functions or []}
        if functions is None or cls.name in wanted or not (names & wanted) - top or names & top:
            continue
        rest = "\n".join(lines[: cls.lineno - 1 - len(cls.decorator_list)] + lines[cls.end_lineno or cls.lineno :])
        calls = re.compile(rf"\b{re.escape(cls.name)}\.({'|'.join(map(re.escape, names))})\b")
        if re.search(rf"\b{re.escape(cls.name)}\b", calls.sub("", rest)):
            continue  # made, subclassed or passed around: a class after all
        hoisted = "\n\n\n".join(ast.unparse(f) for f in functions)
        if re.search(rf"\b{re.escape(cls.name)}\b", elsewhere):  # another file calls them through the class
            hoisted += f"\n\n\nclass {cls.name}:\n" + "".join(
                f"    {f.name} = staticmethod({f.name})\n" for f in functions
            )
        start = (cls.decorator_list[0].lineno if cls.decorator_list else cls.lineno) - 1
        lines[start : cls.end_lineno] = hoisted.splitlines()
        lines = calls.sub(r"\1", "\n".join(lines)).splitlines()
        done.append(cls.name)
    if not done:
        return source, []
    result = "\n".join(lines) + "\n"
    try:
        ast.parse(result)
    except SyntaxError:
        return source, []
    return result, sorted(done)


def _hosted_functions(cls: ast.ClassDef) -> list[ast.FunctionDef | ast.AsyncFunctionDef] | None:
    """The class's methods as module-level functions (``@staticmethod`` dropped, an unused ``self`` or ``cls``
    taken out), when the class holds only methods that use neither; else None."""
    functions: list[ast.FunctionDef | ast.AsyncFunctionDef] = []
    for i, node in enumerate(cls.body):
        if i == 0 and isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
            continue  # the docstring
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) or node.name.startswith("__"):
            return None
        decorators = [d for d in node.decorator_list if ast.unparse(d) != "staticmethod"]
        if decorators:
            return None  # a classmethod, a property: a class's
        args = node.args.posonlyargs + node.args.args
        static = len(decorators) < len(node.decorator_list)
        first = None if static or not args else args[0].arg
        if first is not None and first not in ("self", "cls"):
            return None
        if first is not None and any(isinstance(n, ast.Name) and n.id == first for n in ast.walk(node)):
            return None  # it uses its instance
        fn = copy.deepcopy(node)
        fn.decorator_list = []
        if first is not None:
            if fn.args.posonlyargs:
                fn.args.posonlyargs = fn.args.posonlyargs[1:]
            else:
                fn.args.args = fn.args.args[1:]
        functions.append(fn)
    return functions or None
