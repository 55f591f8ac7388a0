"""The step's checks, in one verdict: the project's checks (syntax, lint, imports, types, tests), what the step
asks for and the project still lacks (:mod:`l2mac.checks.demands`), what the step broke that worked when it
began (:mod:`l2mac.checks.regressions`), and, when its tests fail, agreement between its code and its tests
(:mod:`l2mac.checks.agreement`).

A :class:`StepChecks` is made once per step, so what it measured when the step began and what agreement learned
last the step. It is given what it needs (the tools' environment, the prompt set, how to save a file, where to
log), never the control unit.
"""

from __future__ import annotations

import asyncio
import hashlib
import re
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace
from functools import partial

from l2mac.checks.agreement import Settled, Weigher
from l2mac.checks.consensus import weighable
from l2mac.checks.demands import (
    invented_attributes,
    mentioned_files,
    missing_definitions,
    named_files,
    stubbed,
    undefined_calls,
    untested_functions,
    untested_modules,
)
from l2mac.checks.env import ToolEnv
from l2mac.checks.examples import Example, run_examples, task_examples
from l2mac.checks.layout import is_test_file, module_name
from l2mac.checks.litter import hard_coded, move_under_tmp_path, pass_tmp_path, path_parameter
from l2mac.checks.readme import README, readme_commands
from l2mac.checks.regressions import Baseline, find_regression, step_names
from l2mac.checks.repairs import project_trees, python_files, rewrite
from l2mac.checks.serve import serve_check
from l2mac.checks.setups import (
    call_setup,
    lacking_tables,
    sharing_first_parameter,
    table_makers,
    tables_made_first,
)
from l2mac.checks.tests import TestRun, deselected
from l2mac.checks.usage import lacking_commands, project_commands
from l2mac.domains import Domain
from l2mac.types import Instruction

#: what failed before a step and is recorded in its outcome, at most (a repository can have thousands)
MAX_INHERITED = 50
_FIRST_PROBLEM = re.compile(r"^(\w[\w./-]*\.py):\d+", re.MULTILINE)  # a project file: not /usr/lib/..., not ../


#: an instruction that asks for the commands a user types (a README's install, test and run commands)
_COMMANDS = re.compile(r"\bcommands?\b", re.IGNORECASE)


@dataclass(frozen=True, kw_only=True)
class Standing:
    """How far the project is from passing the step's checks, in stages: files that do not parse, then what the
    step still lacks and blocking problems (code problems, a failed install), then the examples the task gives,
    then its tests (whether they all pass; else whether they ran one by one, and how many passed and failed, with
    a digest of the test files), then whether a program that serves answered."""

    #: Python files that do not parse. First, since nothing in them can run: their examples are not run (so not
    #: counted as failing) and their tests are not collected. Seen on ClassEval_17 at 83ddd40: a file with a
    #: pasted traceback in it (1 problem, its 6 examples unrun) ranked above the step's first code (2 undefined
    #: names, 2 of 6 examples failing) and was kept; it scored 0 of 29 hidden tests.
    unparsed: int = 0
    lacking: int = 0
    problems: int = 0
    examples_failing: int = 0  # docstrings whose examples, the task's own, fail
    green: bool = True  # the tests all pass (or none are required)
    ran: bool = True  # the tests ran and were counted (not a timeout, a collection error, or none collected)
    passed: int = 0
    failing: int = 0
    tests: str = ""
    code: str = ""  # a digest of the project's other files: which code the tests ran against
    served: bool = True  # a program that serves answered (or there is none, or it was not tried)

    def better_than(self, other: Standing) -> bool:
        """Better at the first stage where the two differ. Test counts compare only between states with the
        same tests: a test bent to wrong code passes too."""
        if self.unparsed != other.unparsed:
            return self.unparsed < other.unparsed
        mine, theirs = self.lacking + self.problems, other.lacking + other.problems
        if mine != theirs:
            return mine < theirs
        if self.examples_failing != other.examples_failing:  # the task's examples before the model's own tests
            return self.examples_failing < other.examples_failing
        if self.green != other.green:
            return self.green
        if not self.green and self.tests == other.tests:
            counts, others = (self.ran, self.passed, -self.failing), (other.ran, other.passed, -other.failing)
            if counts != others:
                return counts > others
        if not self.green and self.code == other.code and self.tests != other.tests and self.ran and other.ran:
            # the same code under rewritten tests, as many or more of them, more passing: the tests' own errors
            # fixed, no code bent to them (seen on the notes API at 7c5de5d: a test file whose len(response)
            # was fixed, 6 of 8 passing, was put back to the one with 3 of 8)
            more = self.passed > other.passed and self.failing <= other.failing
            if more and self.passed + self.failing >= other.passed + other.failing:
                return True
        return self.served and not other.served

    def closer_than(self, other: Standing) -> bool:
        """Closer to passing, for whether a step is moving: better, or with the same code problems and examples
        but other tests, of which more pass or fewer fail (:meth:`better_than` compares counts only between the
        same tests, since a bent test passes too; a rewritten test file that passes more is still progress)."""
        if self.better_than(other):
            return True
        stage = (self.unparsed, self.lacking + self.problems, self.examples_failing)
        theirs = (other.unparsed, other.lacking + other.problems, other.examples_failing)
        if stage != theirs or self.tests == other.tests:
            return False
        return self.passed > other.passed or self.failing < other.failing


@dataclass(frozen=True)
class Verdict:
    """What the checks found: ``report`` (empty when they pass), ``notes`` that say what else to do, the file
    to look at first, and what the checks changed themselves (files put back, tests agreement removed)."""

    ok: bool
    report: str
    notes: tuple[str, ...] = ()
    restored: str = ""  # the note saying which earlier files were put back, if any
    focus: str | None = None
    removed: tuple[str, ...] = ()
    standing: Standing = Standing()
    #: agreement weighed the failing tests against sampled code and found the tests the likelier wrong
    tests_doubted: bool = False
    #: the task's examples that fail, by whose they are (``function`` or ``Class.method``)
    examples_failed: tuple[str, ...] = ()
    #: those examples themselves
    failing_examples: tuple[Example, ...] = ()

    @property
    def first_file(self) -> str | None:
        """The file the report's first problem names."""
        found = _FIRST_PROBLEM.search(self.report)
        return found.group(1) if found else None


class StepChecks:
    """The checks of one step."""

    def __init__(
        self,
        env: ToolEnv,
        domain: Domain,
        instruction: Instruction,
        *,
        run_tests: bool,
        recover: bool,
        save: Callable[[str, str, str], Awaitable[None]],
        log: Callable[..., None],
        weigher: Weigher | None = None,
        held_by_own: bool = True,
        task: str = "",
    ) -> None:
        self.env, self.domain, self.instruction = env, domain, instruction
        self.run_tests, self.recover = run_tests and domain.tests, recover
        self.held_by_own = held_by_own  # held only by what the step made worse (see _new_failures)
        self.save, self.log, self.weigher = save, log, weigher
        self.named = named_files(instruction.instruction)
        snapshot = env.store.snapshot()
        names = step_names(instruction.instruction, snapshot)
        self.baseline = Baseline(snapshot, set(self.named), env.store, names)
        self.removed: list[str] = []  # tests agreement removed in this step: not missed as regressions
        self.examples = task_examples(instruction.instruction, task) if env.python_checks and run_tests else []
        self.standing = Standing()  # of the project when the checks last ran
        self.examples_report = ""  # the part of the last report on the task's failing examples
        self.examples_failed: tuple[str, ...] = ()  # whose they are
        self.examples_need: dict[str, str] = {}  # docstrings left out, each with the file it reads and none made
        #: tests (ids, or files that did not import) of other files that failed when the step began, left out
        #: of its test runs once measured; None until a run fails
        self.inherited_tests: tuple[str, ...] | None = None
        self.inherited_problems: list[str] = []  # code problems the project had when the step began, as found

    async def verdict(self) -> Verdict:
        """Run every check; put back what the step broke, and weigh failing tests, before judging."""
        ok, report = await self._run_logged()
        restored = await self._undo_regressions(report) if not ok else ""
        if restored:
            ok, report = await self._run_logged()
        agreed: Settled | None = None
        weigh = weighable(report, self.named, self.examples_report)
        if not ok and self.weigher is not None and self.run_tests and weigh:
            agreed = await self.weigher.seek(report)
            if agreed is not None and agreed.changed:  # a file was changed: check again
                ok, report = await self._run_logged()
        notes, focus = ([], None) if ok else self._failure_notes(report)
        if agreed is not None:
            notes.append(agreed.note)
            focus = agreed.focus if not ok and agreed.focus else focus
        removed = tuple(agreed.removed) if agreed is not None else ()
        self.removed += removed
        doubted = agreed is not None and agreed.focus is not None and is_test_file(agreed.focus)
        failed = () if ok else self.examples_failed
        held = tuple(e for e in self.examples if e.name in failed)
        return Verdict(
            ok, "" if ok else report, tuple(notes), restored, focus, removed, self.standing, doubted, failed, held
        )

    # -- the checks --------------------------------------------------------------------------------------
    async def _run_logged(self) -> tuple[bool, str]:
        """The checks, logged with how long they took and what the tests came to."""
        started = time.monotonic()
        ok, report = await asyncio.to_thread(self.run)
        s = self.standing
        self.log(
            "checks",
            ok=ok,
            report=report[:2000],
            seconds=round(time.monotonic() - started, 3),
            tests_passed=s.passed,
            tests_failing=s.failing,
            problems=s.problems + s.lacking,
            examples_failing=s.examples_failing,
            **({"examples_need_files": self.examples_need} if self.examples_need else {}),
        )
        return ok, report

    def run(self) -> tuple[bool, str]:
        """The project's checks, then what the step itself still lacks: its files, the definitions it names, a
        test of each module it writes and of each function it names."""
        ok, report = self.project()
        lacking = self._lacking()
        self.standing = replace(self.standing, lacking=len(lacking))
        if lacking:
            ok, report = False, "\n\n".join([*lacking, report]).strip()
        return ok, report

    def project(self) -> tuple[bool, str]:
        """Code problems in any file, and the project's tests when the step requires tests or tests exist."""
        env = self.env
        problems: list[str] = []
        blocking = unparsed = 0
        self.inherited_problems = []
        if env.python_checks:
            issues = [i for i in env.check_files(env.store.list_files()) if i.blocking]
            if issues and self.held_by_own:
                issues, old = self.baseline.new_issues(issues, env.store)
                self.inherited_problems = [str(i) for i in old]
            if issues:
                problems.append("Code problems:\n" + "\n".join(str(i) for i in issues[:30]))
            install = self._install()
            problems += install
            blocking = len(issues) + len(install)
            unparsed = len({i.path for i in issues if i.kind == "syntax"})
        examples = run_examples(self.examples, env.store, env.runner, env.python, env.test_timeout_s)
        self.examples_report = ""
        self.examples_failed = tuple(name for name, _ in examples.failed) if examples is not None else ()
        self.examples_need = dict(examples.needs) if examples is not None else {}
        if examples is not None and examples.failed:
            self.examples_report = self.domain.render(
                "examples_failing",
                failing=len(examples.failed),
                tried=examples.tried,
                failures=examples.failures(),
            ).strip()
            problems.append(self.examples_report)
        has_tests = any(is_test_file(f) and not f.endswith("conftest.py") for f in env.store.list_files())
        outcome: TestRun | None = None
        if self.run_tests and (self.instruction.requires_tests or has_tests):
            outcome = self._tests()
            if outcome.litter and self.recover and self._move_litter_under_tmp_path(list(outcome.litter)):
                outcome = self._tests()
            if not outcome.ok and self.recover and self._make_tables_first(outcome):
                outcome = self._tests()
            if outcome.status == "no_tests":
                if self.instruction.requires_tests or not self.inherited_tests:  # else: all there are failed before
                    blocking += 1
                    problems.append(
                        "No tests were collected, but this step must leave pytest tests "
                        "(files named tests/test_*.py with functions named test_*)."
                    )
            elif not outcome.ok:
                blame, outcome = self._blame_hard_coded_files(outcome)
                problems.append(blame + outcome.report(env.max_output_chars))
        if not problems and self.run_tests and env.python_checks:
            served = self._serve()
            problems += served
        else:
            served = []
        standing = self._standing(blocking, outcome, served=not served)
        failing = len(examples.failed) if examples is not None else 0
        self.standing = replace(standing, unparsed=unparsed, examples_failing=failing)
        return not problems, "\n\n".join(problems)

    def _tests(self) -> TestRun:
        """The project's tests, but for those that failed when the step began in test files it neither mentions
        nor changed: a step is held by what it made worse, not by what an earlier step (or the repository) left
        failing (seen: a README step that could never pass because an earlier step's tests failed). A test that
        fails as before is not worse, even when it tests code the step changed; a test file the step mentions
        is its to make pass. The first failing run measures what failed then; the runs after it leave those
        tests out."""
        env = self.env
        if self.held_by_own and self.inherited_tests is None:
            outcome = env.test_run()
            if outcome.ok:
                return outcome
            failing = self.baseline.tests(env).failing
            mentioned = set(mentioned_files(self.instruction.instruction))
            self.inherited_tests = tuple(t for t in sorted(failing) if t.split("::")[0] not in mentioned)
            if not self.inherited_tests:
                return outcome
            self.log("inherited", tests=list(self.inherited_tests[:20]), count=len(self.inherited_tests))
        store, before = env.store, self.baseline.snapshot
        skip = [t for t in self.inherited_tests or () if store.has_text(f := t.split("::")[0], before.get(f, "\0"))]
        outcome = env.test_run(skip=skip)
        if deselected(outcome.output) > sum("::" in s for s in skip):  # pytest deselects by prefix: test_a, test_ab
            files = [s for s in skip if "::" not in s]
            every = env.test_run(each=True, skip=files)
            outcome = every.without(set(skip))
        return outcome

    def inherited(self) -> list[str]:
        """What failed when the step began and was not held against it, as last found (the first
        :data:`MAX_INHERITED`, then how many more)."""
        found = [*(self.inherited_tests or ()), *self.inherited_problems]
        more = [f"... and {len(found) - MAX_INHERITED} more"] if len(found) > MAX_INHERITED else []
        return found[:MAX_INHERITED] + more

    def _standing(self, blocking: int, outcome: TestRun | None, *, served: bool) -> Standing:
        store = self.env.store
        files = store.list_files()
        tests = sorted(p for p in files if is_test_file(p))
        digest = hashlib.sha256("\0".join(f"{p}\0{store.read_text(p)}" for p in tests).encode()).hexdigest()
        code = sorted(p for p in files if p.endswith(".py") and not is_test_file(p))
        code_digest = hashlib.sha256("\0".join(f"{p}\0{store.read_text(p)}" for p in code).encode()).hexdigest()
        if outcome is None:
            return Standing(problems=blocking, tests=digest, code=code_digest, served=served)
        ran = outcome.status in ("passed", "failed") and outcome.passed + outcome.failed > 0
        failing = outcome.failed + outcome.errors
        return Standing(
            problems=blocking,
            green=outcome.ok,
            ran=ran,
            passed=outcome.passed,
            failing=failing,
            tests=digest,
            code=code_digest,
            served=served,
        )

    def _serve(self) -> list[str]:
        """A program that serves, started as its user would start it and asked for the step's routes."""
        env = self.env
        served = serve_check(
            env.runner,
            env.store.root,
            env.python,
            env.store.snapshot(),
            self.instruction.instruction,
            env.command_timeout_s,
        )
        if served is None:
            return []
        self.log(
            "served", command=list(served.command[1:]), port=served.port, answers=[list(a) for a in served.answers]
        )
        return [] if served.ok else [served.report()]

    def _install(self) -> list[str]:
        """Bring the project's environment up to date with what it declares; a failure is the model's to fix."""
        installed = self.env.sync()
        if installed is None:
            return []
        if installed.install_s:  # something was installed (or tried) just now
            self.log(
                "install",
                installer=installed.installer,
                requirements=list(installed.requirements),
                seconds=installed.install_s,
                problem=installed.problem[:2000],
            )
        return [installed.failure()] if installed.problem else []

    def _lacking(self) -> list[str]:
        """Notes for what the step names and the project lacks, most basic first."""
        store, render = self.env.store, self.domain.render
        notes: list[str] = []
        if missing := [p for p in self.named if not store.exists(p)]:
            notes.append(render("text_missing_files", files=", ".join(missing)))
        if not self.env.python_checks:
            return notes
        asks_commands = _COMMANDS.search(self.instruction.instruction) is not None
        if README in self.named and store.exists(README) and asks_commands:
            given = readme_commands(store.read_text(README))
            if not given:
                notes.append(render("text_readme_commands", path=README))  # seen: a README cut before its first command
            elif lacking := lacking_commands(project_commands(store.snapshot()), given):
                # seen on the notes API at df27f4e: the install and test commands only in the prose, so the README's
                # own check ran the server command first, with nothing installed
                listed = "\n".join(f"```bash\n{c}\n```" for c in lacking)
                notes.append(render("text_readme_lacking_commands", path=README, commands=listed))
        sources = python_files(store)
        if absent := missing_definitions(self.instruction.instruction, sources):
            notes.append(render("text_missing_definitions", names=", ".join(absent)))
        if self.run_tests and self.instruction.requires_tests:
            code = [p for p in self.named if store.is_project_file(p)]
            if untested := untested_modules(code, sources):
                notes.append(render("text_untested", paths=", ".join(untested)))
            else:
                for path, names in untested_functions(self.instruction.instruction, code, sources).items():
                    notes.append(render("text_untested_functions", path=path, names=", ".join(names)))
        return list(reversed(notes))  # as before: the last found is said first

    def _failure_notes(self, report: str) -> tuple[list[str], str | None]:
        """What a failing report calls for beyond itself: stubs to complete, API the tests invent, helpers called
        but never written; and the file to look at first."""
        store, render = self.env.store, self.domain.render
        first = _FIRST_PROBLEM.search(report)
        focus = first.group(1) if first and store.is_project_file(first.group(1)) else None
        sources = python_files(store)
        notes: list[str] = []
        absent = missing_definitions(self.instruction.instruction, sources)
        for path, stub in stubbed(absent, sources).items():  # the model echoed a signature and docstring
            notes.append(render("text_complete_stub", path=path, stub=stub))
            focus = path
        if invented := invented_attributes(report, self.instruction.instruction, sources):
            notes.append(render("text_invented_api", names=", ".join(invented)))
        for path, names in undefined_calls(report, sources).items():
            notes.append(render("text_define_missing", path=path, names=", ".join(names)))
        return notes, focus

    # -- what the checks change themselves ------------------------------------------------------------------
    async def _undo_regressions(self, report: str) -> str:
        """Put back the earlier steps' files this step changed when the change broke what worked when the step
        began. Returns the note for the model ("" when nothing was put back)."""
        found = await asyncio.to_thread(find_regression, self.baseline, self.env, self.run_tests, report, self.removed)
        if found is None:
            return ""
        for path in found.undo:
            await self.save(path, self.baseline.snapshot[path], "regression undone")
        self.log("recovered", recovery="regression_undone", paths=found.undo, tests=found.broken[:10])
        what = [f"- {t} passed before and now fails" for t in found.broken[:5]] + [
            f"- {p} had no code problems before and now has" for p in found.spoiled
        ]
        return self.domain.render(
            "text_regression_undone",
            paths=", ".join(found.undo),
            what="\n".join(what),
            own=", ".join(self.named) or "the files it needs",
        )

    def _move_litter_under_tmp_path(self, left: list[str]) -> bool:
        """Tests that left ``left`` in the project write them under tmp_path instead, and a file name the code
        itself writes becomes a parameter the tests pass (see :func:`path_parameter`); whether any changed."""
        store = self.env.store
        tests = [p for p in store.list_files() if is_test_file(p) and p.endswith(".py")]
        changed, tried = False, set()
        while found := [f for f in hard_coded(python_files(store), left) if f not in tried]:  # one use at a time:
            path, line, name = found[0]  # each edit moves the lines of the rest
            tried.add(found[0])
            made = path_parameter(store.read_text(path), line, name)
            if made is None:
                continue
            source, owner, parameter, before = made
            store.write_text(path, source)
            passed = [
                t
                for t in tests
                if rewrite(store, t, partial(pass_tmp_path, owner=owner, parameter=parameter, name=name, before=before))
            ]
            self.log(
                "recovered", recovery="path_parameter_added", path=path, owner=owner, parameter=parameter, tests=passed
            )
            changed = True
        for path in tests:
            if rewrite(store, path, partial(move_under_tmp_path, left=left)):
                self.log("recovered", recovery="test_files_moved_to_tmp_path", path=path, files=left)
                changed = True
        return changed

    def _make_tables_first(self, outcome: TestRun) -> bool:
        """Failing tests that used a database table before the one project function that creates it call that
        function first (see :func:`tables_made_first`), and so does an app factory that hands its file to that
        function's module (see :func:`call_setup`); whether any file changed."""
        lacking = lacking_tables(outcome.output)
        if not lacking:
            return False
        store = self.env.store
        trees = project_trees(store)
        changed = False
        for table, by_file in lacking.items():
            makers = table_makers(trees, table)
            if len(makers) != 1:
                continue
            owner = next((t for r, t in trees.items() if module_name(r) == makers[0][0]), None)
            users = sharing_first_parameter(owner, makers[0]) if owner is not None else frozenset()
            for path, names in sorted(by_file.items()):
                made_first = partial(tables_made_first, tests=names, maker=makers[0], users=users)
                if store.exists(path) and (added := rewrite(store, path, made_first)):
                    self.log("recovered", recovery="tables_made_first", path=path, table=table, calls=added)
                    changed = True
            module, name, parameter = makers[0]
            for path in [p for p in trees if not is_test_file(p)]:  # an app factory that hands its file on
                if added := rewrite(store, path, partial(call_setup, setups={name: (module, parameter)})):
                    self.log("recovered", recovery="setup_called", path=path, calls=added, table=table)
                    changed = True
        return changed

    def _blame_hard_coded_files(self, outcome: TestRun) -> tuple[str, TestRun]:
        """When the code itself writes a file the tests left, say so, and drop that file from the report's note
        blaming the tests (seen: eight reports told the model its tests wrote a data file while the tests used
        tmp_path and the code wrote it)."""
        if not outcome.litter or "hard_coded_data_file" not in self.domain.prompts:
            return "", outcome
        found = hard_coded(python_files(self.env.store), list(outcome.litter))
        if not found:
            return "", outcome
        notes = [self.domain.render("hard_coded_data_file", path=p, line=n, name=f) for p, n, f in found[:3]]
        by_code = {f for _, _, f in found}
        return "\n".join(notes) + "\n", replace(outcome, litter=tuple(f for f in outcome.litter if f not in by_code))
