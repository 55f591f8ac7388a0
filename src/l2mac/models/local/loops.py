"""Cut an answer that has fallen into a loop.

A 1.5B model now and then repeats one line (or a few) until the answer's token limit: seen on HumanEval+, 2,048
tokens of the same ``assert`` line, ten minutes of generation on two cores, for nothing. The guard watches the
answer as it streams and says stop once a block of up to ``max_period`` lines has repeated ``repeats`` times in a
row; :meth:`LoopGuard.trimmed` then keeps one copy of the block and closes a code fence left open, so what the
model wrote before the loop is still used.
"""

from __future__ import annotations

from dataclasses import dataclass, field

#: identical consecutive blocks this many times is a loop; real code almost never repeats a line 8 times
LOOP_REPEATS = 8
LOOP_MAX_PERIOD = 4


@dataclass
class LoopGuard:
    repeats: int = LOOP_REPEATS
    max_period: int = LOOP_MAX_PERIOD
    text: str = ""
    looped: bool = False
    _loop_start: int = field(default=0, repr=False)  # index of the first line of the repeated run
    _period: int = field(default=0, repr=False)

    def feed(self, piece: str) -> bool:
        """Add the next piece of the answer; True once it is looping (and from then on)."""
        self.text += piece
        if not self.looped and "\n" in piece:
            self.looped = self._detect()
        return self.looped

    def _detect(self) -> bool:
        lines = self.text.split("\n")[:-1]  # complete lines only
        for period in range(1, self.max_period + 1):
            if len(lines) < period * self.repeats:
                break
            block = lines[-period:]
            if not any(line.strip() for line in block):
                continue  # blank lines are layout, not a loop
            count = 1
            while (count + 1) * period <= len(lines) and lines[-(count + 1) * period : -count * period] == block:
                count += 1
            if count >= self.repeats:
                self._loop_start, self._period = len(lines) - count * period, period
                return True
        return False

    def trimmed(self) -> str:
        """The answer with the loop cut: one copy of the repeated block, and an open code fence closed."""
        if not self.looped:
            return self.text
        lines = self.text.split("\n")[: self._loop_start + self._period]
        if sum(1 for line in lines if line.lstrip().startswith("```")) % 2:
            lines.append("```")
        return "\n".join(lines) + "\n"
