"""The L2MAC strategy: plan a prompt program, then run its instructions one by one in fresh contexts."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from l2mac.checks.repairs import make_installable
from l2mac.checks.usage import project_commands
from l2mac.control import Step, StepLimits, StepProtocol, time_share
from l2mac.errors import BudgetExceeded, ProviderError
from l2mac.events import PlanReady, StepFinished, StepStarted
from l2mac.plan_rules import is_readme_step
from l2mac.planner import make_plan
from l2mac.record import RunRecord
from l2mac.settings import RunSettings
from l2mac.strategies.base import RunContext, StrategyResult, step_limits, stop_cause
from l2mac.types import Instruction, PromptProgram


@dataclass(frozen=True)
class SequentialStrategy:
    """``limits``: each step's budgets; ``plan_steps``: most steps the planner may make; ``step_budget``: most
    steps the run may execute (``--max-steps``); ``reflect``: the planner reviews its plan once."""

    limits: StepLimits = field(default_factory=StepLimits)
    plan_steps: int | None = None
    step_budget: int | None = None
    reflect: bool = False
    plan_from_spec: bool = True
    readme: bool = False  # a last step writes the README when the plan has none
    name: str = "l2mac"

    @classmethod
    def from_settings(cls, rs: RunSettings, protocol: StepProtocol) -> SequentialStrategy:
        return cls(
            step_limits(rs, protocol),
            plan_steps=rs.steps,
            step_budget=rs.max_steps,
            reflect=rs.reflect,
            plan_from_spec=rs.plan_from_spec,
            readme=rs.readme_step,
        )

    async def run(self, ctx: RunContext) -> StrategyResult:
        result = StrategyResult(ctx.program)
        try:
            result.program = ctx.program or await make_plan(
                ctx.client,
                ctx.domain,
                ctx.task,
                self.plan_steps,
                self.reflect,
                from_spec=self.plan_from_spec and not ctx.repository,
                readme=self.readme and not ctx.repository,
                repository=ctx.repository,
                existing=ctx.toolbox.env.store.list_files() if ctx.repository else (),
            )
            await self._run_program(ctx, result.program, result)
        except (BudgetExceeded, ProviderError) as e:
            result.stopped, result.stopped_by = str(e), stop_cause(e)
        return result

    async def _run_program(self, ctx: RunContext, program: PromptProgram, result: StrategyResult) -> None:
        ctx.record.save_program(program)
        ctx.emit(PlanReady([s.title for s in program.steps], "file" if ctx.program is not None else program.source))
        unit = ctx.control_unit(self.limits)
        summary = ""
        total = len(program.steps)
        for index, instruction in enumerate(program.steps, 1):
            if self.step_budget is not None and index > self.step_budget:
                raise BudgetExceeded(f"step budget: {self.step_budget} steps run (raise --max-steps to go further)")
            ctx.client.check_budget()  # the wall-time limit, between steps too
            ctx.emit(StepStarted(index, total, instruction.title))
            if self.readme and ctx.domain.python_checks and is_readme_step(instruction):
                make_installable(ctx.toolbox.env.store, _recovered(ctx.record, index))
                instruction = _with_commands(instruction, ctx)
            deadline = time_share(ctx.client.deadline, min(total, self.step_budget or total) - index + 1)
            outcome = await unit.run_step(Step(program.task, index, total, instruction, summary, deadline))
            ctx.history.commit(f"step {index}/{total}: {instruction.title} [{outcome.status.value}]")
            ctx.record.save_step(outcome)
            ctx.emit(StepFinished(outcome, total))
            result.outcomes.append(outcome)
            summary = outcome.summary


def _with_commands(instruction: Instruction, ctx: RunContext) -> Instruction:
    """The README step given the project's install, test and run commands, worked out from its files (see
    :func:`l2mac.checks.usage.project_commands`); as it was when the domain has no words for them."""
    commands = project_commands(ctx.toolbox.env.store.snapshot())
    if not commands or "readme_commands_given" not in ctx.domain.prompts:
        return instruction
    listed = "\n".join(f"- to {what}: `{command}`" for what, command in commands.items())
    given = ctx.domain.render("readme_commands_given", commands=listed)
    return instruction.model_copy(update={"instruction": f"{instruction.instruction.rstrip()}\n{given}"})


def _recovered(record: RunRecord, step: int) -> Callable[..., None]:
    """Logs a repair l2mac made itself (``recovered`` in the run log), in step ``step``."""

    def log(recovery: str, **fields: Any) -> None:
        record.log("recovered", step=step, recovery=recovery, **fields)

    return log
