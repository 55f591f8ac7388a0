"""Programs that serve: started in the sandbox as a user would start them, asked for the routes the step names,
stopped. A 5xx answer, or a program that never listens, is a failed check with the program's own output."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from l2mac.checks.environment import ProjectEnvironment
from l2mac.checks.sandbox import choose_runner
from l2mac.checks.serve import entry_command, routes, serve_check

SERVER = """import os
from http.server import BaseHTTPRequestHandler, HTTPServer


class Handler(BaseHTTPRequestHandler):
    def do_GET(self):
        if self.path == "/boom":
            raise RuntimeError("boom")  # the stdlib server then drops the connection: no answer
        code = 200 if self.path in ("/", "/items", "/items/1") else 404
        self.send_response(code)
        self.end_headers()
        self.wfile.write(b"[]")

    def do_DELETE(self):
        self.send_response(500)
        self.end_headers()


if __name__ == "__main__":
    HTTPServer(("127.0.0.1", int(os.environ.get("PORT", "8000"))), Handler).serve_forever()
"""


def project(root: Path, files: dict[str, str]) -> dict[str, str]:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return files


def test_the_routes_a_step_names_are_asked_for_with_parameters_filled() -> None:
    text = "Add GET /items, GET /items/<int:item_id> and DELETE /items/{item_id}. POST /items: creates one."
    assert routes(text) == [("GET", "/items"), ("GET", "/items/1"), ("DELETE", "/items/1"), ("POST", "/items")]
    assert routes("Write the storage module.") == [("GET", "/")]


def test_how_a_user_starts_the_program_is_found_from_its_code() -> None:
    py = "python"
    assert entry_command({"server.py": SERVER, "tests/test_server.py": SERVER}, py) == [py, "server.py"]
    assert entry_command({"calc.py": "if __name__ == '__main__':\n    print(1)\n"}, py) is None  # serves nothing
    flask_app = "from flask import Flask\n\napp = Flask(__name__)\n"
    assert entry_command({"web/app.py": flask_app}, py) == [
        py,
        "-m",
        "flask",
        "--app",
        "web.app",
        "run",
        "--port",
        "8000",
    ]
    django = {
        "manage.py": "import django\nif __name__ == '__main__':\n    pass\n",
        "site/urls.py": "from django.urls import path\n",
    }
    assert entry_command(django, py)[1:3] == ["manage.py", "runserver"]  # type: ignore[index]


def test_a_program_that_answers_passes_and_one_that_fails_a_route_is_reported(tmp_path: Path) -> None:
    runner = choose_runner("auto")
    sources = project(tmp_path, {"server.py": SERVER})
    served = serve_check(runner, tmp_path, sys.executable, sources, "Serve GET /items and GET /items/<id>.", 60)
    assert served is not None and served.ok, served
    assert served.answers == (("GET", "/items", 200), ("GET", "/items/1", 200)) and served.port is not None
    broken = serve_check(runner, tmp_path, sys.executable, sources, "Add GET /boom and DELETE /items/<id>.", 60)
    assert broken is not None and not broken.ok
    report = broken.report()
    assert f"started with `python server.py` (it listened on port {broken.port})" in report
    assert "DELETE /items/1 -> 500" in report and "GET /boom -> RemoteDisconnected" in report
    assert "RuntimeError: boom" in report  # the program's own output says why


def test_a_program_that_crashes_at_start_is_reported_with_its_traceback(tmp_path: Path) -> None:
    crashing = SERVER.replace('int(os.environ.get("PORT", "8000"))', 'int(os.environ["NO_SUCH_SETTING"])')
    sources = project(tmp_path, {"server.py": crashing})
    served = serve_check(choose_runner("auto"), tmp_path, sys.executable, sources, "GET /items", 60)
    assert served is not None and not served.ok and served.port is None
    assert "never listened on a port (it exited with code 1)" in served.report()
    assert "KeyError: 'NO_SUCH_SETTING'" in served.report()


@pytest.mark.index
def test_a_flask_app_is_installed_started_requested_and_stopped(tmp_path: Path) -> None:
    runner = choose_runner("auto")
    if runner.isolation != "bubblewrap":  # its fixed port is free for certain only in a network of its own
        pytest.skip("needs bubblewrap")
    app = (
        "from flask import Flask, jsonify\n\napp = Flask(__name__)\n\n\n@app.get('/notes')\ndef notes():\n"
        "    return jsonify([])\n\n\nif __name__ == '__main__':\n    app.run(port=5001)\n"
    )
    pyproject = '[project]\nname = "notes"\nversion = "0.1.0"\ndependencies = ["flask"]\n'
    sources = project(tmp_path, {"app.py": app, "pyproject.toml": pyproject})
    installed = ProjectEnvironment(tmp_path).sync()
    assert installed.own and not installed.problem, installed.problem
    served = serve_check(runner, tmp_path, installed.python, sources, "Add GET /notes.", 60)
    assert served is not None and served.ok and served.answers == (("GET", "/notes", 200),), served
    assert served.port == 5001  # read from the kernel, not guessed
