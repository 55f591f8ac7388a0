"""Where the autofixes for a small model's mistakes must stop: code that only looks like the mistake is left as it
is (each case from a review of the autofixes)."""

from __future__ import annotations

from l2mac.checks.autofix import call_hidden_functions, fixtures_as_parameters, keep_arguments
from l2mac.checks.web_repairs import drop_app_copy

FACTORY = (
    "def create_app(db_path):\n    app = Flask(__name__)\n\n    @app.route('/')\n    def home():\n"
    "        return str(db_path)\n\n    return app\n"
)
MODULE_APP = "from flask import Flask\n\napp = Flask(__name__)\n\n\n@app.route('/')\ndef home():\n    return 'x'\n\n\n"


def test_a_module_level_app_copy_goes_with_its_configuration_but_never_when_code_left_or_another_file_reads_it() -> (
    None
):
    configured = MODULE_APP.replace("app = Flask(__name__)\n", "app = Flask(__name__)\napp.config['KEY'] = 'x'\n")
    fixed, dropped = drop_app_copy(configured + FACTORY)
    assert dropped == ["app", "home"] and "app.config" not in fixed and fixed.count("Flask(__name__)") == 1
    backup = MODULE_APP.replace("app = Flask(__name__)\n", 'app = Flask(__name__)\nDB = "d.db"\nBACKUP = DB + ".bak"\n')
    backup = backup.replace("return 'x'", "return DB")
    assert drop_app_copy(backup + FACTORY)[1] == []  # BACKUP still reads DB
    kept = MODULE_APP + "def log(x):\n    global NOTES\n    NOTES = NOTES + [x]\n\n\n" + FACTORY
    kept = kept.replace("app = Flask(__name__)\n", "app = Flask(__name__)\nNOTES = []\n").replace("'x'", "str(NOTES)")
    assert drop_app_copy(kept)[1] == []  # log() still uses NOTES
    assert drop_app_copy(MODULE_APP + FACTORY, imported=frozenset({"app"}))[1] == []  # wsgi.py imports it


def test_a_factory_that_takes_a_path_is_given_one_where_the_module_ran_the_app() -> None:
    source = (
        "from pathlib import Path\n"
        + MODULE_APP
        + FACTORY.replace("(db_path)", "(db_path: Path)", 1)
        + "\n\nif __name__ == '__main__':\n    app.run()\n"
    )
    fixed, dropped = drop_app_copy(source)
    assert dropped and "    create_app(Path('db_path')).run()\n" in fixed


def test_a_call_of_a_bare_name_in_a_method_or_where_the_name_is_bound_is_not_a_hidden_project_function() -> None:
    owners = {"loads": ["app.util"], "apply": ["app.util"], "save": ["app.cache", "app.store"]}
    method = "from json import loads\n\n\nclass C:\n    def loads(self, text):\n        return loads(text)\n"
    assert call_hidden_functions(method, "app.main", owners)[1] == []
    nested = (
        "def apply(func, items):\n    def apply(x):\n        return func(x)\n\n    return [apply(i) for i in items]\n"
    )
    assert call_hidden_functions(nested, "app.main", owners)[1] == []
    two = "def save():\n    return save('x')\n"  # two modules define save(): which one is meant is not known
    assert call_hidden_functions(two, "app.main", owners)[1] == []


def test_a_parameter_with_a_default_or_a_line_shared_with_other_code_is_not_a_discarded_argument() -> None:
    defaulted = (
        "import os\n\n\ndef create_app(db_path=None):\n    db_path = os.environ.get('DB', 'd.db')\n    return db_path\n"
    )
    assert keep_arguments(defaulted)[1] == []
    shared = "def f(x):\n    x = 1; print(x)\n    return x\n"
    assert keep_arguments(shared)[1] == []


def test_a_fixture_name_that_is_a_lambdas_own_parameter_is_not_added_to_a_test() -> None:
    source = (
        "import pytest\n\n\n@pytest.fixture\ndef client():\n    return 1\n\n\n"
        "def test_x():\n    check = lambda client: client + 1\n    assert check(1) == 2\n"
    )
    assert fixtures_as_parameters(source)[1] == []


def test_a_table_maker_is_called_only_on_what_the_module_shares_and_where_the_value_exists() -> None:
    """A review's cases: a dataclass made first from text, a value bound by the statement holding the call, a
    call in a decorator."""
    import ast

    from l2mac.checks.setups import sharing_first_parameter, tables_made_first

    store = (
        "from dataclasses import dataclass\n\n\n@dataclass\nclass Note:\n    title: str\n\n\n"
        "def init_db(path):\n    pass\n\n\ndef save_note(path, note):\n    pass\n\n\ndef open_db(path):\n    pass\n"
    )
    maker = ("notes.store", "init_db", "path")
    users = sharing_first_parameter(ast.parse(store), maker)
    assert users == {"save_note", "open_db"}
    tests = (
        "import pytest\nfrom notes.store import Note, open_db, save_note\n\n\n"
        "def test_save(tmp_path):\n    note = Note('title')\n    save_note(tmp_path / 'n.db', note)\n\n\n"
        "def test_with(tmp_path):\n    with open_db(tmp_path) as db:\n        save_note(db, Note('a'))\n\n\n"
        "@pytest.mark.parametrize('x', [save_note('p', 1)])\ndef test_decorated(x):\n    assert x\n"
    )
    fixed, added = tables_made_first(tests, {"test_save", "test_with", "test_decorated"}, maker, users)
    assert added == ["init_db(tmp_path / 'n.db')", "init_db(tmp_path)"]  # not init_db('title'), not init_db(db)
    assert "    init_db(tmp_path / 'n.db')\n    save_note(tmp_path / 'n.db', note)\n" in fixed
    assert "    init_db(tmp_path)\n    with open_db(tmp_path) as db:\n" in fixed
    assert "def test_decorated(x):\n    assert x\n" in fixed


def test_a_factory_that_sets_its_file_up_already_or_returns_on_a_shared_line_gets_no_setup() -> None:
    from l2mac.checks.setups import call_setup

    setups = {"reset_db": ("notes.store", "path")}
    head = "from flask import Flask\n\nfrom notes.store import add_note, init_db, reset_db\n\n\n"
    factory = (
        "def create_app(db_path):\n    app = Flask(__name__)\n    init_db(db_path)\n"
        "    app.add_url_rule('/', view_func=lambda: add_note(db_path, 'x'))\n    return app\n"
    )
    assert call_setup(head + factory, setups)[1] == []  # init_db(db_path) sets it up: a reset would wipe it
    one_line = head + "app = Flask(__name__)\n\n\ndef create_app(db_path):\n    add_note(db_path, 'x'); return app\n"
    assert call_setup(one_line, {"init_db": ("notes.store", "path")})[1] == []
    later = (  # its module's last import after the factory: the import goes there, the call before the return
        "from flask import Flask\n\nfrom notes.store import add_note\n\n\ndef create_app(db_path):\n"
        "    app = Flask(__name__)\n    app.add_url_rule('/', view_func=lambda: add_note(db_path, 'x'))\n"
        "    return app\n\n\nfrom notes.store import (\n    list_notes,\n)\n"
    )
    fixed, added = call_setup(later, {"init_db": ("notes.store", "path")})
    assert added == ["init_db(db_path)"]
    assert "    init_db(db_path)\n    return app\n" in fixed and fixed.endswith(")\nfrom notes.store import init_db\n")


def test_a_main_block_is_left_when_the_factory_makes_its_own_app_or_a_line_holds_more() -> None:
    from l2mac.checks.web_repairs import main_through_factory

    app = "from flask import Flask\n\napp = Flask(__name__)\n\n\n"
    own = "def create_app(db_path):\n    app = Flask(__name__)\n    app.config['DB'] = db_path\n    return app\n"
    main = "\n\nif __name__ == '__main__':\n    app.config['DB'] = 'notes.db'\n    app.run()\n"
    assert main_through_factory(app + own + main)[1] == []  # the block runs the module's app, not the factory's
    shared = "def create_app(db_path, uploads):\n    app.config['DB'] = db_path\n    app.config['UP'] = uploads\n"
    shared += "    return app\n"
    later = "\n\nif __name__ == '__main__':\n    app.config['DB'] = 'n.db'\n    up = 'u'\n    app.config['UP'] = up\n"
    fixed, calls = main_through_factory(app + shared + later + "    app.run()\n")
    assert calls == ["create_app('n.db', up)"]
    assert "    up = 'u'\n    create_app('n.db', up)\n    app.run()\n" in fixed  # after the value it reads
    semicolon = "\n\nif __name__ == '__main__':\n    app.config['DB'] = 'n.db'; app.config['UP'] = 'u'; app.run()\n"
    assert main_through_factory(app + shared + semicolon)[1] == []


def test_a_servers_5xx_line_is_read_through_its_colour_codes() -> None:
    from l2mac.checks.readme import _ANSI, SERVER_ERROR

    werkzeug = '127.0.0.1 - - [27/Nov/2026 14:00:00] "\x1b[35m\x1b[1mPOST /notes HTTP/1.1\x1b[0m" 500 -'
    assert SERVER_ERROR.search(_ANSI.sub("", werkzeug)) and not SERVER_ERROR.search(werkzeug.replace("500", "404"))


def test_a_web_frameworks_name_is_imported_from_it_only_where_the_file_uses_that_framework() -> None:
    """Seen on the URL shortener at dc80a46: ``url_for`` used in a Flask module whose ``from flask import`` line
    lacked it; with no import known, a stub url_for was written into the project's db.py and imported from there."""
    from l2mac.checks.autofix import add_imports

    flask = "from flask import Flask, redirect\n\n\ndef go():\n    return redirect(url_for('home'))\n"
    assert add_imports(flask, {"url_for"})[1] == ["from flask import url_for"]
    fastapi = "import fastapi\n\n\ndef fail():\n    raise HTTPException(404)\n"
    assert add_imports(fastapi, {"HTTPException"})[1] == ["from fastapi import HTTPException"]
    assert add_imports("def go():\n    return url_for('home')\n", {"url_for"})[1] == []  # no framework: unknown
