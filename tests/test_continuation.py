"""A stub is completed by continuation: the answer is begun inside the function, after its docstring, so a model
that would send the stub back can only write its body (control/continuation.py)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import jinja2
from pydantic_ai.messages import ModelMessage, ModelRequest, ModelResponse, TextPart, UserPromptPart

from l2mac.checks.contract import given_skeleton
from l2mac.checks.runner import SubprocessRunner
from l2mac.context import ContextBudget
from l2mac.control import ControlUnit, Step, StepLimits
from l2mac.control.continuation import find_opening
from l2mac.control.text import TEXT
from l2mac.domains import load_domain
from l2mac.models.client import ModelClient
from l2mac.models.local.llama import LocalChat
from l2mac.models.scripted import Reply, ScriptedModel, last_user_text, text
from l2mac.record import RunRecord
from l2mac.store import FileStore
from l2mac.tools import Toolbox, ToolEnv, tools_named
from l2mac.types import Instruction, StepOutcome, StepStatus

STUB = '''from typing import List


def spread(numbers: List[float]) -> float:
    """The largest number minus the smallest.
    >>> spread([1.0, 4.0, 2.5])
    3.0
    """
'''
TASK = Instruction(
    title="spread",
    instruction=f"Implement the function below in solution.py: keep its name, signature and docstring.\n\n"
    f"```python\n{STUB}```",
    requires_tests=False,
)


def test_the_opening_of_a_top_level_stub_keeps_the_rest_of_the_file_and_adds_new_helpers() -> None:
    source = STUB + "\n\ndef other() -> int:\n    return 1\n"
    opening = find_opening("solution.py", source, ["spread"])
    assert opening is not None
    assert opening.prefill().startswith("solution.py\n```python\nfrom typing import List")
    assert opening.prefill().rstrip().endswith('3.0\n    """')
    done = opening.complete(
        "    return _top(numbers) - min(numbers)\n\n\ndef _top(xs):\n    return max(xs)\n\nimport math\n```\nSTEP"
    )
    assert done is not None
    namespace: dict[str, object] = {}
    exec(compile(done, "solution.py", "exec"), namespace)
    assert namespace["spread"]([1.0, 4.0, 2.5]) == 3.0  # type: ignore[operator]
    assert namespace["other"]() == 1  # type: ignore[operator]  # the rest of the file is kept
    assert done.startswith("import math\n")  # a new import goes to the top
    assert done.count("def spread") == 1


def test_an_empty_helper_nothing_calls_written_after_a_body_is_left_out() -> None:
    opening = find_opening("solution.py", STUB, ["spread"])
    assert opening is not None
    after = (
        "    return _top(numbers) - min(numbers)\n\n\ndef _top(xs):\n    pass\n\n\n"
        'def parse_args():\n    """Parse the arguments."""\n    pass\n\n\ndef main():\n    print(spread([1.0]))\n```\n'
    )
    done = opening.complete(after)
    assert done is not None and "def parse_args" not in done  # nothing calls it, and it does nothing
    registered = after.replace("def parse_args():", "@click.group()\ndef cli():").replace(
        "```", "signal(1, on_exit)\n\n\ndef on_exit():\n    pass\n```"
    )
    kept = opening.complete(registered)
    assert kept is not None and "def cli" in kept and "def on_exit" in kept  # a decorated one; one passed as a handler
    assert "def _top" in done and "def main" in done  # called (still to be written), or with a body


def test_tests_written_after_a_body_stay_out_of_a_code_file_but_not_out_of_a_test_file() -> None:
    after = (
        "    return max(numbers) - min(numbers)\n\n\nimport pytest\n\n\ndef _top(xs):\n    return max(xs)\n\n\n"
        "@pytest.fixture\ndef numbers():\n    return [1.0]\n\n\ndef test_spread():\n    assert spread([1.0]) == 0\n\n\n"
        "class TestSpread:\n    def test_two(self):\n        assert spread([1.0, 2.0]) == 1.0\n```\n"
    )
    opening = find_opening("solution.py", STUB, ["spread"])
    assert opening is not None
    done = opening.complete(after)
    assert done is not None and "def _top" in done  # a helper is kept
    named_like_tests = "    return 1\n\n\ndef testing_mode():\n    return 0\n\n\nclass TestResult:\n    ok = True\n"
    kept_code = opening.complete(named_like_tests + "```\n")
    assert kept_code is not None and "def testing_mode" in kept_code and "class TestResult" in kept_code
    assert "pytest" not in done and "test_" not in done and "TestSpread" not in done
    in_tests = find_opening("tests/test_solution.py", STUB, ["spread"])
    assert in_tests is not None
    kept = in_tests.complete(after)
    assert kept is not None and "import pytest" in kept and "def test_spread" in kept


def test_a_method_stub_is_completed_in_its_class_and_a_later_stub_is_left_for_its_own_turn() -> None:
    source = (
        "class Counter:\n"
        '    """Counts."""\n\n'
        "    def __init__(self):\n        self.n = 0\n\n"
        "    def add(self, k):\n"
        '        """Add k and return the new count."""\n'
        "        pass\n\n"
        "    def reset(self):\n"
        '        """Back to zero."""\n'
    )
    opening = find_opening("counter.py", source, ["Counter"])
    assert opening is not None and opening.name == "add"
    done = opening.complete("        self.n += k\n        return self.n\n```")
    assert done is not None
    namespace: dict[str, object] = {}
    exec(compile(done, "counter.py", "exec"), namespace)
    counter = namespace["Counter"]()  # type: ignore[operator]
    assert counter.add(2) == 2 and counter.add(3) == 5
    assert '"""Back to zero."""' in done  # reset is still a stub, for its own turn
    assert find_opening("counter.py", done, ["Counter"]).name == "reset"  # type: ignore[union-attr]


def test_interfaces_and_abstract_methods_are_not_stubs_to_complete_and_an_empty_body_is_none() -> None:
    source = (
        "from typing import Protocol\nfrom abc import abstractmethod\n\n"
        "class Store(Protocol):\n    def get(self, k: str) -> str:\n        ...\n\n"
        "class Base:\n    @abstractmethod\n    def run(self) -> None:\n        ...\n"
    )
    assert find_opening("s.py", source, ["Store", "get", "Base", "run"]) is None
    opening = find_opening("solution.py", STUB, ["spread"])
    assert opening is not None and opening.complete("```\n") is None
    stripped = opening.complete("if not numbers:\n        return 0.0\n    return max(numbers) - min(numbers)\n```")
    assert stripped is not None and "\n    if not numbers:\n        return 0.0\n" in stripped  # indentation put back


def test_a_constructor_that_takes_nothing_and_says_nothing_is_complete_and_its_empty_copy_never_replaces_a_body() -> (
    None
):
    # Seen on ClassEval_24 at 42ff847: asked for the body of `def __init__(self): pass`, the model answered `pass`
    # each time, and the step failed on "never defined __init__" with the class right.
    from l2mac.checks.demands import missing_definitions
    from l2mac.checks.repairs import merge_definitions

    empty = "class Calc:\n    def __init__(self):\n        pass\n\n    def add(self, a, b):\n        pass\n"
    opening = find_opening("calc.py", empty, ["Calc", "__init__", "add"])
    assert opening is not None and opening.name == "add"  # the constructor is not asked for
    step = "Implement Calc in calc.py: __init__() and add(a, b)."
    written = empty.replace("b):\n        pass\n", "b):\n        return a + b\n")
    assert "__init__(self):\n        pass" in written and missing_definitions(step, {"calc.py": written}) == []
    for said in ("    def __init__(self, size):\n        pass\n", '    def __init__(self):\n        """Set up."""\n'):
        opening = find_opening("calc.py", empty.replace("    def __init__(self):\n        pass\n", said), ["Calc"])
        assert opening is not None and opening.name == "__init__"  # it takes or says something: a stub
    bodied = "class Calc:\n    def __init__(self):\n        self.total = 0\n"
    assert merge_definitions(bodied, "class Calc:\n    def __init__(self):\n        pass\n") is None


def test_the_skeleton_a_step_gives_is_its_python_block_that_defines_a_stub_of_the_file() -> None:
    assert given_skeleton(TASK.instruction, ["spread"]) == STUB
    assert given_skeleton("Use it like this:\n```python\nprint(spread([1]))\n```", ["spread"]) is None


#: the same function, with tests asked for
TESTED = Instruction(
    title="spread",
    instruction=f"Implement the function below in solution.py. Test it in tests/test_solution.py.\n\n"
    f"```python\n{STUB}```",
    requires_tests=True,
)


def test_a_local_model_continues_an_answer_begun_for_it() -> None:
    chat = LocalChat.__new__(LocalChat)
    chat.template = jinja2.Template(
        "{% for m in messages %}<{{ m.role }}>{{ m.content }}</{{ m.role }}>{% endfor %}"
        "{% if add_generation_prompt %}<assistant>{% endif %}"
    )
    begun: list[ModelMessage] = [
        ModelRequest(parts=[UserPromptPart("write it")]),
        ModelResponse(parts=[TextPart("f.py\n```python\ndef f():\n")]),
    ]
    assert chat.render(begun, []) == "<user>write it</user><assistant>f.py\n```python\ndef f():\n"
    assert chat.render(begun[:1], []) == "<user>write it</user><assistant>"


def _unit(
    tmp_path: Path, replies: list[Reply], *, continues: bool, samples: int = 0
) -> tuple[ControlUnit, ScriptedModel, FileStore]:
    script = ScriptedModel(list(replies))
    store = FileStore(tmp_path / "proj")
    domain = load_domain("codebase")
    env = ToolEnv(store=store, runner=SubprocessRunner(), max_output_chars=4000)
    unit = ControlUnit(
        ModelClient(script.model, continues=continues),
        Toolbox(tools_named(domain.tools), env),
        domain,
        ContextBudget(window=16000, reply=500, margin=0.1),
        protocol=TEXT,
        limits=StepLimits(max_turns=6, samples=samples),
        record=RunRecord(store.root),
    )
    return unit, script, store


def _run(unit: ControlUnit) -> StepOutcome:
    return asyncio.run(unit.run_step(Step("spread", 1, 1, TASK, "")))


def test_a_step_given_a_stub_gets_its_body_by_continuation_where_the_model_echoed_the_stub(tmp_path: Path) -> None:
    def body_after_the_docstring(messages: list[ModelMessage]) -> ModelResponse:
        begun = messages[-1]
        assert isinstance(begun, ModelResponse)  # the answer is begun for the model ...
        assert begun.text is not None and begun.text.startswith("solution.py\n```python\nfrom typing import List")
        assert begun.text.rstrip().endswith('"""')  # ... inside the function, right after its docstring
        return text("    return max(numbers) - min(numbers)\n```\n")

    unit, script, store = _unit(tmp_path, [body_after_the_docstring, text("STEP COMPLETE")], continues=True)
    outcome = _run(unit)
    assert outcome.status is StepStatus.PASSED, outcome.reason
    code = store.read_text("solution.py")
    assert "return max(numbers) - min(numbers)" in code and code.count('"""') == 2
    assert len(script.requests) == 2


def test_a_body_that_ended_before_the_length_limit_is_whole_though_the_answer_was_cut(tmp_path: Path) -> None:
    # Seen on HumanEval/1: a correct body, then "# tests/test_solution.py" and copies of the function until the
    # length limit. Read as a cut-off file, the completed file kept no definition and was dropped, and the model,
    # told it was incomplete, rewrote it wrong.
    looping = "    return max(numbers) - min(numbers)\n\n# tests/test_solution.py\n" + (
        "def spread(numbers):\n    return max(numbers) - min(numbers)\n\n" * 3
    )
    cut = ModelResponse(parts=[TextPart(looping + "def spread(num")], finish_reason="length")
    unit, script, store = _unit(tmp_path, [lambda messages: cut, text("STEP COMPLETE")], continues=True)
    outcome = _run(unit)
    assert outcome.status is StepStatus.PASSED, outcome.reason
    code = store.read_text("solution.py")
    assert "return max(numbers) - min(numbers)" in code and code.count("def spread") == 1
    assert "cut off" not in str(script.requests[-1][-1])  # the model is not told its file was cut
    assert len(script.requests) == 2


def test_without_continuation_the_same_echoing_model_never_gets_past_the_stub(tmp_path: Path) -> None:
    echo = text(f"solution.py\n```python\n{STUB}```\n")
    unit, script, store = _unit(tmp_path, [echo] * 6, continues=False)
    outcome = _run(unit)
    assert outcome.status is StepStatus.FAILED
    assert all(not isinstance(r[-1], ModelResponse) for r in script.requests)  # nothing was begun for it
    assert "return" not in store.read_text("solution.py")


def test_agreement_samples_of_a_given_stub_are_begun_inside_it_too(tmp_path: Path) -> None:
    unit, _, _ = _unit(tmp_path, [], continues=True)
    step = Step("spread", 1, 1, TASK, "")
    none: frozenset[str] = frozenset()
    messages, finish, _ = unit._ask_sample(step, unit._setting(step), none, "solution.py", "Write it.", lambda p: False)
    assert isinstance(messages[-1], ModelResponse) and finish is not None
    request = messages[0].parts[-1].content  # type: ignore[union-attr]
    assert "Complete spread in solution.py" in str(request)  # asked for the body it is begun inside
    assert "return max(numbers) - min(numbers)" in (finish("    return max(numbers) - min(numbers)\n```") or "")
    plain, _, _ = _unit(tmp_path / "plain", [], continues=False)
    messages, finish, _ = plain._ask_sample(
        step, plain._setting(step), none, "solution.py", "Write it.", lambda p: False
    )
    assert finish is None and not isinstance(messages[-1], ModelResponse)


def test_agreement_samples_of_a_function_added_to_an_existing_module_are_its_bodies_in_the_module(
    tmp_path: Path,
) -> None:
    """Seen on a change to python-slugify: samples of slugify/slugify.py written from nothing were imports."""
    unit, _, store = _unit(tmp_path, [], continues=True)
    module = 'def shout(name):\n    return name.upper()\n\n\ndef unique(name, taken):\n    """A free name."""\n'
    store.write_text("names.py", module + "    return name\n")
    step = Step("t", 1, 1, Instruction(title="u", instruction="Add a function unique(name, taken) to names.py."), "")
    setting = unit._setting(step)
    messages, finish, _ = unit._ask_sample(step, setting, frozenset({"names.py"}), "names.py", "Write it.", bool)
    begun = messages[-1]
    assert isinstance(begun, ModelResponse) and begun.text is not None and begun.text.endswith('"""A free name."""\n')
    assert "return name\n" not in begun.text and finish is not None  # the body left out, to be written again
    assert finish("    return name + '-2'\n```") == module + "    return name + '-2'\n"
    # nor is agreement's one answer written whole asked of it: written from nothing, it would be those imports
    whole = unit._ask_sample(step, setting, frozenset({"names.py"}), "names.py", "Write it.", bool, (), False)
    assert whole.messages == []
    # a module the step itself wrote is sampled whole, as before
    messages, finish, _ = unit._ask_sample(step, setting, frozenset(), "names.py", "Write it.", bool)
    assert finish is None and not isinstance(messages[-1], ModelResponse)


def test_an_answer_that_goes_on_to_the_next_stubs_completes_them_too_and_keeps_the_rest() -> None:
    source = (
        "class Shelf:\n"
        "    def __init__(self):\n        self.books = []\n\n"
        "    def add(self, title):\n"
        '        """Add a title."""\n\n'
        "    def count(self):\n"
        '        """How many titles."""\n\n'
        "    def first(self):\n"
        "        return self.books[0]\n"
    )
    opening = find_opening("shelf.py", source, ["Shelf"])
    assert opening is not None and opening.name == "add" and opening.owner == "Shelf"
    done = opening.complete(
        "        self.books.append(self._clean(title))\n\n"
        "    def _clean(self, title):\n        return title.strip()\n\n"
        "    def count(self):\n"
        '        """How many titles."""\n        return len(self.books)\n\n'
        "    def first(self):\n        return None\n```\nmore prose"
    )
    assert done is not None
    namespace: dict[str, object] = {}
    exec(compile(done, "shelf.py", "exec"), namespace)
    shelf = namespace["Shelf"]()  # type: ignore[operator]
    shelf.add(" Dune ")
    assert shelf.count() == 1  # the later stub, completed in the same answer
    assert shelf.first() == "Dune"  # a method that was not a stub is kept as the file had it
    assert find_opening("shelf.py", done, ["Shelf"]) is None


def test_what_is_written_after_a_method_or_function_lands_where_it_belongs_or_not_at_all() -> None:
    method = 'from __future__ import annotations\n\n\nclass C:\n    def f(self):\n        """Doc."""\n'
    opening = find_opening("c.py", method, ["C"])
    assert opening is not None
    done = opening.complete(
        "        return helper(re.escape('x'))\n\n\nimport re\n\n\ndef helper(x):\n    return x\n```"
    )
    assert done is not None and done.startswith("from __future__ import annotations\nimport re\n")
    namespace: dict[str, object] = {}
    exec(compile(done, "c.py", "exec"), namespace)
    assert namespace["C"]().f() == "x"  # type: ignore[operator]  # the module-level helper was kept
    function = find_opening("f.py", "import requests\n\n\ndef f(x):\n    '''Doc.'''\n", ["f"])
    assert function is not None
    done = function.complete("    return re.sub('a', 'b', x)\n\nimport re\n```")
    assert done is not None and done.startswith("import re\nimport requests\n")  # not taken for requests
    # a body that would not parse is no completion: the answer is then read as any other
    assert function.complete('    text = """\nleft margin\n"""\n    return text\n```') is None


def test_a_summary_asked_while_an_answer_is_begun_is_asked_after_the_request_it_answers(tmp_path: Path) -> None:
    unit, script, _ = _unit(tmp_path, [text("progress so far")], continues=True)
    begun: list[ModelMessage] = [
        ModelRequest(parts=[UserPromptPart("the step")]),
        ModelResponse(parts=[TextPart("f.py\n```python\ndef f():\n")]),
    ]
    assert asyncio.run(unit._plain_answer(begun, "summarise", "t")) == "progress so far"
    sent = script.requests[0]
    assert isinstance(sent[-1], ModelRequest) and len(sent) == 2  # the step, then the question


def test_a_failing_function_is_rewritten_by_continuation_inside_it(tmp_path: Path) -> None:
    """Asked to fix a failing test, the 1.5B model sent whole files back unchanged in 43% of DevBench turns. When
    the failure points at one function of the step's code, the answer is begun inside it, its old body left
    out, so what the model writes is a new body."""
    task = TESTED
    test = "from solution import spread\n\n\ndef test_spread():\n    assert spread([1.0, 4.0, 2.5]) == 3.0\n"

    def fixed_body(messages: list[ModelMessage]) -> ModelResponse:
        begun = messages[-1]
        assert isinstance(begun, ModelResponse) and begun.text is not None
        assert begun.text.rstrip().endswith('"""') and "max(numbers) + min" not in begun.text  # old body left out
        assert "The failure points at spread in solution.py" in str(messages[0])
        return text("    return max(numbers) - min(numbers)\n```\n")

    replies = [
        text("    return max(numbers) + min(numbers)\n```\n"),  # the stub's body, wrong
        text(f"tests/test_solution.py\n```python\n{test}```\n"),
        fixed_body,
        text("STEP COMPLETE"),
    ]
    unit, _, store = _unit(tmp_path, replies, continues=True)
    outcome = asyncio.run(unit.run_step(Step("spread", 1, 1, task, "")))
    assert outcome.status is StepStatus.PASSED, outcome.reason
    code = store.read_text("solution.py")
    assert "return max(numbers) - min(numbers)" in code and "+ min" not in code and code.count("def spread") == 1


def test_a_rewrite_of_a_function_failing_the_tasks_examples_is_sampled_again_until_one_makes_them_pass(
    tmp_path: Path,
) -> None:
    """Seen on ClassEval_1 at 5d50fc8: shown Expected 50.27, Got 100.53, the 1.5B model wrote the same wrong
    formula twice. The examples are the task's own: an answer rewriting a function that fails them is held to
    them, and up to StepLimits.resamples more answers are sampled, more freely, until one holds."""
    test = "from solution import spread\n\n\ndef test_spread():\n    assert spread([1.0, 4.0, 2.5]) == 3.0\n"

    def rewrite(body: str) -> Reply:
        def answer(messages: list[ModelMessage]) -> ModelResponse:
            begun = messages[-1]
            assert isinstance(begun, ModelResponse) and begun.text is not None and begun.text.endswith('"""\n')
            return text(f"    return {body}\n```\n")

        return answer

    replies = [
        text("    return max(numbers) + min(numbers)\n```\n"),  # the stub's body: the example fails
        text(f"tests/test_solution.py\n```python\n{test}```\n"),
        rewrite("max(numbers) * 2"),  # begun inside spread: still wrong
        rewrite("min(numbers)"),  # sampled again: wrong
        rewrite("max(numbers) - min(numbers)"),  # sampled again: the example passes, so this one is read
        text("STEP COMPLETE"),
    ]
    unit, script, store = _unit(tmp_path, replies, continues=True)
    outcome = asyncio.run(unit.run_step(Step("spread", 1, 1, TESTED, "")))
    assert outcome.status is StepStatus.PASSED, outcome.reason
    assert "return max(numbers) - min(numbers)" in store.read_text("solution.py")
    assert _verified(store) == [False, False, True]
    assert len(script.requests) == 6  # the two answers sampled again are no turns of their own


def test_a_function_rewritten_as_an_answer_already_found_failing_is_not_sampled_again_and_again(
    tmp_path: Path,
) -> None:
    """Seen on ClassEval at 9e7c0bc: 17 of 44 failing resamples were an answer already found failing, as the 1.5B
    model, sampled more freely, sends the same body back (ClassEval_1: eight calls, all the cylinder's side area).
    Such an answer is not tried again, and after two of them the round asks for no more."""
    test = "from solution import spread\n\n\ndef test_spread():\n    assert spread([1.0, 4.0, 2.5]) == 3.0\n"

    def rewrite(body: str) -> Reply:
        return lambda messages: text(f"    return {body}\n```\n")

    replies = [
        text("    return max(numbers) + min(numbers)\n```\n"),
        text(f"tests/test_solution.py\n```python\n{test}```\n"),
        *[rewrite("max(numbers) * 2")] * 3,  # found failing, then twice more the same: the round ends
        rewrite("max(numbers) - min(numbers)"),  # the next turn
        text("STEP COMPLETE"),
    ]
    unit, script, store = _unit(tmp_path, replies, continues=True)
    outcome = asyncio.run(unit.run_step(Step("spread", 1, 1, TESTED, "")))
    assert outcome.status is StepStatus.PASSED, outcome.reason
    assert _verified(store) == [False, False, False, True]
    log = [json.loads(line) for line in (store.root / ".l2mac" / "log.jsonl").read_text().splitlines()]
    assert [e.get("known", False) for e in log if e["kind"] == "answer_verified"] == [False, True, True, False]
    assert len(script.requests) == 7


def _verified(store: FileStore) -> list[bool]:
    """Whether each answer held to a check held it, as the run's log says."""
    log = [json.loads(line) for line in (store.root / ".l2mac" / "log.jsonl").read_text().splitlines()]
    return [e["holds"] for e in log if e["kind"] == "answer_verified"]


def test_a_rewrite_of_a_function_with_a_code_problem_is_sampled_again_until_the_problem_is_gone(tmp_path: Path) -> None:
    """Seen on ClassEval_8 at 5e787ae: told of a code problem inside a function, the model sent the same body
    twice. A rewrite is held to the code problem it was asked for being gone."""
    stub = 'def total(numbers):\n    """Add the numbers up, return the total."""\n'
    step = f"Implement total in solution.py.\n\n```python\n{stub}```"
    task = Instruction(title="total", instruction=step, requires_tests=False)
    replies = [
        text("    return sum(numbrs)\n```\n"),  # an undefined name: a code problem inside total
        text("    return sum(numbrs)\n```\n"),  # begun inside total again: the same
        text("    return sum(numbers)\n```\n"),  # sampled again: the problem is gone, so this one is read
        text("STEP COMPLETE"),
    ]
    unit, _, store = _unit(tmp_path, replies, continues=True)
    outcome = asyncio.run(unit.run_step(Step("total", 1, 1, task, "")))
    assert outcome.status is StepStatus.PASSED, outcome.reason
    assert "    return sum(numbers)\n" in store.read_text("solution.py")
    assert _verified(store) == [False, True]


def test_a_function_that_returns_nothing_its_docstring_says_it_returns_is_asked_only_for_its_return(
    tmp_path: Path,
) -> None:
    """Seen on ClassEval_8 at 6b6580a: told deposit() returns nothing though its docstring says it returns the
    balance, the 1.5B model sent the same body without a return six times. Its body is kept and the answer is
    begun after it, at a ``return``: what the model writes is the value."""
    stub = 'class Account:\n    def deposit(self, amount):\n        """Add amount, return the new balance."""\n'
    step = f"Implement Account in solution.py.\n\n```python\n{stub}```"
    task = Instruction(title="deposit", instruction=step, requires_tests=False)
    body = "        if amount < 0:\n            raise ValueError(amount)\n        self.balance = amount"

    def the_value(messages: list[ModelMessage]) -> ModelResponse:
        begun = messages[-1]
        assert isinstance(begun, ModelResponse) and begun.text is not None
        assert begun.text.endswith(f"{body}\n        return"), begun.text  # the body kept, the slot begun
        assert "This answer ends deposit" in str(messages[0])
        return text(" self.balance\n```\n")

    replies = [text(f"{body.lstrip()}\n```\n"), the_value, text("STEP COMPLETE")]
    unit, _, store = _unit(tmp_path, replies, continues=True)
    outcome = asyncio.run(unit.run_step(Step("deposit", 1, 1, task, "")))
    assert outcome.status is StepStatus.PASSED, outcome.reason
    assert store.read_text("solution.py").endswith(f"{body}\n        return self.balance\n")
    assert _verified(store) == [True]


def test_an_answer_fixing_a_failure_no_function_is_pointed_at_is_begun_at_the_file_the_report_names(
    tmp_path: Path,
) -> None:
    """Seen on ClassEval_0 at 5d50fc8: four answers to a failed check, 730 to 1,080 tokens each, were prose about
    the code or a made-up test run. Where no function is pointed at, the answer is begun at the start of the
    file the report names first, so the model writes that file."""
    broken = "from solution import spread, spread_all\n\n\ndef test_spread():\n    assert spread([1.0, 3.0]) == 2.0\n"

    def begun_at_the_test_file(messages: list[ModelMessage]) -> ModelResponse:
        begun = _begun(messages)
        assert begun == "tests/test_solution.py\n```python\nfrom solution import spread\n\n\ndef test_spread", begun
        assert "Your answer below is begun with the path tests/test_solution.py" in str(messages[0])
        return text("():\n    assert spread([1.0, 3.0]) == 2.0")

    replies = [
        text("    return max(numbers) - min(numbers)\n```\n"),
        text(f"tests/test_solution.py\n```python\n{broken}```\n"),  # imports what does not exist
        begun_at_the_test_file,
        text("STEP COMPLETE"),
    ]
    unit, _, store = _unit(tmp_path, replies, continues=True)
    outcome = asyncio.run(unit.run_step(Step("spread", 1, 1, TESTED, "")))
    assert outcome.status is StepStatus.PASSED, outcome.reason
    assert "spread_all" not in store.read_text("tests/test_solution.py")


def test_the_function_a_failure_points_at() -> None:
    from l2mac.checks.demands import failing_function

    code = "class Shape:\n    def area(self):\n        return 1 / 0\n\n\ndef grow(s, k):\n    return s\n"
    tests = "from shapes import Shape, grow\n\n\ndef test_area():\n    assert Shape().area() == 1\n"
    sources = {"shapes.py": code, "tests/test_shapes.py": tests}
    raised = (
        "____ test_area ____\ntests/test_shapes.py:5: in test_area\n    ...\nshapes.py:3: in area\nE ZeroDivisionError"
    )
    assert failing_function(raised, sources, ["shapes.py"]) == ("shapes.py", "area", "Shape")
    wrong = "____ test_area ____\n>       assert Shape().area() == 1\ntests/test_shapes.py:5: AssertionError"
    assert failing_function(wrong, sources, ["shapes.py"]) == ("shapes.py", "area", "Shape")
    lint = "Code problems:\nshapes.py:7: lint: F821 Undefined name `k2`\nshapes.py:3: lint: E999 x"
    assert failing_function(lint, sources, ["shapes.py"]) == ("shapes.py", "grow", None)  # the first problem
    # the task's own failing examples name whose they are: before the tests' traceback, after code problems
    assert failing_function("Tests: 1 failed\n" + raised, sources, ["shapes.py"], ["grow"]) == (
        "shapes.py",
        "grow",
        None,
    )
    assert failing_function(wrong, sources, ["shapes.py"], ["Shape.area"]) == ("shapes.py", "area", "Shape")
    assert failing_function(lint, sources, ["shapes.py"], ["Shape.area"]) == ("shapes.py", "grow", None)
    assert failing_function("Examples fail", sources, ["shapes.py"], ["Shape", "nowhere"]) is None
    assert failing_function(wrong, sources, ["other.py"]) is None  # not the step's code
    # a problem of the test file (it defines the function itself) is not a failure of the code it names
    own_copy = "Code problems:\ntests/test_shapes.py:5: test: defines 'grow' itself, but shapes.py defines it"
    copying = {**sources, "tests/test_shapes.py": tests.replace("    assert Shape().area() == 1", "    grow(1, 2)")}
    assert failing_function(own_copy, copying, ["shapes.py"]) is None


def test_a_rewrite_is_not_begun_for_a_call_that_does_not_fit_the_signature_nor_over_and_over(tmp_path: Path) -> None:
    """A new body cannot fix a call with arguments the signature does not take; and the same function is begun
    inside at most twice in a row, then the whole files are asked for (the test may be what is wrong). An answer
    that is no body (the function sent whole) is dropped, not read as the whole file."""
    from l2mac.checks.verdict import Verdict
    from l2mac.control.text import TextConversation

    task = Instruction(
        title="spread",
        instruction=f"Implement the function below in solution.py. Test it in tests/test_solution.py.\n\n"
        f"```python\n{STUB}```\n\nAlso write helper() in solution.py.",
        requires_tests=True,
    )
    wrong_test = "from solution import spread\n\n\ndef test_spread():\n    assert spread([1.0, 4.0, 2.5]) == 4.0\n"
    begun: list[bool] = []
    inside: list[bool] = []

    def answer(reply: str) -> Reply:
        def respond(messages: list[ModelMessage]) -> ModelResponse:
            begun.append(isinstance(messages[-1], ModelResponse))
            inside.append("def spread" in (_begun(messages) or ""))
            return text(reply)

        return respond

    replies = [
        text("    return max(numbers) - min(numbers)\n\n\ndef helper():\n    return 1\n```\n"),
        answer(f"tests/test_solution.py\n```python\n{wrong_test}```\n"),
        answer("def spread(numbers):\n    return 3.0\n```\n"),  # begun inside spread, sent whole: dropped
        answer("    return max(numbers) - min(numbers)\n```\n"),  # begun again: the same body
        *[answer("STEP COMPLETE")] * 5,  # not begun inside spread: twice in a row is enough
    ]
    unit, _, store = _unit(tmp_path, replies, continues=True)
    step = Step("spread", 1, 1, task, "")
    asyncio.run(unit.run_step(step))
    assert begun[:4] == [True, True, True, True]  # the test file begun at its start, spread inside it twice,
    assert inside[:4] == [False, True, True, False]  # then the file the failure names, at its start
    assert "def helper" in store.read_text("solution.py")  # the dropped answer did not cut the file short
    conversation = TextConversation(step, unit._setting(step))
    report = "____ test_spread ____\nE   TypeError: spread() takes 1 positional argument but 2 were given"
    assert conversation.asks.failing_function(Verdict(False, report), conversation.written) is None
    # the task's own examples failing in spread: a test's call that does not fit is the test's, not a reason to
    # leave spread unfixed (seen on ClassEval: a test built the class wrongly, and the three methods the
    # examples showed wrong were never rewritten)
    opening = conversation.asks.failing_function(Verdict(False, report, examples_failed=("spread",)), set())
    assert opening is not None and opening.name == "spread"
    # once the tests are doubted, a failing test points at nothing, but a code problem still points at its
    # function (seen on ClassEval_2 at 176fb78: "returns nothing" four checks in a row, the tests rewritten)
    failing = "____ test_spread ____\n>       assert spread([1.0]) == 0\nsolution.py:12: in spread\nE   assert 1 == 0"
    doubted = Verdict(False, f"Tests: 0 passed, 1 failed\n{failing}", tests_doubted=True)
    assert conversation.asks.failing_function(doubted, set()) is None
    at = next(i for i, x in enumerate(store.read_text("solution.py").splitlines(), 1) if "return max" in x)
    problem = f"Code problems:\nsolution.py:{at}: lint: F821 Undefined name `numbrs`\n\n"
    opening = conversation.asks.failing_function(
        Verdict(False, f"{problem}Tests: 0 passed, 1 failed\n{failing}"), set()
    )
    assert opening is not None and opening.name == "spread"


def test_a_failing_function_in_code_the_step_wrote_unnamed_is_rewritten_inside_it(tmp_path: Path) -> None:
    """A step that names only its test file (a small planner's wording) still has its own code: the file the
    model wrote it in. Seen on the inflection trial: the function went unfixed for three turns."""
    task = Instruction(title="spread", instruction="Make spread(numbers) work; test it in tests/test_solution.py.")
    code = "def spread(numbers):\n    return max(numbers) + min(numbers)\n"
    test = "from solution import spread\n\n\ndef test_spread():\n    assert spread([1.0, 4.0, 2.5]) == 3.0\n"

    def fixed_body(messages: list[ModelMessage]) -> ModelResponse:
        begun = messages[-1]
        assert isinstance(begun, ModelResponse) and begun.text is not None
        assert begun.text.rstrip().endswith("def spread(numbers):")
        return text("    return max(numbers) - min(numbers)\n```\n")

    replies = [
        text(f"solution.py\n```python\n{code}```\n\ntests/test_solution.py\n```python\n{test}```\n"),
        fixed_body,
        text("STEP COMPLETE"),
    ]
    unit, _, store = _unit(tmp_path, replies, continues=True)
    outcome = asyncio.run(unit.run_step(Step("spread", 1, 1, task, "")))
    assert outcome.status is StepStatus.PASSED, outcome.reason
    assert store.read_text("solution.py") == code.replace("+ min", "- min")


def test_a_rewrite_of_a_failing_function_is_not_shown_the_body_the_step_gave_it(tmp_path: Path) -> None:
    """Seen on a repository: the 1.5B planner wrote a wrong body into the step; every rewrite begun inside
    the function copied it back from the step. Rewriting it, the step is shown without that body."""
    given = "def spread(numbers):\n    return max(numbers) + min(numbers)\n"
    task = Instruction(
        title="spread",
        instruction=f"Write solution.py with this, tested in tests/test_solution.py:\n\n```python\n{given}```",
        requires_tests=True,
    )
    test = "from solution import spread\n\n\ndef test_spread():\n    assert spread([1.0, 4.0, 2.5]) == 3.0\n"

    def fixed_body(messages: list[ModelMessage]) -> ModelResponse:
        shown = str(messages[0])
        assert "max(numbers) + min(numbers)" not in shown and "def spread(numbers):\\n    ...\\n" in shown
        return text("    return max(numbers) - min(numbers)\n```\n")

    replies = [
        text(f"solution.py\n```python\n{given}```\n\ntests/test_solution.py\n```python\n{test}```\n"),
        fixed_body,
        text("STEP COMPLETE"),
    ]
    unit, _, store = _unit(tmp_path, replies, continues=True)
    outcome = asyncio.run(unit.run_step(Step("spread", 1, 1, task, "")))
    assert outcome.status is StepStatus.PASSED, outcome.reason
    assert store.read_text("solution.py") == given.replace("+ min", "- min")


def _begun(messages: list[ModelMessage]) -> str | None:
    last = messages[-1]
    return last.text if isinstance(last, ModelResponse) else None


def test_an_answer_begun_after_the_docstring_that_closes_the_block_is_begun_next_at_the_body(tmp_path: Path) -> None:
    # Seen on ClassEval_19 at 42ff847: begun after the docstring of the class's last method, where the skeleton
    # ends, the 1.5B model closed the block at once; asked again the same way it did the same, and the step
    # failed in 81 s with the method a stub.
    def closes(messages: list[ModelMessage]) -> ModelResponse:
        begun = _begun(messages)
        assert begun is not None and begun.endswith('"""\n')
        return text("```\n")

    def writes_the_body(messages: list[ModelMessage]) -> ModelResponse:
        begun = _begun(messages)
        assert begun is not None and begun.endswith('    """\n   ')  # at the body's indentation, less the
        return text(" return max(numbers) - min(numbers)\n```\n")  # space the model's next word brings

    unit, script, store = _unit(tmp_path, [closes, writes_the_body, text("STEP COMPLETE")], continues=True)
    outcome = _run(unit)
    assert outcome.status is StepStatus.PASSED, outcome.reason
    code = store.read_text("solution.py")
    assert "\n    return max(numbers) - min(numbers)\n" in code and code.count("def spread") == 1
    assert len(script.requests) == 3


def test_a_stub_whose_begun_answers_twice_hold_no_body_is_asked_for_as_a_whole_file(tmp_path: Path) -> None:
    def closes(messages: list[ModelMessage]) -> ModelResponse:
        assert _begun(messages) is not None
        return text("```\n")

    def whole(messages: list[ModelMessage]) -> ModelResponse:
        assert _begun(messages) == "solution.py\n```python\n"  # begun at the file's start, not inside the stub
        return text(f"{STUB}    return max(numbers) - min(numbers)\n```\n")

    unit, script, store = _unit(tmp_path, [closes, closes, whole, text("STEP COMPLETE")], continues=True)
    outcome = _run(unit)
    assert outcome.status is StepStatus.PASSED, outcome.reason
    assert "return max(numbers) - min(numbers)" in store.read_text("solution.py")
    assert len(script.requests) == 4


def test_an_answer_begun_inside_a_stub_that_writes_it_as_a_stub_again_holds_no_body(tmp_path: Path) -> None:
    """Seen on the URL shortener at 5c074b4: begun inside validate_custom_link(), the 1.5B model wrote ``pass``
    and went on to the next stub; read as a body, the same request came again, with the same answer."""

    def stub_again(messages: list[ModelMessage]) -> ModelResponse:
        assert (_begun(messages) or "").endswith('"""\n')
        return text("    pass  # to do\n```\n")

    def writes_the_body(messages: list[ModelMessage]) -> ModelResponse:
        assert (_begun(messages) or "").endswith('    """\n   ')  # begun next at the body's indentation
        return text(" return max(numbers) - min(numbers)\n```\n")

    unit, _, store = _unit(tmp_path, [stub_again, writes_the_body, text("STEP COMPLETE")], continues=True)
    outcome = _run(unit)
    assert outcome.status is StepStatus.PASSED, outcome.reason
    assert "\n    return max(numbers) - min(numbers)\n" in store.read_text("solution.py")


def test_a_test_file_asked_for_is_begun_at_its_start_with_the_imports_of_what_it_tests(tmp_path: Path) -> None:
    # Seen on ClassEval_21 at 42ff847: asked for tests/test_solution.py, the 1.5B model sent solution.py back
    # whole four times (800 tokens each), and the step ended with no test written.
    task = TESTED

    def tests_only(messages: list[ModelMessage]) -> ModelResponse:
        assert _begun(messages) == "tests/test_solution.py\n```python\nfrom solution import spread\n\n\ndef test_spread"
        assert "Your answer below is begun with the path tests/test_solution.py" in str(messages[0])
        # the embedded model stops at the closing fence, which its answer leaves out (seen: four answers of
        # tests in a row read as no file at 8dae23c)
        return text("():\n    assert spread([1.0, 4.0, 2.5]) == 3.0")

    replies = [text("    return max(numbers) - min(numbers)\n```\n"), tests_only, text("STEP COMPLETE")]
    unit, _, store = _unit(tmp_path, replies, continues=True)
    outcome = asyncio.run(unit.run_step(Step("spread", 1, 1, task, "")))
    assert outcome.status is StepStatus.PASSED, outcome.reason
    assert store.read_text("tests/test_solution.py").startswith("from solution import spread\n\n\ndef test_spread():\n")


def test_a_begun_file_imports_public_code_names_only_and_an_answer_opening_its_own_block_is_read_as_it_is() -> None:
    from l2mac.control.continuation import opens_block
    from l2mac.control.test_start import file_start

    code = "class Shelf:\n    pass\n\n\ndef test_connection():\n    pass\n\n\ndef _private():\n    pass\n"
    start = file_start("tests/test_shelf.py", {"shelf/core.py": code})
    assert start == "tests/test_shelf.py\n```python\nfrom shelf.core import Shelf\n\n\ndef test_"
    assert file_start("notes.md") == "notes.md\n```markdown\n"
    assert opens_block("tests/test_shelf.py\n```python\nx = 1\n```", start)
    assert opens_block("```python\nx = 1\n```", start)
    assert not opens_block("pass\n```", start) and not opens_block("```", start)
    assert not opens_block("zope.interface\n```", start)  # a line of a file, not a file's path
    assert opens_block("solution.py\n```python\nx = 1\n```", start)  # another file: read as the model wrote it


def test_a_new_function_asked_for_in_an_existing_module_is_begun_in_its_own_stub_under_what_the_task_says(
    tmp_path: Path,
) -> None:
    """Seen on a change to python-slugify: begun inside a bare ``def unique_slugify(text, taken):`` after
    slugify(), the 1.5B model wrote slugify()'s body again. The function gets a stub first, at the module's end
    (before its ``if __name__`` block), with what the task says of it as its docstring; the code comes before
    the new test file."""
    task = (
        "Add a function unique_name(name, taken) to names that returns name, with -2, -3, ... appended until it"
        " is not in the set taken, e.g. unique_name('a', {'a'}) == 'a-2'. Test it in tests/test_names.py."
    )
    module = 'def shout(name):\n    return name.upper()\n\n\nif __name__ == "__main__":\n    print(shout("a"))\n'
    step = (
        "Add a new function to names.py; write its tests in tests/test_names.py. It is about unique_name(name, taken)."
    )
    lines = [
        "n = 2",
        "found = name",
        "while found in taken:",
        "    found = f'{name}-{n}'",
        "    n += 1",
        "return found",
    ]
    body = "\n".join(f"    {line}" for line in lines)
    test = "from names import unique_name\n\n\ndef test_unique_name():\n    assert unique_name('a', {'a'}) == 'a-2'\n"

    def the_body(messages: list[ModelMessage]) -> ModelResponse:
        begun = messages[-1]
        assert isinstance(begun, ModelResponse) and begun.text is not None
        assert begun.text.startswith("names.py\n```python\ndef shout(name):")
        doc = (
            "Returns name, with -2, -3, ... appended until it is not in the set taken, e.g. unique_name('a',\n"
            "    {'a'}) == 'a-2'."  # what the task asks, said as a docstring says it
        )
        assert begun.text.endswith(f'def unique_name(name, taken):\n    """{doc}\n    """\n'), begun.text
        return text(f"{body}\n```\n")

    replies = [the_body, text(f"tests/test_names.py\n```python\n{test}```\n"), text("STEP COMPLETE")]
    unit, _, store = _unit(tmp_path, replies, continues=True)
    store.write_text("names.py", module)
    instruction = Instruction(title="unique_name", instruction=step, requires_tests=True)
    outcome = asyncio.run(unit.run_step(Step(task, 1, 1, instruction, "")))
    assert outcome.status is StepStatus.PASSED, outcome.reason
    code = store.read_text("names.py")
    assert code.startswith(module.split("\n\n\nif")[0]) and code.endswith(
        f'{body}\n\n\nif __name__ == "__main__":\n    print(shout("a"))\n'
    )


def test_the_return_slot_replaces_a_bare_return_and_is_not_used_when_the_body_has_another_problem() -> None:
    from l2mac.control.continuation import return_opening

    source = (
        'class Account:\n    def deposit(self, amount):\n        """Add amount, return the balance."""\n'
        "        self.balance += amount\n        return\n\n    def other(self):\n        return 1\n"
    )
    opening = return_opening("a.py", source, "deposit", "Account", flagged={2})
    assert opening is not None and opening.prefill().endswith("        self.balance += amount\n        return")
    completed = opening.completion(" self.balance\n```\n")
    assert completed is not None and completed.text.count("\n        return") == 2  # the bare one gone
    assert "        self.balance += amount\n        return self.balance\n\n    def other" in completed.text
    # an undefined name on line 4 too: the body is not kept, a new one is asked for instead
    assert return_opening("a.py", source, "deposit", "Account", flagged={2, 4}) is None
    assert return_opening("a.py", source, "deposit", "Account", flagged={7}) is None  # said of another function


def test_asked_stubs_are_functions_the_task_describes_never_classes_methods_or_code() -> None:
    from l2mac.control.continuation import with_asked_stubs

    module = "def shout(name):\n    return name.upper()\n"
    task = (
        "Add a class Stack(items) to m.py.\n- Add a method area(self) to the Shape class.\n"
        "- first(items) returns the first item.\n- last(items) returns the last item.\n\n"
        "```python\nassert first([1, 2]) == 1\n```"
    )
    grown = with_asked_stubs(module, ["Stack", "area", "first"], task)
    assert grown is not None and "def Stack" not in grown and "def area" not in grown
    first = grown.split("def first(items):\n", 1)[1]
    assert first.startswith('    """first(items) returns the first item.\n    """')  # not last()'s, not the block's
    assert with_asked_stubs(module, ["first"], "Write first([1, 2]) == 1.") is None  # a call, no signature
    planned = "Write web/app.py with create_app(db_path: Path) -> Flask: GET /notes answers the notes as JSON."
    grown = with_asked_stubs(module, ["create_app"], planned)
    assert grown is not None and '"""GET /notes answers the notes as JSON.\n' in grown  # what it does, not the ask
    planned = "Write web/app.py with create_app(db_path: Path) -> Flask, which calls init_db(db_path): GET /notes."
    grown = with_asked_stubs(module, ["create_app"], planned)
    assert grown is not None and '"""Calls init_db(db_path): GET /notes.\n' in grown  # the plan example's form


def test_a_name_the_module_imports_is_never_stubbed_as_a_new_function(tmp_path: Path) -> None:
    """A review's case: ``fetch(url, retries)`` waits with ``sleep(delay)``, imported from time."""
    module = "from time import sleep\n\n\ndef ping(url):\n    return url\n"
    task = "Add a function fetch(url, retries) to client.py that calls ping(url), waiting with sleep(delay) between."
    step = Instruction(title="fetch", instruction=f"{task} Test it in tests/test_client.py.", requires_tests=True)

    def the_body(messages: list[ModelMessage]) -> ModelResponse:
        begun = messages[-1]
        assert isinstance(begun, ModelResponse) and begun.text is not None
        assert "def sleep" not in begun.text and "def ping(url):\n    return url" in begun.text
        assert begun.text.rstrip().endswith('"""') and "def fetch(url, retries):" in begun.text
        return text("    for _ in range(retries):\n        sleep(0)\n    return ping(url)\n```\n")

    test = "from client import fetch, ping\n\n\ndef test_fetch():\n    assert fetch('u', 1) == ping('u') == 'u'\n"
    replies = [the_body, text(f"tests/test_client.py\n```python\n{test}```\n"), text("STEP COMPLETE")]
    unit, _, store = _unit(tmp_path, replies, continues=True)
    store.write_text("client.py", module)
    outcome = asyncio.run(unit.run_step(Step(task, 1, 1, step, "")))
    assert outcome.status is StepStatus.PASSED, outcome.reason
    assert store.read_text("client.py").count("def ") == 2


def test_a_function_the_steps_code_imports_from_a_module_lacking_it_is_begun_there_as_the_code_calls_it(
    tmp_path: Path,
) -> None:
    """Seen on the notes API at c78c993: app.py imported get_note_by_id from notes/store.py, which lacked it,
    and the 1.5B model, told so, sent app.py back unchanged three times."""
    store_py = 'def add_item(items, item):\n    """Add item to items."""\n    items.append(item)\n'
    app = (
        "from store import get_item\n\n\ndef show(items, index):\n    item = get_item(items, index)\n    return item\n"
    )
    step = Instruction(
        title="show", instruction="Write app.py with show(items, index); it uses store.py.", requires_tests=False
    )

    def the_body(messages: list[ModelMessage]) -> ModelResponse:
        begun = messages[-1]
        assert isinstance(begun, ModelResponse) and begun.text is not None
        assert begun.text.startswith(f"store.py\n```python\n{store_py}")
        called = '"""Called in app.py as:\n    item = get_item(items, index)\n    """\n'
        assert begun.text.endswith(f"def get_item(items, index):\n    {called}"), begun.text
        assert "app.py uses get_item from store.py, which does not define it" in str(messages[0])
        return text("    return items[index]\n```\n")

    replies = [text(f"app.py\n```python\n{app}```\n"), the_body, text("STEP COMPLETE")]
    unit, _, store = _unit(tmp_path, replies, continues=True)
    store.write_text("store.py", store_py)
    outcome = asyncio.run(unit.run_step(Step("t", 1, 1, step, "")))
    assert outcome.status is StepStatus.PASSED, outcome.reason
    assert store.read_text("store.py").endswith("    return items[index]\n") and store.read_text("app.py") == app


def test_a_function_the_steps_code_calls_and_nothing_defines_is_begun_in_the_module_it_imports_most_from(
    tmp_path: Path,
) -> None:
    """Seen on the notes API at df27f4e: app.py imported add_note and init_db from notes/store.py and called
    delete_note_from_db(db_path, id), which nothing defined; told "undefined name" four times, the model
    rewrote app.py each time and the function was never written."""
    store_py = 'def add_item(items, item):\n    """Add item to items."""\n    items.append(item)\n'
    app = (
        "from store import add_item\n\n\ndef show(items, index):\n    add_item(items, 1)\n"
        "    return get_item(items, index)\n"
    )
    step = Instruction(
        title="show", instruction="Write app.py with show(items, index); it uses store.py.", requires_tests=False
    )

    def the_body(messages: list[ModelMessage]) -> ModelResponse:
        begun = messages[-1]
        assert isinstance(begun, ModelResponse) and begun.text is not None
        assert begun.text.startswith(f"store.py\n```python\n{store_py}")
        assert begun.text.endswith(
            'def get_item(items, index):\n    """Called in app.py as:\n    return get_item(items, index)\n    """\n'
        )
        assert "app.py uses get_item from store.py, which does not define it" in str(messages[0])
        return text("    return items[index]\n```\n")

    replies = [text(f"app.py\n```python\n{app}```\n"), the_body, text("STEP COMPLETE")]
    unit, _, store = _unit(tmp_path, replies, continues=True)
    store.write_text("store.py", store_py)
    outcome = asyncio.run(unit.run_step(Step("t", 1, 1, step, "")))
    assert outcome.status is StepStatus.PASSED, outcome.reason
    assert store.read_text("store.py").endswith("    return items[index]\n")
    assert "from store import get_item" in store.read_text("app.py")  # imported once it exists


def test_stub_methods_of_a_class_the_step_names_without_a_signature_are_asked_for_inside_them(tmp_path: Path) -> None:
    """Seen on the URL shortener at 8922e3d: "Write ... with a class URLShortener that handles ..."; the model
    wrote every method as ``pass``, the tests failed on their None, and no answer was ever begun inside one:
    the step named the class, but no method with a signature."""
    task = Instruction(
        title="shortener",
        instruction="Write solution.py with a class Shortener that handles shortening URLs.\n"
        "Write tests/test_solution.py with pytest tests of solution.py.",
        requires_tests=True,
    )
    code = "class Shortener:\n    def shorten(self, url):\n        # make it short\n        pass\n"

    def inside_the_stub(messages: list[ModelMessage]) -> ModelResponse:
        begun = _begun(messages)
        assert begun is not None and begun.rstrip().endswith("def shorten(self, url):\n        # make it short"), begun
        return text("        return url.rsplit('/', 1)[-1]\n```\n")

    replies = [
        text(f"solution.py\n```python\n{code}```\n"),
        # its failing statement calls no function of the project: no rewrite is pointed at one
        text("():\n    short = Shortener().shorten('ab/cd')\n    assert short.endswith('cd')\n```\n"),
        inside_the_stub,
        text("STEP COMPLETE"),
    ]
    unit, _, store = _unit(tmp_path, replies, continues=True)
    outcome = asyncio.run(unit.run_step(Step("shortener", 1, 1, task, "")))
    assert outcome.status is StepStatus.PASSED, outcome.reason
    assert "return url.rsplit('/', 1)[-1]" in store.read_text("solution.py")


def test_agreement_weighs_one_implementation_written_whole_beside_the_samples_begun_inside_the_file(
    tmp_path: Path,
) -> None:
    """Seen on ClassEval_37 at 5fff897: one call wrote a class passing all its hidden tests, while the step's draft
    and its three samples, begun inside the class, each failed the docstring's examples, and the step failed. The
    samples begun inside the file are one kind of answer; one more, written whole at temperature 0 as one call
    would write it, is weighed with them, and kept here, where it alone makes the example and the test pass."""
    test = "from solution import spread\n\n\ndef test_spread():\n    assert spread([1.0, 4.0, 2.5]) == 3.0\n"
    whole = STUB + "    return max(numbers) - min(numbers)\n"
    asked: list[str] = []

    def model(messages: list[ModelMessage]) -> ModelResponse:
        last = messages[-1]
        if isinstance(last, ModelResponse):  # begun: the test file at its start, or a body inside spread
            if str(last.text).startswith("tests/"):
                begun = str(last.text).partition("```python\n")[2]
                return text(test.removeprefix(begun) + "```\n")
            asked.append("begun")
            return text("    return max(numbers) + min(numbers)\n```\n")  # always the same wrong body
        if "Write the complete file solution.py" in last_user_text(messages):
            asked.append("whole")
            return text(f"solution.py\n```python\n{whole}```\n")
        return text("STEP COMPLETE")

    unit, _, store = _unit(tmp_path, [model] * 30, continues=True, samples=3)
    outcome = asyncio.run(unit.run_step(Step("spread", 1, 1, TESTED, "")))
    assert "whole" in asked and asked.index("whole") > asked.index("begun")  # weighed beside the begun samples
    assert "return max(numbers) - min(numbers)" in store.read_text("solution.py")
    assert outcome.status is StepStatus.PASSED, outcome.reason
