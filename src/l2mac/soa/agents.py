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
    resamples: int = 3  # answers asked for again, sampled more freely, when one fails the task's examples


def descends(agents: list[Agent], agent: Agent, ancestor: int) -> bool:
    """Whether ``agent`` is below ``ancestor`` in the tree."""
    while agent.parent is not None:
        if agent.parent == ancestor:
            return True
        agent = agents[agent.parent]
    return False


def involved_in(agents: list[Agent], mother: Agent, report: str) -> list[Agent]:
    """The agents under ``mother`` whose function appears in a test failure's ``report``; all of them if none
    does."""
    under = [a for a in agents if a.contract is not None and descends(agents, a, mother.id)]
    named = [a for a in under if a.contract is not None and re.search(rf"(?<!\w){a.contract.name}\(", report)]
    return named or under
