"""Agreement: weighing a step's code against its tests by sampled implementations (the choosing is
:mod:`l2mac.checks.consensus`).

When a step's tests fail, a model (a small one above all) is as likely to have written a wrong test as wrong
code. A :class:`Weigher` (one per step, so that what it learns lasts the step) samples a few more
implementations of the code file under test from the step alone, runs the tests against each in a scratch copy
of the project, keeps the implementation the most agree with, and tells the model which tests are doubtful. It
is given what it needs: the model client, the tools' environment, the prompt set, how to ask for a file, how
to save one and where to log.
"""

from __future__ import annotations

import ast
import asyncio
import hashlib
import json
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field, replace
from functools import partial
from types import MappingProxyType
from typing import NamedTuple, TypeVar

from pydantic_ai.messages import ModelMessage

from l2mac.checks.consensus import (
    Agreement,
    broken_code,
    callers,
    choose,
    defined_names,
    reaching_tests,
    relevant_tests,
    remove_statement,
    remove_tests,
    sampled_file,
    unevidenced,
)
from l2mac.checks.demands import missing_definitions, named_files, names_for_file, untested_functions
from l2mac.checks.env import ToolEnv
from l2mac.checks.examples import Example, run_examples, task_examples
from l2mac.checks.issues import CodeIssue
from l2mac.checks.layout import is_test_file, module_name
from l2mac.checks.python import defined_at_top_level, find_code_issues
from l2mac.checks.repairs import python_files, repair_written, with_functions_of
from l2mac.checks.tests import failure_lines, failure_messages, per_test_outcomes
from l2mac.concurrency import together
from l2mac.domains import Domain
from l2mac.journal import request_key
from l2mac.models.client import ContextOverflow, ModelClient
from l2mac.store import FileStore, scratch_copy


class Asked(NamedTuple):
    """A request for one file from the step alone: its messages; what makes the file from the answer when the
    request begins the answer itself (else None: the answer's block); the text the answer is given where the
    model would copy it (see ``ModelClient.request``)."""

    messages: list[ModelMessage]
    finish: Callable[[str], str | None] | None = None
    given: Mapping[str, str] = MappingProxyType({})


#: asks for one file for a sample: (path, request, which files to hide, which functions' given bodies to withhold,
#: whether the answer may be begun inside the file)
AskForFile = Callable[[str, str, Callable[[str], bool], tuple[str, ...], bool], Asked]
#: saves one file for the step, as a write the model did not ask for: (path, content, why)
SaveFile = Callable[[str, str, str], Awaitable[None]]

_T = TypeVar("_T")

#: sampling temperature of the implementations that settle a dispute between code and tests
SAMPLE_TEMPERATURE = 0.8
#: the temperature of the one implementation written whole, as one call would write it (see ``_whole``)
WHOLE_TEMPERATURE = 0.0
#: implementations (the current one and samples) that must all fail a test before its expectation is questioned
MIN_IMPLEMENTATIONS_TO_QUESTION = 3
#: failing statements dropped from the last test of a function the step names, in place of the whole test
MAX_PRUNED_STATEMENTS = 8


@dataclass(frozen=True)
class Settled:
    """What weighing tells the step: a note for the model, whether files changed, the file to write next, and
    the tests it removed."""

    note: str
    changed: bool
    focus: str | None
    removed: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class AgreementLimits:
    #: implementations sampled when the tests fail (0: agreement off)
    samples: int = 3
    #: sampling rounds per step
    rounds: int = 2


@dataclass
class Weigher:
    """Weighs one step's code against its tests, remembering what it learned for the rest of the step."""

    client: ModelClient
    env: ToolEnv
    domain: Domain
    instruction: str
    ask: AskForFile
    save: SaveFile
    log: Callable[..., None]
    limits: AgreementLimits = AgreementLimits()
    recover: bool = True
    label: str = "step"  # names the samples' requests in the run log
    task: str = ""  # the whole task, whose stated examples hold too
    verdicts: dict[str, tuple[str, Agreement]] = field(default_factory=dict)  # per project state: target, verdict
    told: set[str] = field(default_factory=set)  # tests already named to the model as doubtful
    rounds: int = 0  # sampling rounds spent
    barren: set[str] = field(default_factory=set)  # sample requests that gave no usable implementation
    pool: dict[str, list[str]] = field(default_factory=dict)  # per sample request, the answers it was given

    async def seek(self, report: str) -> Settled | None:
        """The step's tests fail: tell a wrong test from wrong code by agreement.

        Implementations of the code file under test are sampled from the step alone (its tests and the file
        itself hidden), the tests are run against each in a scratch copy of the project, and the implementation
        the most agree with is kept. Returns the note for the model and whether a file was changed; None when
        there was nothing to weigh (no per-test outcomes, no usable sample, no sampling round left)."""
        env = self.env
        store = env.store
        if self.limits.samples <= 0 or not env.python_checks:
            return None
        instruction = self.instruction
        named = named_files(instruction)
        code = [p for p in named if p.endswith(".py") and not is_test_file(p) and store.is_project_file(p)]
        if not code:
            return None
        snapshot = store.snapshot()
        key = hashlib.sha256(json.dumps(snapshot, sort_keys=True).encode()).hexdigest()
        if key in self.verdicts:  # the same files again: what was learned about them still holds
            target, agreement = self.verdicts[key]
            return await self._apply(target, agreement, [], {})
        if self.rounds >= self.limits.rounds:
            return None
        target = _target(report, code)
        relevant = _relevant(snapshot, target)

        def evidence(outcomes: dict[str, _T]) -> dict[str, _T]:
            return {t: ok for t, ok in outcomes.items() if t.split("[")[0] in relevant}

        current = await asyncio.to_thread(partial(env.test_run, each=True))
        base = evidence(per_test_outcomes(current.output))
        if not base or all(base.values()):
            return None  # the tests did not run one by one (collection error, timeout): nothing to weigh
        self.rounds += 1
        # the task's examples of what the file under weighing defines: another file's failing example says
        # nothing of this one's code or tests
        examples = [e for e in task_examples(instruction, self.task) if _defines(snapshot.get(target, ""), e.owner)]
        now = await asyncio.to_thread(run_examples, examples, store, env.runner, env.python, env.test_timeout_s)
        # a function failing the task's own examples: the body the step gives it is what failed, so the samples
        # are not shown it (seen: every sample copied the plan's wrong body and "agreed" with the code)
        failing = tuple(name for name, _ in now.failed) if now is not None else ()
        # a test named to the model as doubtful that still fails may be removed this round: on fresh evidence only
        fresh = any(t in self.told and not ok for t, ok in base.items())
        sampled = await self._implementations(snapshot, target, examples, failing, fresh)
        candidates = [s.content for s in sampled]
        if not sampled:
            self.log("agreement", target=target, samples=self.limits.samples, usable=0)
            return None
        messages = [evidence(failure_messages(current.output)), *(evidence(s.failures) for s in sampled)]
        # the task's own examples outrank the model's tests: an implementation that passes more of them is kept;
        # and a sample with more code problems than the code it would replace is not kept on the tests alone,
        # since the step's checks would fail on it (seen on ClassEval_8 at 350e515: four implementations agreed
        # on 2 of 4 tests, and the one kept over the code passing 3 had a deposit() that returned nothing where
        # its docstring says it returns the balance). Among those the tests score alike, the fewest problems
        # win, the code's counted as the samples' are (seen on ClassEval_28 at 76d8de1: the code used another
        # method's local variables, undefined names; a sample without them passed the very tests the code
        # passed, and the tie kept the code, which the step never mended)
        tried = now.tried if now is not None else 0
        own, own_broken = await asyncio.to_thread(own_problems, env, self.recover, snapshot, target)
        rank = [
            (tried - len(now.failed) if now is not None else 0, 0),
            *((s.examples_passed, -max(0, s.problems - own)) for s in sampled),
        ]
        problems = [own, *(s.problems for s in sampled)]
        agreement = choose([base, *(evidence(s.outcomes) for s in sampled)], messages, rank, problems)
        if tried and rank[agreement.chosen][0] < tried:
            # even the implementation kept fails the task's own examples: that code is wrong, whatever the tests
            # of it say (seen: every sample copied the wrong body the plan gave, and the right test was removed).
            # Only its tests are not doubted: those of the functions whose examples pass still are (seen on
            # ClassEval_1 at 9e7c0bc: the cylinder's example failed in every sample, and the tests expecting
            # round(area, 5) to equal the unrounded area of the circle and the sphere were never doubted)
            kept = candidates[agreement.chosen - 1] if agreement.chosen else snapshot.get(target, "")
            missed = [failing, *(s.examples_failed for s in sampled)][agreement.chosen]
            wrong = callers(kept, {_used_as(name) for name in missed})
            of_wrong = reaching_tests(snapshot, agreement.disputed, wrong)
            agreement = replace(
                agreement,
                disputed=tuple(t for t in agreement.disputed if t not in of_wrong),
                agreed={t: m for t, m in agreement.agreed.items() if t not in of_wrong},
            )
        if agreement.chosen:
            chosen = sampled[agreement.chosen - 1]
            spliced = await self._least_change(snapshot, target, examples, base, failing, own_broken, chosen, evidence)
            if spliced is not None:
                candidates[agreement.chosen - 1] = spliced
        self.verdicts[key] = (target, agreement)
        self.log(
            "agreement",
            target=target,
            samples=self.limits.samples,
            usable=len(candidates),
            scores=list(agreement.scores),
            problems=problems,
            chosen=agreement.chosen,
            disputed=list(agreement.disputed),
            agreed=dict(agreement.agreed),
        )
        return await self._apply(target, agreement, candidates, base)

    async def _least_change(
        self,
        snapshot: dict[str, str],
        target: str,
        examples: list[Example],
        base: dict[str, bool],
        failing: tuple[str, ...],
        own_broken: set[str],
        chosen: Sampled,
        evidence: Callable[[dict[str, bool]], dict[str, bool]],
    ) -> str | None:
        """The chosen sample with the code's own version of each function it changes that no evidence telling
        the two apart reaches (a test whose outcome differs, an example whose verdict differs, a problem the
        checks find in the code's version), when that
        passes the same tests, as many examples and has no more problems; else None (the sample is kept whole).
        A sample is chosen for the functions the evidence sees; it was written whole, and its other functions
        differ from the code's by chance: with nothing to tell them apart, the code's stay (seen on ClassEval_37
        at 7e7b24c: a sample kept for its rail_fence_cipher, which passed its example, also replaced a right
        caesar_cipher with one that kept only lowercase letters; both passed every test and example of it)."""
        incumbent = snapshot.get(target, "")
        outcomes = evidence(chosen.outcomes)
        tests = [t for t in {*base, *outcomes} if base.get(t) != outcomes.get(t)]
        told_apart = {_used_as(name) for name in set(failing) ^ set(chosen.examples_failed)}
        # a function in which the checks find a problem in the code is told apart too (seen on ClassEval_37 at
        # 507476a: a sample chosen for having no problem, where the code had one, was kept whole)
        told_apart |= own_broken
        keep = unevidenced(incumbent, chosen.content, snapshot, tests, told_apart)
        if not keep:
            return None
        spliced = with_functions_of(chosen.content, incumbent, set(keep))
        if spliced is None:
            return None
        env = self.env
        run = await asyncio.to_thread(outcomes_with, env, self.recover, snapshot, target, spliced, examples)
        if (
            run is None
            or evidence(run.outcomes) != outcomes
            or run.examples_passed < chosen.examples_passed
            or run.problems > chosen.problems
        ):
            self.log("agreement_spliced", target=target, kept=[".".join(filter(None, k)) for k in keep], held=False)
            return None
        self.log("agreement_spliced", target=target, kept=[".".join(filter(None, k)) for k in keep], held=True)
        return run.content

    async def _implementations(
        self,
        snapshot: dict[str, str],
        target: str,
        examples: list[Example],
        withheld: tuple[str, ...] = (),
        fresh: bool = False,
    ) -> list[Sampled]:
        """Sampled implementations of ``target`` written from the step alone (the file and the tests hidden, and
        the bodies the step gives the functions ``withheld``) that define what the step gives it, each (repaired
        as a written file is) as the tests, the task's ``examples`` and the checks found it. A request asked
        before weighs its answers again with one new one, or with as many new ones as a first round
        (``fresh``) when a test may be removed on them."""

        def hide(path: str) -> bool:
            return path == target or is_test_file(path)

        # the names the step gives the file are asked for by name: asked only for "the file", most samples
        # held the dataclass alone and were unusable
        owned = names_for_file(self.instruction, target)
        request = (
            self.domain.render("text_request_sample", path=target, names=", ".join(owned))
            if owned
            else self.domain.render("text_request_file", path=target)
        )
        messages, finish, given = self.ask(target, request, hide, withheld, True)
        asked = request_key(messages, "sample")
        if asked in self.barren:  # the very request gave nothing usable before (seen: 7 rounds, none of use)
            self.log("agreement_skipped", target=target, reason="the same sample request gave no usable sample")
            return []
        # the very request of an earlier round: its answers are weighed again, against the tests as they are now,
        # with one more (seen on ClassEval at 9e7c0bc: every second round sent its first round's request, threw
        # that round's samples away and drew three more, 2,839 s in 12 rounds; 2 of them chose a new sample); but
        # a test the model was told of is removed only when new samples fail it too, as many as doubted it
        pooled = self.pool.setdefault(asked, [])
        wanted = 1 if pooled and not fresh else self.limits.samples
        if self.client.parallel:
            drawn = await together(self._sample(messages, given) for _ in range(wanted))
        else:  # in turn: made at once, they would race for the model and take its seeds in a different order
            drawn = [await self._sample(messages, given) for _ in range(wanted)]
        answers = [(answer, finish) for answer in [*pooled, *drawn]]
        pooled += drawn
        if finish is not None:  # begun inside the file: one more written whole, after them (last on a tie)
            answers.append((await self._whole(target, request, hide, withheld), None))
        sampled: list[Sampled] = []
        for answer, made in answers:
            content = made(answer) if made is not None else sampled_file(answer, target)
            if content is None or set(owned) & set(missing_definitions(self.instruction, {target: content})):
                continue
            run = await asyncio.to_thread(outcomes_with, self.env, self.recover, snapshot, target, content, examples)
            if run is not None:
                sampled.append(run)
        if not sampled:
            self.barren.add(asked)
        return sampled

    async def _apply(
        self, target: str, agreement: Agreement, candidates: list[str], base: dict[str, bool]
    ) -> Settled | None:
        """Keep the chosen implementation; name the doubtful tests; remove those that every implementation failed
        after the model was already told and kept them (recorded in the step's outcome and the log)."""
        render = self.domain.render
        notes: list[str] = []
        changed = False
        if candidates and agreement.chosen != 0:
            content = candidates[agreement.chosen - 1]
            await self.save(target, content, "agreement")
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
        # Implementations that fail a test the same way (``assert 14 == 36`` from the current code and two more)
        # agree on what the code does, which is evidence too (seen: a sphere function's only test expecting 36
        # for [-1, -2, -3]; the implementations returned 14, and the step failed on the test).
        evidence = bool(agreement.passed)
        enough = agreement.implementations >= MIN_IMPLEMENTATIONS_TO_QUESTION
        alike = [t for t in agreement.disputed if enough and t in agreement.agreed]
        doubted = [
            t
            for t in agreement.disputed
            if (evidence and agreement.passes[t] * 2 <= agreement.implementations) or t in alike
        ]
        consensus = agreement.supporters >= 2
        unanimous = [t for t in doubted if consensus and t in self.told and agreement.passes[t] == 0]
        self.told |= set(doubted)
        gone, removed = await self._remove(unanimous)
        if removed:
            changed = True
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
        if told := [t for t in doubted if t not in gone]:
            focus = told[0].split("::")[0]  # the doubted tests' file is the one to write next
            lines = [
                f"- {t}: every one of them fails it with `{agreement.agreed[t]}`"
                if t in alike
                else f"- {t}: passed by {agreement.passes[t]} of them"
                for t in told
            ]
            question("text_agreement_disputed", told, lines)
        # With no evidence either way (no implementation passes any test) the tests are not doubted, but when
        # several implementations all fail a test, its expectation is worth checking (seen: a test expecting
        # main() to raise SystemExit, kept through five attempts while the CLI returned 0 as the step asked).
        unpassed = [t for t in agreement.disputed if agreement.passes[t] == 0 and t not in alike]
        if not evidence and unpassed and agreement.implementations >= MIN_IMPLEMENTATIONS_TO_QUESTION:
            focus = unpassed[0].split("::")[0]
            question("text_agreement_none_pass", unpassed, [f"- {t}" for t in unpassed])
        if not notes:
            return None
        return Settled("\n\n".join(notes), changed, focus, removed)

    async def _remove(self, tests: list[str]) -> tuple[list[str], list[str]]:
        """Remove ``tests`` from their files: the ids of the tests taken out or pruned, and what was removed (a
        test's id, or its id and the statement dropped from it). The last test of a function or method the step
        names is never removed whole: only its failing checks are, when what is left of it then passes."""
        store = self.env.store
        touched: list[str] = []
        removed: list[str] = []
        for path in sorted({t.split("::")[0] for t in tests}):
            if not store.is_project_file(path):
                continue
            source = store.read_text(path)
            for test in (t for t in tests if t.split("::")[0] == path):
                without, gone = remove_tests(source, [test])
                if gone and not self.leaves_a_step_function_untested(path, without):
                    source = without
                    removed += gone
                elif gone:
                    source, dropped = await asyncio.to_thread(self._prune, path, source, test)
                    removed += [f"{test}: {text}" for text in dropped]
                    if not dropped:
                        self.log("agreement_kept_last_test", tests=[test])
                        continue
                touched += gone
            if not store.has_text(path, source):
                await self.save(path, source, "disputed tests removed")
        if removed:
            self.log("recovered", recovery="disputed_tests_removed", tests=removed)
        return touched, removed

    def _prune(self, path: str, source: str, test: str) -> tuple[str, list[str]]:
        """``source`` (of test file ``path``) without the checks of ``test`` that fail, one at a time, while what
        is left still asserts something; with the checks dropped. Unchanged (and nothing dropped) unless what is
        left passes: a test is never left half-pruned and still failing."""
        env = self.env
        dropped: list[str] = []
        pruned = source
        with scratch_copy(env.store.snapshot(), "l2mac-prune-", opaque_from=env.store) as scratch:
            for _ in range(MAX_PRUNED_STATEMENTS + 1):
                scratch.write_text(path, pruned)
                run = env.test_run(scratch.root, [test])
                if run.ok:
                    return pruned, dropped
                if run.status != "failed" or len(dropped) == MAX_PRUNED_STATEMENTS:
                    break
                lines = failure_lines(run.output, path)
                cut = next((c for line in lines if (c := remove_statement(pruned, test, line))), None)
                if cut is None:
                    break
                pruned = cut[0]
                dropped.append(" ".join(cut[1].split())[:200])
        return source, []

    def leaves_a_step_function_untested(self, path: str, source: str) -> bool:
        """Whether ``path`` becoming ``source`` would leave a function or method the step names with no test:
        such a test is never removed, however the samples agree (seen: the CLI step's only test of main()
        removed; on ClassEval_34 at ec0ff1d, the only tests of four of a class's five methods, all failing on
        the document file they opened and never wrote, removed, and the step passed on the one test left)."""
        instruction = self.instruction
        code = [p for p in named_files(instruction) if p.endswith(".py") and not is_test_file(p)]
        sources = python_files(self.env.store)
        before = untested_functions(instruction, code, sources, methods=True)
        return untested_functions(instruction, code, {**sources, path: source}, methods=True) != before

    async def _whole(self, target: str, request: str, hide: Callable[[str], bool], withheld: tuple[str, ...]) -> str:
        """An implementation of ``target`` written whole from the step alone, at temperature 0: what one call
        given the same information writes, asked once per request. The samples begun inside the file are the
        small model's better answers on the whole, but not on every task; this one keeps the step's choice from
        being worse than one call where the evidence shows it (seen on ClassEval_37 at 5fff897: one call wrote
        a class passing all 18 hidden tests; the step's draft and its three samples, begun inside the class,
        each used another method's local variable or failed the docstring's examples, and the step failed)."""
        messages, _, given = self.ask(target, request, hide, withheld, False)
        if not messages:  # not asked for whole (a module that was there before the step)
            return ""
        asked = request_key(messages, "whole")
        if asked not in self.pool:
            self.pool[asked] = [await self._sample(messages, given, WHOLE_TEMPERATURE, "whole")]
        return self.pool[asked][0]

    async def _sample(
        self,
        messages: list[ModelMessage],
        given: Mapping[str, str],
        temperature: float = SAMPLE_TEMPERATURE,
        kind: str = "sample",
    ) -> str:
        try:
            response = await self.client.request(
                messages, [], purpose=f"{self.label} {kind}", temperature=temperature, given=given
            )
        except ContextOverflow:
            return ""
        return response.text or ""


def _target(report: str, code: list[str]) -> str:
    """The step's code file to weigh: the one with code problems, else the one the failures mention most (the
    first on a tie)."""
    broken = [p for p in broken_code(report.partition("Tests:")[0]) if p in code]
    return broken[0] if broken else max(code, key=report.count)


def _relevant(snapshot: dict[str, str], target: str) -> set[str]:
    """The tests that use ``target``: only they are evidence about it (a failing test of another module fails
    with every implementation of this one)."""
    module = module_name(target)
    defined = defined_names(snapshot.get(target, ""))
    return {t for p, src in snapshot.items() if is_test_file(p) for t in relevant_tests(src, p, module, defined)}


@dataclass(frozen=True)
class Sampled:
    """An implementation as the tests and the task's examples found it."""

    content: str  # as repaired
    outcomes: dict[str, bool]
    failures: dict[str, str]  # the failed tests' messages
    examples_passed: int = 0
    examples_failed: tuple[str, ...] = ()  # whose examples (``Class.method``) it fails
    problems: int = 0  # code problems the checks find in it (those that fail a step)


def outcomes_with(
    env: ToolEnv,
    recover: bool,
    snapshot: dict[str, str],
    target: str,
    content: str,
    examples: list[Example] | None = None,
) -> Sampled | None:
    """The tests (and the task's ``examples``) run, one by one, in a scratch copy of the project whose
    ``target`` is ``content`` (after the same repairs a written file gets, when ``recover``), or None if no test
    ran. The project itself is untouched."""
    with scratch_copy({**snapshot, target: content}, "l2mac-sample-", opaque_from=env.store) as scratch:
        problems = _repaired_problems(scratch, target, recover)
        output = env.test_run(scratch.root, each=True).output
        outcome = per_test_outcomes(output)
        if not outcome:
            return None
        run = run_examples(examples, scratch, env.runner, env.python, env.test_timeout_s) if examples else None
        passed, failed = (run.tried - len(run.failed), tuple(n for n, _ in run.failed)) if run else (0, ())
        return Sampled(scratch.read_text(target), outcome, failure_messages(output), passed, failed, problems)


def problems_with(env: ToolEnv, recover: bool, snapshot: dict[str, str], target: str) -> int:
    """The code problems of ``target`` as the project holds it, counted as a sample's are (see :func:`own_problems`)."""
    return own_problems(env, recover, snapshot, target)[0]


def own_problems(env: ToolEnv, recover: bool, snapshot: dict[str, str], target: str) -> tuple[int, set[str]]:
    """The code problems of ``target`` as the project holds it, counted as a sample's are: in a scratch copy,
    after the repairs a written file gets (code changed by an edit was never repaired, and a missing import
    the repairs add is no problem in a sample); and the functions (by name) they are in: evidence against each,
    as a failing test is."""
    with scratch_copy(snapshot, "l2mac-own-", opaque_from=env.store) as scratch:
        issues = _repaired_issues(scratch, target, recover)
        source = scratch.read_text(target)
    lines = {issue.line for issue in issues}
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return len(issues), set()
    functions = (ast.FunctionDef, ast.AsyncFunctionDef)
    holding = {
        n.name
        for n in ast.walk(tree)
        if isinstance(n, functions) and any(n.lineno <= line <= (n.end_lineno or n.lineno) for line in lines)
    }
    return len(issues), holding


def _repaired_problems(scratch: FileStore, target: str, recover: bool) -> int:
    """The code problems in ``target`` that fail a step, after the repairs a written file gets (``recover``)."""
    return len(_repaired_issues(scratch, target, recover))


def _repaired_issues(scratch: FileStore, target: str, recover: bool) -> list[CodeIssue]:
    """The code problems in ``target`` that fail a step, after the repairs a written file gets (``recover``)."""

    def check(paths: list[str]) -> list[CodeIssue]:
        return find_code_issues(scratch.root, scratch.list_files(), only=paths, types=False)

    if recover:
        repair_written(scratch, check, [target], lambda recovery, **fields: None)
    return [issue for issue in check([target]) if issue.blocking]


def _used_as(example: str) -> str:
    """The name code and tests use the function an example is of (``Class.method``, ``function``) by: its own,
    but a special method's (``__init__``, ``__eq__``) is used through its class (``Class(...)``, ``a == b``)."""
    owner, _, name = example.rpartition(".")
    return owner if owner and name.startswith("__") and name.endswith("__") else name


def _defines(source: str, name: str) -> bool:
    """Whether ``source`` defines ``name`` at its top level."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return False
    return name in defined_at_top_level(tree)
