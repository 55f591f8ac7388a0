"""The lead's first draft of the modules a task gives, before her agents work.

Each module is drafted whole, as the l2mac strategy writes it: in the control unit's step its plan has for it
(its tools, checks, the task's examples and its own tests, in the plan's order, each step given the last one's
summary), or, where it has no step, in one call of the model. Each given function a draft implements is the
first answer of the agent that owns it; the rest of the module stays as the task gives it. Seen on ClassEval at
7ad634d: agents that each saw their class's other methods as stubs passed 6 of 50 classes, the l2mac
strategy's whole-class steps 9; at 0119155 the one-call draft sent the skeleton back in 6 of 10 classes.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field

from pydantic import ValidationError

from l2mac.checks.layout import is_test_file
from l2mac.control.step import Step, time_share
from l2mac.errors import first_line
from l2mac.soa.contracts import ContractError, current_code, graft, stubs
from l2mac.store import FileStore
from l2mac.types import Instruction, StepOutcome, StepStatus

#: a contract's key: (module, owner class or None, function)
Key = tuple[str, str | None, str]


@dataclass(frozen=True)
class Drafts:
    """How the lead drafts the modules a task gives, before her agents work: ``steps``, the step that writes each
    module in the l2mac strategy's plan (by path, in the plan's order), run by the control unit's ``run``. A
    module with no step is drafted in one call of the model."""

    steps: Mapping[str, Instruction] = field(default_factory=dict)
    run: Callable[[Step], Awaitable[StepOutcome]] | None = None


@dataclass
class Drafter:
    """Drafts one lead's given modules into the store. It is given what it needs: how to write a file as the
    lead (``write``), repair files as written ones are (``repair``), ask for a module whole in one call
    (``answer``: path and given code to the draft; raises ValueError or ValidationError for an unusable answer)
    and log; ``drafted`` gathers the contracts its drafts implemented, ``turns`` the steps' turns."""

    drafts: Drafts
    store: FileStore
    write: Callable[[str, str], None]
    repair: Callable[[list[str]], None]
    answer: Callable[[str, str], Awaitable[str]]
    log: Callable[..., None]
    deadline: float | None = None
    drafted: set[Key] = field(default_factory=set)
    turns: int = 0
    #: the test files the steps wrote, while every module drafted so far was drafted by a step that passed
    tests: list[str] = field(default_factory=list)
    unproven: bool = False  # a module was drafted by a step that failed, or in one call: no step's tests vouch

    def stepped(self, given: Mapping[str, str]) -> list[str]:
        """The modules of ``given`` a step drafts: those with stubs the plan has a step for, in the plan's order."""
        todo = [p for p, code in given.items() if stubs(code, p)]
        return [p for p in self.drafts.steps if p in todo] if self.drafts.run is not None else []

    async def draft(self, task: str, given: dict[str, str]) -> None:
        """Each module of ``given`` that has stubs, by its step in the plan's order, then the rest in one call."""
        todo = [p for p, code in given.items() if stubs(code, p)]
        stepped = self.stepped(given)
        summary = ""
        for index, path in enumerate(stepped, 1):
            deadline = time_share(self.deadline, len(stepped) - index + 2)  # and the agents' share after
            step = Step(task, index, len(stepped), self.drafts.steps[path], summary, deadline)
            summary = await self._step(path, given[path], step)
        for path in (p for p in todo if p not in stepped):
            self.unproven = True
            try:
                draft = await self.answer(path, given[path])
            except (ValidationError, ValueError) as e:
                self.log("draft_unused", module=path, reason=first_line(e))
                continue
            self.put(path, given[path], draft)
        if self.unproven:
            self.drop_tests()

    def steps_tests(self) -> list[str]:
        """The tests the steps wrote, when every module was drafted by a step that passed (its tests weighed by
        agreement against sampled implementations, and passing with the task's examples): the lead's tests then,
        as fresh ones of hers would hold a draft l2mac's step finished to tests no one weighed (seen on ClassEval_4
        at 76a48b6: the draft step passed; one of her new tests failed it, and two rounds of agents' repairs made
        5 passing tests 0 before the draft was put back). Empty otherwise: their files are gone then."""
        return [] if self.unproven else [p for p in self.tests if self.store.exists(p)]

    def drop_tests(self) -> None:
        """Remove the test files the steps wrote: no step's tests vouch for the modules as drafted."""
        for path in self.tests:
            if self.store.exists(path):
                self.store.delete(path)
        self.tests = []

    async def _step(self, path: str, code: str, step: Step) -> str:
        """The control unit's step that writes module ``path``; returns its summary. What it wrote besides the
        module is put back as it was (other modules; its new tests are kept only while every step passed, see
        :meth:`steps_tests`), but new modules, which the draft may import; so is all of it when a budget or the
        provider stops the run in the step."""
        assert self.drafts.run is not None
        store = self.store
        before = store.snapshot()
        passed = False
        try:
            outcome = await self.drafts.run(step)
            passed = outcome.status is StepStatus.PASSED
        finally:
            after = store.snapshot()
            for other, text in before.items():
                if other != path and after.get(other) != text:
                    self.write(other, text)
            self.tests += [p for p in store.list_files() if p not in before and is_test_file(p)]
            self.unproven = self.unproven or not passed
            if self.unproven:
                self.drop_tests()
            self.put(path, code, after.get(path, ""), whole=passed)
        self.turns += outcome.turns
        self.log("draft_step", module=path, status=outcome.status.value, turns=outcome.turns)
        return outcome.summary

    def put(self, path: str, code: str, draft: str, *, whole: bool = False) -> None:
        """Each given function ``draft`` implements with its given signature put in its place in ``code``, the given
        module (:func:`graft`: the rest of it stays as the task gives it), as the first answer of the agent that
        owns it (kept when it passes the task's examples of it). Those it leaves stubs, or writes with another
        signature, agents write; a draft that does not parse is not used. With ``whole`` (a step that passed drafted
        it), the draft is the module as it is, when every function of it that the task gives could be put in
        place: it is what the step's checks and tests passed with (the tests the lead then takes, see
        :meth:`steps_tests`), and what the l2mac strategy would have written; grafted, a class attribute or a
        constructor's change the draft made was lost, and the step's tests that read it failed."""
        contracts = stubs(code, path)
        try:
            grafted, placed = graft(code, draft, contracts)
        except ContractError as e:
            self.write(path, code)
            self.log("draft_unused", module=path, reason=first_line(e))
            return
        if whole and len(placed) == sum(current_code(draft, c) is not None for c in contracts):
            grafted = draft
        self.write(path, grafted)
        if placed:
            self.repair([path])
        final = self.store.read_text(path)  # as the repairs left it
        drafted = {c.key for c in contracts if current_code(final, c) is not None}
        self.drafted |= drafted
        self.log("drafted", module=path, written=len(drafted), left=len(contracts) - len(drafted))
