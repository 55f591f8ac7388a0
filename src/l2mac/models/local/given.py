"""Text given to an answer where the model would copy it: the stubs after the one a begun answer completes.

An answer begun inside a stub (see :mod:`l2mac.control.continuation`) often goes on past the body, through the
rest of the file: it copies each later stub's decorators, signature and docstring, and writes its body. Seen on
ClassEval at 5689e64: 56% of what the 1.5B model wrote was lines copied from the skeleton, at 5-15 tokens/s.
The copying is not needed: the request says which stubs follow (``given``: a definition's name, and its text
from the first decorator to the end of its docstring). The answer is watched as it streams; once a line begins
one of those definitions, generation stops there, the definition's text is put in as given (its signature as
the file has it), and the model goes on from after the docstring, with the prompt it had: the model reads the
given text (a prompt token, its prefix cached) instead of writing it (a generated token). Each is given once.

A definition given as its indentation alone (whitespace) is one the file has complete: where the model begins
to copy it, the answer ends (seen: a method's new body, then every later method of the class copied whole,
which the file keeps as it was anyway).

An answer that ends inside a body while given stubs are left (seen: the __init__ body, then the block closed)
is given the next one too, begun at its body's indentation, and goes on: the stub would otherwise be asked for
in a turn of its own, a new context read afresh, where the model here writes its body after a prompt it has
already read.

The block's closing fence ends the answer wherever it comes. The stop string (a newline, then the fence)
cannot see a fence the model writes first thing after a given stub: the newline before it is the given text's.
Seen on ClassEval at 76a48b6, in 3 of 6 tasks: a stub given, the block closed at once, and the next stub given
after the fence with its body, all of it outside the block and lost; the stub was asked for in a turn of its
own, and a sampled implementation that left it a stub was of no use. A stub whose block closes at once is
begun at its body's indentation instead, once.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TypeVar, cast

from pydantic_ai.settings import ModelSettings

_S = TypeVar("_S")

#: one generation: (prompt, token limit, a watch told each piece as it streams, which stops it by returning
#: True) -> (text, what it cost, tokens generated, whether the model ended it: not a limit, a loop or the watch)
Generate = Callable[[str, int, Callable[[str], bool]], tuple[str, _S, int, bool]]


#: where a request carries its given definitions, in the model settings' ``extra_body``
GIVEN_KEY = "l2mac_given"


def with_given(settings: ModelSettings | None, given: Mapping[str, str]) -> ModelSettings:
    """``settings`` carrying ``given`` to the model (only a model that continues begun answers reads them)."""
    extra = (settings or {}).get("extra_body")
    body = {**(extra if isinstance(extra, dict) else {}), GIVEN_KEY: dict(given)}
    return cast(ModelSettings, {**(settings or {}), "extra_body": body})


def given_text(settings: ModelSettings | Mapping[str, object]) -> dict[str, str]:
    """The given definitions a request's settings carry (none: empty)."""
    extra = settings.get("extra_body")
    given = extra.get(GIVEN_KEY) if isinstance(extra, dict) else None
    return {str(k): str(v) for k, v in given.items()} if isinstance(given, dict) else {}


@dataclass
class GivenWatch:
    """Watches an answer as it streams for the first line that begins one of the ``given`` definitions (at the
    indentation its given text has), or that closes the block. Then :attr:`cut` is where the copy begins (its
    decorators included) and :attr:`name` the definition's name; or :attr:`closed` is where the fence's line
    begins."""

    given: Mapping[str, str]
    text: str = ""
    cut: int | None = None
    name: str | None = None
    closed: int | None = None
    _checked: int = 0  # lines before this offset are whole and were checked
    _starts: dict[str, re.Pattern[str]] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        for name, given in self.given.items():
            line = next((x for x in given.splitlines() if re.match(r"\s*(?:async\s+)?def\s", x)), None)
            if line is None and given.strip():
                continue
            pad = given if line is None else line[: len(line) - len(line.lstrip())]
            self._starts[name] = re.compile(rf"{pad}(?:async\s+)?def\s+{re.escape(name)}\s*\(")

    def feed(self, piece: str) -> bool:
        """Add the next piece of the answer; True once a given definition has begun, or the block has closed."""
        if self.name is not None or self.closed is not None:
            return True
        self.text += piece
        start = self._checked
        while True:
            end = self.text.find("\n", start)
            line = self.text[start:] if end < 0 else self.text[start:end]
            # the block's closing fence: at the line's start, as the stop string sees it, or first thing in the
            # generation, after the indentation an answer was begun with (its space is the fence's token's)
            if line.startswith("```") or (start == 0 and line.lstrip(" ").startswith("```")):
                self.closed = start
                return True
            for name, pattern in self._starts.items():
                if pattern.match(line):
                    self.name, self.cut = name, self._decorators_from(start, line)
                    return True
            if end < 0:
                return False
            start = self._checked = end + 1

    def _decorators_from(self, start: int, line: str) -> int:
        """Where the definition starting at ``start`` begins, counting the decorator lines right above it."""
        pad = line[: len(line) - len(line.lstrip())]
        while start > 0:
            above = self.text.rfind("\n", 0, start - 1) + 1
            previous = self.text[above : start - 1]
            if not previous.startswith(pad + "@"):
                break
            start = above
        return start


def continue_with_given(
    generate: Generate[_S], prompt: str, limit: int, given: Mapping[str, str]
) -> tuple[str, list[_S], list[str]]:
    """The answer to ``prompt`` (at most ``limit`` generated tokens), with each ``given`` definition put in where
    the model began to copy it. Returns the answer, each generation's cost, and the names given, in order."""
    left = dict(given)
    answer, costs, names = "", list[_S](), list[str]()
    bodiless = ""  # the stub just given at the end of its docstring, before the model wrote its body
    while True:
        watch = GivenWatch(left)
        text, cost, generated, ended = generate(prompt + answer, limit, watch.feed)
        costs.append(cost)
        limit -= generated
        if watch.closed is not None:  # the block closed: what follows the fence is not the file's
            text, ended = watch.text[: watch.closed], True
        given_now, bodiless = bodiless, ""
        if watch.name is not None and watch.cut is not None:
            if not left[watch.name].strip():  # it began to copy a function the file has complete
                return answer + watch.text[: watch.cut], costs, names
            answer += watch.text[: watch.cut] + left[watch.name]  # it began to copy a given stub
            bodiless = left.pop(watch.name)
            names.append(watch.name)
        elif ended and given_now and not text.strip():
            answer += _body_lead(given_now)  # it closed the block at once after the docstring: begun at the body
        elif (
            ended
            and (stubs := [n for n, t in left.items() if t.strip()])
            and _inside_a_body(answer + text, stub := left[stubs[0]])
        ):
            name = stubs[0]  # it closed the block with stubs left: it is given the next one, begun at its body
            answer += text.rstrip("\n") + "\n\n" + stub + _body_lead(stub)
            del left[name]
            names.append(name)
        else:
            return answer + text, costs, names
        if limit <= 0:
            return answer, costs, names


def _body_lead(stub: str) -> str:
    """Where the body of a ``stub`` given after the model closed the block begins: one space short of the
    indentation of the docstring's last line (the model's next token brings its space). Given at the end of its
    docstring, the 1.5B model closed the block again (seen on ClassEval_19's last method at 42ff847)."""
    lines = stub.splitlines()
    at = next((i for i, x in enumerate(lines) if re.match(r"\s*(?:async\s+)?def\s", x)), None)
    # the docstring's first line is at the body's indentation (after a signature of several lines, too)
    doc = next((x for x in lines[at + 1 :] if x.lstrip().startswith(('"""', "'''"))), None) if at is not None else None
    if doc is None:
        return ""
    return " " * max(0, len(doc) - len(doc.lstrip()) - 1)


def _inside_a_body(text: str, stub: str) -> bool:
    """Whether ``text`` ends inside a body at a level below the ``stub``'s definition: what follows it there is
    the stub's sibling (not after a module-level statement or test the model wrote at the end)."""
    last = next((x for x in reversed(text.splitlines()) if x.strip() and not x.lstrip().startswith("```")), None)
    line = next((x for x in stub.splitlines() if x.strip() and not x.lstrip().startswith("@")), "")
    return last is not None and len(last) - len(last.lstrip()) > len(line) - len(line.lstrip())
