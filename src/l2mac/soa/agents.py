"""The agents of an organisation: who owns what, in which state, within which limits."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from enum import Enum

from l2mac.soa.contracts import Contract


class AgentState(str, Enum):
    WAITING = "waiting"
    WRITING = "writing"
    TESTING = "testing"
    DONE = "done"
    FAILED = "failed"


@dataclass
class Agent:
    id: int
    owns: str  # "module app/core.py" or "app/core.py:function"
    depth: int
    parent: int | None
    contract: Contract | None = None
    state: AgentState = AgentState.WAITING
    tokens: int = 0
    calls: int = 0
    children: list[int] = field(default_factory=list)
    note: str = ""


@dataclass(frozen=True)
class AgentLimits:
    max_agents: int = 50
    max_depth: int = 3
    concurrency: int = 4
    repair_rounds: int = 2
    attempts: int = 3  # answers an agent may give before it fails


def descends(agents: list[Agent], agent: Agent, ancestor: int) -> bool:
    """Whether ``agent`` is below ``ancestor`` in the tree."""
    while agent.parent is not None:
        if agent.parent == ancestor:
            return True
        agent = agents[agent.parent]
    return False


#: the header pytest writes above each failing test's section: ``____ test_add ____``
_SECTION = re.compile(r"^_{3,} .+? _{3,}$", re.MULTILINE)


def calls(name: str) -> re.Pattern[str]:
    """A call of ``name`` (as a function or a method) in a report."""
    return re.compile(rf"(?<!\w){re.escape(name)}\(")


def failures_of(report: str, name: str) -> str:
    """The sections of a pytest ``report`` whose failing test calls ``name``, and its summary; the whole report
    when none does (the failure is found by no name). Seen on ClassEval at 7ad634d: sent every agent's
    tracebacks, agents copied other agents' lines into their own function (15 repairs in 12 tasks)."""
    starts = [m.start() for m in _SECTION.finditer(report)]
    if not starts:
        return report
    summary = report.find("short test summary info", starts[-1])
    ends = [*starts[1:], summary if summary >= 0 else len(report)]
    mine = [report[a:b] for a, b in zip(starts, ends, strict=True) if calls(name).search(report[a:b])]
    if not mine:
        return report
    return "".join(mine) + (report[report.rfind("\n", 0, summary) + 1 :] if summary >= 0 else "")


def involved_in(agents: list[Agent], mother: Agent, report: str) -> list[Agent]:
    """The agents under ``mother`` whose function appears in a test failure's ``report``; all of them if none
    does."""
    under = [a for a in agents if a.contract is not None and descends(agents, a, mother.id)]
    named = [a for a in under if a.contract is not None and calls(a.contract.name).search(report)]
    return named or under
