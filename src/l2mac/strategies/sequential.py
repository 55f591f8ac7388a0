"""The L2MAC strategy: plan a prompt program, then run its instructions one by one in fresh contexts."""

from __future__ import annotations

from l2mac.control import ControlUnit, Step
from l2mac.errors import BudgetExceeded
from l2mac.events import PlanReady, StepFinished, StepStarted
from l2mac.planner import make_plan
from l2mac.strategies.base import RunContext
from l2mac.types import StepOutcome


class SequentialStrategy:
    name = "l2mac"

    async def run(self, ctx: RunContext) -> list[StepOutcome]:
        source = "file" if ctx.program is not None else "planned"
        program = ctx.program or await make_plan(ctx.client, ctx.domain, ctx.task, ctx.plan_steps, ctx.reflect)
        ctx.program = program
        ctx.record.save_program(program)
        ctx.emit(PlanReady([s.title for s in program.steps], source))
        unit = ControlUnit(
            ctx.client,
            ctx.toolbox,
            ctx.domain,
            ctx.budget,
            protocol=ctx.protocol,
            limits=ctx.limits,
            run_tests=ctx.run_tests,
            record=ctx.record,
            emit=ctx.emit,
            recover=ctx.recoveries,
        )
        outcomes = ctx.outcomes
        summary = ""
        total = len(program.steps)
        for index, instruction in enumerate(program.steps, 1):
            if ctx.step_budget is not None and index > ctx.step_budget:
                raise BudgetExceeded(f"step budget: {ctx.step_budget} steps run (raise --max-steps to go further)")
            ctx.client.check_budget()  # the wall-time limit, between steps too
            ctx.emit(StepStarted(index, total, instruction.title))
            outcome = await unit.run_step(Step(program.task, index, total, instruction, summary))
            ctx.history.commit(f"step {index}/{total}: {instruction.title} [{outcome.status.value}]")
            ctx.record.save_step(outcome)
            ctx.emit(StepFinished(outcome, total))
            outcomes.append(outcome)
            summary = outcome.summary
        return outcomes
