"""Cut an answer that has fallen into a loop.

A 1.5B model now and then repeats one line (or a few) until the answer's token limit: seen on HumanEval+, 2,048
tokens of the same ``assert`` line, ten minutes of generation on two cores, for nothing. The guard watches the
answer as it streams and says stop once a block of up to ``max_period`` lines has repeated ``repeats`` times in a
row; :meth:`LoopGuard.trimmed` then keeps one copy of the block and closes a code fence left open, so what the
model wrote before the loop is still used.

A loop can also count: the same block with its numbers going up (seen on ClassEval_19 at 1ed18fc: begun at a
test file's first ``def test_``, the model wrote ``test_01`` to ``test_21``, each the same three lines with a
longer list of primes, 2,048 tokens and 26 minutes). A function written again and again with only its numbers
(and strings) changed, a dozen times, is such a loop: seen too on a change to python-slugify, ``test_1`` to
``test_18`` of ``assert unique_slugify('Hello World', {'hello-world-2', ...}) == 'hello-world-7'``, the sets
growing. What it wrote is kept (each copy tests something), but for the last copy, which may be cut short.
Lines that count up outside a function's head (a table, a chain of ``elif month == 3:``
cases) are code, not a loop.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

#: identical consecutive blocks this many times is a loop; real code almost never repeats a line 8 times
LOOP_REPEATS = 8
#: a function written again with only its numbers changed, this many times, is a loop: a test file may well
#: number its tests, and a dozen is more than a step's tests need (the loop seen went on to test_21)
COUNTING_REPEATS = 12
LOOP_MAX_PERIOD = 6
_DEF = ("def ", "async def ")
_NUMBER = re.compile(r"\d+(?:\.\d+)?")
_NUMBERS = re.compile(r"#(?:\s*,\s*#)+")
_STRING = re.compile(r"'[^'\n]*'|\"[^\"\n]*\"")
_STRINGS = re.compile(r"\$(?:\s*,\s*\$)+")


def shape(line: str) -> str:
    """A line with its numbers and its strings (and lists of either) as one mark each: ``[2, 3, 5]`` and ``[2]``
    look alike, as do ``{'a-2', 'a-3'}`` and ``{'a-4'}``."""
    line = _STRINGS.sub("$", _STRING.sub("$", line))
    return _NUMBERS.sub("#", _NUMBER.sub("#", line))


@dataclass
class LoopGuard:
    repeats: int = LOOP_REPEATS
    counting_repeats: int = COUNTING_REPEATS
    max_period: int = LOOP_MAX_PERIOD
    text: str = ""
    looped: bool = False
    _loop_start: int = field(default=0, repr=False)  # index of the first line of the repeated run
    _period: int = field(default=0, repr=False)
    _counting: bool = field(default=False, repr=False)  # the copies differ in their numbers: all are kept

    def feed(self, piece: str) -> bool:
        """Add the next piece of the answer; True once it is looping (and from then on)."""
        self.text += piece
        if not self.looped and "\n" in piece:
            self.looped = self._detect()
        return self.looped

    def _detect(self) -> bool:
        lines = self.text.split("\n")[:-1]  # complete lines only
        shapes = [shape(line) for line in lines[-self.max_period * self.counting_repeats :]]
        for period in range(1, self.max_period + 1):
            if len(lines) < period * self.repeats:
                break
            for seen, counting in ((lines, False), (shapes, True)):
                block = seen[-period:]
                if not any(line.strip() for line in block):
                    break  # blank lines are layout, not a loop
                if counting and not any(line.lstrip().startswith(_DEF) for line in block):
                    break  # lines counting up are a table or a chain of cases; a function written again is a loop
                repeats = self.counting_repeats if counting else self.repeats
                count = 1
                while (count + 1) * period <= len(seen) and seen[-(count + 1) * period : -count * period] == block:
                    count += 1
                if count >= repeats:
                    self._loop_start, self._period, self._counting = len(lines) - count * period, period, counting
                    return True
        return False

    def trimmed(self) -> str:
        """The answer with the loop cut: one copy of the repeated block (of a counting one, every copy before the
        last, which may be cut short), and an open code fence closed."""
        if not self.looped:
            return self.text
        lines = self.text.split("\n")
        if self._counting:
            last = max(i for i in range(self._loop_start, len(lines)) if lines[i].lstrip().startswith(_DEF))
            lines = lines[:last]
            while lines and not lines[-1].strip():
                lines.pop()
        else:
            lines = lines[: self._loop_start + self._period]
        if sum(1 for line in lines if line.lstrip().startswith("```")) % 2:
            lines.append("```")
        return "\n".join(lines) + "\n"
