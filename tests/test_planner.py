"""Planning: a structured tool call, recovery from prose or bad arguments, step limits, user plan files."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from l2mac.checks.demands import missing_definitions, named_files
from l2mac.domains import load_domain
from l2mac.errors import PromptProgramError
from l2mac.models.client import ModelClient
from l2mac.models.scripted import ScriptedModel, call, last_tool_return, last_user_text, text
from l2mac.plan_rules import dedupe, fit_steps
from l2mac.planner import load_prompt_program, make_plan, parse_text_plan
from l2mac.spec_plan import module_steps
from l2mac.types import Instruction


def plan_with(replies: list, **kwargs) -> tuple:
    script = ScriptedModel(list(replies))
    program = asyncio.run(make_plan(ModelClient(script.model), load_domain("codebase"), "Build X", **kwargs))
    return program, script


def test_plan_comes_from_the_submit_plan_tool_and_carries_the_task() -> None:
    program, script = plan_with(
        [
            call(
                "submit_plan",
                {
                    "steps": [
                        {"title": "Models", "instruction": "Write models.py"},
                        {"title": "API", "instruction": "Write api.py", "requires_tests": False},
                    ]
                },
            )
        ]
    )
    assert [s.title for s in program.steps] == ["Models", "API"]
    assert program.steps[0].requires_tests is True and program.steps[1].requires_tests is False
    assert "Build X" in last_user_text(script.requests[0])
    assert script.tool_names[0] == ["submit_plan"]


def test_a_plan_written_as_prose_is_parsed() -> None:
    program, _ = plan_with(
        [
            text(
                "Here is my plan:\n1. Models: write models.py with User\n   and Post\n"
                "2. API: write api.py\n3. Tests: write tests"
            )
        ]
    )
    assert [s.title for s in program.steps] == ["Models", "API", "Tests"]
    assert "and Post" in program.steps[0].instruction


def test_invalid_plan_arguments_are_answered_and_retried() -> None:
    program, script = plan_with(
        [
            call("submit_plan", {"steps": [{"title": "No instruction"}]}),
            call("submit_plan", {"steps": [{"title": "A", "instruction": "a"}]}),
        ]
    )
    assert [s.title for s in program.steps] == ["A"]
    assert "instruction" in last_tool_return(script.requests[1])


def test_a_one_step_plan_is_the_task_itself_without_asking_the_model() -> None:
    # Seen on HumanEval+ with the 1.5B model: asked for a one-step plan, it failed three times to give one
    # (3 of 40 tasks), and the plans it gave restated the task with details dropped.
    task = 'Implement f in solution.py:\n```python\ndef f(x: int) -> int:\n    """Twice x."""\n```'
    script = ScriptedModel([])
    program = asyncio.run(make_plan(ModelClient(script.model), load_domain("codebase"), task, max_steps=1))
    assert [s.instruction for s in program.steps] == [task] and program.steps[0].requires_tests
    assert program.steps[0].title == "Implement f in solution.py:"
    assert script.requests == []


def test_a_task_giving_its_one_files_skeleton_is_one_step_without_asking_the_model() -> None:
    # Seen on ClassEval with the 1.5B model: one class split into a step per method; the first step wrote every
    # method and the two after it spent their budgets rewriting its tests.
    skeleton = (
        'class Shape:\n    def area(self):\n        """The area."""\n\n    def grow(self, k):\n        """Scaled."""\n'
    )
    task = f"Implement the class below in shapes.py. Test it in tests/test_shapes.py.\n\n```python\n{skeleton}```"
    script = ScriptedModel([])
    program = asyncio.run(make_plan(ModelClient(script.model), load_domain("codebase"), task, max_steps=3))
    assert [s.instruction for s in program.steps] == [task] and script.requests == []
    assert "its one code file, shapes.py" in program.source
    # a soa lead drafts that module by the very same step, so her draft is the one l2mac would write
    assert module_steps(task) == {"shapes.py": program.steps[0]}
    # two code files named, a skeleton of nothing, an example of the module's use, or of a plugin of the program:
    # the model plans
    usage = "from shapes import Shape\n\n\ndef show(s):\n    ...\n"
    plugin = "class Square(Shape):\n    def area(self):\n        ...\n"
    for other in (
        task.replace("shapes.py.", "shapes.py, with a CLI in cli.py."),
        task.replace(skeleton, "x = 1\n"),
        task.replace(skeleton, usage),
        task.replace(skeleton, plugin),
    ):
        plan = call("submit_plan", {"steps": [{"title": "A", "instruction": "Write shapes.py."}]})
        script = ScriptedModel([plan])
        asyncio.run(make_plan(ModelClient(script.model), load_domain("codebase"), other, max_steps=3))
        assert len(script.requests) == 1


def test_a_plan_is_repaired_before_it_runs() -> None:
    # Seen with the 1.5B model on a specification: a last step "Submit plan", and a README step that required
    # tests and failed "no tests were collected" nine times.
    steps = [
        Instruction(title="Core", instruction="Write core.py with plan_trip(days). Write tests/test_core.py."),
        Instruction(title="Readme", instruction="Write README.md with usage."),
        Instruction(title="Docs and code", instruction="Write README.md and cli.py."),
        Instruction(title="Approval", instruction="Let users submit the plan for approval in approve.py."),
        Instruction(title="Loader", instruction="Implement load_tasks() reading tasks.json."),
        Instruction(title="Submit", instruction="Write submit_plan_for_approval() in approve.py."),
        Instruction(title="Submit plan", instruction="Call submit_plan with the steps."),
    ]
    program, _ = plan_with([call("submit_plan", {"steps": [s.model_dump() for s in steps]})])
    titles = ["Core", "Readme", "Docs and code", "Approval", "Loader", "Submit"]
    assert [s.title for s in program.steps] == titles
    assert [s.requires_tests for s in program.steps] == [True, False, True, True, True, True]


def test_a_function_only_a_steps_title_names_is_said_in_its_instruction() -> None:
    """Seen on a change to python-slugify: the title named unique_slugify(text, taken), the instruction only "a
    new function"; the step passed with the function never written, since what a step must define is read
    from its instruction."""
    titled = Instruction(
        title="Add a new function unique_slugify(text, taken) to slugify.py",
        instruction="Create a new function in slugify/slugify.py that takes two arguments: text and taken.",
    )
    both = Instruction(title="Add load(path)", instruction="Write store.py with load(path: Path) -> list.")
    program, _ = plan_with([call("submit_plan", {"steps": [titled.model_dump(), both.model_dump()]})])
    first, second = program.steps
    assert first.instruction.endswith("It is about unique_slugify(text, taken).")
    assert missing_definitions(first.instruction, {"slugify/slugify.py": "def slugify(text):\n    return text\n"})
    assert second.instruction.startswith(both.instruction + "\n")  # it names load() already
    readme = Instruction(title="Document parse(text) in README.md", instruction="Write README.md with usage.")
    program, _ = plan_with([call("submit_plan", {"steps": [readme.model_dump()]})])
    assert not program.steps[0].requires_tests  # a step that writes no code still requires no tests


def test_a_step_listed_again_nearly_word_for_word_is_dropped_but_the_same_work_elsewhere_is_kept() -> None:
    said = "a test file named tests/test_unique_slugify.py and add a test case that uses the unique_slugify function"
    steps = [
        Instruction(title="Add unique_slugify", instruction="Write unique_slugify(text, taken) in slugify/slugify.py."),
        Instruction(title="Add a new test file", instruction=f"Create a new {said}."),
        Instruction(title="Tests for a", instruction="Write tests/test_a.py with tests of parse() in a.py."),
        Instruction(title="Tests for b", instruction="Write tests/test_b.py with tests of parse() in b.py."),
        Instruction(title="Add mul", instruction="Write core.py with mul(a: int, b: int) -> int."),
        Instruction(title="Add div", instruction="Write core.py with div(a: int, b: int) -> int."),
        # a review's cases: other functions named by plain words, the opposite work
        Instruction(title="Addition", instruction="Implement the add operation in calc.py and test it."),
        Instruction(title="Multiplication", instruction="Implement the mul operation in calc.py and test it."),
        Instruction(title="Reject empty", instruction="Make validate in forms.py raise ValueError on empty input."),
        Instruction(title="Accept empty", instruction="Make validate in forms.py not raise ValueError on empty input."),
        Instruction(title="Add the tests", instruction=f"Create a new file named {said.split('named ', 1)[1]}."),
    ]
    assert [s.title for s in dedupe(steps)] == [s.title for s in steps[:-1]]


def test_a_step_that_only_tests_an_earlier_steps_code_is_that_steps_tests() -> None:
    # Seen with the 1.5B model on a change to python-slugify (steps 2-5 of its plan, as it wrote them).
    uses = "add a test case that uses the unique_slugify function with different inputs"
    steps = [
        Instruction(
            title="Add a new function unique_slugify(text, taken) to slugify.py",
            instruction="Create a new function in slugify/slugify.py that takes text and taken. Use pytest.",
        ),
        Instruction(title="Add a new test file", instruction=f"Create tests/test_unique_slugify.py and {uses}."),
        Instruction(
            title="Add UniqueSlugifyTests", instruction=f"Create UniqueSlugifyTests in slugify/__tests__.py and {uses}."
        ),
        Instruction(title="Add tools/unique_slugify.py", instruction=f"Create tools/unique_slugify.py and {uses}."),
        # work of its own: a new module calling the name, more work on it, a test step of names no code step has
        Instruction(title="CLI", instruction="Write cli.py whose main() calls unique_slugify(), with tests for it."),
        Instruction(title="CLI", instruction="Write cli.py whose main() calls unique_slugify(), with tests for it."),
        Instruction(title="Flag", instruction="Add a --json flag to main() in cli.py, with tests for it."),
        Instruction(title="Empty", instruction="Make unique_slugify() return '' for '', and add test cases for it."),
        Instruction(title="Tests for parse", instruction="Write tests/test_a.py with test cases of parse() in a.py."),
    ]
    program, _ = plan_with([call("submit_plan", {"steps": [s.model_dump() for s in steps]})], max_steps=10)
    kept = [steps[0].title, "CLI", "Flag", "Empty", "Tests for parse"]  # the repeated step dropped too
    assert [s.title for s in program.steps] == kept
    first = program.steps[0]
    assert first.requires_tests
    assert first.instruction.count("Write its tests in tests/test_unique_slugify.py.") == 1
    assert "__tests__" not in first.instruction and "tools/" not in first.instruction  # no file to write there


def test_with_no_usable_plan_the_task_is_the_one_step_and_the_program_says_why() -> None:
    program, _ = plan_with([text("I cannot."), text("No."), text("Still no.")], max_steps=5)
    assert [s.instruction for s in program.steps] == ["Build X"] and program.steps[0].requires_tests
    assert program.source.startswith("the task as one step: the planner failed: the model did not produce a usable")


def test_reflection_replaces_the_plan_with_the_refined_one() -> None:
    program, script = plan_with(
        [
            call("submit_plan", {"steps": [{"title": "A", "instruction": "a"}]}),
            call("submit_plan", {"steps": [{"title": "A", "instruction": "a"}, {"title": "B", "instruction": "b"}]}),
        ],
        reflect=True,
    )
    assert [s.title for s in program.steps] == ["A", "B"]
    assert "Review this plan" in last_user_text(script.requests[1])


def test_extra_steps_are_merged_not_dropped() -> None:
    steps = [Instruction(title=f"S{i}", instruction=f"do {i}") for i in range(5)]
    fitted = fit_steps(steps, 3)
    assert [s.title for s in fitted] == ["S0", "S1", "S2"]
    assert "do 3" in fitted[2].instruction and "do 4" in fitted[2].instruction
    program, _ = plan_with([call("submit_plan", {"steps": [s.model_dump() for s in steps]})], max_steps=2)
    assert len(program.steps) == 2 and "do 4" in program.steps[1].instruction


def test_parse_text_plan_ignores_text_without_a_list() -> None:
    assert parse_text_plan("Just some words.") == []


def test_a_json_plan_with_a_small_models_escapes_is_repaired_not_read_as_a_list_of_lines() -> None:
    """Seen on the URL shortener at f6b9b84: the 1.5B planner ended each instruction's first line with a shell
    continuation (a backslash before the line break), invalid JSON; the answer was read as a bulleted list, and
    the task's 17 checklist lines became 17 steps naming no file."""
    answer = (
        '```json\n{\n  "steps": [\n    {\n      "title": "Storage",\n      "instruction": "Write links/db.py '
        'with: \\\n        - [ ] 1.1. Save a link.\n        - [ ] 1.2. List links.",\n      "requires_tests": true\n'
        '    },\n    {\n      "title": "Web app",\n      "instruction": "Write links/app.py: \\\n'
        '        - [ ] 2.1. Redirect.",\n      "requires_tests": true\n    }\n  ]\n}\n```'
    )
    steps = parse_text_plan(answer)
    assert [s.title for s in steps] == ["Storage", "Web app"]
    assert steps[0].instruction.startswith("Write links/db.py with:\n") and "1.2. List links." in steps[0].instruction


def test_prompt_program_files_yaml_json_and_bare_lists(tmp_path: Path) -> None:
    y = tmp_path / "p.yaml"
    y.write_text("task: from file\nsteps:\n  - Write the models\n  - title: API\n    instruction: api.py\n")
    program = load_prompt_program(y, "")
    assert program.task == "from file" and [s.title for s in program.steps] == ["Write the models", "API"]
    j = tmp_path / "p.json"
    j.write_text('[{"title": "A", "instruction": "a", "requires_tests": false}]')
    assert load_prompt_program(j, "t").steps[0].requires_tests is False
    bad = tmp_path / "bad.yaml"
    bad.write_text("steps:\n  - title: only a title\n")
    with pytest.raises(PromptProgramError, match="step 1 is invalid"):
        load_prompt_program(bad, "t")
    with pytest.raises(PromptProgramError, match="cannot read"):
        load_prompt_program(tmp_path / "missing.yaml", "t")


def test_a_plan_gets_back_the_tasks_code_and_files_it_dropped() -> None:
    from l2mac.plan_rules import carry_task_details
    from l2mac.types import Instruction

    code = 'def count(s: str) -> int:\n    """Distinct characters.\n    >>> count("aA")\n    1\n    """\n'
    task = f"Implement the function below in solution.py. Test it in tests/test_solution.py.\n\n```python\n{code}```"
    steps = [
        Instruction(title="Setup", instruction="Create the project layout."),
        Instruction(title="Function", instruction="Write a function `count` that counts distinct characters."),
    ]
    out = carry_task_details(steps, task)
    assert code.rstrip() in out[1].instruction and code.rstrip() not in out[0].instruction  # where count is meant
    assert out[0].instruction.endswith("write solution.py, write tests/test_solution.py.")
    # a plan that already carries them is left as it is
    assert carry_task_details(out, task) == out
    assert carry_task_details(steps, "a todo app stored in a JSON file") == steps


def test_the_planner_is_shown_a_worked_plan_of_its_tasks_own_kind() -> None:
    # A 1.5B planner copies the kind of program its example shows: shown one web app, it planned Flask routes
    # for a command-line task and for a statistics library. So it sees one example, of its task's kind.
    from l2mac.domains import load_domain

    domain = load_domain("codebase")
    kinds = {e.kind: e.task for e in domain.plan_examples}
    assert set(kinds) >= {"library", "command line", "web", "data"}

    def shown(task: str) -> str:
        return domain.render("plan_request", task=task, max_steps=4, example=domain.plan_example(task))

    cli = shown("a command-line habit tracker with sub-commands")
    assert kinds["command line"] in cli and kinds["web"] not in cli and kinds["library"] not in cli
    web = shown("a FastAPI service with an endpoint per resource")
    assert kinds["web"] in web and kinds["command line"] not in web
    assert kinds["library"] in shown("a snake game")  # no kind's words: the first example
    assert "$example" not in shown("anything")


SPEC = """# Architecture
The file tree:
```
├── .gitignore
├── LICENSE
├── inventory
│   ├── __init__.py
│   ├── stock.py
│   └── pricing.py
├── scripts
│   └── report.py
└── tests
    └── test_stock.py
```

`stock.py`:
- class Stock(items): holds the items and their counts.
    - add(name, count): adds count of name.
- restock(stock, order): adds an order's items.

**pricing.py**
- price(stock, prices): the value of the stock.

Run `python scripts/report.py` to print the value.
"""


def test_a_specification_names_its_code_files_with_what_it_says_of_each() -> None:
    from l2mac import outline

    assert outline.tree_paths(SPEC) == [
        ".gitignore",
        "LICENSE",
        "inventory/__init__.py",
        "inventory/stock.py",
        "inventory/pricing.py",
        "scripts/report.py",
        "tests/test_stock.py",
    ]
    files = {f.path: f.description for f in outline.code_files(SPEC)}
    # no tests, no empty package marker; each description ends where the prose goes on
    assert list(files) == ["inventory/stock.py", "inventory/pricing.py", "scripts/report.py"]
    assert files["inventory/stock.py"].startswith("- class Stock(items)") and "restock(" in files["inventory/stock.py"]
    assert files["inventory/pricing.py"] == "- price(stock, prices): the value of the stock."
    assert files["scripts/report.py"] == ""
    assert outline.code_files("Write a function that adds two numbers.") == []
    # three-space levels; a heading that names the file from another root; a folder whose name holds "tests"
    other = (
        "```\n├── src\n│  └── shop\n│     └── cart.py\n└── contests\n   └── ranking.py\n```\n\n"
        "`shop/cart.py`:\n- Cart: holds the items.\n"
    )
    assert outline.tree_paths(other) == ["src/shop/cart.py", "contests/ranking.py"]
    assert [(f.path, f.description) for f in outline.code_files(other)] == [
        ("src/shop/cart.py", "- Cart: holds the items."),
        ("contests/ranking.py", ""),
    ]


def test_a_plan_owns_every_file_the_specification_names_in_import_order() -> None:
    from l2mac.plan_rules import follow_spec
    from l2mac.types import Instruction

    steps = [
        Instruction(title="Setup", instruction="Create the folders inventory and scripts, and install pytest."),
        Instruction(title="Stock", instruction="Write stock.py with the Stock class and restock()."),
        Instruction(title="Value", instruction="Compute the value with pricing.price() in the report script."),
    ]
    out = follow_spec(steps, SPEC)
    # the specified files' steps are the plan's code: setting up, and using a module in prose, are no step
    titles = ["Stock", "Write inventory/pricing.py", "Value", "Write scripts/report.py"]
    assert [s.title for s in out] == titles
    stock = out[0].instruction
    assert stock.startswith("Write inventory/stock.py") and "add(name, count)" in stock  # the path and what is said
    assert "price(stock, prices)" in out[1].instruction and out[1].requires_tests
    assert not out[3].requires_tests  # nothing is said of it to test
    assert follow_spec(out, SPEC) == out  # a plan that follows the specification is left as it is
    # a step about tests, or writing a code file of its own, stays; a README or a diagram does not
    extra = [
        Instruction(title="Tests", instruction="Write tests/test_stock.py for restock()."),
        Instruction(title="CLI", instruction="Write cli.py with main() printing the value."),
        Instruction(title="Introduction", instruction="Write README.md with an overview."),
        Instruction(title="UML Class Diagram", instruction="Draw classes.png of the classes in stock.py."),
    ]
    assert [s.title for s in follow_spec([*steps, *extra], SPEC)] == [
        "Stock",
        "Write inventory/pricing.py",
        "Value",
        "Tests",
        "CLI",
        "UML Class Diagram",  # it names a code file: kept (no word-list of what a step may be)
        "Write scripts/report.py",
    ]
    stock_step = Instruction(title="Stock", instruction="Write stock.py with Stock.", requires_tests=False)
    assert follow_spec([stock_step], SPEC)[0].requires_tests  # what is said of a file is tested
    # the step that mentions the file and most of what is said of it owns it, not the first that mentions it
    setup = Instruction(title="Setup", instruction="Create empty files stock.py and pricing.py.")
    owned = follow_spec([setup, steps[1]], SPEC)
    assert [s.title for s in owned] == ["Setup", "Stock", "Write scripts/report.py"]  # Setup owns pricing.py
    assert "add(name, count)" in owned[1].instruction and "add(name, count)" not in owned[0].instruction
    # nor a step about tests; and a module named in prose ("the app") is no import of it
    tests_step = Instruction(title="Tests", instruction="Write tests/test_stock.py for stock.py.")
    owned = follow_spec([tests_step, steps[1], steps[2]], SPEC)
    assert "add(name, count)" in owned[1].instruction and "add(name, count)" not in owned[0].instruction
    app = "`app.py`:\n- serve(port): serves the API.\n"
    planned = follow_spec([Instruction(title="Setup", instruction="Install flask for the app.")], app)
    assert [s.title for s in planned] == ["Write app.py"]


def test_a_plan_has_no_step_that_only_installs_packages_or_makes_folders() -> None:
    # Seen with the 1.5B model on DevBench's Hybrid_Images: the first two of ten steps.
    steps = [
        Instruction(title="Define Project Structure", instruction="Create the folders src, tests and examples."),
        Instruction(title="Install Required Libraries", instruction="pip install numpy; add it to requirements.txt."),
        Instruction(title="Set up the app", instruction="Write app.py with create_app() returning the Flask app."),
        Instruction(title="Filters", instruction="Write filters.py with low_pass(img, sigma)."),
    ]
    program, _ = plan_with([call("submit_plan", {"steps": [s.model_dump() for s in steps]})])
    assert [s.title for s in program.steps] == ["Set up the app", "Filters"]  # the ones that write code stay
    only_setup = [Instruction(title="Install", instruction="pip install numpy"), steps[0]]
    program, _ = plan_with([call("submit_plan", {"steps": [s.model_dump() for s in only_setup]})])
    assert len(program.steps) == 2  # a plan is never emptied: the task is still in it


def test_only_python_code_of_the_task_is_carried_as_signatures_to_keep() -> None:
    from l2mac.plan_rules import carry_task_details

    tree = "├── src\n│   └── hybrid.py\n"
    diagram = "classDiagram\n    class Global_functions {\n        +low_pass(img: array) array\n    }\n"
    code = "def low_pass(img, sigma):\n    ...\n"
    task = f"Build it.\n\n```bash\n{tree}```\n\n```mermaid\n{diagram}```\n\n```\n{tree}```\n\n```python\n{code}```"
    out = carry_task_details([Instruction(title="Filters", instruction="Write the low_pass filter.")], task)
    assert code.rstrip() in out[0].instruction
    assert "classDiagram" not in out[0].instruction and "├──" not in out[0].instruction
    # a file named on a tree's line is the file at its place in the tree, not one at the project root
    assert out[0].instruction.endswith("The task names these files: write src/hybrid.py.")


def test_a_file_the_plan_invents_for_the_specifications_names_is_pointed_at_the_specified_file() -> None:
    from l2mac.plan_rules import follow_spec

    spec = (
        "```\n├── src\n│   └── hybrid.py\n├── examples\n│   └── demo.py\n```\n\n`hybrid.py`:\n"
        "- low_pass(img, sigma, size): a low pass filter.\n- high_pass(img, sigma, size): a high pass filter.\n"
    )
    steps = [
        Instruction(title="Functions", instruction="Create global_functions.py with low_pass and high_pass()."),
        Instruction(title="More", instruction="Implement the filters in the global_functions.py file."),
        Instruction(title="Tests", instruction="Write tests/test_global.py for global_functions.py."),
        Instruction(title="Demo", instruction="Write examples/run.py using load_image()."),
    ]
    out = follow_spec(steps, spec)
    assert "global_functions.py" not in " ".join(s.instruction for s in out)
    assert out[0].instruction.startswith("Create src/hybrid.py with low_pass and high_pass().")
    assert "src/hybrid.py file" in out[1].instruction and "tests/test_global.py for src/hybrid.py" in out[2].instruction
    assert "low_pass(img, sigma, size): a low pass filter." in out[0].instruction  # it owns the file now
    assert "examples/run.py" in out[3].instruction  # a file with none of the specification's names stays
    assert [s.title for s in out] == ["Functions", "More", "Tests", "Demo", "Write examples/demo.py"]
    # an entry point, a package marker, a file the task names, or a common word, are never retargeted
    uses = [
        Instruction(title="CLI", instruction="Write cli.py calling low_pass() and high_pass()."),
        Instruction(title="Pkg", instruction="Write src/__init__.py exporting low_pass and high_pass."),
        Instruction(title="Words", instruction="Write filters.py to pass the image: low pass and high pass."),
    ]
    assert [s.instruction for s in follow_spec(uses, spec)[:3]] == [s.instruction for s in uses]


def test_a_specified_files_functions_and_classes_become_the_stubs_its_step_completes() -> None:
    import ast

    from l2mac import outline
    from l2mac.control.continuation import step_opening
    from l2mac.plan_rules import follow_spec

    said = (
        "- class Particle(x0): a particle.\n    - evaluate(costFunc): evaluates its position.\n"
        "- def minimize(costFunc, x0, bounds): minimizes the cost,\n    as PSO does.\n"
    )
    skeleton = outline.interface(said)
    assert skeleton is not None
    tree = ast.parse(skeleton)
    cls, fn = tree.body
    assert isinstance(cls, ast.ClassDef) and [m.name for m in cls.body[1:]] == ["__init__", "evaluate"]
    assert ast.unparse(cls.body[1].args) == "self, x0" and ast.unparse(cls.body[2].args) == "self, costFunc"
    assert isinstance(fn, ast.FunctionDef) and ast.get_docstring(fn) == "minimizes the cost, as PSO does."
    # names nested under a function are the calls it makes, not signatures; prose is no interface
    assert outline.interface("- main(): runs.\n    - fetch(): gets the data.\n") is None
    assert outline.interface("The module holds the filters and the blur.") is None

    task = f"```\n├── pso\n│   └── pso_simple.py\n```\n\n`pso_simple.py`:\n{said}"
    step = follow_spec([Instruction(title="PSO", instruction="Write pso_simple.py.")], task)[0]
    assert skeleton in step.instruction
    opening = step_opening(step.instruction, "pso/pso_simple.py")  # the answer is begun in the first stub
    assert opening is not None and (opening.owner, opening.name) == ("Particle", "__init__")


def test_a_plan_that_reads_the_task_back_gives_way_to_the_specifications_files_or_the_task() -> None:
    # Seen on DevBench's ArXiv_digest: a plan cut off at its token limit, its "steps" the PRD's bullet points.
    prd = [
        "Enables querying by any combinations of category, author, title and abstract.",
        "A max_results parameter controls the number of results, with a sensible default.",
        "Integrates a mandatory recent_days parameter, not directly supported by the API.",
    ]
    spec = "```\n├── query.py\n```\n\n`query.py`:\n- get_args(): parse the command line.\n"
    echoed = [{"title": line[:30], "instruction": line} for line in prd]
    task = "# Requirements\n" + "\n".join(f"- {line}" for line in prd) + "\n\n" + spec
    program = asyncio.run(make_plan(ModelClient(ScriptedModel([call("submit_plan", {"steps": echoed})]).model),
                                    load_domain("codebase"), task))  # fmt: skip
    assert [s.title for s in program.steps] == ["Write query.py"] and "get_args()" in program.steps[0].instruction
    plain = "# Requirements\n" + "\n".join(f"- {line}" for line in prd)
    program = asyncio.run(make_plan(ModelClient(ScriptedModel([call("submit_plan", {"steps": echoed})]).model),
                                    load_domain("codebase"), plain))  # fmt: skip
    assert len(program.steps) == 1 and program.steps[0].instruction == plain  # the task itself, whole
    assert "read the task back" in program.source


def test_a_file_named_bare_is_the_file_the_tasks_tree_places() -> None:
    from l2mac.plan_rules import follow_spec

    task = "```\n├── pso\n│   ├── __init__.py\n│   └── pso_simple.py\n└── lib\n    └── util.py\n```\n"
    step = Instruction(title="PSO", instruction="Make 'pso_simple.py' and '__init__.py'; see pso/pso_simple.py.")
    out = follow_spec([step], task)
    assert out[0].instruction.startswith("Make 'pso/pso_simple.py' and 'pso/__init__.py'; see pso/pso_simple.py.")
    # a name the tree holds twice is left as it is
    twice = task.replace("util.py", "pso_simple.py")
    assert "Make 'pso_simple.py'" in follow_spec([step], twice)[0].instruction


def test_a_skeleton_labelled_as_one_files_is_never_begun_in_another() -> None:
    from l2mac.checks.contract import given_skeleton

    text = 'Its interface:\npso/pso_simple.py\n```python\ndef minimize(f):\n    """Minimizes f."""\n    ...\n```\n'
    assert given_skeleton(text, ["minimize"], "pso/pso_simple.py") is not None
    assert given_skeleton(text, ["minimize"], "pso/__init__.py") is None  # seen: the class written into it
    assert given_skeleton(text.replace("pso/pso_simple.py\n", ""), ["minimize"], "pso/__init__.py") is not None


SHOP = """# Architecture
```
├── shop
│   ├── __init__.py
│   ├── report.py
│   └── cart.py
├── scripts
│   └── run_report.sh
└── README.md
```

`report.py`:
- summary(cart): a line per item of the Cart, then its total().

`cart.py`:
- class Cart(items): the items and their prices.
    - total(): the sum of the prices.
- load_cart(path): a Cart read from a JSON file.
"""


def test_a_specification_that_describes_its_files_is_the_plan_in_dependency_order_without_a_model_call() -> None:
    script = ScriptedModel([])  # any call would fail: there is no reply
    program = asyncio.run(make_plan(ModelClient(script.model), load_domain("codebase"), SHOP))
    assert program.source == "the specification" and script.requests == []
    assert [s.title for s in program.steps] == ["Write shop/cart.py", "Write shop/report.py", "The other files"]
    cart, report, scripts = program.steps
    # the module the other's description uses comes first, with its package's marker, its interface and its tests
    assert named_files(cart.instruction) == ["shop/cart.py", "shop/__init__.py", "tests/test_cart.py"]
    assert "class Cart:" in cart.instruction and "def load_cart(path):" in cart.instruction and cart.requires_tests
    assert "from shop.cart" in cart.instruction or "importing them from shop.cart" in cart.instruction
    assert named_files(report.instruction) == ["shop/report.py", "tests/test_report.py"]
    assert named_files(scripts.instruction) == ["scripts/run_report.sh", "README.md"] and not scripts.requires_tests


def test_a_specification_that_leaves_a_module_undescribed_is_planned_by_the_model() -> None:
    from l2mac import outline
    from l2mac.spec_plan import spec_plan

    partly = SHOP.replace("│   └── cart.py", "│   ├── cart.py\n│   └── storage.py")
    assert "shop/storage.py" in outline.tree_paths(partly)
    assert spec_plan(partly) == []  # what storage.py must do is the rest of the task's to say: the model plans
    main = SHOP.replace("├── scripts", "├── main.py\n├── scripts")  # an entry point uses the rest: it comes last
    assert spec_plan(main)[-1].instruction.startswith("Write main.py and write scripts/run_report.sh")


def test_described_files_of_one_name_get_test_files_of_their_own() -> None:
    from l2mac.spec_plan import spec_plan

    twice = "```\n├── a\n│   └── util.py\n└── b\n    └── util.py\n```\n\n"
    twice += "`a/util.py`:\n- f(x): one.\n\n`b/util.py`:\n- g(x): two.\n"
    tests = [f for s in spec_plan(twice) for f in named_files(s.instruction) if f.startswith("tests/")]
    assert tests == ["tests/test_a_util.py", "tests/test_b_util.py"]


def test_the_model_plans_when_told_to_or_when_the_specification_describes_no_file() -> None:
    plan = {
        "steps": [{"title": "Cart", "instruction": "Write shop/cart.py with Cart and tests.", "requires_tests": True}]
    }
    script = ScriptedModel([call("submit_plan", plan)])
    program = asyncio.run(make_plan(ModelClient(script.model), load_domain("codebase"), SHOP, from_spec=False))
    assert program.source == "planned" and len(script.requests) == 1
    script = ScriptedModel([call("submit_plan", plan)])
    asyncio.run(make_plan(ModelClient(script.model), load_domain("codebase"), "Build a shopping cart with totals."))
    assert len(script.requests) == 1


def test_a_planned_project_without_a_readme_step_gets_one_last_without_tests() -> None:
    # Seen on the Flask notes API: the planner, told never to plan a README-only step, planned none, so the
    # project had no README whose install and run commands could be checked.
    steps = [
        {"title": "Store", "instruction": "Write notes/store.py with add_note(path, title)."},
        {"title": "App", "instruction": "Write notes/app.py with create_app(path)."},
    ]
    program, _ = plan_with([call("submit_plan", {"steps": steps})], readme=True)
    assert [s.title for s in program.steps] == ["Store", "App", "README"]
    last = program.steps[-1]
    # its commands are given when it runs, worked out from the files then (see the README-last run test)
    assert not last.requires_tests and "README.md" in last.instruction and "```bash" in last.instruction
    with_one = [*steps[:1], {"title": "App", "instruction": "Write notes/app.py and a README.md on using it."}]
    program, _ = plan_with([call("submit_plan", {"steps": with_one})], readme=True)
    assert [s.title for s in program.steps] == ["Store", "App"]  # the plan has one already
    program, _ = plan_with([call("submit_plan", {"steps": steps})], readme=True, max_steps=2)
    assert [s.title for s in program.steps] == ["Store", "App"]  # no room left
    program, _ = plan_with([call("submit_plan", {"steps": steps})])
    assert [s.title for s in program.steps] == ["Store", "App"]  # benchmarks and the library default: none


def test_a_run_with_the_readme_step_writes_the_readme_last(tmp_path: Path) -> None:
    from conftest import run_scripted

    code = "def double(x):\n    return 2 * x\n\n\nif __name__ == '__main__':\n    print(double(2))\n"
    test = "from app import double\n\n\ndef test_double():\n    assert double(2) == 4\n"
    readme = "# app\n\nDoubles.\n\n```bash\npython -m pytest\n```\n"
    replies = [
        call("submit_plan", {"steps": [{"title": "Double", "instruction": "Write app.py with double(x)."}]}),
        call(
            "write_files",
            {"files": [{"path": "app.py", "content": code}, {"path": "tests/test_app.py", "content": test}]},
        ),
        call("step_complete", {"summary": "double written"}),
        call("write_files", {"files": [{"path": "README.md", "content": readme}]}),
        call("step_complete", {"summary": "README written"}),
    ]
    result, script = run_scripted(tmp_path, replies, protocol="tools", readme_step=True)
    assert script.remaining == 0 and result.ok, result.report
    assert [o.title for o in result.outcomes] == ["Double", "README"]
    written = (tmp_path / "ws" / "proj" / "README.md").read_text()
    # as the model wrote it, with the install command it lacked put in from the project's files
    assert written.startswith(readme) and written.endswith(
        '## Install and test\n\n```bash\npython -m pip install -e ".[test]"\n```\n'
    )
    # before the README step, the project was made installable with what its tests need
    pyproject = (tmp_path / "ws" / "proj" / "pyproject.toml").read_text()
    assert 'name = "proj"' in pyproject and 'test = ["pytest"]' in pyproject
    # and the README step was given the project's commands, worked out from its files, not left to the model
    asked = str(script.requests[3])
    assert "- to install: `python -m pip install -e" in asked and ".[test]" in asked
    assert "- to test: `python -m pytest`" in asked and "- to run: `python app.py`" in asked
    assert "- to " not in str(script.requests[1])  # only the README step


def test_a_module_a_package_of_its_name_would_hide_is_written_as_the_packages_init() -> None:
    from l2mac.plan_rules import packages_over_modules

    steps = [
        Instruction(title="Core", instruction="Write links.py with a class Links. Test it in tests/test_links.py."),
        Instruction(title="Store", instruction="Write links/db.py using Links from links.py."),
        Instruction(title="Other", instruction="Write tools.py."),
    ]
    fixed = packages_over_modules(steps)
    assert fixed[0].instruction == "Write links/__init__.py with a class Links. Test it in tests/test_links.py."
    assert fixed[1].instruction == "Write links/db.py using Links from links/__init__.py."
    assert fixed[2] is steps[2] and packages_over_modules(steps[2:]) == steps[2:]


def test_a_step_that_must_leave_tests_and_names_no_test_file_names_one() -> None:
    """Seen on the URL shortener at 0b99821: "Write url_shortener/db.py with a class Database ...", nothing of
    tests; told "no test tests url_shortener/db.py" four times, the model wrote db.py again each time."""
    db = Instruction(title="Storage", instruction="Write links/db.py with a class Database.")
    core = Instruction(title="Core", instruction="Write links/__init__.py with a class Links.")
    named = Instruction(title="App", instruction="Write links/app.py. Test it in tests/test_web.py.")
    docs = Instruction(title="Docs", instruction="Write README.md.", requires_tests=False)
    program, _ = plan_with([call("submit_plan", {"steps": [s.model_dump() for s in (db, core, named, docs)]})])
    instructions = [s.instruction for s in program.steps]
    assert instructions[0].endswith("\nWrite tests/test_db.py with pytest tests of links/db.py.")
    assert instructions[1].endswith("\nWrite tests/test_links.py with pytest tests of links/__init__.py.")
    assert instructions[2:] == [named.instruction, docs.instruction]


def test_a_file_alone_in_a_folder_the_plan_has_nothing_else_in_is_the_planned_file_of_its_name() -> None:
    """Seen on the notes API at f6fd78c: a plan writing notes/store.py said "Use bookmarks/store.py for note
    storage", the worked example's folder left over."""
    store = Instruction(title="Storage", instruction="Write notes/store.py with add_note(path, title).")
    app = Instruction(
        title="Web API",
        instruction="Write notes/app.py with create_app(db_path). Use bookmarks/store.py for note storage. "
        "Write tests/test_app.py.",
    )
    cli = Instruction(title="CLI", instruction="Write tools/report.py with main(). Write tests/test_report.py.")
    program, _ = plan_with([call("submit_plan", {"steps": [s.model_dump() for s in (store, app, cli)]})])
    instructions = [s.instruction for s in program.steps]
    assert "Use notes/store.py for note storage." in instructions[1]
    assert "bookmarks" not in " ".join(instructions)
    assert instructions[2].startswith("Write tools/report.py with main().")  # alone, but no other report.py
    nested = [
        Instruction(title="Core", instruction="Write pkg/__init__.py and pkg/core.py. Write tests/test_core.py."),
        Instruction(title="Plugins", instruction="Write pkg/plugins/__init__.py and tests/e2e/conftest.py."),
        Instruction(title="Docs", instruction="Write docs/README.md and README.md.", requires_tests=False),
    ]
    program, _ = plan_with([call("submit_plan", {"steps": [s.model_dump() for s in nested]})])
    assert "pkg/plugins/__init__.py and tests/e2e/conftest.py" in program.steps[1].instruction  # under its own
    assert "docs/README.md and README.md" in program.steps[2].instruction  # never a file at the root


def test_a_changes_plan_drops_steps_that_make_as_new_a_file_the_repository_has() -> None:
    """Seen on python-slugify: one step per file of the map, each "Create a new file named `special.py` in the
    `slugify` directory"; written as new, each would replace the repository's file."""
    from l2mac.plan_rules import not_recreating

    def step(title: str, instruction: str) -> Instruction:
        return Instruction(title=title, instruction=instruction)

    existing = ["slugify/__init__.py", "slugify/special.py", "tests/test_legacy.py", "README.md"]
    steps = [
        step("Add slugify_filename", "Create a new file named `slugify_filename.py` in the `slugify` directory."),
        step("Add it to special.py", "Create a new file named `special.py` in the `slugify` directory, and add:"),
        step("Tests", "Create a new file tests/test_legacy.py with tests of slugify_filename."),
        step("Export it", "Add slugify_filename to slugify/__init__.py's imports."),  # a change, not a new file
    ]
    assert [s.title for s in not_recreating(steps, existing)] == ["Add slugify_filename", "Export it"]
    only = [steps[1]]
    assert not_recreating(only, existing) == only  # all the planner gave: kept
    new = [  # a folder's own package marker or conftest, a file in a new package, a file the step says not to make
        step("Fixtures", "Create a new file named `conftest.py` in the `tests` directory."),
        step("Package", "Create a new file `__init__.py` to make slugify/ext a package."),
        step("Module", "Create a new file named special.py in the new `slugify/ext` package."),
        step("Not new", "Do not create a new file named special.py; add it to slugify/special.py."),
    ]
    assert not_recreating(new, [*existing, "conftest.py"]) == new
