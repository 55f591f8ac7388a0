"""The SoA strategy: self-organised agents on the engine's model client, tools, checks and file store."""

from __future__ import annotations

from l2mac.soa.agents import AgentLimits, AgentState
from l2mac.soa.organization import Organization
from l2mac.strategies.base import RunContext
from l2mac.types import Instruction, PromptProgram, StepOutcome, StepStatus


class SoAStrategy:
    name = "soa"

    async def run(self, ctx: RunContext) -> list[StepOutcome]:
        """One outcome per agent, in creation order: the report counts agents as its steps."""
        limits = ctx.agent_limits or AgentLimits()
        org = Organization(
            ctx.client,
            ctx.toolbox.env,
            limits,
            emit=ctx.emit,
            log=ctx.record.log,
            protocol=ctx.protocol,
            recover=ctx.recoveries,
        )
        try:
            agents = await org.run(ctx.task)
        finally:
            agents = org.agents
            ctx.program = PromptProgram(
                task=ctx.task,
                steps=[Instruction(title=f"agent {a.id}: {a.owns}", instruction=a.owns) for a in agents],
            )
            ctx.history.commit(f"soa: {len(agents)} agents")
        for a in agents:
            status = StepStatus.PASSED if a.state is AgentState.DONE else StepStatus.FAILED
            outcome = StepOutcome(
                index=a.id + 1,
                title=f"agent {a.id}: {a.owns}",
                status=status,
                summary=a.note,
                reason="" if status is StepStatus.PASSED else a.note or a.state.value,
                turns=a.calls,
            )
            ctx.outcomes.append(outcome)
            ctx.record.save_step(outcome)
        return ctx.outcomes
