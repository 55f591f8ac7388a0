"""Run inside the sandbox, on the project's interpreter (as ``python -I -c``): the examples a step gives, each
docstring's as one doctest in the globals of the project module that defines its function or class; prints one
JSON line, per docstring its name, how many examples failed and doctest's report. Standard library only.
"""

from __future__ import annotations

import doctest
import importlib
import io
import json
import os
import sys

FLAGS = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE


def run(item: dict[str, str]) -> dict[str, object]:
    out = io.StringIO()
    try:
        module = importlib.import_module(item["module"])
        test = doctest.DocTestParser().get_doctest(item["text"], dict(vars(module)), item["name"], None, 0)
        runner = doctest.DocTestRunner(verbose=False, optionflags=FLAGS)
        runner.run(test, out=out.write)
        return {"name": item["name"], "failed": runner.failures, "report": out.getvalue()}
    except BaseException as e:  # the module does not import, or exits: that is the example's failure
        return {"name": item["name"], "failed": 1, "report": f"{type(e).__name__}: {e}"}


def main() -> None:
    spec = json.loads(sys.argv[1])
    here = os.getcwd()
    sys.path[:0] = [here, os.path.join(here, "src")]  # the project's modules, as its tests import them
    rows = [run(item) for item in spec]
    sys.stdout.flush()
    print("\n" + json.dumps(rows))


main()
