"""The SoA strategy: self-organised agents on the engine's model client, tools, checks and file store."""

from __future__ import annotations

from dataclasses import dataclass, field

from l2mac.control import StepLimits, StepProtocol
from l2mac.errors import BudgetExceeded, ProviderError
from l2mac.settings import RunSettings
from l2mac.soa.agents import Agent, AgentLimits, AgentState
from l2mac.soa.drafts import Drafts
from l2mac.soa.organization import Organization
from l2mac.spec_plan import module_steps
from l2mac.strategies.base import RunContext, StrategyResult, step_limits, stop_cause
from l2mac.types import Instruction, PromptProgram, StepOutcome, StepStatus, StopCause


@dataclass(frozen=True)
class SoAStrategy:
    """``limits``: the organisation's agents; ``step_limits``: the budgets of the control unit's step in which the
    lead drafts each module the task gives; ``plan_from_spec``: those steps are the specification's."""

    limits: AgentLimits = field(default_factory=AgentLimits)
    step_limits: StepLimits = field(default_factory=StepLimits)
    plan_from_spec: bool = True
    name: str = "soa"

    @classmethod
    def from_settings(cls, rs: RunSettings, protocol: StepProtocol) -> SoAStrategy:
        limits = AgentLimits(rs.max_agents, rs.max_depth, rs.concurrency)
        return cls(limits, step_limits(rs, protocol), rs.plan_from_spec)

    async def run(self, ctx: RunContext) -> StrategyResult:
        """One outcome per agent, in creation order: the report counts agents as its steps."""
        org = Organization(
            ctx.client,
            ctx.toolbox.env,
            self.limits,
            emit=ctx.emit,
            log=ctx.record.log,
            protocol=ctx.protocol,
            recover=ctx.recoveries,
            repository=ctx.repository,
            passing_before=ctx.passing_before,
            drafts=self._drafts(ctx),
        )
        stopped: str | None = None
        cause: StopCause | None = None
        try:
            await org.run(ctx.task)
        except (BudgetExceeded, ProviderError) as e:
            stopped, cause = str(e), stop_cause(e)
        finally:  # on any exit, the agents so far are the run's steps
            ctx.history.commit(f"soa: {len(org.agents)} agents")
        outcomes = [_outcome(a) for a in org.agents]
        for outcome in outcomes:
            ctx.record.save_step(outcome)
        steps = [Instruction(title=o.title, instruction=a.owns) for o, a in zip(outcomes, org.agents, strict=True)]
        return StrategyResult(PromptProgram(task=ctx.task, steps=steps), outcomes, stopped, cause)

    def _drafts(self, ctx: RunContext) -> Drafts:
        """The lead's drafts of the modules the task gives: the steps the l2mac strategy's plan has for them
        (:func:`module_steps`), run by the control unit with its tools, checks and tests; none in a change to a
        repository, or when the plan is not to be read from the specification."""
        unit = ctx.control_unit(self.step_limits)
        planned = self.plan_from_spec and ctx.domain.python_checks and not ctx.repository
        return Drafts(module_steps(ctx.task, tests=ctx.domain.tests) if planned else {}, unit.run_step)


def _outcome(agent: Agent) -> StepOutcome:
    status = StepStatus.PASSED if agent.state is AgentState.DONE else StepStatus.FAILED
    return StepOutcome(
        index=agent.id + 1,
        title=f"agent {agent.id}: {agent.owns}",
        status=status,
        summary=agent.note,
        reason="" if status is StepStatus.PASSED else agent.note or agent.state.value,
        turns=agent.calls,
    )
