"""A local model's looping answer is cut as it streams, and what came before the loop is kept."""

from __future__ import annotations

import ast
import asyncio
import itertools
from collections.abc import Iterator

from pydantic_ai.messages import ModelRequest, UserPromptPart
from test_local_model import _BrokenLlama, _chat_with

from l2mac.models.client import CallRecord, ModelClient
from l2mac.models.local.loops import COUNTING_REPEATS, LOOP_REPEATS, LoopGuard

HEAD = "solution.py\n```python\ndef f(x):\n    return x\n\n\ndef test_f():\n"


def fed(text: str, piece: int = 7) -> LoopGuard:
    guard = LoopGuard()
    for i in range(0, len(text), piece):
        if guard.feed(text[i : i + piece]):
            break
    return guard


def test_one_line_repeated_is_a_loop_and_one_copy_is_kept_with_the_fence_closed() -> None:
    guard = fed(HEAD + "    assert f(1) == 1\n" * 40)
    assert guard.looped
    assert guard.trimmed() == HEAD + "    assert f(1) == 1\n```\n"
    assert len(guard.text) < len(HEAD) + 21 * (LOOP_REPEATS + 2)  # stopped soon after the loop was plain


def test_a_cycle_of_several_lines_is_a_loop() -> None:
    cycle = "    x = g()\n    assert x\n    del x\n"
    guard = fed(HEAD + cycle * 12)
    assert guard.looped and guard.trimmed() == HEAD + cycle + "```\n"


def test_real_code_is_not_a_loop() -> None:
    varied = "".join(f"    assert f({i}) == {i}\n" for i in range(60))
    blank_runs = "\n" * 30
    table = "M = [\n" + "    [0, 0],\n" * (LOOP_REPEATS - 1) + "]\n"
    text = HEAD + varied + blank_runs + table + "```\n"
    guard = fed(text)
    assert not guard.looped and guard.trimmed() == text


def test_a_function_written_again_with_its_numbers_counting_up_is_a_loop_and_the_copies_before_the_last_are_kept() -> (
    None
):
    # Seen on ClassEval_19 at 1ed18fc: test_01 to test_21, each the same lines with a longer list, 2,048 tokens.
    primes = [2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37, 41, 43, 47, 53, 59, 61, 67, 71, 73, 79, 83, 89, 97]

    def case(i: int, name: str = "") -> str:
        name = name or f"{i:02d}"
        return f"def test_{name}():\n    s = Sieve({primes[i]})\n    assert s.primes() == {primes[: i + 1]}\n\n\n"

    head = "tests/test_s.py\n```python\nfrom s import Sieve\n"
    # a test of the same shape before the loop moves where its copies begin: the cut still ends a whole test
    for before in ("\n\n", "\n\n" + case(0, "small")):
        guard = fed(head + before + "".join(case(i) for i in range(1, 25)))
        assert guard.looped
        kept = guard.trimmed()
        assert kept.startswith(head + before + case(1) + case(2)) and kept.endswith("]\n```\n")
        ast.parse(kept.split("```python\n")[1].split("```")[0])
        assert COUNTING_REPEATS - 1 <= kept.count("def test_") - before.count("def") <= COUNTING_REPEATS
        assert len(guard.text) < len(head + before + "".join(case(i) for i in range(1, 16)))  # stopped early


def test_a_function_written_again_with_its_strings_and_sets_of_strings_changing_is_a_loop_too() -> None:
    # Seen on a change to python-slugify: test_1 to test_18 of the same two asserts, the sets of taken slugs growing.
    def case(i: int) -> str:
        taken = ", ".join(f"'hello-world-{j}'" for j in range(1, i + 1))
        return f"def test_{i}():\n    assert unique_slugify('Hello World', {{{taken}}}) == 'hello-world-{i + 1}'\n\n\n"

    head = "tests/test_unique.py\n```python\nfrom slugify import unique_slugify\n\n\n"
    guard = fed(head + "".join(case(i) for i in range(1, 30)))
    assert guard.looped and COUNTING_REPEATS - 1 <= guard.trimmed().count("def test_") <= COUNTING_REPEATS
    # the same test of other strings, under names that are words, is no loop
    words = ["empty", "one", "two", "many", "spaces", "unicode", "dashes", "upper", "digits", "long", "short", "mixed"]
    tests = "".join(f"def test_{w}():\n    assert unique_slugify('{w}', {{'{w}'}}) == '{w}-2'\n\n\n" for w in words)
    assert not fed(head + tests + "```\n").looped


def test_tests_of_different_names_tables_and_chains_of_cases_counting_up_are_not_a_loop() -> None:
    names = ["empty", "one", "two", "many", "negative", "zero", "large", "float", "string", "none"]
    tests = "".join(f"def test_{n}():\n    assert f({i}) == {i}\n\n\n" for i, n in enumerate(names))
    tests += "".join(
        f"def test_{i}():\n    assert f([{i}] * {i}) == {i * i}\n\n\n" for i in range(COUNTING_REPEATS - 1)
    )
    counting = "".join(f"    assert f({i}) == {i * i}\n" for i in range(40))
    rows = "GRID = [\n" + "".join(f"    [{i}, {i + 1}],\n    [{i + 2}, {i + 3}],\n" for i in range(20)) + "]\n"
    months = "".join(f"    elif month == {m}:\n        return {28 + m % 3}\n" for m in range(2, 13))
    text = HEAD + "    pass\n\n\n" + tests + "def test_g():\n" + counting + rows
    text += "def days(month):\n    if month == 1:\n        return 31\n" + months + "```\n"
    guard = fed(text)
    assert not guard.looped and guard.trimmed() == text


class _LoopingLlama(_BrokenLlama):
    """Streams a file, then one line forever, as a 1.5B model sometimes does."""

    def __init__(self) -> None:
        self.yielded = 0
        self.closed = False

    def create_completion(self, *args: object, **kwargs: object) -> Iterator[dict[str, object]]:
        try:
            for piece in itertools.chain([HEAD], itertools.repeat("    assert f(2) == 2\n")):
                self.yielded += 1
                yield {"choices": [{"text": piece}]}
        finally:
            self.closed = True


def test_the_in_process_model_stops_generating_at_a_loop_and_records_it() -> None:
    llm = _LoopingLlama()
    chat = _chat_with(llm)
    calls: list[CallRecord] = []
    client = ModelClient(chat.as_model("local:m"), on_call=calls.append)
    response = asyncio.run(client.request([ModelRequest(parts=[UserPromptPart("write it")])], purpose="t"))
    assert response.text == HEAD + "    assert f(2) == 2\n```"
    assert llm.yielded == 1 + LOOP_REPEATS and llm.closed
    assert chat.stats[0].loop_cut and calls[0].finish == "loop_cut"


class _EndlessLlama(_BrokenLlama):
    def create_completion(self, *args: object, **kwargs: object) -> Iterator[dict[str, object]]:
        for i in range(int(kwargs["max_tokens"])):  # type: ignore[call-overload]
            yield {"choices": [{"text": f"line {i}\n"}]}


def test_an_answer_that_reaches_its_token_limit_is_marked_cut_off() -> None:
    calls: list[CallRecord] = []
    client = ModelClient(_chat_with(_EndlessLlama()).as_model("local:m"), on_call=calls.append)
    response = asyncio.run(client.request([ModelRequest(parts=[UserPromptPart("go")])], purpose="t"))
    assert response.finish_reason == "length" and calls[0].finish == "length"
