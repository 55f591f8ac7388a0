"""True READMEs: the commands a README gives are run as written in a fresh copy with a fresh venv, and each is
reported as working, failing (with why) or still running."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from l2mac.checks.readme import INSTALL, readme_commands, verify_readme
from l2mac.checks.runner import SubprocessRunner
from l2mac.checks.sandbox import choose_runner
from l2mac.context import ContextBudget
from l2mac.control import ControlUnit, Step, StepLimits
from l2mac.control.text import TEXT
from l2mac.domains import load_domain
from l2mac.models.client import ModelClient
from l2mac.models.scripted import ScriptedModel, text
from l2mac.record import RunRecord
from l2mac.store import FileStore
from l2mac.tools import Toolbox, ToolEnv, tools_named
from l2mac.types import Instruction, StepOutcome, StepStatus

README = """# greet

Install and run:

```bash
$ cd greet
python -m venv .venv && source .venv/bin/activate
# run it
python -m greet Ada
```

```
python -m greet
{"not": "a command"}
```

Then `pytest -q`, or:

```console
$ pytest -q
$ python -m nowhere
```
"""

GREET = "import sys\n\n\ndef main():\n    print('hello ' + sys.argv[1])\n\n\nif __name__ == '__main__':\n    main()\n"


def test_the_commands_are_the_shell_lines_a_user_would_paste() -> None:
    assert readme_commands(README) == ["python -m greet Ada", "python -m greet", "pytest -q", "python -m nowhere"]
    assert readme_commands("# nothing to run\n\n```python\nprint(1)\n```\n") == []
    # a closing fence never opens a block: the prose after a python block is not run, the next shell block is
    mixed = (
        "```python\nimport greet\n```\n\npython is fun\n\n"
        "```console\n$ . .venv/bin/activate\n$ pip install \\\n    -e .\nSuccessfully installed greet\n```\n"
    )
    assert readme_commands(mixed) == ["pip install      -e ."]


def test_a_server_command_that_names_its_host_is_not_a_command_that_asks_it() -> None:
    from l2mac.checks.readme import LOCAL_URL

    assert not LOCAL_URL.search("flask run --host 127.0.0.1") and not LOCAL_URL.search("uvicorn m:app --host 0.0.0.0")
    assert LOCAL_URL.search("curl http://localhost:5000/notes") and LOCAL_URL.search("http GET localhost:8000/x")


def test_only_a_bare_install_line_gets_the_network() -> None:
    assert INSTALL.match("pip install -e .") and INSTALL.match("python -m pip install -r requirements.txt")
    assert INSTALL.match("uv pip install flask") and INSTALL.match("uv sync")
    assert not INSTALL.match("uv run app.py") and not INSTALL.match("pip install . && python app.py")
    assert not INSTALL.match("pip install $(cat reqs)") and not INSTALL.match("python app.py")


def test_each_command_runs_as_written_in_a_fresh_copy() -> None:
    readme = README.replace("$ pytest -q\n", "")  # the fresh venv has no pytest unless the README installs it
    files = {"README.md": readme, "greet/__init__.py": "", "greet/__main__.py": GREET}
    checked = {c.command: c for c in verify_readme(choose_runner("auto"), files, 60)}
    assert list(checked) == ["python -m greet Ada", "python -m greet", "python -m nowhere"]
    assert checked["python -m greet Ada"].outcome == "works"
    failing = checked["python -m greet"]  # no argument: the program's own IndexError
    assert failing.outcome == "fails" and failing.detail.startswith("exit code 1") and "IndexError" in failing.detail
    assert "No module named nowhere" in checked["python -m nowhere"].detail


def test_a_command_that_keeps_running_is_reported_as_still_running() -> None:
    files = {"README.md": "```bash\npython -c 'import time; time.sleep(60)'\n```\n"}
    (only,) = verify_readme(choose_runner("auto"), files, 2)
    assert only.outcome == "still running"


@pytest.mark.index
def test_an_install_command_gets_the_network_and_what_it_installs_is_used() -> None:
    pyproject = (
        '[build-system]\nrequires = ["setuptools>=61"]\nbuild-backend = "setuptools.build_meta"\n\n'
        '[project]\nname = "table"\nversion = "0.1.0"\ndependencies = ["tabulate==0.9.0"]\n'
    )
    readme = "```bash\npip install -e .\npython -c 'import table, tabulate'\n```\n"
    files = {"README.md": readme, "pyproject.toml": pyproject, "table.py": "import tabulate\n"}
    checked = verify_readme(choose_runner("auto"), files, 300)
    assert [c.outcome for c in checked] == ["works", "works"], checked


def test_a_readme_step_whose_readme_gives_no_command_is_not_done(tmp_path: Path) -> None:
    """Seen on the notes API at c78c993: README.md cut before its first command, and the README step passed."""

    cut = "README.md\n```markdown\n# Notes\n\nTo install it, run the following command in your terminal:\n```\n"
    whole = "README.md\n```markdown\n# Notes\n\n```bash\npython -m pip install -e .\npython -m pytest\n```\n```\n"
    script = ScriptedModel([text(cut), text(whole), text("STEP COMPLETE")])
    store = FileStore(tmp_path / "proj")
    outcome = _run_readme_step(store, script)
    assert outcome.status is StepStatus.PASSED, outcome.reason
    assert "README.md gives no command a user can type" in str(script.requests[1])
    assert readme_commands(store.read_text("README.md")) == ["python -m pip install -e .", "python -m pytest"]


def test_the_commands_a_readme_needs_and_lacks_are_put_in_from_the_projects_files(tmp_path: Path) -> None:
    """Seen on the notes API: at df27f4e, the install and test commands only in a list of prose; at c291e57,
    three curl lines and no command starting the app, sent back so three times (2,000 tokens each) after being
    told. They are facts the project's files give, so they are put in (the server's just before the first
    request to it) and the model is told what was added."""

    install = 'python -m pip install -e ".[test]"'
    curl = "curl http://localhost:5000/notes"
    prose = f"README.md\n```markdown\n# Notes\n\n1. Run `{install}`.\n\n## Usage\n\n```bash\n{curl}\n```\n```\n"
    script = ScriptedModel([text(prose), text("STEP COMPLETE")])
    store = FileStore(tmp_path / "proj")
    pyproject = '[project]\nname = "notes"\nversion = "0.1.0"\n\n[project.optional-dependencies]\ntest = ["pytest"]\n'
    store.write_text("pyproject.toml", pyproject)
    store.write_text("notes/__main__.py", "print('notes')\n\nif __name__ == '__main__':\n    print('serving')\n")
    store.write_text("tests/test_notes.py", "def test_notes():\n    assert True\n")
    outcome = _run_readme_step(store, script)
    assert outcome.status is StepStatus.PASSED, outcome.reason
    readme = store.read_text("README.md")
    assert readme_commands(readme) == [install, "python -m pytest", "python -m notes", curl]
    assert readme.index("## Install and test") < readme.index("## Usage") < readme.index("python -m notes\n")
    assert "Put in README.md the commands it needs and lacked" in str(script.requests[1])


def test_the_commands_that_ask_a_local_url_run_while_the_readmes_server_runs() -> None:
    """Seen on the notes API at 4958ca5: the README's three ``curl http://localhost:5000/notes`` lines were run
    before and without its ``python notes/app.py``, and each was reported failing (connection refused)."""
    ask = "python -c \"import urllib.request as u; print(u.urlopen('http://localhost:8765/hello.txt').read())\""
    missing = "python -c \"import urllib.request as u; u.urlopen('http://127.0.0.1:8765/missing')\""
    readme = f"```bash\n{ask}\n{missing}\npython -m http.server 8765\npython -c 'print(1)'\n```\n"
    files = {"README.md": readme, "hello.txt": "hello\n"}
    checked = verify_readme(choose_runner("auto"), files, 3)
    assert [c.command for c in checked] == [ask, missing, "python -m http.server 8765", "python -c 'print(1)'"]
    assert [c.outcome for c in checked] == ["works", "fails", "still running", "works"], checked
    assert "HTTP Error 404" in checked[1].detail and "while python -m http.server 8765 ran" in checked[1].detail


def test_a_command_that_asks_a_local_url_with_no_server_in_the_readme_fails_as_it_would() -> None:
    files = {"README.md": "```bash\npython -c \"import urllib.request as u; u.urlopen('http://localhost:8766/')\"\n```"}
    (only,) = verify_readme(choose_runner("auto"), files, 5)
    assert only.outcome == "fails" and "Connection refused" in only.detail


def test_a_readme_that_asks_a_local_server_must_give_the_command_that_starts_it() -> None:
    """Seen on the notes API at 5694d08: three ``curl http://localhost:5000/notes`` lines and no command that
    started the app, so each failed; a README that asks nothing of a server may run the program as it likes."""
    from l2mac.checks.usage import lacking_commands as _lacking_commands

    known = {"install": "python -m pip install -e .", "test": "python -m pytest", "run": "python -m notes.app"}
    asked = ["python -m pip install -e .", "python -m pytest", "curl http://localhost:5000/notes"]
    assert _lacking_commands(known, asked) == ["python -m notes.app"]
    assert _lacking_commands(known, [*asked, "python -m notes.app"]) == []
    assert _lacking_commands(known, ["python -m pip install -e .", "python -m pytest", "notes add x"]) == []
    assert _lacking_commands(known, ["python -m pytest"]) == ["python -m pip install -e ."]


def _run_readme_step(store: FileStore, script: ScriptedModel) -> StepOutcome:
    """A README step ("what it does, then the install, test and run commands") run on ``store`` by ``script``."""
    domain = load_domain("codebase")
    unit = ControlUnit(
        ModelClient(script.model),
        Toolbox(tools_named(domain.tools), ToolEnv(store=store, runner=SubprocessRunner(), max_output_chars=4000)),
        domain,
        ContextBudget(window=16000, reply=500, margin=0.1),
        protocol=TEXT,
        limits=StepLimits(max_turns=6, samples=0),
        record=RunRecord(store.root),
    )
    asked = "Write README.md: what it does, then the install, test and run commands, each in a ```bash block."
    step = Step("notes", 1, 1, Instruction(title="README", instruction=asked, requires_tests=False), "")
    return asyncio.run(unit.run_step(step))


SERVER_500 = """import http.server
import sys


class Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(500 if self.path == "/boom" else 200)
        self.end_headers()
        self.wfile.write(b"answer")


http.server.HTTPServer(("127.0.0.1", int(sys.argv[1])), Handler).serve_forever()
"""


def test_a_request_the_readmes_server_answers_with_an_error_fails_though_its_command_exits_0() -> None:
    """Seen on the notes API at c1bae50: curl exited 0 for each request while the server answered every one 500
    ("no such table"), and the README's commands were reported working."""
    client = "import sys\nimport urllib.request\n\ntry:\n    urllib.request.urlopen(sys.argv[1])\n"
    client += "except OSError:\n    pass\n"
    ask = "python client.py http://localhost:8767/{}"  # exits 0 whatever the answer, as curl does
    readme = f"```bash\npython server.py 8767\n{ask.format('fine')}\n{ask.format('boom')}\n```\n"
    files = {"README.md": readme, "server.py": SERVER_500, "client.py": client}
    checked = verify_readme(choose_runner("auto"), files, 3)
    assert [c.outcome for c in checked] == ["still running", "works", "fails"], checked
    assert "the server (python server.py 8767) answered it with an error" in checked[2].detail
    assert '"GET /boom HTTP/1.0" 500' in checked[2].detail or '"GET /boom HTTP/1.1" 500' in checked[2].detail
