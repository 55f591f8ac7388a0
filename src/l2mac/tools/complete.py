"""``step_complete``: the model's declaration that the step is done. The control unit then runs the checks."""

from __future__ import annotations

from pydantic import BaseModel, Field

from l2mac.tools.base import Tool

STEP_COMPLETE = "step_complete"


class StepCompleteArgs(BaseModel):
    summary: str = Field(
        min_length=1,
        description="What this step built and changed (files, functions, decisions), for the next step to build on.",
    )


COMPLETE = Tool(
    STEP_COMPLETE,
    "Declare the step finished, with a summary. The project's checks then run; if they fail you must fix them.",
    StepCompleteArgs,
)
