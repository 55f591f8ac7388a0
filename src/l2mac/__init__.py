"""l2mac — the LLM Automatic Computer: from one prompt, a large, coherent, tested codebase or a whole book.

```python
from l2mac import generate_codebase
codebase = generate_codebase("Create a CLI todo app stored in JSON, with pytest tests")
```
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic_ai.models import Model

from l2mac.errors import (
    BudgetExceeded,
    ConfigError,
    L2MACError,
    PathOutsideWorkspace,
    PromptProgramError,
    ProviderError,
    RunError,
    WorkspaceError,
)
from l2mac.run import RunResult, arun_l2mac, run_l2mac, settings_from_kwargs
from l2mac.settings import Settings, load_settings
from l2mac.types import Instruction, PromptProgram, StepOutcome, StepStatus

__version__ = "0.1.0"


def _generate(domain: str, prompt_task: str, model: Model | str | None, kwargs: dict[str, Any]) -> dict[str, str]:
    # Names used by the reference implementation, kept so its examples run unchanged.
    if kwargs.pop("init_config", False):
        from l2mac.settings import default_config_path, init_config

        init_config(default_config_path())
    for ignored in ("debugging_level", "tools_enabled", "wandb", "seed"):
        kwargs.pop(ignored, None)
    if "prompts_file_path" in kwargs:
        kwargs["prompts_file"] = kwargs.pop("prompts_file_path")
    for key in ("prompt_program", "prompts_file", "workspace"):
        if isinstance(kwargs.get(key), str):
            kwargs[key] = Path(kwargs[key])
    if isinstance(model, str):
        kwargs["model"] = model
    settings = settings_from_kwargs(domain, kwargs)
    result = run_l2mac(prompt_task, settings, model=model if isinstance(model, Model) else None)
    return result.files


def generate_codebase(prompt_task: str, *, model: Model | str | None = None, **kwargs: Any) -> dict[str, str]:
    """Generate a codebase for ``prompt_task``; returns ``{path: content}`` and writes ``./workspace/<project>``.

    Keyword arguments are run settings (``steps``, ``run_tests``, ``project_name``, ``prompt_program``,
    ``workspace``, ``max_cost``, ``max_tokens``...) or model settings (``base_url``, ``api_key``...).
    """
    return _generate("codebase", prompt_task, model, kwargs)


def generate_book(prompt_task: str, *, model: Model | str | None = None, **kwargs: Any) -> dict[str, str]:
    """Write a book for ``prompt_task``: an outline, then one markdown file per chapter."""
    return _generate("book", prompt_task, model, kwargs)


def generate_custom(
    prompt_task: str, prompts_file_path: str | Path, *, model: Model | str | None = None, **kwargs: Any
) -> dict[str, str]:
    """Run with your own prompt set (YAML; see ``l2mac/domains/codebase.yaml`` for its keys)."""
    return _generate("custom", prompt_task, model, {**kwargs, "prompts_file": Path(prompts_file_path)})


__all__ = [
    "BudgetExceeded",
    "ConfigError",
    "Instruction",
    "L2MACError",
    "PathOutsideWorkspace",
    "PromptProgram",
    "PromptProgramError",
    "ProviderError",
    "RunError",
    "RunResult",
    "Settings",
    "StepOutcome",
    "StepStatus",
    "WorkspaceError",
    "arun_l2mac",
    "generate_book",
    "generate_codebase",
    "generate_custom",
    "load_settings",
    "run_l2mac",
]
