"""A real install from the package index (marked ``index``: .ci/run runs these; offline runs leave them out).
The project declares a package l2mac does not have; it is installed into the project's .venv only, the
project's tests import it there under the sandbox, and a second run reuses the environment."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from l2mac.checks.environment import VENV, ProjectEnvironment
from l2mac.checks.sandbox import choose_runner
from l2mac.checks.tests import run_tests

pytestmark = pytest.mark.index

PACKAGE, MODULE = "tabulate==0.9.0", "tabulate"


def importable_by_l2mac(module: str) -> bool:
    probe = [sys.executable, "-c", f"import importlib.util as u; print(u.find_spec({module!r}) is not None)"]
    return subprocess.run(probe, capture_output=True, text=True, check=True).stdout.strip() == "True"


@pytest.fixture(scope="module")
def uv(tmp_path_factory: pytest.TempPathFactory) -> str:
    """uv from the package index, beside l2mac rather than in its environment."""
    target = tmp_path_factory.mktemp("uv")
    pip = [sys.executable, "-m", "pip", "install", "--quiet", "--no-input", "--target", str(target), "uv"]
    subprocess.run(pip, check=True, timeout=600)
    return str(target / "bin" / "uv")


@pytest.fixture(params=["pip", "uv"])
def installer(request: pytest.FixtureRequest) -> str:
    """The installer a project's environment is made with: l2mac's pip ("" for ProjectEnvironment), or uv."""
    return str(request.getfixturevalue("uv")) if request.param == "uv" else ""


def test_declared_packages_go_into_the_projects_venv_and_its_tests_run_there(tmp_path: Path, installer: str) -> None:
    assert not importable_by_l2mac(MODULE), "pick a package l2mac's own environment does not have"
    (tmp_path / "pyproject.toml").write_text(
        f'[project]\nname = "table"\nversion = "0.1.0"\ndependencies = ["{PACKAGE}"]\n'
    )
    code = "from tabulate import tabulate\n\n\ndef show(rows):\n    return tabulate(rows)\n"
    (tmp_path / "table.py").write_text(code)
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_table.py").write_text(
        "from table import show\n\n\ndef test_show():\n    assert '1' in show([[1, 2]])\n"
    )
    env = ProjectEnvironment(tmp_path, uv=installer)
    installed = env.sync()
    assert installed.own and not installed.problem, installed.problem
    assert installed.installer == ("uv" if installer else "pip")
    assert installed.python == str(tmp_path / VENV / "bin" / "python")
    runner = choose_runner("auto")
    if runner.isolation == "bubblewrap":  # the tests run on the project's .venv with no network, as all code does
        (tmp_path / "tests" / "test_offline.py").write_text(
            "import socket\n\nimport pytest\n\n\ndef test_no_network():\n    with pytest.raises(OSError):\n"
            "        socket.create_connection(('pypi.org', 443), timeout=5)\n"
        )
    outcome = run_tests(runner, tmp_path, 120, python=installed.python)
    assert outcome.status == "passed" and outcome.failed == 0, outcome.output
    assert not importable_by_l2mac(MODULE)  # nothing reached l2mac's own environment
    again = ProjectEnvironment(tmp_path, uv=installer).sync()  # the next run: reused, nothing installed
    assert again.own and again.install_s == 0.0


def test_an_unknown_package_is_the_resolvers_message_not_a_crash(tmp_path: Path) -> None:
    name = "l2mac-no-such-package-4f9c2"
    (tmp_path / "requirements.txt").write_text(f"{name}\n")
    failed = ProjectEnvironment(tmp_path).sync()
    assert not failed.own and name in failed.problem  # the installer's own words (pip's or uv's)


def test_a_game_runs_headless_in_its_own_venv(tmp_path: Path) -> None:
    """pygame draws to no window and plays to no device under the checks' environment (SDL's dummy drivers)."""
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "game"\nversion = "0.1.0"\ndependencies = ["pygame"]\n')
    (tmp_path / "game.py").write_text(
        "import pygame\n\n\ndef first_pixel(size):\n    pygame.init()\n    pygame.mixer.init()\n"
        "    screen = pygame.display.set_mode(size)\n    screen.fill((255, 0, 0))\n    pygame.display.flip()\n"
        "    pixel = tuple(screen.get_at((0, 0)))[:3]\n    pygame.quit()\n    return pixel\n"
    )
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_game.py").write_text(
        "from game import first_pixel\n\n\ndef test_draws():\n    assert first_pixel((32, 24)) == (255, 0, 0)\n"
    )
    installed = ProjectEnvironment(tmp_path).sync()
    assert installed.own and not installed.problem, installed.problem
    outcome = run_tests(choose_runner("auto"), tmp_path, 120, python=installed.python)
    assert outcome.status == "passed", outcome.output
