"""Self-organised agents: a mother designs a module and its tests, one child per stubbed function implements it
(and becomes a mother in turn when it splits its function), children of one mother work in parallel against
frozen contracts, test failures go back down to the children they involve, and contract changes go up.

Every agent's context holds the task, the part of its module's outline around it (imports, the lead's own
functions, its mother's and siblings' signatures and docstrings, no bodies) and its one contract, so what an
agent handles stays the same size however large the codebase grows.
"""

from __future__ import annotations

import ast
import asyncio
import textwrap
import time
from collections.abc import Callable
from dataclasses import replace
from functools import partial
from importlib import resources
from typing import Any

import yaml
from pydantic import ValidationError
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    SystemPromptPart,
    TextPart,
    ToolCallPart,
    UserPromptPart,
)

from l2mac.checks.contract import given_skeleton
from l2mac.checks.demands import named_files, names_for_file
from l2mac.checks.dependencies import REQUIREMENTS, with_requirements
from l2mac.checks.examples import Example, ExampleRun, run_examples, task_examples
from l2mac.checks.hints import failure_hints, made_by_the_tests
from l2mac.checks.layout import is_test_file
from l2mac.checks.python import top_level_definitions
from l2mac.checks.repairs import merge_definitions, repair_written
from l2mac.checks.tests import TestRun
from l2mac.concurrency import together
from l2mac.control.protocol import StepProtocol, cut_off
from l2mac.control.resample import Holds, first_that_holds
from l2mac.control.test_start import file_start
from l2mac.control.tool_calls import TOOL_CALLS
from l2mac.domains import render_template
from l2mac.errors import BudgetExceeded, ProviderError, WorkspaceError, first_line
from l2mac.events import AgentChanged, EventSink, ignore
from l2mac.fenced import fenced_file
from l2mac.journal import request_key
from l2mac.models.client import ContextOverflow, ModelClient
from l2mac.soa.agents import Agent, AgentLimits, AgentState, involved_in
from l2mac.soa.contracts import (
    Contract,
    ContractError,
    changed_contract,
    changed_in,
    current_code,
    outline,
    put_function,
    reached_stubs,
    replace_signature,
    stubs,
    test_path_for,
)
from l2mac.soa.drafts import Drafter, Drafts, Key
from l2mac.soa.rounds import Round, Rounds, measured, mother_tests, own_examples_failing
from l2mac.soa.tools import (
    DECIDE,
    REQUEST_CHANGE,
    WRITE_FUNCTION,
    WRITE_MODULE,
    WRITE_SKELETON,
    WRITE_TESTS,
    ContractChangeArgs,
    DecisionArgs,
    DraftArgs,
    FunctionArgs,
    SkeletonArgs,
    TestsArgs,
)
from l2mac.spec_plan import specified_skeletons
from l2mac.store import FileStore, scratch_copy
from l2mac.tools import Tool, ToolEnv, parse_arguments


def _prompts() -> dict[str, str]:
    data: dict[str, str] = yaml.safe_load(
        resources.files("l2mac.soa").joinpath("prompts.yaml").read_text(encoding="utf-8")
    )
    return data


class Organization:
    """Runs one task with self-organised agents on the engine's model client, tools environment and store."""

    def __init__(
        self,
        client: ModelClient,
        env: ToolEnv,
        limits: AgentLimits,
        *,
        emit: EventSink = ignore,
        log: Callable[..., None] = lambda *a, **k: None,
        protocol: StepProtocol = TOOL_CALLS,
        recover: bool = True,
        repository: str = "",
        passing_before: frozenset[str] = frozenset(),
        drafts: Drafts | None = None,
    ) -> None:
        self.client, self.env, self.limits = client, env, limits
        self.drafts = drafts or Drafts()
        self.protocol, self.recover = protocol, recover
        # a change to a repository l2mac did not write: its map, and its tests that passed before the change
        self.repository, self.passing_before = repository, passing_before
        self.emit, self.log = emit, log
        self.agents: list[Agent] = []
        self.prompts = _prompts()
        self._slots = asyncio.Semaphore(limits.concurrency)
        self._locks: dict[str, asyncio.Lock] = {}
        self._lead_files: list[str] = []
        self._test_files: list[str] = []  # the test files the lead and her agents were given
        self._examples: list[Example] = []  # the task's own examples (docstrings' doctests, stated calls)
        self._reports: dict[Key, str] = {}  # per contract: its examples' last failures
        self._drafted: set[Key] = set()  # the contracts the lead's draft implemented
        self.task = ""

    # -- bookkeeping ---------------------------------------------------------------------------------------
    def _new(self, owns: str, depth: int, parent: int | None, contract: Contract | None = None) -> Agent:
        agent = Agent(len(self.agents), owns, depth, parent, contract)
        self.agents.append(agent)
        if parent is not None:
            self.agents[parent].children.append(agent.id)
        self._set(agent, AgentState.WAITING)
        return agent

    def _set(self, agent: Agent, state: AgentState, note: str = "") -> None:
        agent.state, agent.note = state, note or agent.note
        self.emit(AgentChanged(agent.id, agent.parent, agent.depth, agent.owns, state.value, agent.tokens, agent.note))
        self.log("agent", id=agent.id, owns=agent.owns, state=state.value, tokens=agent.tokens, note=note)

    def _write(self, agent: Agent, path: str, text: str) -> None:
        """Write a file for ``agent``, logged as its access (the run report's file-access heatmap)."""
        new = self.env.store.write_text(path, text)
        self.log("agent_files", id=agent.id, files={path: "created" if new else "written"})

    def _read(self, agent: Agent, path: str) -> str:
        """A file shown to ``agent``, logged as its access."""
        text = self.env.store.read_text(path)
        self.log("agent_files", id=agent.id, files={path: "read"})
        return text

    def render(self, key: str, **values: Any) -> str:
        return render_template(self.prompts[key], values)

    def _can_spawn(self, depth: int, count: int) -> bool:
        return depth <= self.limits.max_depth and len(self.agents) + count <= self.limits.max_agents

    async def _ask(
        self,
        agent: Agent,
        system_key: str,
        user: str,
        tools: list[Tool],
        history: list[ModelMessage],
        begun: str = "",
        holds: Holds | None = None,
        failed: set[tuple[str, str]] | None = None,
    ) -> tuple[ToolCallPart | None, list[ModelMessage]]:
        """One model call for ``agent``; its answer read by the protocol as the call of one of ``tools`` it makes.
        With ``begun`` (a file's path, opening fence and first lines) the answer is begun with it, and read whole.
        With ``holds``, an answer that fails it is asked for again, sampled more freely, as a step's is (see
        :func:`l2mac.control.resample.first_that_holds`; ``failed``: the answers already found failing)."""
        system = self.render(system_key + self.protocol.prompt_variant)
        messages = history or [ModelRequest(parts=[SystemPromptPart(system), UserPromptPart(user)])]
        if history:
            messages = [*history, ModelRequest(parts=[UserPromptPart(user)])]
        offered = self.protocol.offered(tools)
        asked = [*messages, ModelResponse(parts=[TextPart(begun)])] if begun else messages
        purpose = f"agent {agent.id}"

        async def answer(temperature: float | None = None) -> ModelResponse:
            async with self._slots:
                response: ModelResponse = await self.client.request(
                    asked,
                    offered,
                    purpose=purpose if temperature is None else f"{purpose} resample",
                    allow_text=not offered,
                    temperature=temperature,
                )
            agent.calls += 1
            agent.tokens += response.usage.input_tokens + response.usage.output_tokens
            if begun:
                whole = begun + (response.text or "")
                whole += "\n```" if whole.count("```") % 2 else ""  # it stopped at the closing fence, left out
                response = replace(response, parts=[TextPart(whole)])
            return response

        async def again(temperature: float) -> ModelResponse | None:
            try:
                return await answer(temperature)
            except ContextOverflow:
                return None

        def tried(n: int, ok: bool, known: bool) -> None:
            self.log("answer_verified", id=agent.id, sample=n, holds=ok, **({"known": True} if known else {}))

        response = await answer()
        if holds is not None:
            response = await first_that_holds(
                response,
                again,
                holds,
                resamples=self.limits.resamples,
                request=request_key(asked, purpose),
                failed=set() if failed is None else failed,
                tried=tried,
            )
        return self.protocol.read_call(response, tools, self.recover), [*messages, response]

    def _hidden_from(self, agent: Agent, contract: Contract) -> set[str]:
        """What an agent does not see of its module: functions other agents own, except its siblings' and its
        mother's (the interfaces around it). The lead's own functions and the imports stay visible."""
        mother = self.agents[agent.parent] if agent.parent is not None else None
        near = {contract.name}
        if mother is not None:
            kin = [self.agents[c].contract for c in mother.children]
            near |= {k.name for k in [*kin, mother.contract] if k is not None}
        owned = {  # top-level functions: a class's methods are shown as its outline, bodies cut
            a.contract.name
            for a in self.agents
            if a.contract and a.contract.module == contract.module and a.contract.owner is None
        }
        return owned - near

    def _fix_files(self, paths: list[str], *, design: bool = False) -> None:
        """The engine's deterministic repairs of small models' files (forgotten imports, pytest fixture misuse),
        as in the l2mac strategy, when recoveries are on. A lead's ``design`` is held to the task as a step is
        to its instruction: the signatures it gives put back, a class that only hosts the functions it names
        made those functions (seen on DevBench's ArXiv_digest at 56adbe5: the lead wrote the UML's
        Global_functions class, and the hidden tests' ``from query_arxiv import get_args`` failed)."""
        if self.recover:
            untyped = partial(self.env.check_files, types=False)
            python = [p for p in paths if p.endswith(".py")]
            repair_written(self.env.store, untyped, python, self._repaired, self.task if design else "")

    def _repaired(self, recovery: str, **fields: object) -> None:
        self.log("recovered", recovery=recovery, **fields)

    def _lock(self, module: str) -> asyncio.Lock:
        return self._locks.setdefault(module, asyncio.Lock())

    # -- the run -------------------------------------------------------------------------------------------
    async def run(self, task: str) -> list[Agent]:
        self.task = task
        self._examples = task_examples("", task)
        root = self._new("the task", 0, None)
        await self._mother(root)
        return self.agents

    async def _mother(self, agent: Agent) -> None:
        """The root: design the module and its tests (or, when the task gives the modules' skeletons, write them
        as given and their tests), delegate its stubs, then test and repair."""
        self._set(agent, AgentState.WRITING)
        if self.repository:  # a change: she adds to the repository's modules, never rewrites them
            design = await self._change(agent, self.render("change_task", task=self.task, repository=self.repository))
        else:
            given = given_design(self.task)
            design = await self._given(agent, given) if given else None
            if design is None:  # no skeleton given, or no tests of it came: she designs the modules and tests
                design = await self._design(agent, self.render("mother_task", task=self.task))
        if design is None:
            self._set(agent, AgentState.FAILED, "no usable skeleton")
            return
        contracts, test_file = design
        await self._delegate(agent, contracts)
        await self._test_and_repair(agent, test_file)

    async def _design(self, agent: Agent, user: str) -> tuple[list[Contract], str] | None:
        """The lead writes (or rewrites) her modules and tests; returns the stubs to delegate and the test file."""
        history: list[ModelMessage] = []
        first = user
        for _ in range(self.limits.attempts):
            call, history = await self._ask(agent, "mother_system", user, [WRITE_SKELETON], history)
            if isinstance(history[-1], ModelResponse) and cut_off(history[-1]):
                # what she owns does not fit in one answer, the very case for delegating: she starts afresh
                # with the skeleton alone (a cut-off design is never written: its last file is incomplete)
                self.log("recovered", recovery="cut_off_design_asked_as_skeleton", agent=agent.id)
                user, history = first + "\n\n" + self.render("design_too_large"), []
                continue
            try:
                args = SkeletonArgs.model_validate(_args(call, "write_skeleton"))
                contracts = [c for m in args.modules for c in stubs(m.code, m.path)]
                for m in args.modules:
                    self._write(agent, m.path, m.code)
                test_file = (
                    self._lead_files[-1]
                    if self._lead_files
                    else self._test_path(_first_module([m.path for m in args.modules]))
                )
                self._write(agent, test_file, args.tests)
                if needs := with_requirements(self.env.store.root, args.dependencies):  # the .venv installs these
                    self._write(agent, REQUIREMENTS, needs)
                self._fix_files([*(m.path for m in args.modules), test_file], design=True)
                # her stubs as the repairs left them (a class that only hosts functions is those functions)
                contracts = [c for m in args.modules for c in stubs(self._read(agent, m.path), m.path)]
            except (ValidationError, ContractError, ValueError, OSError) as e:
                user = self.render("rejected_code", error=first_line(e))
                continue
            agent.owns = ", ".join(m.path for m in args.modules)
            self._lead_files = [*(m.path for m in args.modules), test_file]
            return contracts, test_file
        return None

    async def _change(self, agent: Agent, user: str) -> tuple[list[Contract], str] | None:
        """The lead of a change to a repository sends only the definitions she adds or changes: each is merged
        into its module (a new module is written whole), so the repository's code stays as it was; its other
        files are not hers to write. The contracts are her new stubs, and her stubs of functions the repository
        has that change their signature or docstring (an agent rewrites each); her tests go to a test file of
        their own, never over one of the repository's, and stay there when she answers again."""
        history: list[ModelMessage] = []
        for _ in range(self.limits.attempts):
            call, history = await self._ask(agent, "change_system", user, [WRITE_SKELETON], history)
            try:
                args = SkeletonArgs.model_validate(_args(call, "write_skeleton"))
                merged = {m.path: self._merged(m.path, m.code) for m in args.modules}
            except (ValidationError, ContractError, ValueError, WorkspaceError) as e:
                user = self.render("rejected_code", error=first_line(e))
                continue
            contracts = [c for _, found in merged.values() for c in found]
            for path, (text, _) in merged.items():
                self._write(agent, path, text)
            modules = [p for p in merged if p.endswith(".py")] or list(merged)
            test_file = next((p for p in self._lead_files if is_test_file(p)), None)
            if test_file is None:  # her first answer: a test file named for what she changes, free in the tree
                first = contracts[0] if contracts else None
                test_file = self._test_path(_first_module(modules), first.name if first else None)
            self._write(agent, test_file, args.tests)
            if needs := with_requirements(self.env.store.root, args.dependencies):
                self._write(agent, REQUIREMENTS, needs)
            self._fix_files([*modules, test_file])
            agent.owns = ", ".join(modules)
            self._lead_files = [*modules, test_file]
            return contracts, test_file
        return None

    def _merged(self, path: str, code: str) -> tuple[str, list[Contract]]:
        """``path`` with the lead's ``code`` for it, and the contracts that come of it. A Python module the
        repository has takes her definitions by name (:func:`merge_definitions`); one without any definitions
        takes them after its code; one she sends back as it is stays so. Raises ValueError for what cannot be
        merged, and WorkspaceError for a path that may not be written."""
        store = self.env.store
        store.check_writable(path)
        if not store.exists(path):
            return code, stubs(code, path) if path.endswith(".py") else []
        old = store.read_text(path)
        if not path.endswith(".py"):
            raise ValueError(f"{path} is the repository's: change its Python modules, not its other files")
        if not code.strip() or code.strip() == old.strip():  # a package marker, or the module sent back
            return old, []
        new = merge_definitions(old, code, add_new=True)
        sent, has = top_level_definitions(code), top_level_definitions(old)
        if new is None and sent <= has:  # only what the module has, stubs for bodies: kept
            new = old
        elif new is None and not has:  # a module of imports and statements only: they go after them
            _parse_or_reject(code, path)
            new = old.rstrip("\n") + ("\n\n\n" if old.strip() else "") + code
        if new is None:
            raise ValueError(self.render("change_not_merged", path=path, lines=len(old.splitlines())).strip())
        return new, changed_in(old, new, code, path)

    def _test_path(self, module: str, function: str | None = None, owner: str | None = None) -> str:
        """A new test file for ``module`` (and a function of it): :func:`test_path_for`'s name, numbered when
        the project has a file of that name anywhere (pytest refuses two test modules of one name) or an agent
        already took it."""
        path = test_path_for(module, function, owner)
        stem, n = path.removesuffix(".py"), 2
        taken = {p.rsplit("/", 1)[-1] for p in [*self.env.store.list_files(), *self._test_files]}
        while path.rsplit("/", 1)[-1] in taken:
            path, n = f"{stem}_{n}.py", n + 1
        self._test_files.append(path)
        return path

    async def _given(self, agent: Agent, given: dict[str, str]) -> tuple[list[Contract], str] | None:
        """The modules the task gives, written as given: their stubs are the contracts (interfaces first; seen on
        ClassEval, a 1.5B lead asked to design rewrote the given class whole, its methods implemented in one
        answer, and no agent was made). She drafts them (:class:`Drafter`), then writes their tests, unless the
        one step that drafted them passed with its own (:meth:`Drafter.steps_tests`)."""
        drafter = Drafter(
            self.drafts,
            self.env.store,
            write=partial(self._write, agent),
            repair=self._fix_files,
            answer=partial(self._draft_answer, agent),
            log=partial(self.log, id=agent.id),
            deadline=self.client.deadline,
        )
        # a module a step drafts is the step's to write, so the step begins where the l2mac strategy's does (seen:
        # with the skeleton already in place, the draft step of a ClassEval task asked for the tests first, and
        # its prompt's example of an import became `from tests.test_solution import ...`)
        stepped = drafter.stepped(given)
        for path, code in given.items():
            if path not in stepped:
                self._write(agent, path, code)
        try:
            await drafter.draft(self.task, given)
        finally:  # a stop in a later draft: the steps before it still count
            agent.calls += drafter.turns
            self._drafted = drafter.drafted
            for path in stepped:  # a stop before a module's step: the module is there as given
                if not self.env.store.exists(path):
                    self._write(agent, path, given[path])
        contracts = [c for path, code in given.items() for c in stubs(code, path)]
        if len(kept := drafter.steps_tests()) == 1:  # a step passed with them: her tests are the step's
            self._test_files.append(kept[0])
            self.log("draft_tests_kept", id=agent.id, test_file=kept[0])
            self.log("agent_files", id=agent.id, files={kept[0]: "written"})  # hers now, as if she wrote it
            agent.owns = ", ".join(given)
            self._lead_files = [*given, kept[0]]
            return contracts, kept[0]
        drafter.drop_tests()  # the lead has one test file: several steps' files give way to hers
        test_file = self._test_path(_first_module(list(given)))
        files = "\n\n".join(fenced_file(p, code) for p, code in given.items())
        user = self.render("tests_task", task=self.task, files=files, test_file=test_file)
        # begun at the test file's imports and first test, for a model that continues a begun answer (seen on
        # ClassEval through the served model, which cannot be begun: "The provided solution and test file are
        # already correctly implemented", three times)
        begun = file_start(test_file, given) if self.client.continues else ""
        if await self._write_tests(agent, user, test_file, begun):
            agent.owns = ", ".join(given)
            self._lead_files = [*given, test_file]
            return contracts, test_file
        self._drafted.clear()  # she designs the modules herself: no function of hers is a draft's
        return None

    async def _write_tests(self, agent: Agent, user: str, test_file: str, begun: str = "") -> bool:
        """``agent`` writes ``test_file`` whole (one answer, asked again while it gives no usable tests); whether
        it did."""
        history: list[ModelMessage] = []
        for _ in range(self.limits.attempts):
            call, history = await self._ask(agent, "tests_system", user, [WRITE_TESTS], history, begun)
            try:
                tests = TestsArgs.model_validate(_args(call, "write_tests")).tests
            except (ValidationError, ValueError) as e:
                user = self.render("rejected_code", error=first_line(e))
                continue
            self._write(agent, test_file, tests)
            self._fix_files([test_file])
            return True
        return False

    async def _retest(self, lead: Agent, test_file: str, output: str) -> bool:
        """Every failure of the lead's tests is one they make themselves (each names a file none of them made):
        no agent's code can mend it, so she writes her tests again, seeing the failures and what they mean;
        her agents are not asked. Whether she did."""
        self._set(lead, AgentState.WRITING, "rewriting her tests: they fail on files they never made")
        files = "\n\n".join(fenced_file(p, self._read(lead, p)) for p in self._lead_files if self.env.store.exists(p))
        report = "\n".join([*failure_hints(output), output[-3000:]])
        user = self.render("tests_repair", task=self.task, files=files, test_file=test_file, report=report)
        store = self.env.store
        modules = {p: store.read_text(p) for p in self._lead_files if not is_test_file(p) and store.exists(p)}
        begun = file_start(test_file, modules) if self.client.continues else ""
        return await self._write_tests(lead, user, test_file, begun)

    async def _draft_answer(self, lead: Agent, path: str, code: str) -> str:
        """The module ``path`` whole, in one answer of the model; raises ValueError for an answer cut off, or that
        gives no module."""
        user = self.render("draft_task", task=self.task, module=path, code=code)
        call, history = await self._ask(lead, "draft_system", user, [WRITE_MODULE], [])
        answer = history[-1]
        if isinstance(answer, ModelResponse) and cut_off(answer):
            raise ValueError("the answer was cut off at the length limit")
        return textwrap.dedent(DraftArgs.model_validate(_args(call, "write_module")).code)

    async def _redesign(self, lead: Agent, report: str) -> bool:
        """The lead's tests fail and no agent's function is involved (she wrote the failing code, or the tests
        are wrong): she rewrites her modules and tests seeing the failure; new stubs get agents."""
        self._set(lead, AgentState.WRITING, "repairing her own code or tests")
        written = self._agents_functions()
        if self.repository:  # her modules are the repository's: shown as outlines, and sent back as changes
            files = self._lead_outlines(lead)
            user = self.render("change_repair", repository=self.repository, task=self.task, files=files, report=report)
            design = await self._change(lead, user)
        else:
            files = "\n\n".join(
                fenced_file(p, self._read(lead, p)) for p in self._lead_files if self.env.store.exists(p)
            )
            design = await self._design(lead, self.render("mother_repair", task=self.task, files=files, report=report))
        if design is None:
            return False
        self._keep_agents_functions(lead, written)
        owned = self._owned()
        await self._delegate(lead, [c for c in design[0] if c.key not in owned])
        return True

    def _agents_functions(self) -> list[tuple[Contract, str]]:
        """Each agent's function as its module has it, with a body."""
        found = []
        for contract in self._contracts():
            try:
                code = current_code(self.env.store.read_text(contract.module), contract)
            except (ContractError, OSError):
                continue
            if code is not None:
                found.append((contract, code))
        return found

    def _keep_agents_functions(self, lead: Agent, written: list[tuple[Contract, str]]) -> None:
        """Put back each agent's function that the lead's rewrite of her modules made a stub again: no agent is
        made for a function one already owns, so it would stay a stub (a small model asked to write its modules
        again, complete, often sends the design it began with)."""
        store = self.env.store
        for contract, code in written:
            try:
                source = store.read_text(contract.module)
                stub = next((c for c in stubs(source, contract.module) if c.key == contract.key), None)
                if stub is None:  # written, or gone
                    continue
                if (stub.signature, stub.docstring) != (contract.signature, contract.docstring):
                    self._reassign(contract)  # her stub is a new contract: a new agent's
                    continue
                kept = put_function(source, contract, code, self._siblings(contract))
            except (ContractError, OSError):
                continue
            self._write(lead, contract.module, kept)
            self._repaired("agents_function_kept", owns=contract.label)

    def _reassign(self, contract: Contract) -> None:
        """The agent that owned ``contract`` gives it up (the lead changed it): a new agent is made for it."""
        self._drafted.discard(contract.key)  # its new stub is not the draft's
        for agent in (a for a in self.agents if a.contract is not None and a.contract.key == contract.key):
            agent.contract = None
            self._set(agent, agent.state, "its lead changed its contract; a new agent owns it")

    def _lead_outlines(self, lead: Agent) -> str:
        """A change's lead files as she sees them again: her test file whole, the modules as outlines."""
        shown = []
        for path in (p for p in self._lead_files if self.env.store.exists(p)):
            text = self._read(lead, path)
            shown.append(fenced_file(path, text if is_test_file(path) or not path.endswith(".py") else outline(text)))
        return "\n\n".join(shown)

    async def _delegate(self, mother: Agent, contracts: list[Contract]) -> None:
        """One agent per contract, working concurrently; constructors first, as the attributes they set are what
        the other methods of their class share (an agent sees its class's constructor whole)."""
        children = []
        for contract in sorted(contracts, key=lambda c: not c.constructor):
            if self._can_spawn(mother.depth + 1, 1):
                children.append(self._new(contract.label, mother.depth + 1, mother.id, contract))
            else:  # no agent left: the mother implements it herself, completely
                await self._implement(mother, contract, leaf=True)
        self._set(mother, AgentState.WAITING, f"waiting for {len(children)} agents")
        first = [c for c in children if c.contract is not None and c.contract.constructor]
        await together(self._child(c) for c in first)
        await together(self._child(c) for c in children if c not in first)

    async def _implement(
        self, agent: Agent, contract: Contract, *, leaf: bool, extra: str = "", repair: bool = False
    ) -> tuple[list[Contract], str]:
        """One agent writes one function; returns the helper stubs it delegated (none when ``leaf``) and the tests
        of its function it wrote with them (it is then a mother and owns those tests).

        The task's own examples of the function (its given docstring's doctests, or calls the task states) are
        its first check, as a step's are in the l2mac strategy: an answer that fails them is answered with what
        they showed, and after the last answer the function that failed the fewest is kept. A function the agent
        rewrites (a repair) counts as its own first answer, so a test of the lead's that contradicts the task's
        examples never bends a function that passes them. Seen on ClassEval at 7ad634d: ``remove(6, 2)`` kept
        returning 2 against its docstring's 4 (13 of 21 tests, where one call passed all 21)."""
        history: list[ModelMessage] = []
        extra = "\n".join(x for x in (extra, self.render("no_more_agents") if leaf else "") if x)
        # a change request first: an answer that asks for one is not also read as the function
        tools = [*([REQUEST_CHANGE] if agent.parent is not None else []), WRITE_FUNCTION]
        examples = self._examples_of(contract)
        best = await self._held(contract, examples) if examples else None  # (examples failed, code)
        if repair and best is not None and best[0] == 0:  # a repair of a function that passes them: they decide
            extra = "\n".join([extra, self.render("examples_hold", name=contract.name)])
        written: int | None = None  # examples the last written answer fails
        told = ""  # what the examples showed it last
        holds = self._holds(contract, examples, tools) if examples else None
        failed: set[tuple[str, str]] = set()  # answers found failing the examples, by request
        if not repair and self._is_drafted(contract):  # the lead's draft of it is its first answer
            if best is None or best[0] == 0:  # no example judges it, or it passes them: kept
                self.log("draft_kept", id=agent.id, owns=agent.owns, examples=bool(best))
                return [], ""
            # it fails them: the agent writes the function as it would with no draft (shown a failing draft, the
            # model sent it back: ClassEval_21 at e19324a, 12 of 24 tests where agents alone passed 20), and the
            # draft is kept if every answer fails more of them
            written = best[0]
            self.log("examples_failed", id=agent.id, owns=agent.owns, failed=written, draft=True)
        for _ in range(self.limits.attempts):
            async with self._lock(contract.module):
                module_now = self._read(agent, contract.module)
            user = self.render(
                "child_task",
                task=self.task,
                module=contract.module,
                outline=outline(module_now, self._hidden_from(agent, contract)),
                contract=contract.text(),
                extra=extra,
            )
            call, history = await self._ask(agent, "child_system", user, tools, history, holds=holds, failed=failed)
            if call is not None and call.tool_name == "request_contract_change":
                changed, extra = await self._change_contract(agent, contract, call)
                if changed != contract:  # the examples' verdict on the old signature says nothing of the new
                    contract, best, written = changed, None, None
                    holds = self._holds(contract, examples, tools) if examples else None
                continue
            try:
                answer = FunctionArgs.model_validate(_args(call, "write_function"))
                code = answer.code
                async with self._lock(contract.module):
                    merged, helpers = self._placed(contract, code)
                    if helpers and leaf:
                        raise ContractError("no agents are left to delegate to: implement every helper fully")
                    self._write(agent, contract.module, merged)
                    self._fix_files([contract.module])
            except (ValidationError, ContractError, ValueError, OSError) as e:
                extra = self.render("rejected_code", error=first_line(e))
                continue
            # a function it split runs its helpers, which their agents have not written yet
            shown = await self._held(contract, examples) if examples and not helpers else None
            if shown is None or shown[0] == 0:
                return helpers, answer.tests if helpers else ""
            written = shown[0]
            if best is None or shown[0] <= best[0]:  # a tie goes to the later answer: it saw more
                best = shown
            self.log("examples_failed", id=agent.id, owns=agent.owns, failed=shown[0])
            report = self._example_report(contract)
            if report == told:  # its rewrite fails them just the same: asking again would not tell it more
                break
            told = report
            extra = self.render("examples_failed", name=contract.name, report=report)
        if written is None:
            raise ContractError(f"{contract.name}: no usable function after {self.limits.attempts} answers")
        if best is not None and best[0] < written:
            await self._restore(agent, contract, best[1])
        return [], ""

    def _placed(self, contract: Contract, code: str) -> tuple[str, list[Contract]]:
        """``contract``'s module with ``code`` (an agent's answer) put in place of its function, and the helper
        stubs the answer adds (a sibling's stub it copied is the sibling's). Raises ContractError when the
        function is still a stub."""
        source = self.env.store.read_text(contract.module)
        merged = put_function(source, contract, code, self._siblings(contract))
        after = stubs(merged, contract.module)
        if any(s.key == contract.key for s in after):
            raise ContractError(f"{contract.name} is still a stub: write its body")
        before = {s.key for s in stubs(source, contract.module)}
        return merged, [s for s in after if s.key not in before and s.name in _defined(code)]

    def _is_drafted(self, contract: Contract) -> bool:
        """Whether ``contract``'s function is the lead's draft of it (her draft wrote it, and it is not a stub)."""
        if contract.key not in self._drafted:
            return False
        return current_code(self.env.store.read_text(contract.module), contract) is not None

    def _siblings(self, contract: Contract) -> set[str]:
        """The other agents' functions of ``contract``'s class (or module's top level)."""
        return {
            a.contract.name
            for a in self.agents
            if a.contract and a.contract.owner == contract.owner and a.contract.module == contract.module
        } - {contract.name}

    def _examples_of(self, contract: Contract) -> list[Example]:
        """The task's own examples of ``contract``'s function."""
        return [e for e in self._examples if e.name == contract.qualname]

    async def _held(
        self, contract: Contract, examples: list[Example], trial: str | None = None
    ) -> tuple[int, str] | None:
        """How many of ``examples`` the function as its module has it fails, and its code; None when it is a stub,
        or when every example reaches a function no agent has written yet, through its own calls or the
        function's (its failure would be theirs). Run in the module's lock, so no agent writes it meanwhile. With
        ``trial`` (the module as an answer would make it), the examples run in a scratch copy of the project with
        that module: the project is not changed, and the failures are not reported to the agent."""
        store = self.env.store
        async with self._lock(contract.module):
            sources = {m: store.read_text(m) for m in sorted(self._modules() | {contract.module}) if store.exists(m)}
            if trial is not None:
                sources[contract.module] = trial
            code = current_code(sources[contract.module], contract)
            if code is None:
                return None
            owned = self._owned()
            pending = {c.name for m, text in sources.items() for c in stubs(text, m) if c.key in owned}
            pending.discard(contract.name)
            ready = [e for e in examples if not reached_stubs(sources, [code, e.text], pending)]
            if not ready:
                return None
            env = self.env
            if trial is None:
                run = await asyncio.to_thread(run_examples, ready, store, env.runner, env.python, env.test_timeout_s)
            else:
                files = {**store.snapshot(), contract.module: trial}
                fixed = [contract.module] if self.recover else []  # as the write would repair it
                run = await asyncio.to_thread(_examples_in_copy, files, store, ready, env, fixed)
        if run is None:
            return None
        if trial is None:
            self._reports[contract.key] = run.failures()
        return len(run.failed), code

    def _holds(self, contract: Contract, examples: list[Example], tools: list[Tool]) -> Holds:
        """What an agent's answer for ``contract`` is held to: the function it writes passes the task's examples of
        it (tried in a scratch copy). An answer that asks for a change of contract, or splits the function into
        helpers not written yet, is not judged by them: it holds."""

        async def holds(response: ModelResponse) -> bool:
            call = self.protocol.read_call(response, tools, self.recover)
            if call is None:
                return False
            if call.tool_name != "write_function":
                return True
            try:
                merged, helpers = self._placed(
                    contract, FunctionArgs.model_validate(_args(call, "write_function")).code
                )
            except (ValidationError, ContractError, ValueError, OSError, WorkspaceError):
                return False
            if helpers:
                return True  # its helpers are stubs yet: the examples would judge them
            shown = await self._held(contract, examples, trial=merged)
            return shown is None or shown[0] == 0

        return holds

    def _contracts(self) -> list[Contract]:
        """The functions agents own."""
        return [a.contract for a in self.agents if a.contract is not None]

    def _owned(self) -> set[tuple[str, str | None, str]]:
        """The functions agents own, by contract key."""
        return {c.key for c in self._contracts()}

    def _modules(self) -> set[str]:
        """The modules that hold the functions agents own."""
        return {c.module for c in self._contracts()}

    def _example_report(self, contract: Contract) -> str:
        return self._reports.get(contract.key, "")[-2000:]

    async def _restore(self, agent: Agent, contract: Contract, code: str) -> None:
        """Put back ``agent``'s answer that failed the fewest of the task's examples."""
        async with self._lock(contract.module):
            source = self.env.store.read_text(contract.module)
            try:
                restored = put_function(source, contract, code, self._siblings(contract))
            except ContractError as e:
                self.log("examples_best_not_restored", id=agent.id, reason=str(e))
                return
            self._write(agent, contract.module, restored)
        self._repaired("examples_best_kept", id=agent.id, owns=agent.owns)

    async def _child(self, agent: Agent) -> None:
        assert agent.contract is not None
        self._set(agent, AgentState.WRITING)
        leaf = not self._can_spawn(agent.depth + 1, 1)
        try:
            # a function the repository has, which the change rewrites: the agent is shown it as it is
            current = current_code(self.env.store.read_text(agent.contract.module), agent.contract)
            extra = self.render("changed_function", current=current) if current and self.repository else ""
            helpers, tests = await self._implement(agent, agent.contract, leaf=leaf, extra=extra)
        except ContractError as e:
            self._set(agent, AgentState.FAILED, str(e))
            return
        if not helpers:
            self._set(agent, AgentState.DONE)
            return
        # it split its function: it is a mother now, with its own tests run once its children are done
        contract = agent.contract
        test_file = self._test_path(contract.module, contract.name, contract.owner) if tests.strip() else None
        if test_file:
            self._write(agent, test_file, tests)
            self._fix_files([test_file])
        else:
            self.log("agent_without_tests", id=agent.id, owns=agent.owns)
        await self._delegate(agent, helpers)
        if test_file:
            await self._test_and_repair(agent, test_file)
        else:
            self._set(agent, AgentState.DONE, "split without tests of its own; its lead's tests cover it")

    async def _change_contract(self, child: Agent, contract: Contract, call: ToolCallPart) -> tuple[Contract, str]:
        """The child asks its mother; the mother (the model, in the mother's role) decides."""
        assert child.parent is not None
        mother = self.agents[child.parent]
        try:
            req = ContractChangeArgs.model_validate(_args(call, "request_contract_change"))
            proposed = changed_contract(contract, req.signature)
        except (ValidationError, ContractError, ValueError) as e:
            return contract, self.render("rejected_code", error=first_line(e))
        outline_now = outline(self.env.store.read_text(contract.module))
        user = self.render(
            "decide_task",
            module=contract.module,
            outline=outline_now,
            name=contract.name,
            signature=proposed.signature,
            reason=req.reason,
        )
        decision_call, _ = await self._ask(mother, "decide_system", user, [DECIDE], [])
        try:
            decision = DecisionArgs.model_validate(_args(decision_call, "decide_contract"))
        except (ValidationError, ValueError):
            decision = DecisionArgs(accept=False, reason="no decision could be read")
        self.log("contract_change", child=child.id, signature=proposed.signature, accepted=decision.accept)
        if not decision.accept:
            return contract, self.render("contract_rejected", reason=decision.reason)
        async with self._lock(contract.module):
            source = self.env.store.read_text(contract.module)
            self._write(mother, contract.module, replace_signature(source, contract, proposed))
        child.contract = proposed
        return proposed, self.render("contract_accepted", contract=proposed.text())

    async def _test_and_repair(self, mother: Agent, test_file: str) -> None:
        """Run the mother's tests; send failures down to the children they involve; repeat a bounded number of
        times. The mother is done when her tests pass (and, in a repository, every test that passed before the
        change still does).

        Never worse than an earlier round of the same tests: the lead's rounds (round 1 is the first draft) are
        ranked by whether the run finished, the task's own examples passed (a function still a stub passes
        none), the tests that passed before the change broken, then her tests passed; when the last round ranks
        below an earlier one (a repair bent right code to a wrong test), the modules are put back as they were
        then. A round after she rewrote her tests starts the ranking afresh: its tests are not the same; but
        when her tests passed at an earlier round, and the last does not pass them with no more examples passed,
        her modules and test file are put back as they were at the last round that passed. So too when the run
        stops (its budget spent, the provider failing) in a repair: the modules as the repair left them are ranked
        (her tests run once more) and put back when an earlier round ranks above them. Seen on ClassEval_26: the
        token budget ran out while two agents rewrote their methods a third time, and those rewrites were the
        result.

        The lead's own functions (those no agent owns: she implemented them, or the repository has them; not a
        class's whose methods agents own) are held to the task's examples of them as an agent's are: while one
        fails them she is not done. Her agents' failures are repaired first; then she rewrites her code seeing what
        the examples showed, and is asked again only while what they show changes. Seen on python-slugify at
        31e8df1: the lead wrote slugify_filename herself, and it dropped the extension the request's own example
        keeps."""
        lead = mother.parent is None
        rounds = Rounds()
        try:
            await self._rounds(mother, test_file, lead, rounds)
        except (BudgetExceeded, ProviderError) as stop:
            if lead and (rounds.best or rounds.passed):
                try:
                    await self._closest_at_stop(mother, test_file, rounds)
                except Exception as e:  # the stop is what the run reports: this only fails to improve on it
                    stop.add_note(f"the closest round was not put back: {type(e).__name__}: {e}")
                    self.log("best_round_not_kept", agent=mother.id, error=f"{type(e).__name__}: {first_line(e)}")
            raise

    async def _closest_at_stop(self, mother: Agent, test_file: str, rounds: Rounds) -> None:
        """What the repair in flight left, ranked as a round would be (unless nothing changed since the last
        round), and the closest round put back in its place."""
        store = self.env.store
        tests_now = store.read_text(test_file) if store.exists(test_file) else None
        if rounds.best is not None and tests_now != rounds.best.files.get(test_file):
            rounds.best = None  # she was rewriting her tests: the best round's counts are of other tests
        if store.revision == rounds.revision:
            now, ok = rounds.last, rounds.last_ok
        else:
            await asyncio.to_thread(self.env.sync)
            outcome, ok, broken = await asyncio.to_thread(mother_tests, self.env, test_file, self.passing_before, True)
            now = await self._measured(self.limits.repair_rounds + 1, outcome, broken, test_file)
        kept = rounds.closest(now, ok)
        if kept is not None:
            self._put_back(mother, kept)
            note = f"the run stopped in a repair; its files were put back as they were at round {kept.number + 1}"
            self._set(mother, AgentState.FAILED, note)

    async def _rounds(self, mother: Agent, test_file: str, lead: bool, rounds: Rounds) -> None:
        """The rounds of :meth:`_test_and_repair`, each ranked into ``rounds``."""
        broken: list[str] = []
        now: Round | None = None
        asked = ""  # what her own functions' examples showed, the last time she was asked to answer it
        for round_ in range(self.limits.repair_rounds + 1):
            self._set(mother, AgentState.TESTING)
            await asyncio.to_thread(self.env.sync)  # the lead's dependencies, installed into the project's .venv
            started = time.monotonic()
            outcome, ok, broken = await asyncio.to_thread(mother_tests, self.env, test_file, self.passing_before, lead)
            seconds = round(time.monotonic() - started, 3)
            failing = outcome.failed + outcome.errors
            mine = (
                await asyncio.to_thread(own_examples_failing, self._examples, self._contracts(), self.env)
                if lead
                else ""
            )
            self.log("checks", agent=mother.id, ok=ok, seconds=seconds, tests_passed=outcome.passed,
                     tests_failing=failing, broken=broken, own_examples_ok=not mine)  # fmt: skip
            if ok and not mine:
                self._set(mother, AgentState.DONE, outcome.headline())
                return
            now = await self._measured(round_, outcome, broken, test_file) if lead else None
            rounds.add(now, ok, self.env.store.revision)
            if round_ == self.limits.repair_rounds or (ok and mine == asked):
                break  # (her rewrite fails her examples just as before: asking again would not tell her more)
            if lead and not ok and made_by_the_tests(outcome.output):
                self.log("lead_retests", mother=mother.id, round=round_ + 1)
                if not await self._retest(mother, test_file, outcome.output):
                    break
                rounds.best = None  # her tests are new: the earlier rounds' counts are of other tests
                continue
            involved = [] if ok else involved_in(self.agents, mother, outcome.output)
            if not involved:  # the failure is in the lead's own code, tests or examples (agents' come first)
                self.log("lead_repairs", mother=mother.id, round=round_ + 1)
                asked = mine
                said = [
                    outcome.output[-3000:] if not ok else "",
                    self.render("own_examples", report=mine) if mine else "",
                ]
                if not await self._redesign(mother, "\n\n".join(x for x in said if x)):
                    break
                rounds.best = None  # her tests are new: the earlier rounds' counts are of other tests
                continue
            self.log("feedback_down", mother=mother.id, to=[a.id for a in involved], round=round_ + 1)
            await together(self._repair(a, outcome.output) for a in involved)
        note = f"its tests still fail after {self.limits.repair_rounds} repair rounds"
        if ok:
            note = "her tests pass, but the task's own examples of her functions fail"
        kept = rounds.closest(now, ok)
        if kept is not None:
            self._put_back(mother, kept)
            note += f"; its files were put back as they were at round {kept.number + 1}, the closest to passing"
            broken = kept.broken
        if broken:
            note += f"; {len(broken)} tests that passed before the change fail: {', '.join(broken[:5])}"
        self._set(mother, AgentState.FAILED, note)

    async def _measured(self, number: int, outcome: TestRun, broken: list[str], test_file: str) -> Round | None:
        """The lead's round ``number`` as it ranks (see :mod:`l2mac.soa.rounds`), with her modules as they are."""
        modules = self._modules() | {p for p in self._lead_files if p.endswith(".py") and not is_test_file(p)}
        return await asyncio.to_thread(
            measured, number, outcome, broken, test_file, sorted(modules), self._examples, self.env
        )

    def _put_back(self, mother: Agent, kept: Round) -> None:
        """``kept``'s files written back; the agents whose module changed with them say their code is that round's
        (an agent left at "repaired" would claim a repair the project no longer holds)."""
        store = self.env.store
        changed = {p for p, text in kept.files.items() if not store.exists(p) or store.read_text(p) != text}
        for path, text in kept.files.items():
            self._write(mother, path, text)
        self._repaired("best_round_kept", agent=mother.id, round=kept.number + 1, rank=list(kept.rank))
        for agent in self.agents:
            if agent.contract is not None and agent.contract.module in changed:
                self._set(agent, agent.state, f"its code put back as it was at round {kept.number + 1}")

    async def _repair(self, agent: Agent, report: str) -> None:
        assert agent.contract is not None
        self._set(agent, AgentState.WRITING, "repairing")
        try:
            extra = self.render("repair", name=agent.contract.name, report=report[-3000:])
            await self._implement(agent, agent.contract, leaf=True, extra=extra, repair=True)
            self._set(agent, AgentState.DONE, "repaired")
        except ContractError as e:
            self._set(agent, AgentState.FAILED, str(e))


_WHAT = {
    "write_skeleton": "modules (write_skeleton, or each module as its path and a fenced block)",
    "write_function": "function (write_function, or the function in a ```python fenced block)",
    "decide_contract": "decision",
    "write_module": "module (write_module, or the module in a ```python fenced block)",
    "write_tests": "tests (write_tests, or the test file as its path and a fenced block)",
}


def given_design(task: str) -> dict[str, str]:
    """The modules a task gives as skeletons, by path: each Python file it names whose skeleton (its functions
    or methods as stubs) it gives, when it gives one for every code file it names; else the interfaces a
    specification lists for each file it describes (DevBench's architecture documents). Seen on DevBench at
    ed77b4b: a 1.5B lead asked to design a project from its PRD and architecture wrote the PRD back, or was
    cut off at its answer limit, three times in each of the three repositories."""
    code = [p for p in named_files(task) if p.endswith(".py") and not is_test_file(p)]
    given = {p: given_skeleton(task, names_for_file(task, p), p) for p in code}
    if code and all(given.values()):
        return {p: s for p, s in given.items() if s is not None}
    return specified_skeletons(task)


def _first_module(modules: list[str]) -> str:
    """The module a lead's test file is named for: her first that is not a package marker."""
    return next((p for p in modules if not p.endswith("__init__.py")), modules[0])


def _examples_in_copy(
    files: dict[str, str], store: FileStore, examples: list[Example], env: ToolEnv, fixed: list[str]
) -> ExampleRun | None:
    """``examples`` run in a scratch copy of the project holding ``files``, once the engine's deterministic
    repairs (forgotten imports, ...) are made to the ``fixed`` files, as writing them makes them."""
    with scratch_copy(files, "l2mac-verify-", opaque_from=store) as scratch:
        if fixed:
            untyped = partial(replace(env, store=scratch).check_files, types=False)
            repair_written(scratch, untyped, fixed, lambda *a, **k: None)
        return run_examples(examples, scratch, env.runner, env.python, env.test_timeout_s)


def _parse_or_reject(code: str, path: str) -> None:
    try:
        ast.parse(code)
    except SyntaxError as e:
        raise ValueError(f"your code for {path} does not parse: {e.msg} (line {e.lineno})") from e


def _args(call: ToolCallPart | None, expected: str) -> dict[str, Any]:
    if call is None:
        raise ValueError(f"the answer gave no {_WHAT.get(expected, expected)}")
    if call.tool_name != expected:
        raise ValueError(f"unknown tool {call.tool_name!r} here; call {expected}")
    return parse_arguments(call.args)


def _defined(code: str) -> set[str]:
    """The functions ``code`` defines at its top level and in its classes."""
    try:
        tree = ast.parse(textwrap.dedent(code))
    except SyntaxError:
        return set()
    scopes = [tree.body, *(n.body for n in tree.body if isinstance(n, ast.ClassDef))]
    return {n.name for body in scopes for n in body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
