"""Growing a repository l2mac did not write: a branch in a worktree, the user's work untouched, steps held only by
what they made worse, files it leaves alone, and a map that fits at any size."""

from __future__ import annotations

import hashlib
import subprocess
from pathlib import Path

import pytest
from test_soa import Team

from l2mac.errors import ConfigError, WorkspaceError
from l2mac.models.scripted import ScriptedModel, call
from l2mac.repo.map import rank, repository_map
from l2mac.repo.protected import refusal
from l2mac.repo.worktree import open_worktree
from l2mac.run import run_l2mac
from l2mac.store import FileStore

from conftest import make_settings, run_scripted

CORE = "def add(a, b):\n    return a + b\n"
LEGACY = "def old():\n    return undefined_name\n"  # a lint error the repository already has
CORE_TEST = "from calc.core import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n"
OLD_TEST = "from calc.core import add\n\n\ndef test_known_bug():\n    assert add(0.1, 0.2) == 0.3\n"  # fails, known


def git(repo: Path, *args: str) -> str:
    done = subprocess.run(["git", *args], cwd=repo, capture_output=True, text=True, check=True)
    return done.stdout


def committed(repo: Path, files: dict[str, str]) -> None:
    """A repository on branch main whose one commit holds ``files``."""
    for path, text in files.items():
        (repo / path).parent.mkdir(parents=True, exist_ok=True)
        (repo / path).write_text(text)
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "-c", "user.name=u", "-c", "user.email=u@x", "commit", "-qm", "first")


def make_repo(root: Path) -> Path:
    """A small repository with a package, its tests (one failing), a lint error, a secret it tracks, a file
    git ignores, and an untracked file of the user's."""
    repo = root / "calc-repo"
    files = {
        "calc/__init__.py": "",
        "calc/core.py": CORE,
        "calc/legacy.py": LEGACY,
        "tests/test_core.py": CORE_TEST,
        "tests/test_old.py": OLD_TEST,
        "README.md": "# calc\n\nAdds numbers.\n",
        ".env": "API_TOKEN=do-not-read\n",
        ".gitignore": "local.cfg\n",
    }
    committed(repo, files)
    hook = repo / ".git" / "hooks" / "pre-commit"  # the user's hook (a formatter, say): not l2mac's to run
    hook.write_text("#!/bin/sh\nexit 1\n")
    hook.chmod(0o755)
    (repo / "notes.txt").write_text("my own notes, untracked\n")
    (repo / "local.cfg").write_text("ignored=1\n")
    return repo


def fingerprint(repo: Path) -> dict[str, str]:
    """The user's side of the repository: branch, HEAD, index, status, and every file outside .git."""
    files = sorted(p for p in repo.rglob("*") if p.is_file() and ".git" not in p.relative_to(repo).parts)
    return {
        "branch": git(repo, "symbolic-ref", "HEAD"),
        "head": git(repo, "rev-parse", "HEAD"),
        "index": hashlib.sha256((repo / ".git" / "index").read_bytes()).hexdigest(),
        "status": git(repo, "status", "--porcelain", "--ignored"),
        **{str(p.relative_to(repo)): hashlib.sha256(p.read_bytes()).hexdigest() for p in files},
    }


SUBTRACT = CORE + "\n\ndef subtract(a, b):\n    return a - b\n"
SUBTRACT_TEST = "from calc.core import subtract\n\n\ndef test_subtract():\n    assert subtract(5, 3) == 2\n"
PLAN = {
    "steps": [
        {
            "title": "Subtract",
            "instruction": "Add subtract(a, b) to calc/core.py, returning a - b. Test it in tests/test_subtract.py.",
        }
    ]
}


def test_a_change_is_made_on_a_new_branch_and_the_users_work_is_untouched(tmp_path: Path) -> None:
    """The acceptance's main case: a feature with its tests, in a repository with a lint error and a failing
    test of its own that the step adds nothing to (so it passes); the user's branch, index, working tree and
    untracked files byte-identical after the run; the planner saw the repository's map, never its secret."""
    repo = make_repo(tmp_path)
    before = fingerprint(repo)
    seen: list[str] = []

    def plan(messages: list) -> object:
        seen.append(str(messages))
        return call("submit_plan", PLAN)

    replies = [
        plan,
        call(
            "write_files",
            {
                "files": [
                    {"path": "calc/core.py", "content": SUBTRACT},
                    {"path": "tests/test_subtract.py", "content": SUBTRACT_TEST},
                ]
            },
        ),
        call("step_complete", {"summary": "subtract added"}),
    ]
    result, script = run_scripted(
        tmp_path, replies, "Add a subtract function", protocol="tools", repo=repo, project_name=None
    )
    assert script.remaining == 0
    assert result.outcomes[0].passed, result.outcomes[0].reason
    assert "tests/test_old.py::test_known_bug" in result.outcomes[0].inherited
    assert fingerprint(repo) == before  # branch, index, status, every file of the user's
    change = result.report.change
    assert change is not None and change.branch == "l2mac/add-a-subtract-function" and change.base_ref == "main"
    assert (change.before.tests_passed, change.before.tests_failing) == (1, 1)
    assert change.after is not None and (change.after.tests_passed, change.after.tests_failing) == (2, 1)
    assert change.broken == [] and change.before.problems == change.after.problems == 1
    assert change.review[0] == f"git -C {repo} diff main...l2mac/add-a-subtract-function"
    # the branch holds the step's commit; l2mac's records and the environment are not committed
    assert git(repo, "show", f"{change.branch}:calc/core.py") == SUBTRACT
    committed = git(repo, "ls-tree", "-r", "--name-only", change.branch).split()
    assert "tests/test_subtract.py" in committed and not any(p.startswith(".l2mac") for p in committed)
    assert ".git" not in result.files and ".env" not in result.files  # the worktree's git file; the secret
    # the planner saw the map of the repository, and never the secret it tracks
    assert "calc/core.py" in seen[0] and "def add(a, b)" in seen[0] and "do-not-read" not in seen[0]


def test_a_repository_with_uncommitted_changes_is_refused_unless_allowed(tmp_path: Path) -> None:
    repo = make_repo(tmp_path)
    (repo / "calc" / "core.py").write_text(CORE + "# mine\n")
    before = fingerprint(repo)
    with pytest.raises(ConfigError, match=r"uncommitted changes \(calc/core.py\).*--allow-dirty"):
        open_worktree(repo, "Add subtract", tmp_path / "ws")
    assert fingerprint(repo) == before and git(repo, "branch", "--list", "l2mac/*") == ""
    made = open_worktree(repo, "Add subtract", tmp_path / "ws", allow_dirty=True)
    assert (made.path / "calc" / "core.py").read_text() == CORE  # from the last commit
    assert fingerprint(repo) == before
    again = open_worktree(repo, "Add subtract", tmp_path / "ws", allow_dirty=True)
    assert again.branch == "l2mac/add-subtract-2" and again.path != made.path


def test_a_workspace_inside_the_repository_puts_the_worktree_outside_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``cd myapp && l2mac ... --repo .`` with the default ./workspace: the user's git status and pytest would
    see a worktree inside the repository."""
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    repo = make_repo(tmp_path)
    before = fingerprint(repo)
    made = open_worktree(repo, "Add subtract", repo / "workspace")
    assert made.path == tmp_path / "data" / "l2mac" / "worktrees" / "calc-repo-add-subtract"
    assert fingerprint(repo) == before


def test_a_run_that_fails_before_its_first_step_leaves_no_branch(tmp_path: Path) -> None:
    repo = make_repo(tmp_path)
    with pytest.raises(ConfigError, match="prompt is about"):
        run_scripted(tmp_path, [], "Add " + "a subtract function " * 400, repo=repo, llm={"context_window": 2000})
    assert git(repo, "branch", "--list", "l2mac/*") == "" and "calc-repo-add" not in git(repo, "worktree", "list")


def test_a_folder_that_is_not_a_repository_gets_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="not in a git repository"):
        open_worktree(tmp_path, "Add subtract", tmp_path / "ws")
    repo = make_repo(tmp_path)
    with pytest.raises(ConfigError, match=r"soa builds codebases .* the book domain with --strategy l2mac"):
        run_scripted(tmp_path, [], "Add a chapter", repo=repo, strategy="soa", domain="book")
    assert git(repo, "branch", "--list", "l2mac/*") == ""
    with pytest.raises(ConfigError, match="soa builds codebases"):  # nor a new book: soa's prompts are code's
        run_scripted(tmp_path, [], "A short novel", strategy="soa", domain="book")
    assert not (tmp_path / "ws").exists() or not any((tmp_path / "ws").iterdir())


def test_secrets_are_neither_listed_read_nor_written_and_lockfiles_not_written(tmp_path: Path) -> None:
    store = FileStore(tmp_path / "p", guard=refusal)
    (store.root / ".env").write_text("TOKEN=x\n")
    (store.root / "uv.lock").write_text("version = 1\n")
    (store.root / ".env.example").write_text("TOKEN=\n")
    assert store.list_files() == [".env.example", "uv.lock"]
    with pytest.raises(WorkspaceError, match="secrets"):
        store.read_text(".env")
    with pytest.raises(WorkspaceError, match="secrets"):
        store.write_text("keys/server.pem", "x")
    with pytest.raises(WorkspaceError, match="lockfile"):
        store.write_text("uv.lock", "version = 2\n")
    assert store.read_text("uv.lock") == "version = 1\n"


def test_the_map_of_two_thousand_files_fits_its_budget_with_the_relevant_files_first(tmp_path: Path) -> None:
    files = {f"pkg/mod{i:04d}.py": f"def helper_{i}(x):\n    return x + {i}\n" for i in range(2000)}
    files["pkg/export.py"] = "import pkg.csv_writer\n\n\ndef export_rows(rows, path):\n    pass\n"
    files["pkg/csv_writer.py"] = "class CsvWriter:\n    def write(self, rows):\n        pass\n"
    files["README.md"] = "# pkg\n"
    text = repository_map(files, "Add a CSV export of the rows to export.py", 8000)
    assert len(text) <= 8000
    assert text.index("pkg/export.py") < text.index("pkg/csv_writer.py") < text.index("pkg/mod")
    assert "def export_rows(rows, path)" in text and "class CsvWriter" in text
    assert "files less relevant, by folder: pkg/ (" in text
    order = rank(files, "Add a CSV export of the rows to export.py")
    assert order[:2] == ["pkg/export.py", "pkg/csv_writer.py"]


def test_a_step_context_that_cannot_show_every_file_shows_the_relevant_ones_and_names_a_bounded_list(
    tmp_path: Path,
) -> None:
    from l2mac.fenced import MAX_LISTED, show_files

    store = FileStore(tmp_path / "p")
    for i in range(200):
        store.write_text(f"pkg/mod{i:03d}.py", f"def helper_{i}(x):\n    return x + {i}\n" * 5)
    store.write_text("pkg/zexport.py", "def export_rows(rows, path):\n    pass\n")
    from functools import partial

    from l2mac.repo.map import rank as by_relevance

    relevant = partial(by_relevance, request="Add a header row to export_rows in pkg/zexport.py.")
    shown = show_files(store, 1500, rank=relevant)
    assert shown.startswith("pkg/zexport.py\n```python\ndef export_rows")
    listed = shown.split("Other files:\n")[1].splitlines()
    assert len(listed) == MAX_LISTED + 1 and listed[-1].endswith("more files")
    # a project that fits is shown whole, in path order, as before
    small = FileStore(tmp_path / "s")
    small.write_text("b.py", "x = 1\n")
    small.write_text("a.py", "y = 2\n")
    assert show_files(small, 10_000, rank=relevant).index("a.py") < show_files(small, 10_000).index("b.py")


def test_a_change_interrupted_mid_step_resumes_on_its_branch_and_keeps_what_it_left(tmp_path: Path) -> None:
    """Ctrl-C while the model computes its answer after the step's files were written: the resumed run replays
    the journal from the base commit, finishes the change on the same branch, and the files the interrupted
    run left stay reachable (a ref of their own); the user's repository is untouched throughout."""
    from l2mac.run import resume_l2mac

    repo = make_repo(tmp_path)
    before = fingerprint(repo)
    writes = call(
        "write_files",
        {
            "files": [
                {"path": "calc/core.py", "content": SUBTRACT},
                {"path": "tests/test_subtract.py", "content": SUBTRACT_TEST},
            ]
        },
    )

    def ctrl_c(messages: list) -> object:
        raise KeyboardInterrupt

    settings = make_settings(tmp_path, protocol="tools", repo=repo, project_name=None)
    with pytest.raises(KeyboardInterrupt):
        run_l2mac(
            "Add a subtract function", settings, model=ScriptedModel([call("submit_plan", PLAN), writes, ctrl_c]).model
        )
    worktree = tmp_path / "ws" / "calc-repo-add-a-subtract-function"
    assert (worktree / "calc" / "core.py").read_text() == SUBTRACT
    rest = ScriptedModel([call("step_complete", {"summary": "subtract added"})])
    result = resume_l2mac(worktree, model=rest.model)
    assert rest.remaining == 0 and result.outcomes[0].passed, result.outcomes[0].reason
    assert result.report.journal.replayed_calls == 2 and result.report.change is not None
    branch = result.report.change.branch
    assert branch == "l2mac/add-a-subtract-function" and git(repo, "show", f"{branch}:calc/core.py") == SUBTRACT
    kept = git(repo, "show", "refs/l2mac/before-resume/add-a-subtract-function/1:calc/core.py")
    assert kept == SUBTRACT  # what the interrupted run left
    assert git(repo, "log", "--format=%s", f"main..{branch}").count("interrupted") == 0  # not on the branch
    assert fingerprint(repo) == before


def test_a_chapter_is_added_to_a_book_on_a_branch(tmp_path: Path) -> None:
    """A book is a repository too: the planner sees its files with their headings; the chapter lands on a branch."""
    book = tmp_path / "pasta-book"
    files = {
        "outline.md": "# Pasta\n\n## Chapters\n1. Shapes\n2. Sauces\n",
        "chapters/01-shapes.md": "# Shapes\n\n## Long shapes\nSpaghetti.\n",
        "chapters/02-sauces.md": "# Sauces\n\n## Tomato\nSlow.\n",
        "README.md": "# Pasta\n",
    }
    committed(book, files)
    seen: list[str] = []
    chapter = "# Desserts\n\nSweet pasta exists.\n"
    plan = {"steps": [{"title": "Desserts", "instruction": "Write chapters/03-desserts.md about sweet pasta."}]}

    def planner(messages: list) -> object:
        seen.append(str(messages))
        return call("submit_plan", plan)

    replies = [
        planner,
        call("write_files", {"files": [{"path": "chapters/03-desserts.md", "content": chapter}]}),
        call("step_complete", {"summary": "desserts written"}),
    ]
    result, _ = run_scripted(
        tmp_path, replies, "Add a chapter on desserts", protocol="tools", repo=book, project_name=None, domain="book"
    )
    assert result.ok, result.report
    assert "## Long shapes" in seen[0]  # the map shows a chapter's headings
    change = result.report.change
    assert change is not None and git(book, "show", f"{change.branch}:chapters/03-desserts.md") == chapter
    assert not (book / "chapters" / "03-desserts.md").exists()


def test_a_repositorys_tests_run_with_its_own_pytest_options(tmp_path: Path) -> None:
    from l2mac.checks.runner import SubprocessRunner
    from l2mac.tools import ToolEnv

    store = FileStore(tmp_path / "p")
    store.write_text("pyproject.toml", "[tool.pytest.ini_options]\naddopts = \"-k 'not broken'\"\n")
    store.write_text("tests/test_x.py", "def test_ok():\n    pass\n\n\ndef test_broken():\n    assert False\n")
    assert ToolEnv(store=store, runner=SubprocessRunner(), own_pytest_options=True).test_run().ok
    assert not ToolEnv(store=store, runner=SubprocessRunner()).test_run().ok  # a generated project: without them


SUBTRACT_STUB = 'def subtract(a: float, b: float) -> float:\n    """a minus b."""\n    ...\n'
SUBTRACT_DONE = 'def subtract(a: float, b: float) -> float:\n    """a minus b."""\n    return a - b\n'
VARIADIC_STUB = 'def add(*xs: float) -> float:\n    """The sum of any number of numbers."""\n    ...\n'
VARIADIC_TEST = "from calc.core import add\n\n\ndef test_add_many():\n    assert add(1, 2, 3) == 6\n"
VARIADIC_THREE = (
    'def add(*xs: float) -> float:\n    """The sum of any number of numbers."""\n    return xs[0] + xs[1] + xs[2]\n'
)
VARIADIC = 'def add(*xs: float) -> float:\n    """The sum of any number of numbers."""\n    return sum(xs)\n'


def run_team_on(tmp_path: Path, repo: Path, task: str, answers: dict) -> tuple:
    team = Team(answers)
    settings = make_settings(tmp_path, strategy="soa", repo=repo, project_name=None, protocol="tools")
    return run_l2mac(task, settings, model=team.model), team


def test_soa_changes_a_repository_by_adding_stubs_that_agents_implement_on_a_branch(tmp_path: Path) -> None:
    """The lead sees the map and sends only what she adds; it is merged into the module, her stub goes to an
    agent, her tests to a file of their own; the repository's failing test and lint error hold nothing, and the
    user's work is untouched."""
    repo = make_repo(tmp_path)
    before = fingerprint(repo)
    answers = {
        "lead": [
            ("write_skeleton", {"modules": [{"path": "calc/core.py", "code": SUBTRACT_STUB}], "tests": SUBTRACT_TEST})
        ],
        "subtract": [("write_function", {"code": SUBTRACT_DONE})],
    }
    result, team = run_team_on(tmp_path, repo, "Add a subtract function", answers)
    assert result.ok, result.report
    lead = team.asked["lead"][0]
    assert "calc/core.py" in lead and "def add(a, b)" in lead and "do-not-read" not in lead  # the map, no secret
    change = result.report.change
    assert change is not None and change.branch == "l2mac/add-a-subtract-function"
    core = git(repo, "show", f"{change.branch}:calc/core.py")
    assert core.startswith(CORE) and "return a - b" in core  # the module kept whole, the function added
    assert git(repo, "show", f"{change.branch}:tests/test_core_subtract.py") == SUBTRACT_TEST
    assert git(repo, "show", f"{change.branch}:calc/legacy.py") == LEGACY
    assert change.after is not None and (change.after.tests_passed, change.after.tests_failing) == (2, 1)
    assert change.broken == [] and [o.passed for o in result.outcomes] == [True, True]
    assert fingerprint(repo) == before


def test_soa_rewrites_a_function_the_repository_has_and_is_held_by_a_test_it_breaks(tmp_path: Path) -> None:
    """The lead's stub of an existing function goes to an agent shown the function as it is. Its first version
    passes the lead's test but breaks a test that passed before the change: the failure goes back to it; one
    that never repairs it leaves the lead failed, naming the broken test."""
    repo = make_repo(tmp_path)
    lead = [("write_skeleton", {"modules": [{"path": "calc/core.py", "code": VARIADIC_STUB}], "tests": VARIADIC_TEST})]
    answers = {
        "lead": list(lead),
        "add": [("write_function", {"code": VARIADIC_THREE}), ("write_function", {"code": VARIADIC})],
    }
    result, team = run_team_on(tmp_path, repo, "Let add take any number of numbers", answers)
    assert result.ok, result.report
    first, repair = team.asked["add"]
    assert "The function as the repository has it now" in first and "return a + b" in first
    assert "Your lead's tests fail" in repair and "IndexError" in repair
    assert result.report.change is not None and result.report.change.broken == []

    stubborn = {"lead": list(lead), "add": [("write_function", {"code": VARIADIC_THREE})] * 3}
    held, _ = run_team_on(tmp_path / "again", make_repo(tmp_path / "again"), "Let add take any number", stubborn)
    assert not held.outcomes[0].passed
    assert "tests that passed before the change fail: tests/test_core.py::test_add" in held.outcomes[0].reason
    assert held.report.change is not None and held.report.change.broken == ["tests/test_core.py::test_add"]


def test_soa_lead_who_repairs_her_own_tests_keeps_one_test_file_named_apart_from_the_repositorys(
    tmp_path: Path,
) -> None:
    """She writes subtract herself (no stub: no agent) with a wrong test; the failure is hers, and her answer
    again (the function sent back as it is, the test corrected) goes to the same test file, whose name is not
    the repository's tests/test_core.py (pytest refuses two test modules of one name)."""
    repo = make_repo(tmp_path)
    wrong = SUBTRACT_TEST.replace("== 2", "== 3")
    design = {"modules": [{"path": "calc/core.py", "code": SUBTRACT_DONE}], "tests": wrong}
    again = {"modules": [{"path": "calc/core.py", "code": SUBTRACT_DONE}], "tests": SUBTRACT_TEST}
    result, team = run_team_on(
        tmp_path, repo, "Add a subtract function", {"lead": [("write_skeleton", design), ("write_skeleton", again)]}
    )
    assert result.ok, result.report
    repair = team.asked["lead"][1]
    assert "Your tests fail" in repair and "tests/test_core_2.py" in repair and "def add(a, b):" in repair
    change = result.report.change
    assert change is not None and git(repo, "show", f"{change.branch}:tests/test_core_2.py") == SUBTRACT_TEST
    tests = [p for p in git(repo, "ls-tree", "-r", "--name-only", change.branch).split() if p.startswith("tests/")]
    assert tests == ["tests/test_core.py", "tests/test_core_2.py", "tests/test_old.py"]
    assert git(repo, "show", f"{change.branch}:calc/core.py").count("def subtract") == 1


def test_soa_lead_may_not_write_the_repositorys_other_files_or_its_secrets_and_answers_again(tmp_path: Path) -> None:
    repo = make_repo(tmp_path)
    good = {"path": "calc/core.py", "code": SUBTRACT_STUB}
    readme = {"modules": [good, {"path": "README.md", "code": "subtract added\n"}], "tests": SUBTRACT_TEST}
    secret = {"modules": [good, {"path": ".env", "code": "API_TOKEN=x\n"}], "tests": SUBTRACT_TEST}
    answers = {
        "lead": [
            ("write_skeleton", readme),
            ("write_skeleton", secret),
            ("write_skeleton", {"modules": [good], "tests": SUBTRACT_TEST}),
        ],
        "subtract": [("write_function", {"code": SUBTRACT_DONE})],
    }
    result, team = run_team_on(tmp_path, repo, "Add a subtract function", answers)
    assert result.ok, result.report
    assert "README.md is the repository's" in team.asked["lead"][1] and "secrets" in team.asked["lead"][2]
    change = result.report.change
    assert change is not None and git(repo, "show", f"{change.branch}:README.md") == "# calc\n\nAdds numbers.\n"


def test_a_change_contracts_are_new_stubs_and_stubs_that_change_a_function_not_ones_copied_back() -> None:
    from l2mac.soa.contracts import changed_in

    old = 'class Calc:\n    def add(self, a, b):\n        """a + b."""\n        return a + b\n'
    sub = '\n    def sub(self, a, b):\n        """a - b."""\n        ...\n'
    copied = 'class Calc:\n    def add(self, a, b):\n        """a + b."""\n        ...\n' + sub
    new = old + sub
    assert [c.label for c in changed_in(old, new, copied, "calc.py")] == ["calc.py:Calc.sub"]
    changed = copied.replace('"""a + b."""', '"""The sum of a and b, rounded."""')
    assert [c.label for c in changed_in(old, new, changed, "calc.py")] == ["calc.py:Calc.sub", "calc.py:Calc.add"]
