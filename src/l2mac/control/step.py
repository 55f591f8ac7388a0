"""What one run of the control unit is about: the instruction with what its fresh context needs, and its budgets."""

from __future__ import annotations

import time
from dataclasses import dataclass

from l2mac.types import Instruction


@dataclass(frozen=True)
class StepLimits:
    max_turns: int = 40
    max_check_failures: int = 4
    max_context_restarts: int = 3
    #: implementations sampled, when the tests fail, to tell a wrong test from wrong code (0: off)
    samples: int = 0
    #: such agreement rounds per step
    max_agreement_rounds: int = 2
    #: a failing step's files are put back as they were when its checks came closest to passing
    keep_best: bool = True
    #: a step is held only by what it made worse, not by tests and code problems it found failing
    held_by_own: bool = True
    #: failed checks in a row that come no closer to passing than the step's best before it ends (0: off)
    max_stalled: int = 3
    #: more answers sampled, at most, when an answer fails what the conversation holds it to (0: off)
    resamples: int = 3


@dataclass(frozen=True)
class Step:
    """One instruction with what its fresh context needs from outside."""

    task: str
    index: int
    total: int
    instruction: Instruction
    previous_summary: str
    #: time.monotonic() after which the step stops, its best kept: its share of a run's time limit
    deadline: float | None = None

    def values(self, progress: str = "", whole_task: str = "") -> dict[str, object]:
        """What every step prompt is filled with (``progress``: the rendered summary of a restarted context). A
        step that is the whole task (a one-step plan) is not shown the task twice, but ``whole_task`` in its
        place: on ClassEval the skeleton's docstrings came to 472-876 of each prompt's 1,765-3,001 tokens, twice."""
        whole = bool(whole_task) and self.task.strip() == self.instruction.instruction.strip()
        return {
            "task": whole_task if whole else self.task,
            "index": self.index,
            "total": self.total,
            "title": self.instruction.title,
            "instruction": self.instruction.instruction,
            "previous_summary": self.previous_summary or "(this is the first step)",
            "progress": progress,
        }


def time_share(deadline: float | None, steps_left: int) -> float | None:
    """When the run has a time limit, the step's share of what is left of it: the time left over the steps left
    (a step that passes early leaves its time to the next). Seen on DevBench: the first step of three took 69-85%
    of the hour, and the files of the steps after it were never written."""
    if deadline is None:
        return None
    now = time.monotonic()
    return now + max(deadline - now, 0.0) / max(steps_left, 1)
