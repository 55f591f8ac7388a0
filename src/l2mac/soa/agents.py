"""The agents of an organisation: who owns what, in which state, within which limits."""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field
from enum import Enum

from l2mac.checks.tests import per_test_outcomes
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


#: the header pytest writes above each failing test's section: ``____ test_add ____``, ``____ TestA.test_b ____``
_SECTION = re.compile(r"^_{3,} (.+?) _{3,}$", re.MULTILINE)
#: a heading of pytest's report between sections: ``==== short test summary info ====``, ``==== warnings ... ====``
_HEADING = re.compile(r"^={3,} .+ ={3,}$", re.MULTILINE)


def calls(name: str) -> re.Pattern[str]:
    """A call of ``name`` (as a function or a method) in a report."""
    return re.compile(rf"(?<!\w){re.escape(name)}\(")


def called_by_failing(test_source: str, report: str) -> dict[str, set[str]]:
    """Per test of ``test_source`` that failed in ``report`` (pytest ``-rA``), the names of the functions and
    methods its body calls: a failure's traceback shows the test only up to the failing line, so a
    ``pytest.raises`` block, an attribute or a length asserted, hide the function that is wrong. Seen on
    ClassEval at 7ad634d: three agents' stubs (ClassEval_11's check, _28's search_database) were never sent a
    failure, and stayed stubs."""
    failing = {
        _test_name(t.split("::", 1)[-1].replace("::", ".")) for t, ok in per_test_outcomes(report).items() if not ok
    }
    try:
        tree = ast.parse(test_source)
    except SyntaxError:
        return {}
    found: dict[str, set[str]] = {}
    tests = [(n.name, n) for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
    tests += [(f"{c.name}.{m.name}", m) for c in tree.body if isinstance(c, ast.ClassDef) for m in c.body
              if isinstance(m, (ast.FunctionDef, ast.AsyncFunctionDef))]  # fmt: skip
    for name, node in tests:
        if name in failing:
            found[name] = {
                n.func.id if isinstance(n.func, ast.Name) else n.func.attr
                for statement in node.body  # not its decorators (``pytest.mark.parametrize(...)``)
                for n in ast.walk(statement)
                if isinstance(n, ast.Call) and isinstance(n.func, (ast.Name, ast.Attribute))
            }
    return found


def _test_name(test: str) -> str:
    """A test's name as pytest heads its section (``test_a``, ``TestA.test_b``), without its parameters."""
    return test.split("[")[0]


def failures_of(report: str, name: str, called: dict[str, set[str]] | None = None) -> str:
    """The sections of a pytest ``report`` whose failing test calls ``name`` (in its traceback, or in its body
    by ``called``: :func:`called_by_failing`), and its summary; the whole report when none does (the failure is
    found by no name). Seen on ClassEval at 7ad634d: sent every agent's tracebacks, agents copied other agents'
    lines into their own function (15 repairs in 12 tasks)."""
    found = list(_SECTION.finditer(report))
    if not found:
        return report
    mine = []
    for m in found:
        after = [x.start() for x in (_SECTION.search(report, m.end()), _HEADING.search(report, m.end())) if x]
        section = report[m.start() : min(after, default=len(report))]
        if calls(name).search(section) or name in (called or {}).get(_test_name(m.group(1)), ()):
            mine.append(section)
    if not mine:
        return report
    summary = report.find("short test summary info", found[-1].start())
    return "".join(mine) + (report[report.rfind("\n", 0, summary) + 1 :] if summary >= 0 else "")


def involved_in(
    agents: list[Agent], mother: Agent, report: str, called: dict[str, set[str]] | None = None
) -> list[Agent]:
    """The agents under ``mother`` whose function appears in a test failure's ``report``, or that a failing
    test calls (``called``: :func:`called_by_failing`); all of them if none does."""
    under = [a for a in agents if a.contract is not None and descends(agents, a, mother.id)]
    reached = set().union(*(called or {}).values())
    named = [
        a
        for a in under
        if a.contract is not None and (calls(a.contract.name).search(report) or a.contract.name in reached)
    ]
    return named or under
