"""Weighing a step's code against its tests: the sampling and running half of :mod:`l2mac.consensus`.

When a step's tests fail, a small model is as likely to have written a wrong test as wrong code. A
:class:`Weigher` (one per step, so that what it learns lasts the step) samples a few more implementations of
the code file under test from the step alone, runs the tests against each in a scratch copy of the project,
keeps the implementation the most agree with, and tells the model which tests are doubtful. Used by the text
protocol's control unit (:mod:`l2mac.control_unit_text`), which owns the model, the tools and the run log.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic_ai.messages import ModelMessage

from l2mac.checks.issues import CodeIssue
from l2mac.checks.python import find_code_issues, is_test_file, module_name
from l2mac.checks.repairs import python_files, repair_written
from l2mac.checks.tests import run_tests
from l2mac.consensus import (
    Agreement,
    broken_code,
    choose,
    defined_names,
    per_test_outcomes,
    relevant_tests,
    remove_tests,
    sampled_file,
)
from l2mac.control_unit import Step
from l2mac.demands import missing_definitions, named_files, names_for_file, untested_functions
from l2mac.models.client import ContextOverflow
from l2mac.store import FileStore
from l2mac.tools import ToolEnv

if TYPE_CHECKING:
    from l2mac.control_unit_text import TextControlUnit

#: sampling temperature of the implementations that settle a dispute between code and tests
SAMPLE_TEMPERATURE = 0.8
#: implementations (the current one and samples) that must all fail a test before its expectation is questioned
MIN_IMPLEMENTATIONS_TO_QUESTION = 3


@dataclass(frozen=True)
class Settled:
    """What weighing tells the step: a note for the model, whether files changed, the file to write next, and
    the tests it removed."""

    note: str
    changed: bool
    focus: str | None
    removed: list[str] = field(default_factory=list)


@dataclass
class Weigher:
    """Weighs one step's code against its tests, remembering what it learned for the rest of the step."""

    unit: TextControlUnit
    step: Step
    verdicts: dict[str, tuple[str, Agreement]] = field(default_factory=dict)  # per project state: target, verdict
    told: set[str] = field(default_factory=set)  # tests already named to the model as doubtful
    rounds: int = 0  # sampling rounds spent

    async def seek(self, report: str) -> Settled | None:
        """The step's tests fail: tell a wrong test from wrong code by agreement.

        Implementations of the code file under test are sampled from the step alone (its tests and the file
        itself hidden), the tests are run against each in a scratch copy of the project, and the implementation
        the most agree with is kept. Returns the note for the model and whether a file was changed; None when
        there was nothing to weigh (no per-test outcomes, no usable sample, no sampling round left)."""
        unit, step = self.unit, self.step
        env = unit.toolbox.env
        store = env.store
        if unit.limits.samples <= 0 or not unit.run_tests or not env.python_checks:
            return None
        instruction = step.instruction.instruction
        named = named_files(instruction)
        code = [p for p in named if p.endswith(".py") and not is_test_file(p) and store.is_project_file(p)]
        if not code:
            return None
        snapshot = store.snapshot()
        key = hashlib.sha256(json.dumps(snapshot, sort_keys=True).encode()).hexdigest()
        if key in self.verdicts:  # the same files again: what was learned about them still holds
            target, agreement = self.verdicts[key]
            return await self._apply(target, agreement, [], {})
        if self.rounds >= unit.limits.max_agreement_rounds:
            return None
        # the step's code file with code problems, else the one the failures mention most (the first on a tie)
        broken = [p for p in broken_code(report.partition("Tests:")[0]) if p in code]
        target = broken[0] if broken else max(code, key=report.count)
        # only the tests that use the target are evidence about it (a failing test of another module fails
        # with every implementation of this one)
        module = module_name(target)
        defined = defined_names(snapshot.get(target, ""))
        relevant = {
            t for p, src in snapshot.items() if is_test_file(p) for t in relevant_tests(src, p, module, defined)
        }

        def evidence(outcomes: dict[str, bool]) -> dict[str, bool]:
            return {t: ok for t, ok in outcomes.items() if t.split("[")[0] in relevant}

        current = await asyncio.to_thread(run_tests, env.runner, store.root, env.test_timeout_s, each=True)
        base = evidence(per_test_outcomes(current.output))
        if not base or all(base.values()):
            return None  # the tests did not run one by one (collection error, timeout): nothing to weigh

        def hide(path: str) -> bool:
            return path == target or is_test_file(path)

        # the names the step gives the file are asked for by name: asked only for "the file", most samples
        # held the dataclass alone and were unusable
        owned = names_for_file(instruction, target)
        request = (
            unit.domain.render("text_request_sample", path=target, names=", ".join(owned))
            if owned
            else unit.domain.render("text_request_file", path=target)
        )
        messages = unit.fresh_context(step, feedback=request, focus=target, hide=hide)
        self.rounds += 1
        if unit.client.parallel:
            answers = await asyncio.gather(*(self._sample(messages) for _ in range(unit.limits.samples)))
        else:  # in turn: made at once, they would race for the model and take its seeds in a different order
            answers = [await self._sample(messages) for _ in range(unit.limits.samples)]
        candidates: list[str] = []
        outcomes: list[dict[str, bool]] = [base]
        for answer in answers:
            content = sampled_file(answer, target)
            if content is None or set(owned) & set(missing_definitions(instruction, {target: content})):
                continue
            run = await asyncio.to_thread(outcomes_with, env, unit.recover, snapshot, target, content)
            if run is None:
                continue
            repaired, outcome = run
            candidates.append(repaired)
            outcomes.append(evidence(outcome))
        if not candidates:
            unit.log("agreement", step=step.index, target=target, samples=len(answers), usable=0)
            return None
        agreement = choose(outcomes)
        self.verdicts[key] = (target, agreement)
        unit.log(
            "agreement",
            step=step.index,
            target=target,
            samples=len(answers),
            usable=len(candidates),
            scores=list(agreement.scores),
            chosen=agreement.chosen,
            disputed=list(agreement.disputed),
        )
        return await self._apply(target, agreement, candidates, base)

    async def _apply(
        self, target: str, agreement: Agreement, candidates: list[str], base: dict[str, bool]
    ) -> Settled | None:
        """Keep the chosen implementation; name the doubtful tests; remove those that every implementation failed
        after the model was already told and kept them (recorded in the step's outcome and the log)."""
        unit, step = self.unit, self.step
        render = unit.domain.render
        store = unit.toolbox.env.store
        notes: list[str] = []
        changed = False
        if candidates and agreement.chosen != 0:
            content = candidates[agreement.chosen - 1]
            await unit.save(step, [{"path": target, "content": content}], "agreement")
            changed = True
            notes.append(
                render(
                    "text_agreement_replaced",
                    path=target,
                    n=agreement.implementations - 1,
                    passed=len(agreement.passed),
                    before=sum(base.values()),
                    total=len(agreement.passes),
                )
            )
        # A test is doubted when the kept implementation passes some tests yet fails it, and at most half of
        # the implementations pass it; when no implementation passes any test there is no evidence either way.
        # It is removed only on stronger evidence: the model was told and kept it, no implementation passes
        # it, and at least two implementations agree on the tests they pass.
        evidence = bool(agreement.passed)
        doubted = [t for t in agreement.disputed if evidence and agreement.passes[t] * 2 <= agreement.implementations]
        consensus = agreement.supporters >= 2
        unanimous = [t for t in doubted if consensus and t in self.told and agreement.passes[t] == 0]
        self.told |= set(doubted)
        removed: list[str] = []
        for path in sorted({t.split("::")[0] for t in unanimous}):
            if not store.is_project_file(path):
                continue
            source, gone = remove_tests(store.read_text(path), unanimous)
            if gone and self.leaves_a_step_function_untested(path, source):
                unit.log("agreement_kept_last_test", step=step.index, tests=gone)
                continue
            if gone:
                await unit.save(step, [{"path": path, "content": source}], "disputed tests removed")
                removed += gone
        if removed:
            changed = True
            unit.log("recovered", step=step.index, recovery="disputed_tests_removed", tests=removed)
            notes.append(
                render(
                    "text_agreement_removed", n=agreement.implementations, tests="\n".join(f"- {t}" for t in removed)
                )
            )

        def question(prompt: str, tests: list[str], lines: list[str]) -> None:
            files = ", ".join(sorted({t.split("::")[0] for t in tests}))
            n = agreement.implementations
            notes.append(render(prompt, path=target, n=n, tests="\n".join(lines), test_files=files))

        focus: str | None = None
        if told := [t for t in doubted if t not in removed]:
            focus = told[0].split("::")[0]  # the doubted tests' file is the one to write next
            question("text_agreement_disputed", told, [f"- {t}: passed by {agreement.passes[t]} of them" for t in told])
        # With no evidence either way (no implementation passes any test) the tests are not doubted, but when
        # several implementations all fail a test, its expectation is worth checking (seen: a test expecting
        # main() to raise SystemExit, kept through five attempts while the CLI returned 0 as the step asked).
        unpassed = [t for t in agreement.disputed if agreement.passes[t] == 0]
        if not evidence and unpassed and agreement.implementations >= MIN_IMPLEMENTATIONS_TO_QUESTION:
            focus = unpassed[0].split("::")[0]
            question("text_agreement_none_pass", unpassed, [f"- {t}" for t in unpassed])
        if not notes:
            return None
        return Settled("\n\n".join(notes), changed, focus, removed)

    def leaves_a_step_function_untested(self, path: str, source: str) -> bool:
        """Whether ``path`` becoming ``source`` would leave a function the step names with no test: such a test
        is never removed, however the samples agree (seen: the CLI step's only test of main() removed)."""
        instruction = self.step.instruction.instruction
        code = [p for p in named_files(instruction) if p.endswith(".py") and not is_test_file(p)]
        sources = python_files(self.unit.toolbox.env.store)
        before = untested_functions(instruction, code, sources)
        return untested_functions(instruction, code, {**sources, path: source}) != before

    async def _sample(self, messages: list[ModelMessage]) -> str:
        try:
            response = await self.unit.client.request(
                messages, [], purpose=f"step {self.step.index} sample", temperature=SAMPLE_TEMPERATURE
            )
        except ContextOverflow:
            return ""
        return response.text or ""


def outcomes_with(
    env: ToolEnv, recover: bool, snapshot: dict[str, str], target: str, content: str
) -> tuple[str, dict[str, bool]] | None:
    """The tests run, one by one, in a scratch copy of the project whose ``target`` is ``content`` (after the
    same repairs a written file gets, when ``recover``); the repaired content and the outcomes, or None if no
    test ran. The project itself is untouched."""
    with tempfile.TemporaryDirectory(prefix="l2mac-sample-") as tmp:
        scratch = FileStore(Path(tmp))
        for path, text in {**snapshot, target: content}.items():
            scratch.write_text(path, text)

        def check(paths: list[str]) -> list[CodeIssue]:
            return find_code_issues(scratch.root, scratch.list_files(), only=paths, types=False)

        if recover:
            repair_written(scratch, check, [target], lambda recovery, **fields: None)
        outcome = per_test_outcomes(run_tests(env.runner, scratch.root, env.test_timeout_s, each=True).output)
        return (scratch.read_text(target), outcome) if outcome else None
