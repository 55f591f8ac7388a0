"""The instruction registry: turn the task into a prompt program with one structured call (then checked and
repaired by ``plan_rules``), or load one."""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Sequence
from pathlib import Path

import json_repair
import yaml
from pydantic import BaseModel, Field, ValidationError
from pydantic_ai.messages import ModelMessage, ModelRequest, SystemPromptPart, ToolReturnPart, UserPromptPart
from pydantic_ai.tools import ToolDefinition

from l2mac.domains import Domain
from l2mac.errors import PromptProgramError
from l2mac.models.client import ModelClient
from l2mac.plan_rules import (
    SUBMIT_PLAN,
    carry_task_details,
    dedupe,
    echoes,
    fit_steps,
    follow_spec,
    not_recreating,
    one_folder,
    repair,
    tests_with_their_code,
    with_readme,
    without_setup,
)
from l2mac.spec_plan import one_skeleton_file, spec_plan, task_step
from l2mac.tools.base import Tool, parse_arguments
from l2mac.types import Instruction, PromptProgram

DEFAULT_MAX_STEPS = 12
PLAN_ATTEMPTS = 3


class PlanArgs(BaseModel):
    steps: list[Instruction] = Field(min_length=1, description="The ordered steps of the plan.")


def plan_tool() -> ToolDefinition:
    return Tool(SUBMIT_PLAN, "Submit the complete, ordered plan.", PlanArgs).definition()


#: a backslash that continues a line, as in a shell script, left in a repaired JSON string
_CONTINUED = re.compile(r"[ \t]*\\[ \t]*\n")
_ITEM = re.compile(r"^\s*(?:\d+[.)]|[-*•]|step\s+\d+[:.)]?)\s+(.*\S)", re.IGNORECASE)


def _json_candidates(text: str) -> list[str]:
    blocks = re.findall(r"```(?:json|yaml)?\s*\n(.*?)```", text, re.DOTALL)
    start, end = text.find("{"), text.rfind("}")
    whole = [text[start : end + 1]] if 0 <= start < end else []
    return [*blocks, *whole]


def _steps_from_json(value: object) -> list[Instruction]:
    if isinstance(value, dict) and isinstance(value.get("arguments"), dict):  # a tool call written as text
        value = value["arguments"]
    if isinstance(value, dict):
        value = value.get("steps")
    if isinstance(value, list):
        try:
            return PlanArgs.model_validate({"steps": value}).steps
        except ValidationError:
            return []
    return []


def parse_text_plan(text: str) -> list[Instruction]:
    """Steps from a plan answered as text (what small models often do): JSON, or a numbered/bulleted list."""
    for candidate in _json_candidates(text):
        try:
            value = json.loads(candidate, strict=False)
        except json.JSONDecodeError:
            value = json_repair.loads(candidate)  # '\' before a line break, a missing comma: not a list of lines
        if from_json := _steps_from_json(value):
            return [s.model_copy(update={"instruction": _CONTINUED.sub("\n", s.instruction)}) for s in from_json]
    steps: list[Instruction] = []
    for line in text.splitlines():
        m = _ITEM.match(line)
        if m:
            body = m.group(1).strip().strip("*").strip()
            title, sep, _ = body.partition(":")
            if not sep or len(title.split()) > 12:
                title = " ".join(body.split()[:8])
            steps.append(Instruction(title=title.strip(" *"), instruction=body))
        elif steps and line.strip():
            last = steps[-1]
            steps[-1] = last.model_copy(update={"instruction": f"{last.instruction}\n{line.strip()}"})
    return steps


def _steps_from_response_args(raw: str | dict[str, object] | None) -> list[Instruction]:
    data = parse_arguments(raw)
    return PlanArgs.model_validate(data).steps


async def _ask_plan(client: ModelClient, messages: list[ModelMessage], domain: Domain) -> list[Instruction]:
    error = ""
    for _ in range(PLAN_ATTEMPTS):
        if error:
            messages.append(ModelRequest(parts=[UserPromptPart(domain.render("plan_retry", error=error))]))
        response = await client.request(messages, [plan_tool()], purpose="plan")
        messages.append(response)
        calls = [c for c in response.tool_calls if c.tool_name == SUBMIT_PLAN]
        if calls:
            try:
                return _steps_from_response_args(calls[0].args)
            except ValueError as e:  # includes ValidationError and bad JSON
                error = str(e).splitlines()[0] if not isinstance(e, ValidationError) else str(e)[:600]
                # a tool call must be answered before the next user message
                messages.append(
                    ModelRequest(
                        parts=[ToolReturnPart(SUBMIT_PLAN, f"Error: {error}", tool_call_id=calls[0].tool_call_id)]
                    )
                )
                error = "the plan's arguments did not match the schema (see above)"
                continue
        steps = parse_text_plan(response.text or "")
        if steps:
            return steps
        error = "no tool call and no numbered list of steps was found"
    raise PromptProgramError(f"the model did not produce a usable plan after {PLAN_ATTEMPTS} attempts ({error})")


async def make_plan(
    client: ModelClient,
    domain: Domain,
    task: str,
    max_steps: int | None = None,
    reflect: bool = False,
    *,
    from_spec: bool = True,
    readme: bool = False,
    repository: str = "",
    existing: Sequence[str] = (),
) -> PromptProgram:
    """The task's prompt program: the specification's files when it describes them (``from_spec``), else the
    model's plan, checked and repaired; with ``readme``, a model's plan of code that writes no README gets a last
    step writing one, when the step limit leaves room. With ``repository`` (the map of the repository the task
    changes, and ``existing``, its files), the plan is of that change."""
    limit = max_steps or DEFAULT_MAX_STEPS
    if limit == 1:  # a one-step plan is the task itself: asked to restate it, a small model drops details or fails
        return task_as_one_step(task, domain, "a one-step plan")
    if from_spec and domain.python_checks and (path := one_skeleton_file(task)):
        return task_as_one_step(task, domain, f"the task gives the skeleton of its one code file, {path}")
    if from_spec and domain.python_checks and (steps := spec_plan(task, tests=domain.tests)):
        steps = fit_steps(steps, limit)
        return PromptProgram(task=task, steps=repair(carry_task_details(steps, task)), source="the specification")
    if repository and "plan_change_request" in domain.prompts:
        request = domain.render("plan_change_request", task=task, max_steps=limit, repository=repository)
    else:
        request = domain.render("plan_request", task=task, max_steps=limit, example=domain.plan_example(task))
    messages: list[ModelMessage] = [
        ModelRequest(parts=[SystemPromptPart(domain.render("planner_system")), UserPromptPart(request)])
    ]
    try:
        steps = await _ask_plan(client, messages, domain)
    except PromptProgramError as e:  # a run that cannot be planned still runs: seen on HumanEval+ (4 of 33)
        return task_as_one_step(task, domain, f"the planner failed: {e}")
    if reflect:
        plan_text = yaml.safe_dump([s.model_dump() for s in steps], sort_keys=False, width=100)
        review: list[ModelMessage] = [
            ModelRequest(
                parts=[
                    SystemPromptPart(domain.render("planner_system")),
                    UserPromptPart(request + "\n\n" + domain.render("reflect", plan=plan_text)),
                ]
            )
        ]
        # keep the first plan if reflection fails: it is an improvement, not a requirement
        with contextlib.suppress(PromptProgramError):
            steps = await _ask_plan(client, review, domain)
    if echoes(steps, task):  # no plan: the specification's files are the steps, if it names them
        steps = follow_spec([], task, tests=domain.tests) if domain.python_checks else []
        if not steps:
            return task_as_one_step(task, domain, "the planner read the task back")
    if not domain.tests:
        steps = [s.model_copy(update={"requires_tests": False}) for s in steps]
    if domain.python_checks:  # a plan of code: no setup-only steps, and the specified files' steps
        planned = without_setup(dedupe(steps))
        steps = follow_spec(tests_with_their_code(planned) if domain.tests else planned, task, tests=domain.tests)
        steps = not_recreating(steps, list(existing)) if repository else one_folder(steps, task)
    steps = repair(carry_task_details(fit_steps(dedupe(steps), limit), task))
    if readme and domain.python_checks and "readme_step" in domain.prompts:  # after the task's code is placed
        steps = with_readme(steps, limit, domain.render("readme_step").strip())
    return PromptProgram(task=task, steps=steps)


def task_as_one_step(task: str, domain: Domain, why: str) -> PromptProgram:
    """The task itself as the plan's one step (the step sees every requirement as the task states it)."""
    only = task_step(task, tests=domain.tests)
    return PromptProgram(task=task, steps=[only], source=f"the task as one step: {why}")


def load_prompt_program(path: Path, task: str) -> PromptProgram:
    """A plan from YAML or JSON: ``{steps: [...]}`` or a bare list; a step is a mapping or a string."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as e:
        raise PromptProgramError(f"cannot read prompt program {path}: {e.strerror}") from e
    try:
        data = json.loads(text) if path.suffix == ".json" else yaml.safe_load(text)
    except (json.JSONDecodeError, yaml.YAMLError) as e:
        raise PromptProgramError(f"{path} is not valid {'JSON' if path.suffix == '.json' else 'YAML'}: {e}") from e
    raw_steps = data.get("steps") if isinstance(data, dict) else data
    if not isinstance(raw_steps, list) or not raw_steps:
        raise PromptProgramError(f"{path}: expected a list of steps, or a mapping with a `steps:` list")
    steps: list[Instruction] = []
    for i, item in enumerate(raw_steps, 1):
        if isinstance(item, str):
            item = {"title": " ".join(item.split()[:8]), "instruction": item}
        try:
            steps.append(Instruction.model_validate(item))
        except ValidationError as e:
            raise PromptProgramError(f"{path}: step {i} is invalid: {e.errors()[0]['msg']}") from e
    file_task = data.get("task") if isinstance(data, dict) else None
    return PromptProgram(task=task or str(file_task or ""), steps=steps, source="file")
