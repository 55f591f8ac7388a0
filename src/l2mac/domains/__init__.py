"""Domains: prompt sets stored as YAML data files (codebase, book), or a user's own file (custom)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from string import Template
from typing import Any

import yaml

from l2mac.errors import ConfigError

BUILTIN = ("codebase", "book")
REQUIRED_PROMPTS = (
    "planner_system",
    "plan_request",
    "plan_retry",
    "reflect",
    "step_system",
    "step",
    "progress",
    "summarise",
    "no_tool_call",
    "checks_failed",
    "repeated_call",
    "text_step_system",
    "text_step",
    "whole_task",
    "text_request",
    "text_request_file",
    "text_request_test_file",
    "text_next_file",
    "text_no_files",
    "text_unchanged",
    "text_missing_files",
    "text_missing_definitions",
    "text_checks_passed",
    "text_checks_failed",
)


@dataclass(frozen=True)
class PlanExample:
    """A worked plan the planner is shown for tasks of one kind, recognised by ``words``."""

    kind: str
    words: tuple[str, ...]
    task: str
    plan: str

    def render(self) -> str:
        return f'Task: "{self.task}"\n{self.plan.strip()}'


@dataclass(frozen=True)
class Domain:
    name: str
    tools: list[str]
    python_checks: bool
    tests: bool
    prompts: dict[str, str]
    plan_examples: tuple[PlanExample, ...] = ()

    def plan_example(self, task: str) -> str:
        """The worked plan of the task's own kind: the example whose words the task uses most (the first on a
        tie, or when it uses none). A small model copies the kind of program an example shows (shown one web
        app, it planned a web app for a command-line task), so it is shown one of its own task's kind."""
        if not self.plan_examples:
            return ""
        text = task.lower()

        def score(example: PlanExample) -> int:
            return sum(len(re.findall(rf"(?<![\w-]){re.escape(w)}(?![\w-])", text)) for w in example.words)

        return max(self.plan_examples, key=score).render()

    def render(self, key: str, **values: Any) -> str:
        """The prompt ``key`` with ``$name`` placeholders filled (unknown placeholders are left as they are)."""
        return render_template(self.prompts[key], values)


def render_template(template: str, values: Mapping[str, Any]) -> str:
    """A prompt template with its ``$name`` placeholders filled; unknown placeholders are left as they are."""
    return Template(template).safe_substitute({k: str(v) for k, v in values.items()}).strip()


def _from_mapping(data: Any, source: str, base: Domain | None = None) -> Domain:
    if not isinstance(data, dict):
        raise ConfigError(f"{source}: a prompt set must be a YAML mapping with a `prompts:` section")
    prompts = dict(base.prompts) if base else {}
    prompts.update({str(k): str(v) for k, v in (data.get("prompts") or {}).items()})
    missing = [k for k in REQUIRED_PROMPTS if k not in prompts]
    if missing:
        raise ConfigError(f"{source}: prompt set lacks {', '.join(missing)}")
    examples = data.get("plan_examples")
    return Domain(
        plan_examples=tuple(_example(e, source) for e in examples)
        if examples
        else (base.plan_examples if base else ()),
        name=str(data.get("name") or (base.name if base else "custom")),
        tools=list(data.get("tools") or (base.tools if base else [])),
        python_checks=bool(data.get("python_checks", base.python_checks if base else False)),
        tests=bool(data.get("tests", base.tests if base else False)),
        prompts=prompts,
    )


def _example(data: Any, source: str) -> PlanExample:
    try:
        return PlanExample(
            str(data["kind"]), tuple(str(w).lower() for w in data["words"]), str(data["task"]), str(data["plan"])
        )
    except (KeyError, TypeError) as e:
        raise ConfigError(f"{source}: each of plan_examples needs kind, words, task and plan ({e})") from e


def load_domain(name: str, prompts_file: Path | None = None) -> Domain:
    """A built-in domain, or ``custom`` from ``prompts_file`` (its prompts override the codebase set's)."""
    if name in BUILTIN:
        text = resources.files(__package__).joinpath(f"{name}.yaml").read_text(encoding="utf-8")
        domain = _from_mapping(yaml.safe_load(text), f"{name}.yaml")
        if prompts_file is None:
            return domain
        return _from_mapping(_read(prompts_file), str(prompts_file), base=domain)
    if name == "custom":
        if prompts_file is None:
            raise ConfigError("the custom domain needs a prompt set: pass --prompts-file FILE.yaml")
        data = _read(prompts_file)
        base_name = str(data.get("base", "codebase")) if isinstance(data, dict) else "codebase"
        return _from_mapping(
            data, str(prompts_file), base=load_domain(base_name if base_name in BUILTIN else "codebase")
        )
    raise ConfigError(f"unknown domain {name!r}; choose one of: {', '.join((*BUILTIN, 'custom'))}")


def _read(path: Path) -> Any:
    try:
        return yaml.safe_load(path.read_text(encoding="utf-8"))
    except OSError as e:
        raise ConfigError(f"cannot read prompt set {path}: {e.strerror}") from e
    except yaml.YAMLError as e:
        raise ConfigError(f"{path} is not valid YAML: {e}") from e
