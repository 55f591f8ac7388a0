"""Run inside the sandbox, on the project's interpreter (as ``python -I -c``): the examples a step gives, each
docstring's as one doctest in the globals of the project module that defines its function or class; prints one
JSON line, per docstring its name, how many examples failed, doctest's report, the file it reads that nothing
made (see ``Runner``) and the files its examples name. Standard library only.

An example's output is compared as its reader would: as doctest does, else as the same value, so a docstring's
quoting, spacing, ``3.00`` or numpy 2's scalar reprs are not a failure of right code. Run against the reference
solutions of the 50 ClassEval tasks, doctest's exact comparison failed 36 of their 155 given docstrings, the
Reader 11; most of the 25 were not wrong output but such differences of form (see ``Reader``).
"""

from __future__ import annotations

import os
import sys

# -I, which keeps a project file named like a module imported here (json.py) out, also ignores PYTHONHASHSEED:
# a set's order would then change from run to run, and a docstring run twice to see whether its output varies
# would take code that depends on that order for code no one can make pass. The driver runs itself again with
# the seed pinned, as isolated otherwise (-P -s, and no PYTHON* variable but the seed).
if sys.flags.hash_randomization and sys.version_info >= (3, 11):
    _env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    _env.update(PYTHONHASHSEED="0", PYTHONDONTWRITEBYTECODE="1")
    os.execve(sys.executable, [sys.executable, "-P", "-s", *(a for a in sys.orig_argv[1:] if a != "-I")], _env)

import ast
import doctest
import importlib
import io
import json
import math
import re
from collections.abc import Callable
from types import TracebackType

FLAGS = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE
#: a line of expected output that is a note of the state after the call, not output: ``self.users = {'a': []}``,
#: ``camelize_map['first_name'] = 'new name'``, ``flag = False``
NOTE = re.compile(r"^\s*[A-Za-z_][\w.]*(?:\[[^\]]*\])*\s*=(?!=)")
#: numpy 2's repr of a scalar (``np.int64(10)``, ``np.True_``), where docstrings written before it show ``10``
NUMPY_SCALAR = re.compile(r"\b(?:np|numpy)\.(?:(?:u?int\d*|float\d*|complex\d*|bool_?|str_)\(([^()]*)\)|(True|False)_)")
#: an object's address in its default repr, which differs from run to run
ADDRESS = re.compile(r"\bat 0x[0-9a-fA-F]+")
#: how many units in the last place two floats may differ by and be the same value: what the order of the
#: arithmetic decides (a sum's rounding errors add up, one or two per operation)
FLOAT_ULPS = 16
#: how near zero a float is the zero a docstring shows: what is left of a difference of equal values
NEAR_ZERO = 1e-12
_NO_VALUE = object()


class Reader(doctest.OutputChecker):
    """Doctest's comparison, and where it fails, what a reader of the docstring takes the example to say:
    - no output shown (``account.deposit(10)`` on a line of its own, returning the balance) is a step towards
      the example's point, not a claim that nothing is returned;
    - a line that is a note of the state (``self.rates['KRW'] = 1308.84``), where the code prints no such line,
      is not output: notes alone are shown for a call that returns nothing, and hold when nothing came out;
    - output that is the same value as the one shown is the same (``["a", "b"]`` and ``['a', 'b']``, ``3.00``
      and ``3``, ``np.int64(10)`` and ``10``, ``1.0000000000000002`` and ``0.9999999999999998``; not ``1`` and
      ``True``), as are two default reprs that differ only in the address."""

    def check_output(self, want: str, got: str, optionflags: int) -> bool:
        if super().check_output(want, got, optionflags):
            return True
        if not want.strip():
            return True
        lines = want.splitlines()
        if not any(NOTE.match(line) for line in got.splitlines()):  # else such lines are what the code prints
            lines = [line for line in lines if not NOTE.match(line)]
        shown = "\n".join(lines).strip()
        if not shown:
            return not got.strip()
        if super().check_output(ADDRESS.sub("at 0x0", shown) + "\n", ADDRESS.sub("at 0x0", got), optionflags):
            return True
        value = _value(shown)
        return value is not _NO_VALUE and _same(_value(got), value)


def _value(text: str) -> object:
    """The Python literal ``text`` shows (numpy's scalar reprs read as plain numbers), if it shows one."""
    try:
        return ast.literal_eval(NUMPY_SCALAR.sub(r"\1\2", text.strip()))
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return _NO_VALUE


def _same(got: object, shown: object) -> bool:
    """``got == shown`` with the types alike, but an int and a float: ``3`` is ``3.00``, ``1`` is not ``True``;
    and a float the same to the last few of its digits (``1.0000000000000002`` is ``0.9999999999999998``): how
    the arithmetic is ordered decides those, not what it computes."""
    numbers = (int, float)
    if isinstance(got, numbers) and isinstance(shown, numbers) and not isinstance(got, bool):
        if isinstance(shown, bool):
            return False
        return got == shown or ((isinstance(got, float) or isinstance(shown, float)) and _near(got, shown))
    if type(got) is not type(shown):
        return False
    if isinstance(got, (list, tuple)) and isinstance(shown, (list, tuple)):
        return len(got) == len(shown) and all(_same(g, s) for g, s in zip(got, shown, strict=True))
    if isinstance(got, dict) and isinstance(shown, dict):
        return got.keys() == shown.keys() and all(_same(got[k], shown[k]) for k in got)
    return got == shown


def _near(got: float, shown: float) -> bool:
    if shown == 0:
        return abs(got) <= NEAR_ZERO
    return abs(got - shown) <= FLOAT_ULPS * math.ulp(max(abs(got), abs(shown)))


#: the file a FileNotFoundError names, where its message alone says it (a library's own wording)
MISSING_FILE = re.compile(r"No such file or directory: '([^']+)'")
#: a string literal that reads as a file's path: a folder in it, or a name with an extension
FILE_LIKE = re.compile(r"[/\\]|\.\w{1,5}$")
#: expected output that says nothing a file's content would decide: what a call that writes one returns
NO_CONTENT = ("", "True", "False", "None")


class Runner(doctest.DocTestRunner):
    """Doctest's runner, noting the file the docstring reads and nothing made, when that is its first failure:
    the example raised FileNotFoundError for a file that it names and no example before it named (so no earlier
    call was meant to make it), in a folder that is there, and it shows output the file's content would decide
    (``read_csv('read_test.csv')`` showing the rows). Seen on ClassEval_26: no code can pass such an example
    where the task never gives the file, and a right draft of read_csv was rewritten in its pursuit."""

    missing: str | None = None
    _failed = False

    def report_failure(
        self, out: Callable[[str], object], test: doctest.DocTest, example: doctest.Example, got: str
    ) -> None:
        self._failed = True
        super().report_failure(out, test, example, got)

    def report_unexpected_exception(
        self,
        out: Callable[[str], object],
        test: doctest.DocTest,
        example: doctest.Example,
        exc_info: tuple[type[BaseException], BaseException, TracebackType],
    ) -> None:
        if not self._failed:
            self.missing = _read_first(test, example, exc_info[1])
        self._failed = True
        super().report_unexpected_exception(out, test, example, exc_info)


def _read_first(test: doctest.DocTest, example: doctest.Example, error: BaseException) -> str | None:
    """The literal naming the file ``error`` did not find, if ``example`` reads it first (see ``Runner``)."""
    if not isinstance(error, FileNotFoundError) or example.want.strip() in NO_CONTENT:
        return None
    said = error.filename if isinstance(error.filename, str) else None
    if said is None:
        found = MISSING_FILE.search(str(error))
        said = found.group(1) if found else None
    if not said or os.path.exists(said) or not os.path.isdir(os.path.dirname(os.path.abspath(said))):
        return None  # not a file missing from a folder that is there: a folder the code never made, say
    index = test.examples.index(example)
    earlier = set().union(*(_files(e.source) for e in test.examples[:index]))
    for name in _files(example.source) - earlier:
        if os.path.abspath(said) == os.path.abspath(name) or os.path.basename(said) == os.path.basename(name):
            return name
    return None


def _files(source: str) -> set[str]:
    """The string literals of an example's code that read as files' paths."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return set()
    found = {n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)}
    return {f for f in found if FILE_LIKE.search(f)}


def run(item: dict[str, str]) -> dict[str, object]:
    out = io.StringIO()
    try:
        module = importlib.import_module(item["module"])
        test = doctest.DocTestParser().get_doctest(item["text"], dict(vars(module)), item["name"], None, 0)
        runner = Runner(checker=Reader(), verbose=False, optionflags=FLAGS)
        runner.run(test, out=out.write)
        named = sorted(set().union(*(_files(e.source) for e in test.examples)))
        return {
            "name": item["name"],
            "failed": runner.failures,
            "report": out.getvalue(),
            "missing": runner.missing,
            "named": named,
        }
    except BaseException as e:  # the module does not import, or exits: that is the example's failure
        return {"name": item["name"], "failed": 1, "report": f"{type(e).__name__}: {e}", "missing": None, "named": []}


def main() -> None:
    spec = json.loads(sys.argv[1])
    here = os.getcwd()
    sys.path[:0] = [here, os.path.join(here, "src")]  # the project's modules, as its tests import them
    rows = [run(item) for item in spec]
    sys.stdout.flush()
    print("\n" + json.dumps(rows))


main()
