"""An answer begun inside a stub is given the later stubs where the model would copy them
(models/local/given.py): the model writes bodies, not the skeleton again."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path

import jinja2
from pydantic_ai.messages import ModelMessage, ModelRequest, ModelResponse, UserPromptPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from l2mac.checks.runner import SubprocessRunner
from l2mac.context import ContextBudget
from l2mac.control import ControlUnit, Step, StepLimits
from l2mac.control.continuation import find_opening, function_opening
from l2mac.control.text import TEXT
from l2mac.domains import load_domain
from l2mac.models.client import ModelClient
from l2mac.models.local.given import GivenWatch, continue_with_given, given_text
from l2mac.models.local.llama import GenerationStats, LocalChat
from l2mac.record import RunRecord
from l2mac.store import FileStore
from l2mac.tools import Toolbox, ToolEnv, tools_named
from l2mac.types import Instruction

SKELETON = '''class Tally:
    """Counts things."""

    def __init__(self):
        self.n = 0

    def add(self, k):
        """Add k and return the new count.
        >>> Tally().add(2)
        2
        """

    def size(self):
        return self.n

    @staticmethod
    def total(a, b):
        """The sum of a and b.
        >>> Tally.total(1, 2)
        3
        """

    def twice(self): """One line: not given."""
'''
TOTAL = '''    @staticmethod
    def total(a, b):
        """The sum of a and b.
        >>> Tally.total(1, 2)
        3
        """
'''
ADD_BODY = "        self.n += k\n        return self.n\n"
# what the model writes after a body: the next stub copied (its signature changed), then its body
COPIED = '\n    @staticmethod\n    def total(a: int, b: int) -> int:\n        """The sum."""\n        return a + b\n'


def _model_writes(prompt: str) -> list[str]:
    """A model that copies the skeleton's next stub after a body, as the 1.5B model does: its answer, line by
    line, to ``prompt`` (a body for the stub whose docstring the prompt ends with)."""
    if prompt.endswith(TOTAL):
        return ["        return a + b\n"]
    return [*ADD_BODY.splitlines(keepends=True), *COPIED.splitlines(keepends=True)]


Generation = tuple[str, int, int, bool]


def _streamed(
    prompts: list[str], writes: Callable[[str], list[str]] = _model_writes
) -> Callable[[str, int, Callable[[str], bool]], Generation]:
    """Generations by the model ``writes`` plays, streamed to the watch, which may stop them."""

    def generate(prompt: str, limit: int, watch: Callable[[str], bool]) -> Generation:
        prompts.append(prompt)
        sent: list[str] = []
        planned = writes(prompt)
        for piece in planned[:limit]:
            sent.append(piece)
            if watch(piece):
                break
        return "".join(sent), len(sent), len(sent), sent == planned

    return generate


def test_where_the_model_begins_to_copy_a_later_stub_it_is_given_it_and_writes_the_body() -> None:
    opening = find_opening("tally.py", SKELETON, ["Tally"])
    assert opening is not None and opening.name == "add"
    prompts: list[str] = []
    answer, costs, names = continue_with_given(_streamed(prompts), "PROMPT\n", 100, opening.given())
    assert names == ["total"]
    assert answer == ADD_BODY + "\n" + TOTAL + "        return a + b\n"
    assert prompts == ["PROMPT\n", "PROMPT\n" + ADD_BODY + "\n" + TOTAL]  # it went on from the given docstring
    assert costs == [5, 1]  # the body, a blank line, the decorator and the def: never the docstring
    done = opening.complete(answer + "```")
    assert done is not None
    namespace: dict[str, object] = {}
    exec(compile(done, "tally.py", "exec"), namespace)
    tally = namespace["Tally"]
    assert tally().add(2) == 2 and tally.total(1, 2) == 3  # type: ignore[attr-defined,operator]
    assert "def total(a, b):" in done and "a: int" not in done  # the signature as the skeleton has it


def test_only_later_stubs_with_a_docstring_of_their_own_are_given_and_each_once() -> None:
    opening = find_opening("tally.py", SKELETON, ["Tally"])
    assert opening is not None
    given = opening.given()
    assert {n: t for n, t in given.items() if t.strip()} == {"total": TOTAL}  # not twice (one line), nor add
    assert given["__init__"] == given["size"] == "    "  # complete: where a copy of one begins, the answer ends
    assert given["add"] == "    "  # so is the method being completed: after its body, a copy of it is a copy
    watch = GivenWatch(opening.given())
    assert not watch.feed("        def total(x):\n")  # a function nested in the body, not the stub
    assert not watch.feed("    def totals(self):\n")
    assert watch.feed("    @staticmethod\n    def total(")
    assert watch.text[: watch.cut].endswith("def totals(self):\n") and watch.name == "total"
    prompts: list[str] = []
    answer, _, names = continue_with_given(_streamed(prompts), "P", 100, {})
    assert names == [] and answer == ADD_BODY + COPIED and len(prompts) == 1  # nothing given: as written


def test_the_token_limit_counts_every_generation_and_a_limit_spent_ends_the_answer() -> None:
    prompts: list[str] = []
    opening = find_opening("tally.py", SKELETON, ["Tally"])
    assert opening is not None
    answer, _, names = continue_with_given(_streamed(prompts), "P", 5, opening.given())
    assert names == ["total"] and len(prompts) == 1 and answer.endswith(TOTAL)


def test_a_rewrite_ends_where_the_model_begins_to_copy_a_function_the_file_has_complete() -> None:
    source = SKELETON.replace('        2\n        """\n', '        2\n        """\n        return k\n', 1)
    opening = function_opening("tally.py", source, "add", "Tally")
    assert opening is not None and opening.rewrite

    def copies_on(prompt: str) -> list[str]:  # the new body, then the rest of the class again
        return [*ADD_BODY.splitlines(keepends=True), "\n", "    def size(self):\n", "        return 0\n"]

    prompts: list[str] = []
    answer, costs, names = continue_with_given(_streamed(prompts, copies_on), "P", 100, opening.given())
    assert answer == ADD_BODY + "\n" and names == [] and costs == [4]  # stopped at the copy's def line
    done = opening.complete(answer + "```")
    assert done is not None and "return self.n\n\n    def size(self):\n        return self.n" in done


def _closes_early(prompt: str) -> list[str]:
    """A model that closes the block after each body (the block's closing fence is a stop: not in the text), and
    at once after a docstring; begun at a body's indentation, it writes the body (its first word's space
    completing the indentation)."""
    if prompt.endswith(TOTAL + " " * 7):
        return [" return a + b\n"]
    if prompt.endswith(TOTAL):
        return []
    return ADD_BODY.splitlines(keepends=True)


def test_an_answer_that_ends_after_a_body_with_stubs_left_is_given_the_next_and_goes_on() -> None:
    opening = find_opening("tally.py", SKELETON, ["Tally"])
    assert opening is not None
    prompts: list[str] = []
    answer, _, names = continue_with_given(_streamed(prompts, _closes_early), "P\n", 100, opening.given())
    assert names == ["total"] and answer == ADD_BODY + "\n" + TOTAL + "        return a + b\n"
    done = opening.complete(answer)
    assert done is not None and "return a + b" in done and "return self.n" in done

    def then_a_module_statement(prompt: str) -> list[str]:
        return [*ADD_BODY.splitlines(keepends=True), "\n", "print(Tally().add(1))\n"]

    prompts = []
    answer, _, names = continue_with_given(_streamed(prompts, then_a_module_statement), "P", 100, opening.given())
    assert names == [] and len(prompts) == 1  # a stub given after it would not be in the class


def _closes_at_once(prompt: str) -> list[str]:
    """A model that, given a stub at the end of its docstring, closes the block at once (the fence its first
    line: the newline before it is the prompt's, so no stop string sees it) and writes another file after it;
    begun at the stub's body, it writes the body."""
    if prompt.endswith(TOTAL + " " * 7):
        return [" return a + b\n"]
    if prompt.endswith(TOTAL):
        return ["```\n", "\n", "tests/test_tally.py\n", "```python\n"]
    return [*ADD_BODY.splitlines(keepends=True), *COPIED.splitlines(keepends=True)]


def test_a_stub_whose_block_closes_at_once_after_it_is_given_is_begun_at_its_body() -> None:
    """Seen on ClassEval: a stub given, the block closed at once, and the next stub's body written after the
    fence, outside the block: both stubs were left for turns of their own."""
    opening = find_opening("tally.py", SKELETON, ["Tally"])
    assert opening is not None
    prompts: list[str] = []
    answer, _, names = continue_with_given(_streamed(prompts, _closes_at_once), "P\n", 100, opening.given())
    assert names == ["total"] and "```" not in answer
    assert answer == ADD_BODY + "\n" + TOTAL + "        return a + b\n"
    assert len(prompts) == 3 and prompts[2].endswith(TOTAL + " " * 7)  # begun at the body, in the same answer
    done = opening.complete(answer)
    assert done is not None and "return a + b" in done and "return self.n" in done

    def always_closes(prompt: str) -> list[str]:  # begun at the body, it closes the block again (its space first)
        return _closes_at_once(prompt) if prompt.endswith(TOTAL) or "total" not in prompt else [" ```\n", "x = 1\n"]

    prompts = []
    answer, _, names = continue_with_given(_streamed(prompts, always_closes), "P\n", 100, opening.given())
    assert len(prompts) == 3 and "```" not in answer  # begun at its body once; the block closed again: the end
    assert answer.rstrip(" ").endswith(TOTAL)


def _local(prompts: list[str]) -> LocalChat:
    """The embedded model's adapter, its generation played by :func:`_model_writes`."""
    chat = LocalChat.__new__(LocalChat)
    chat.template = jinja2.Template(
        "{% for m in messages %}<{{ m.role }}>{{ m.content }}</{{ m.role }}>{% endfor %}"
        "{% if add_generation_prompt %}<assistant>{% endif %}"
    )
    chat.stats = []
    generate = _streamed(prompts)

    def played(
        prompt: str,
        limit: int,
        temperature: float | None,
        stop: tuple[str, ...],
        watch: Callable[[str], bool] | None = None,
    ) -> tuple[str, GenerationStats]:
        text, _, n, ended = generate(prompt, limit, watch or (lambda piece: False))
        return text, GenerationStats(len(prompt) // 4, len(prompt) // 4, n, 0.1, 0.2, watched=not ended)

    chat._generate = played  # type: ignore[method-assign]
    return chat


def test_a_step_on_the_local_model_writes_bodies_only_and_the_class_is_complete(tmp_path: Path) -> None:
    prompts: list[str] = []
    chat = _local(prompts)
    seen: list[dict[str, str]] = []

    def answer(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        seen.append(given_text(info.model_settings or {}))
        if isinstance(messages[-1], ModelResponse):  # begun inside the stub: the local model
            return chat(messages, info)
        return ModelResponse(parts=[])

    store = FileStore(tmp_path / "proj")
    domain = load_domain("codebase")
    task = Instruction(
        title="tally",
        instruction=f"Implement the class below in tally.py.\n\n```python\n{SKELETON}```",
        requires_tests=False,
    )
    unit = ControlUnit(
        ModelClient(FunctionModel(answer), continues=True),
        Toolbox(tools_named(domain.tools), ToolEnv(store=store, runner=SubprocessRunner(), max_output_chars=4000)),
        domain,
        ContextBudget(window=16000, reply=500, margin=0.1),
        protocol=TEXT,
        limits=StepLimits(max_turns=1, samples=0),
        record=RunRecord(store.root),
    )
    step = Step("tally", 1, 1, task, "")
    asked = unit._ask_sample(step, unit._setting(step), frozenset(), "tally.py", "Write it.", lambda p: False)
    assert asked.given["total"] == TOTAL  # an agreement sample, begun inside the same stub, is given the same
    asyncio.run(unit.run_step(step))
    assert seen[0]["total"] == TOTAL  # the request carried the later stub
    assert len(prompts) == 2 and prompts[1].endswith(TOTAL)  # one answer, two generations
    code = store.read_text("tally.py")
    namespace: dict[str, object] = {}
    exec(compile(code, "tally.py", "exec"), namespace)
    tally = namespace["Tally"]
    assert tally().add(3) == 3 and tally.total(2, 2) == 4  # type: ignore[attr-defined,operator]
    usage = unit.client.usage
    assert usage.output_tokens == 6  # five lines and one: never the copied docstring


def test_a_model_that_does_not_continue_begun_answers_is_sent_nothing_given(tmp_path: Path) -> None:
    seen: list[dict[str, str]] = []

    def answer(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        seen.append(given_text(info.model_settings or {}))
        return ModelResponse(parts=[])

    client = ModelClient(FunctionModel(answer), continues=False)
    asyncio.run(client.request([ModelRequest(parts=[UserPromptPart("hi")])], [], purpose="p", given={"total": TOTAL}))
    assert seen == [{}]


def test_an_answer_whose_generations_spend_the_limit_is_reported_cut_off() -> None:
    """The limit spent where a given stub began: the last generation ended on the watch, not on its limit, yet the
    answer is cut off (a stub with no body), and the control unit must read it so."""
    prompts: list[str] = []
    chat = _local(prompts)
    opening = find_opening("tally.py", SKELETON, ["Tally"])
    assert opening is not None
    text, stats = chat.complete("P", 5, given=opening.given())
    assert text.endswith(TOTAL) and stats.completion_tokens == 5 and stats.hit_limit
    text, stats = chat.complete("P", 100, given=opening.given())
    assert text.endswith("return a + b\n") and not stats.hit_limit
