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
