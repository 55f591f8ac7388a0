"""Run inside the sandbox, on the project's interpreter (as ``python -c``, the seed then pytest's arguments):
pytest, each test's setup, call and teardown (and the collection before them) begun with Python's ``random``
(and numpy's global generator, once a test module has loaded numpy) seeded alike, as pytest-randomly does, so
the same code gives the same report every run. Without it a shuffled deck or a random id in a failure message
differed from run to run: the report, and so the next prompt, changed with the code unchanged (seen on
ClassEval_12: ``assert 'AS' in ['6D', '6H', 'QueenD', ...]``, another deck each run, sent a replayed run live),
and implementations failing a test alike failed it with different messages. Standard library and pytest only."""

import contextlib
import os
import random
import sys

import pytest


class Seeded:
    def __init__(self, seed: int) -> None:
        self.seed = seed

    def reseed(self) -> None:
        random.seed(self.seed)
        numpy = sys.modules.get("numpy")
        if numpy is not None:
            with contextlib.suppress(Exception):  # a numpy too broken to seed: its tests say so themselves
                numpy.random.seed(self.seed)

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_setup(self, item: object) -> None:
        self.reseed()

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_call(self, item: object) -> None:
        self.reseed()

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_teardown(self, item: object) -> None:
        self.reseed()


def main() -> None:
    seeded = Seeded(int(sys.argv[1]))
    # what `python -m pytest` gives the code under test: its arguments (code reading sys.argv or calling
    # parse_args() sees pytest's, not the seed) and the folder it starts in, whole, first on the path
    args = sys.argv[2:]
    sys.argv[:] = [os.path.join(os.path.dirname(pytest.__file__), "__main__.py"), *args]
    sys.path[0] = os.getcwd()
    seeded.reseed()  # what test modules draw as they are collected
    sys.exit(pytest.main(args, plugins=[seeded]))


if __name__ == "__main__":
    main()
