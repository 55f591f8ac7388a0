"""The control unit: runs one instruction in a fresh context, as in the L2MAC paper, whatever the protocol.

Each step starts from the system prompt, the instruction, the files and the previous step's summary. Each turn
fits the context (before it fills, the model summarises its progress and the step restarts from that summary),
asks the model, runs the calls its answer makes on the file store, runs the checks when the answer asks for
them, and feeds the results back. A step passes only when the model declares it done *and* the checks pass; a
step that spends its budget of turns, failed attempts or restarts is recorded as failed, never as passed.
How the model's answer becomes calls is the protocol's (:mod:`l2mac.control.protocol`).
"""

from __future__ import annotations

import ast
import asyncio
import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from functools import partial

from pydantic_ai.messages import ModelMessage, ModelRequest, ModelResponse, ToolCallPart, UserPromptPart

from l2mac.checks.agreement import AgreementLimits, Asked, Weigher
from l2mac.checks.consensus import test_functions
from l2mac.checks.demands import names_for_file
from l2mac.checks.output import trim_output
from l2mac.checks.readme import README
from l2mac.checks.repairs import repair_written
from l2mac.checks.verdict import Standing, StepChecks
from l2mac.context import ContextBudget
from l2mac.control.continuation import function_opening, step_opening, without_body
from l2mac.control.protocol import Conversation, Done, Setting, StepProtocol, Turn, Verify
from l2mac.control.resample import first_that_holds
from l2mac.control.step import Step, StepLimits
from l2mac.control.text_context import text_messages
from l2mac.control.tool_calls import TOOL_CALLS
from l2mac.domains import Domain
from l2mac.errors import BudgetExceeded, ProviderError
from l2mac.events import EventSink, ToolUsed, ignore
from l2mac.journal import request_key
from l2mac.models.client import ContextOverflow, ModelClient
from l2mac.record import RunRecord
from l2mac.repo.map import file_entry
from l2mac.store import FileStore
from l2mac.tools import STEP_COMPLETE, Toolbox, parse_arguments
from l2mac.tools.complete import StepCompleteArgs
from l2mac.types import StepOutcome, StepStatus, ToolResult


@dataclass
class _State:
    start_revision: int
    turns: int = 0
    restarts: int = 0
    check_failures: int = 0
    reported_input: int = 0  # the provider's count of the last request's tokens
    sent: list[ModelMessage] = field(default_factory=list)  # the last context sent
    seen: dict[tuple[str, str, int], str] = field(default_factory=dict)
    tests_removed: list[str] = field(default_factory=list)
    best: _Best | None = None  # the step's state closest to passing, when its checks failed
    closest: Standing | None = None  # the closest the checks came to passing in this step
    stalled: int = 0  # failed checks in a row that came no closer than ``closest``
    measured: tuple[int, Standing] | None = None  # the store's revision when the checks last ran, and the standing
    passed_at: int | None = None  # the store's revision when the checks last passed, if the files are as they were
    checks: StepChecks | None = None
    #: answers that failed what they were held to, with the request they answered (what holds depends on it: the
    #: function rewritten, and the files around it)
    failed_answers: set[tuple[str, str]] = field(default_factory=set)


@dataclass(frozen=True)
class _Best:
    standing: Standing
    files: dict[str, str]  # the project's files then
    revision: int
    turn: int
    removed: int  # how many of the step's tests agreement had removed by then (later removals are in its files)


class ControlUnit:
    def __init__(
        self,
        client: ModelClient,
        toolbox: Toolbox,
        domain: Domain,
        budget: ContextBudget,
        *,
        protocol: StepProtocol | None = None,
        limits: StepLimits | None = None,
        run_tests: bool = True,
        record: RunRecord | None = None,
        emit: EventSink = ignore,
        recover: bool = True,
    ) -> None:
        self.client, self.toolbox, self.domain, self.budget = client, toolbox, domain, budget
        self.protocol = protocol or TOOL_CALLS
        self.limits = limits or StepLimits()
        self.run_tests = run_tests and domain.tests
        self.record, self.emit, self.recover = record, emit, recover

    # -- the step ----------------------------------------------------------------------------------------
    async def run_step(self, step: Step) -> StepOutcome:
        talk = self.protocol.start(step, self._setting(step))
        state = _State(start_revision=self.toolbox.env.store.revision)
        state.checks = self._checks(step)
        self.log("step_started", step=step.index, title=step.instruction.title)
        try:
            outcome = await self._turns(step, talk, state, state.checks)
        except (BudgetExceeded, ProviderError) as e:  # the run stops here: the step's files are its best, too
            await self._keep_best(step, state)
            self.log("step_stopped", step=step.index, reason=type(e).__name__)
            raise
        self.log("step_finished", step=step.index, status=outcome.status.value)
        return outcome

    async def _turns(self, step: Step, talk: Conversation, state: _State, checks: StepChecks) -> StepOutcome:
        while True:
            if state.turns >= self.limits.max_turns:
                return await self._end(step, talk, state, f"turn budget spent ({self.limits.max_turns} model calls)")
            if step.deadline is not None and time.monotonic() >= step.deadline and state.measured is not None:
                return await self._end(step, talk, state, "its share of the run's time limit spent")
            messages = talk.messages()
            grew = bool(state.sent) and messages[: len(state.sent)] == state.sent  # the provider's count applies
            if not self.budget.fits(messages, state.reported_input if grew else 0):
                if state.restarts >= self.limits.max_context_restarts:
                    return await self._fail(step, talk, state, f"context filled {state.restarts + 1} times")
                await self._restart(step, talk, state)
                continue
            try:
                response = await self.client.request(
                    messages,
                    talk.tools,
                    purpose=f"step {step.index}",
                    temperature=talk.temperature,
                    given=talk.given,
                )
            except ContextOverflow:
                if state.restarts >= self.limits.max_context_restarts:
                    return await self._fail(step, talk, state, "the provider reported a context overflow")
                await self._restart(step, talk, state)
                continue
            state.turns += 1
            state.sent = list(messages)
            state.reported_input = response.usage.input_tokens + response.usage.output_tokens
            if talk.verify is not None:
                response = await self._verified(step, state, messages, talk, talk.verify, response)
            turn = talk.read(response)
            results, summary = await self._act(step, state, turn)
            verdict = await checks.verdict() if turn.check or summary is not None else None
            if verdict is not None:
                state.tests_removed += verdict.removed
                if verdict.ok and summary is not None:
                    return self._outcome(step, state, StepStatus.PASSED, summary)
                state.check_failures += 0 if verdict.ok else 1
                state.passed_at = self.toolbox.env.store.revision if verdict.ok else None
                self._remember(state, verdict.standing)
                _note_progress(state, verdict.ok, verdict.standing)
            limit = self.limits.max_check_failures
            missed = talk.feed(Done(results, verdict, state.check_failures, limit + 1))
            state.check_failures += 1 if missed else 0
            if state.check_failures > limit:
                reason = missed or f"checks still failing after {state.check_failures} attempts"
                return await self._fail(step, talk, state, reason)
            if self.limits.max_stalled and state.stalled >= self.limits.max_stalled:
                reason = f"checks came no closer to passing in {state.stalled} attempts in a row"
                return await self._fail(step, talk, state, reason)

    async def _verified(
        self,
        step: Step,
        state: _State,
        messages: list[ModelMessage],
        talk: Conversation,
        verify: Verify,
        response: ModelResponse,
    ) -> ModelResponse:
        """The first of ``response`` and up to ``limits.resamples`` more answers to the same request, each
        sampled more freely, that holds what the conversation holds it to; the first one when none does (see
        :func:`l2mac.control.resample.first_that_holds`)."""

        async def again(temperature: float) -> ModelResponse | None:
            try:
                return await self.client.request(
                    messages,
                    talk.tools,
                    purpose=f"step {step.index} resample",
                    temperature=temperature,
                    given=talk.given,
                )
            except ContextOverflow:
                return None

        def tried(n: int, holds: bool, known: bool) -> None:
            self.log("answer_verified", step=step.index, sample=n, holds=holds, **({"known": True} if known else {}))

        async def holds(answer: ModelResponse) -> bool:
            return await asyncio.to_thread(verify, answer)

        return await first_that_holds(
            response,
            again,
            holds,
            resamples=self.limits.resamples,
            request=request_key(messages, "verified"),
            failed=state.failed_answers,
            tried=tried,
        )

    # -- acting on an answer -----------------------------------------------------------------------------
    async def _act(
        self, step: Step, state: _State, turn: Turn
    ) -> tuple[list[tuple[ToolCallPart, ToolResult]], str | None]:
        """Run the answer's calls; return each with its result, and the summary when it declares the step done."""
        results: list[tuple[ToolCallPart, ToolResult]] = []
        summary: str | None = None
        store = self.toolbox.env.store
        for call in turn.calls:
            before = store.revision
            if call.tool_name == STEP_COMPLETE:
                args = self.toolbox.validate(STEP_COMPLETE, call.args)
                if isinstance(args, StepCompleteArgs):
                    summary, result = args.summary, ToolResult("The checks ran.")
                else:
                    result = args if isinstance(args, ToolResult) else ToolResult("invalid arguments", ok=False)
            else:
                result = await self._call_tool(step, state, call)
            self.emit(ToolUsed(step.index, call.tool_name, result.ok))
            self.log(
                "tool_call",
                step=step.index,
                tool=call.tool_name,
                ok=result.ok,
                args=_short(call.args),
                result=result.content[:300],
                files={**_reads(call, store), **store.accesses_since(before)},
            )
            results.append((call, result))
        return results, summary

    async def _call_tool(self, step: Step, state: _State, call: ToolCallPart) -> ToolResult:
        """One tool call; the same call again with nothing changed is answered from memory. Files written are
        repaired where small models reliably go wrong (when recoveries are on), and the model is told."""
        store = self.toolbox.env.store
        key = (call.tool_name, _canonical(call.args), store.revision)
        if key in state.seen:
            return ToolResult(self.domain.render("repeated_call", result=state.seen[key][:800]), ok=False)
        result = await asyncio.to_thread(self.toolbox.call, call.tool_name, call.args)
        if call.tool_name == "write_files" and self.recover:
            result = await asyncio.to_thread(self._repair_written, step, call, result)
        result = ToolResult(trim_output(result.content, self.toolbox.env.max_output_chars), result.ok)
        state.seen[(call.tool_name, _canonical(call.args), store.revision)] = result.content
        return result

    def _repair_written(self, step: Step, call: ToolCallPart, result: ToolResult) -> ToolResult:
        env = self.toolbox.env
        files = _args_dict(call.args).get("files")
        paths = [str(f.get("path")) for f in files if isinstance(f, dict)] if isinstance(files, list) else []
        paths = [p for p in paths if p.endswith(".py") or p == README]  # a README's commands are repaired too
        paths = [p for p in paths if env.store.is_project_file(p)]
        log = partial(self.log, "recovered", step=step.index)
        added = repair_written(
            env.store,
            partial(env.check_files, types=False),
            paths,
            lambda r, **f: log(recovery=r, **f),
            step.instruction.instruction,
        )
        if not added:
            return result
        issues = env.check_files(paths)
        saved = result.content.split("\nChecks found problems")[0]
        problems = ["Checks found problems, fix them:", *(str(i) for i in issues)] if issues else []
        return ToolResult("\n".join([saved, *added, *problems]), ok=not any(i.blocking for i in issues))

    async def save(self, step: Step, path: str, content: str, why: str) -> None:
        """A write the model did not ask for (``why`` says whose), reported as a tool use and logged."""
        before = self.toolbox.env.store.revision
        result = await asyncio.to_thread(
            self.toolbox.call, "write_files", {"files": [{"path": path, "content": content}]}
        )
        self.emit(ToolUsed(step.index, "write_files", result.ok))
        files = self.toolbox.env.store.accesses_since(before)
        self.log("tool_call", step=step.index, tool="write_files", ok=result.ok, result=f"{why}: {path}", files=files)

    # -- what a step is given ----------------------------------------------------------------------------
    def _setting(self, step: Step) -> Setting:
        log = partial(self.log, step=step.index)
        return Setting(self.domain, self.toolbox, self.budget, self.recover, log, self.client.continues)

    def _checks(self, step: Step) -> StepChecks:
        env, log = self.toolbox.env, partial(self.log, step=step.index)
        save = partial(self.save, step)
        weigher = None
        if self.limits.samples > 0:
            setting = self._setting(step)
            weigher = Weigher(
                self.client,
                env,
                self.domain,
                step.instruction.instruction,
                ask=partial(self._ask_sample, step, setting, frozenset(env.store.list_files())),
                save=save,
                log=log,
                limits=AgreementLimits(self.limits.samples, self.limits.max_agreement_rounds),
                recover=self.recover,
                label=f"step {step.index}",
                task=step.task,
            )
        return StepChecks(
            env,
            self.domain,
            step.instruction,
            run_tests=self.run_tests,
            recover=self.recover,
            save=save,
            log=log,
            weigher=weigher,
            held_by_own=self.limits.held_by_own,
            task=step.task,
        )

    def _ask_sample(
        self,
        step: Step,
        setting: Setting,
        existed: frozenset[str],
        target: str,
        request: str,
        hide: Callable[[str], bool],
        withheld: tuple[str, ...] = (),
        begun: bool = True,
    ) -> Asked:
        """How agreement asks for an implementation of ``target`` from the step alone, without the bodies the
        step gives the functions ``withheld`` (``f`` or ``Class.m``): begun inside the stub the step gives it,
        when the model continues begun answers (see control.continuation). A module that ``existed`` before the
        step is not written again: the sample is a body of the function the step asks of it, begun inside it
        in the module as it is (seen on a change to python-slugify: samples of slugify/slugify.py written from
        nothing were a line or two of imports). Not ``begun``: the whole file, written from its start, or no
        request at all (no messages) for such a module."""
        if not begun and target in existed:
            return Asked([])
        if withheld:
            shown = step.instruction.instruction
            for name in withheld:
                owner, _, function = name.rpartition(".")
                shown = without_body(shown, function, owner or None)
            step = replace(step, instruction=step.instruction.model_copy(update={"instruction": shown}))
        continues = begun and self.client.continues
        opening = step_opening(step.instruction.instruction, target) if continues else None
        store = self.toolbox.env.store
        if opening is None and continues and target in existed and store.exists(target):
            source = store.read_text(target)
            names = names_for_file(step.instruction.instruction, target)
            opening = next((o for n in names if (o := function_opening(target, source, n)) is not None), None)
        if opening is None:
            return Asked(text_messages(setting, step, request, focus=target, hide=hide))
        # asked for "the complete file" while the answer is begun inside it, the model closed the block at once
        request = self.domain.render("text_request_body", path=target, name=opening.name)
        messages = [*text_messages(setting, step, request, focus=target, hide=hide), opening.begun()]
        return Asked(messages, opening.complete, opening.given())

    # -- context -----------------------------------------------------------------------------------------
    async def _plain_answer(self, messages: list[ModelMessage], prompt_key: str, purpose: str) -> str:
        """Ask for a text answer (no tools) after ``messages``; used for summaries. An answer begun for the model
        (the last message a response) is left out: the question is asked after the request it answered."""
        if messages and isinstance(messages[-1], ModelResponse):
            messages = messages[:-1]
        request = [*messages, ModelRequest(parts=[UserPromptPart(self.domain.render(prompt_key))])]
        while len(request) > 2 and not self.budget.fits(request):
            # drop the oldest exchange after the step prompt so the question itself fits
            # (a response and the request answering it, so tool calls and their returns stay paired)
            del request[1:3]
        response = await self.client.request(request, [], purpose=purpose)
        return (response.text or "").strip()

    async def _restart(self, step: Step, talk: Conversation, state: _State) -> None:
        try:
            summary = await self._plain_answer(talk.messages(), "summarise", f"step {step.index}: summarise")
        except ContextOverflow:
            summary = ""
        state.restarts += 1
        talk.restart(summary or "(no summary could be made; check the files)")
        state.seen.clear()
        state.sent, state.reported_input = [], 0
        self.log("context_restart", step=step.index, restarts=state.restarts)

    # -- endings -----------------------------------------------------------------------------------------
    def _outcome(self, step: Step, state: _State, status: StepStatus, summary: str, reason: str = "") -> StepOutcome:
        return StepOutcome(
            index=step.index,
            title=step.instruction.title,
            status=status,
            summary=summary,
            reason=reason,
            turns=state.turns,
            context_restarts=state.restarts,
            check_failures=state.check_failures,
            files_written=self.toolbox.env.store.changed_since(state.start_revision),
            tests_removed=list(state.tests_removed),
            inherited=state.checks.inherited() if state.checks is not None else [],
        )

    def _remember(self, state: _State, standing: Standing) -> None:
        """Keep the project's files when the checks came closer to passing than ever in this step, or came as
        close after agreement removed tests (a removal is evidence the earlier tests were wrong)."""
        store = self.toolbox.env.store
        state.measured = (store.revision, standing)
        best = state.best
        removed = best is not None and len(state.tests_removed) > best.removed
        if self.limits.keep_best and (
            best is None or standing.better_than(best.standing) or (removed and not best.standing.better_than(standing))
        ):
            state.best = _Best(standing, store.snapshot(), store.revision, state.turns, len(state.tests_removed))

    async def _keep_best(self, step: Step, state: _State) -> str:
        """A failing step ends no worse than its best state: unless the files now are closer to passing than
        they were at its best (the first state that came that close), they are put back as they were then; a
        later state that came no closer is no evidence against the earlier one (seen on HumanEval+: right
        first code rewritten to fit a wrong test, with the test still failing). Returns what to add to the
        reason."""
        best, checks, store = state.best, state.checks, self.toolbox.env.store
        if best is None or checks is None or store.revision == best.revision:
            return ""
        if state.measured is not None and state.measured[0] == store.revision:
            now_standing = state.measured[1]
        else:  # written since the checks last ran: measure where the files stand now
            await asyncio.to_thread(checks.run)
            now_standing = checks.standing
        if now_standing.better_than(best.standing):
            return ""
        now = store.snapshot()
        for path in sorted(set(now) | set(best.files)):
            if path not in best.files:
                await asyncio.to_thread(store.delete, path)
                self.log(
                    "tool_call",
                    step=step.index,
                    tool="delete",
                    ok=True,
                    result=f"best state kept: {path}",
                    files={path: "deleted"},
                )
            elif now.get(path) != best.files[path]:
                await self.save(step, path, best.files[path], "the step's best state kept")
        later = state.tests_removed[best.removed :]
        back = [t for t in later if _holds(best.files, t)]  # removed since, and in the files put back
        state.tests_removed[best.removed :] = [t for t in later if t not in back]
        self.log("recovered", step=step.index, recovery="best_state_kept", turn=best.turn, tests_back=back)
        return f"; its files were put back as they were after turn {best.turn}, the closest it came to passing"

    async def _end(self, step: Step, talk: Conversation, state: _State, reason: str) -> StepOutcome:
        """The step's budget is spent: it passes if its checks passed on the files as they are, though the model
        had not yet said it was done (the reason says so), and fails otherwise. Seen on the URL shortener at
        078ca7d: step 4's checks passed on its last answer, and its time ran out before the model was asked
        whether it was done; the step was recorded failed with every check passing."""
        if state.passed_at is None or state.passed_at != self.toolbox.env.store.revision:
            return await self._fail(step, talk, state, reason)
        summary = self._held(state, "(The step's checks passed.)")
        reason = f"{reason}; its checks passed on its last answer, before the model said it was done"
        return self._outcome(step, state, StepStatus.PASSED, summary, reason)

    def _held(self, state: _State, lead: str) -> str:
        """The summary of a step the model did not summarise: ``lead``, then what the files it changed hold."""
        store = self.toolbox.env.store
        files = store.snapshot()  # the text files the model may see
        changed = [p for p in store.changed_since(state.start_revision) if p in files]
        held = "\n".join(file_entry(p, files[p]) for p in changed) or "(none)"
        return trim_output(f"{lead} The files it changed hold:\n{held}", 1500)

    async def _fail(self, step: Step, talk: Conversation, state: _State, reason: str) -> StepOutcome:
        """The step ends failed, its best files kept. Its summary for the next step says what its files hold
        now, read from them: asked for one, the model took minutes per failed step on DevBench, and once copied
        the step before's summary word for word."""
        reason += await self._keep_best(step, state)
        summary = self._held(state, f"(The previous step did not pass: {reason}.)")
        return self._outcome(step, state, StepStatus.FAILED, summary, reason)

    def log(self, kind: str, **data: object) -> None:
        """Record an event in the run log (`.l2mac/log.jsonl`), when the run has one."""
        if self.record is not None:
            self.record.log(kind, **data)


def _note_progress(state: _State, ok: bool, standing: Standing) -> None:
    """Count failed checks in a row that come no closer to passing than the step ever came: a small model that
    rewrites the same file the same way would otherwise spend the run's time on one step (seen on DevBench:
    six identical rewrites of a file with the same two findings, 300 s each, while later steps never ran)."""
    if ok or state.closest is None or standing.closer_than(state.closest):
        state.closest, state.stalled = standing, 0
    else:
        state.stalled += 1


def _holds(files: dict[str, str], removed: str) -> bool:
    """Whether ``files`` hold a test agreement removed: ``path::[Class::]name[params]``, or a check pruned from
    one, ``path::name: statement``."""
    path, _, rest = removed.partition("::")
    test, _, statement = rest.partition(": ")
    try:
        tree = ast.parse(files.get(path, ""))
    except SyntaxError:
        return False
    key = tuple(test.split("[")[0].split("::"))
    return key in test_functions(tree) and statement in files.get(path, "")


def _args_dict(args: str | dict[str, object] | None) -> dict[str, object]:
    """A call's arguments as a dict; empty when they do not parse (the tool answered that already)."""
    try:
        return parse_arguments(args)
    except ValueError:
        return {}


def _canonical(args: str | dict[str, object] | None) -> str:
    value = _args_dict(args)
    return json.dumps(value, sort_keys=True) if value else str(args or "")


def _reads(call: ToolCallPart, store: FileStore) -> dict[str, str]:
    """The project files a call showed the model, by their normal paths: ``{path: "read"}``."""
    if call.tool_name != "view_files":
        return {}
    files = _args_dict(call.args).get("files")
    paths = [f.get("path") for f in files if isinstance(f, dict)] if isinstance(files, list) else []
    return {store.relative(store.resolve(p)): "read" for p in paths if isinstance(p, str) and store.is_project_file(p)}


def _short(args: str | dict[str, object] | None) -> str:
    text = args if isinstance(args, str) else json.dumps(args or {})
    return text if len(text) <= 300 else text[:300] + "..."
