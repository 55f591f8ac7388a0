"""Generated code under the runners: what it can reach, and that runaway programs are stopped.

Bubblewrap tests skip where bubblewrap is missing, except in CI (``L2MAC_CI=1``, set by ``.ci/run``, which
installs it): there a missing sandbox fails the run rather than passing untested.
"""

from __future__ import annotations

import os
import shutil
import socket
import sys
import textwrap
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from l2mac.checks.runner import PidsCgroup, ResourceLimits, Runner, SubprocessRunner
from l2mac.checks.sandbox import BubblewrapRunner, bubblewrap_problem, choose_runner, interpreter_paths
from l2mac.errors import ConfigError


def _bwrap_or_skip() -> str:
    path = shutil.which("bwrap")
    problem = bubblewrap_problem(path)
    if problem is not None or path is None:
        if os.environ.get("L2MAC_CI"):
            pytest.fail(f"CI must test the sandbox, but {problem}")
        pytest.skip(str(problem))
    return path


@pytest.fixture
def home(tmp_path: Path) -> Path:
    """A stand-in for the user's home: holds a config with a key and a private file."""
    h = tmp_path / "home"
    (h / ".l2mac").mkdir(parents=True)
    (h / ".l2mac" / "config.yaml").write_text("llm:\n  api_key: sk-SECRET-CONFIG\n")
    (h / "private.txt").write_text("PRIVATE")
    return h


@pytest.fixture
def project(tmp_path: Path) -> Path:
    p = tmp_path / "project"
    p.mkdir()
    return p


@pytest.fixture
def bwrap_runner(home: Path) -> BubblewrapRunner:
    return BubblewrapRunner(_bwrap_or_skip(), [home], interpreter_paths())


def _py(runner: Runner, project: Path, code: str, timeout: float = 30) -> tuple[int, str, bool]:
    (project / "prog.py").write_text(textwrap.dedent(code))
    r = runner.run([sys.executable, "prog.py"], project, timeout)
    return r.returncode, r.output, r.timed_out


def test_api_keys_and_config_path_never_reach_generated_code(
    monkeypatch: pytest.MonkeyPatch, project: Path, home: Path
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-SECRET-ENV")
    monkeypatch.setenv("GITHUB_TOKEN", "ghp-SECRET")
    monkeypatch.setenv("L2MAC_CONFIG", str(home / ".l2mac" / "config.yaml"))
    code, out, _ = _py(SubprocessRunner(), project, "import os; print(sorted(os.environ.items()))")
    assert code == 0
    assert "SECRET" not in out and "L2MAC_CONFIG" not in out and "config.yaml" not in out


def test_bubblewrap_hides_home_and_config(bwrap_runner: BubblewrapRunner, project: Path, home: Path) -> None:
    code, out, _ = _py(
        bwrap_runner,
        project,
        f"""
        import os
        for p in [{str(home / "private.txt")!r}, {str(home / ".l2mac" / "config.yaml")!r}]:
            print(p, os.path.exists(p))
        """,
    )
    assert code == 0, out
    assert "True" not in out and "SECRET" not in out


def test_bubblewrap_only_the_project_is_writable(bwrap_runner: BubblewrapRunner, project: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    code, out, _ = _py(
        bwrap_runner,
        project,
        f"""
        for p in [{str(outside / "x.txt")!r}, "/etc/l2mac-x", "/usr/l2mac-x"]:
            try:
                open(p, "w").write("x")
                print("WROTE", p)
            except OSError as e:
                print("refused", p, e.errno)
        open("inside.txt", "w").write("ok")
        open("/tmp/scratch", "w").write("private tmp")
        """,
    )
    assert code == 0, out
    assert "WROTE" not in out
    assert not (outside / "x.txt").exists() and not Path("/etc/l2mac-x").exists()
    assert (project / "inside.txt").read_text() == "ok"
    assert not Path("/tmp/scratch").exists()


@pytest.fixture
def listener() -> Iterator[int]:
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen()
    accepted: list[socket.socket] = []
    t = threading.Thread(target=lambda: accepted.append(srv.accept()[0]), daemon=True)
    t.start()
    yield srv.getsockname()[1]
    srv.close()


def test_bubblewrap_blocks_the_network(bwrap_runner: BubblewrapRunner, project: Path, listener: int) -> None:
    prog = f"""
        import socket
        try:
            socket.create_connection(("127.0.0.1", {listener}), timeout=5)
            print("CONNECTED")
        except OSError as e:
            print("blocked", e)
        """
    code, out, _ = _py(bwrap_runner, project, prog)
    assert code == 0, out
    assert "CONNECTED" not in out and "blocked" in out
    # the same program outside the sandbox does connect: the test can tell the difference
    _, plain, _ = _py(SubprocessRunner(), project, prog)
    assert "CONNECTED" in plain


def _runners(home: Path) -> list[Runner]:
    runners: list[Runner] = [SubprocessRunner(ResourceLimits(memory_bytes=1024**3, processes=64))]
    bwrap = shutil.which("bwrap")
    if bubblewrap_problem(bwrap) is None and bwrap is not None:
        runners.append(BubblewrapRunner(bwrap, [home], interpreter_paths(), ResourceLimits(1, 1024**3, processes=64)))
    elif os.environ.get("L2MAC_CI"):
        pytest.fail("CI must test the sandbox, but bubblewrap is unusable")
    return runners


def test_infinite_loop_is_killed_at_its_timeout_and_the_next_run_works(project: Path, home: Path) -> None:
    for runner in _runners(home):
        code, out, timed_out = _py(runner, project, "while True:\n    pass\n", timeout=2)
        assert timed_out and code != 0, runner.isolation
        assert "Timed out after 2s" in out
        assert _py(runner, project, "print('next')")[1] == "next"


def test_memory_hog_is_stopped_by_its_limit(project: Path, home: Path) -> None:
    for runner in _runners(home):
        code, out, timed_out = _py(runner, project, "x = bytearray(3 * 1024**3)\nprint('ALLOCATED')\n")
        assert code != 0 and not timed_out, runner.isolation
        assert "MemoryError" in out and "ALLOCATED" not in out


def _process_limit_binds() -> bool:
    cgroup = PidsCgroup(8)
    usable = cgroup.path is not None
    cgroup.kill_all()
    return usable or os.geteuid() != 0  # RLIMIT_NPROC binds everyone but root


@pytest.mark.skipif(not _process_limit_binds(), reason="root and no writable pids cgroup: nothing bounds a fork bomb")
def test_fork_bomb_is_contained_and_the_next_run_works(project: Path, home: Path) -> None:
    bomb = """
        import os, time
        for _ in range(100000):
            try:
                os.fork()
            except OSError:
                time.sleep(0.01)
        """
    for runner in _runners(home):
        code, _, timed_out = _py(runner, project, bomb, timeout=5)
        assert timed_out or code != 0, runner.isolation
        assert _py(runner, project, "print('next')")[1] == "next"


def test_require_sandbox_refuses_without_bubblewrap(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # no bwrap on it
    with pytest.raises(ConfigError, match=r"--require-sandbox: bubblewrap \(bwrap\) is not installed; install"):
        choose_runner("bubblewrap")
    assert choose_runner("auto").isolation == "subprocess+rlimits"
    assert choose_runner("subprocess").isolation == "subprocess+rlimits"


def test_auto_picks_bubblewrap_when_it_works() -> None:
    _bwrap_or_skip()
    assert choose_runner("auto").isolation == "bubblewrap"


def test_a_repositorys_secret_files_cannot_be_read_under_bubblewrap(
    bwrap_runner: BubblewrapRunner, project: Path
) -> None:
    """In a change to a repository (--repo), the code the model writes runs with the repository's secrets hidden."""
    from l2mac.repo.protected import is_secret

    (project / ".env").write_text("API_TOKEN=SECRET\n")
    (project / "config").mkdir()
    (project / "config" / "server.pem").write_text("-----SECRET-----\n")
    (project / "settings.py").write_text("DEBUG = True\n")
    code, out, _ = _py(
        bwrap_runner.hiding(is_secret),
        project,
        """
        for p in [".env", "config/server.pem", "settings.py"]:
            try:
                print(p, repr(open(p).read()))
            except OSError as e:
                print(p, "unreadable", e.errno)
        """,
    )
    assert code == 0, out
    assert "SECRET" not in out and ".env unreadable" in out and "settings.py 'DEBUG = True\\n'" in out
