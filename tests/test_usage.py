"""The commands that install, test and run a project, worked out from its files."""

from __future__ import annotations

from l2mac.checks.usage import project_commands

PYPROJECT = '[project]\nname = "notes"\nversion = "0.1.0"\n\n[project.optional-dependencies]\ntest = ["pytest"]\n'
FACTORY = (
    "from flask import Flask\n\n\ndef create_app(db_path):\n    app = Flask(__name__)\n    return app\n\n\n"
    "if __name__ == '__main__':\n    create_app('notes.db').run()\n"
)


def test_a_flask_project_is_installed_with_its_test_extra_and_run_with_flask_given_its_files() -> None:
    files = {"pyproject.toml": PYPROJECT, "notes/app.py": FACTORY, "tests/test_app.py": "def test_x():\n    pass\n"}
    assert project_commands(files) == {
        "install": 'python -m pip install -e ".[test]"',
        "test": "python -m pytest",
        "run": "flask --app \"notes.app:create_app('db_path')\" run",
    }
    module_level = {"web/app.py": "from flask import Flask\n\napp = Flask(__name__)\n", "requirements.txt": "flask\n"}
    assert project_commands(module_level) == {
        "install": "python -m pip install -r requirements.txt",
        "run": "flask --app web.app run",
    }


def test_a_console_script_or_a_main_block_is_how_a_program_runs() -> None:
    scripts = PYPROJECT.replace("[project.optional", '[project.scripts]\nnotes = "notes.cli:main"\n\n[project.optional')
    assert project_commands({"pyproject.toml": scripts})["run"] == "notes --help"
    main = "def main():\n    pass\n\n\nif __name__ == '__main__':\n    main()\n"
    assert project_commands({"notes/__main__.py": main, "notes/cli.py": main})["run"] == "python -m notes"
    assert project_commands({"snake.py": main, "tools/x.py": main})["run"] == "python snake.py"
    assert project_commands({"lib.py": "x = 1\n", "pyproject.toml": "not toml ["}) == {}


def test_a_tools_only_pyproject_leaves_the_install_to_requirements_and_a_path_factory_has_no_flask_command() -> None:
    tools = {"pyproject.toml": "[tool.pytest.ini_options]\naddopts = '-q'\n", "requirements.txt": "flask\n"}
    assert project_commands(tools) == {"install": "python -m pip install -r requirements.txt"}
    typed = FACTORY.replace("(db_path)", "(db_path: Path)", 1).replace(
        "create_app('notes.db')", "create_app(Path('n'))"
    )
    typed = "from pathlib import Path\n" + typed
    # the command line would pass text where it takes a Path: the program's own __main__ block runs it instead
    assert project_commands({"notes/app.py": typed})["run"] == "python -m notes.app"
