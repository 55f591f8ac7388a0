"""A begun test file: the imports of the code it tests and, for a web app, a client fixture made from the app."""

from __future__ import annotations

from l2mac.control.test_start import file_start

FACTORY = """from pathlib import Path

from flask import Flask, jsonify, request

from notes.store import add_note, list_notes


def create_app(db_path: Path, testing: bool = False) -> Flask:
    app = Flask(__name__)

    @app.route("/notes", methods=["GET"])
    def all_notes():
        return jsonify(list_notes(db_path))

    return app


def format_note(note):
    return f"{note.title}: {note.content}"
"""

MODULE_APP = """from flask import Flask, jsonify

app = Flask(__name__)


@app.route("/notes")
def all_notes():
    return jsonify([])


@app.post("/notes")
def create_note():
    return jsonify({}), 201


def format_note(note):
    return str(note)
"""

STORE = "def add_note(path, title, content):\n    pass\n\n\ndef list_notes(path):\n    return []\n"


def test_a_flask_app_factory_is_made_in_a_client_fixture_with_its_files_under_tmp_path() -> None:
    """Seen on the notes API at 4958ca5: told in words to use app.test_client(), the 1.5B model wrote tests that
    called the view functions directly, with an ``app`` no test defined, three identical answers."""
    start = file_start("tests/test_app.py", {"notes/app.py": FACTORY, "notes/store.py": STORE})
    assert start == (
        "tests/test_app.py\n```python\n"
        "import pytest\n"
        "from notes.app import create_app, format_note\n"
        "from notes.store import add_note, list_notes\n"
        "\n\n"
        "@pytest.fixture\n"
        "def client(tmp_path):\n"
        '    app = create_app(tmp_path / "db_path")\n'
        '    app.config["TESTING"] = True\n'
        "    return app.test_client()\n"
        "\n\n"
        "def test_all_notes"  # begun at the app's first view, the one thing in front of the model to test
    )


def test_a_module_level_app_is_used_as_it_is_and_its_views_are_left_to_the_client() -> None:
    start = file_start("tests/test_app.py", {"notes/app.py": MODULE_APP})
    # the views are reached through the client; a plain helper is still imported
    assert "from notes.app import app, format_note\n" in start
    imports = start.split("@pytest.fixture")[0]
    assert "all_notes" not in imports and "create_note" not in imports
    assert (
        "def client():\n" in start and "return app.test_client()" in start and start.endswith("\n\ndef test_all_notes")
    )


def test_a_factory_is_preferred_to_a_module_level_app_unless_a_test_cannot_give_its_arguments() -> None:
    both = MODULE_APP + "\n\ndef create_app(data_dir, name: str = 'x'):\n    app = Flask(name)\n    return app\n"
    assert "app = create_app(tmp_path)\n" in file_start("tests/test_app.py", {"notes/app.py": both})
    needs_a_port = MODULE_APP + "\n\ndef create_app(port):\n    return Flask(__name__)\n"
    start = file_start("tests/test_app.py", {"notes/app.py": needs_a_port})
    assert "def client():\n" in start and "create_app(" not in start.split("def client")[1]
    as_text = "from flask import Flask\n\n\ndef make_app(db_file: str):\n    return Flask(__name__)\n"
    assert 'app = make_app(str(tmp_path / "db_file"))' in file_start("tests/t.py", {"web/app.py": as_text})


def test_a_fastapi_app_gets_the_frameworks_test_client_and_other_code_no_fixture() -> None:
    api = "from fastapi import FastAPI\n\napi = FastAPI()\n\n\n@api.get('/items')\ndef items():\n    return []\n"
    start = file_start("tests/test_main.py", {"shop/main.py": api})
    assert "from fastapi.testclient import TestClient\nfrom shop.main import api as app\n" in start
    assert "def client():\n    return TestClient(app)\n" in start and "items" not in start.split("def client")[0]
    plain = file_start("tests/test_core.py", {"shop/core.py": STORE})
    assert "fixture" not in plain and plain.endswith(
        "from shop.core import add_note, list_notes\n\n\ndef test_add_note"
    )


def test_only_a_parameter_whose_last_word_names_a_file_or_folder_is_given_a_place() -> None:
    urls = "from flask import Flask\n\n\ndef create_app(profile, db_url):\n    return Flask(__name__)\n"
    assert "fixture" not in file_start("tests/t.py", {"web/app.py": urls})  # no test can make this app
    dirs = urls.replace("profile, db_url", "data_dir, database")
    assert 'app = create_app(tmp_path, tmp_path / "database")' in file_start("tests/t.py", {"web/app.py": dirs})


def test_a_function_that_sets_up_the_module_level_app_and_returns_it_is_its_factory() -> None:
    """Seen on the notes API run in-process at b9efa8c: ``create_app(db_path)`` set the module-level app's
    database and returned it; the tests used the app unconfigured, and the step failed."""
    configured = MODULE_APP + "\n\ndef create_app(db_path):\n    app.config['DB_PATH'] = db_path\n    return app\n"
    start = file_start("tests/test_app.py", {"notes/app.py": configured})
    assert 'app = create_app(tmp_path / "db_path")\n' in start and "from notes.app import create_app" in start


def test_the_first_test_is_begun_at_the_first_public_function_or_method_of_the_code_it_tests() -> None:
    """Seen on the URL shortener at dc80a46: begun at ``def test_``, the tests of db.py and of admin.py alike were
    named after the task's checklist (``test_1_1_shorten_url``...) and tested the whole task through one module."""
    db = "import sqlite3\n\n\nclass Database:\n    def __init__(self, path):\n        self.path = path\n\n"
    db += "    def _connect(self):\n        return sqlite3.connect(self.path)\n\n    def insert_url(self, url):\n"
    db += "        pass\n\n\ndef helper():\n    pass\n"
    assert file_start("tests/test_db.py", {"short/db.py": db}).endswith("\n\ndef test_insert_url")
    factory_first = (
        "def create_app(db_path):\n    return None\n\n\ndef test_helper():\n    pass\n\n\ndef _x():\n    pass\n"
    )
    assert file_start("tests/t.py", {"a/b.py": factory_first + "\n\ndef shorten(url):\n    return url\n"}).endswith(
        "def test_create_app"  # no web framework: a factory of nothing is a function like any other
    )
    assert file_start("tests/t.py", {"a/b.py": "class Empty:\n    pass\n\n\ndef _x():\n    pass\n"}).endswith(
        "\n\ndef test_"
    )
