"""Settings for a run, loaded in layers: defaults < config file < environment < explicit overrides (CLI flags).

Nothing here is read at import time; ``load_settings`` is called with the environment and config path to use,
so tests and library users decide where settings come from.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, SecretStr, ValidationError

from l2mac.errors import ConfigError

CONFIG_TEMPLATE = """\
# l2mac configuration. Flags and environment variables (L2MAC_*, OPENAI_API_KEY, ANTHROPIC_API_KEY) win over it.
# Leave `llm` out (or delete this file) to use the embedded local model.
llm:
  api_type: "openai"  # openai | azure | anthropic | openai-compatible | ollama | local | gguf
  model: "gpt-4o"
  base_url: "https://api.openai.com/v1"  # or any OpenAI-compatible server, e.g. http://localhost:8000/v1
  api_key: "YOUR_API_KEY"
  # context_window: 128000  # tokens; taken from the model's metadata when known
  # llama_server: "llama-server"  # local models: serve them from llama.cpp's server, with parallel slots
run:
  workspace: "workspace"
  run_tests: true
  # max_cost: 5.0      # US dollars
  # max_tokens: 2000000
"""


class LLMSettings(BaseModel):
    """Which model to use and how to reach it."""

    model_config = ConfigDict(extra="ignore")

    api_type: str = Field(
        default="openai",
        description="Provider: openai, azure, anthropic, openai-compatible, "
        "ollama, local (embedded model) or gguf (a GGUF file).",
    )
    model: str | None = Field(default=None, description="Model name, or 'provider:name'. None means not configured.")
    base_url: str | None = Field(default=None, description="API base URL (OpenAI-compatible servers, Azure endpoint).")
    api_key: SecretStr | None = Field(default=None, description="API key; never logged.")
    api_version: str | None = Field(default=None, description="Azure OpenAI API version.")
    context_window: int | None = Field(default=None, gt=0, description="Context window in tokens; overrides metadata.")
    max_output_tokens: int = Field(default=4096, gt=0, description="Most tokens one answer may use.")
    temperature: float | None = Field(default=None, ge=0, le=2, description="Sampling temperature.")
    seed: int | None = Field(
        default=None,
        ge=0,
        description="Sampling seed: the same seed, settings and model give the same run (local models; cloud "
        "providers that take a seed, best effort); another seed, another attempt. Local models default to 0.",
    )
    timeout_s: float = Field(default=180.0, gt=0, description="Seconds before one request times out.")
    max_retries: int = Field(default=5, ge=0, description="Retries of a failed request (rate limit, 5xx, timeout).")
    llama_server: str | None = Field(
        default=None,
        description="llama.cpp's llama-server binary (a path, or a name on PATH): the local model is served by it, "
        "as a managed child process with parallel slots, instead of in-process.",
    )
    local_slots: int = Field(default=4, gt=0, description="Parallel slots of the llama-server child.")
    local_threads: int | None = Field(
        default=None, gt=0, description="CPU threads of the local model (default: all the machine's cores)."
    )
    retry_base_delay_s: float = Field(
        default=1.0, gt=0, description="First retry's delay; doubles each time (a Retry-After header wins)."
    )

    @property
    def configured(self) -> bool:
        return self.model is not None


class RunSettings(BaseModel):
    """What a run does and the limits it keeps."""

    model_config = ConfigDict(extra="ignore")

    domain: str = Field(default="codebase", description="codebase, book or custom.")
    strategy: Literal["l2mac", "soa"] = Field(
        default="l2mac", description="l2mac (plan, then steps in fresh contexts) or soa (self-organised agents)."
    )
    max_agents: int = Field(default=50, gt=0, description="soa: most agents in the tree.")
    max_depth: int = Field(default=3, gt=0, description="soa: most levels below the first agent.")
    concurrency: int = Field(
        default=4,
        gt=0,
        description="soa: model calls in flight at once (a llama-server serving several runs gives each run this "
        "many slots).",
    )
    prompts_file: Path | None = Field(default=None, description="Prompt set (YAML) for the custom domain.")
    steps: int | None = Field(default=None, gt=0, description="Most steps the planner may produce.")
    reflect: bool = Field(default=False, description="Ask the model to review and refine its plan once.")
    plan_from_spec: bool = Field(
        default=True,
        description="When the task's specification describes its code files (a file tree and what each holds), the "
        "plan is one step per file, in dependency order, without asking the model.",
    )
    keep_best: bool = Field(
        default=True,
        description="A step that fails ends with its files as they were when its checks came closest to passing.",
    )
    held_by_own: bool = Field(
        default=True,
        description="A step is held only by what it made worse: tests of other files that failed when it began, "
        "and code problems the project had then, are recorded in its outcome, not held against it.",
    )
    prompt_program: Path | None = Field(default=None, description="A plan file (YAML or JSON); skips planning.")
    run_tests: bool = Field(default=True, description="Run the project's tests as a check at every step.")
    answers_from: Path | None = Field(
        default=None,
        description="An earlier run's project folder (or its .l2mac/journal.jsonl): its answers are reused for the "
        "same requests, the rest asked of the model; to see what a changed setting or version does on the same task.",
    )
    workspace: Path = Field(default=Path("workspace"), description="Folder holding one sub-folder per project.")
    project_name: str | None = Field(default=None, description="Name of the project folder; derived if absent.")
    max_cost: float | None = Field(default=None, gt=0, description="Stop the run once this many USD are spent.")
    max_tokens: int | None = Field(
        default=None,
        gt=0,
        description="Stop the run once this many tokens are used (prompt tokens read from the cache not counted).",
    )
    max_steps: int | None = Field(default=None, gt=0, description="Stop the run after this many steps have run.")
    max_wall_time_s: float | None = Field(
        default=None, gt=0, description="Stop the run after this many seconds (per invocation; resume goes on)."
    )
    force: bool = Field(default=False, description="Write into the named project folder even if it holds files.")
    repo: Path | None = Field(
        default=None,
        description="A git repository to change instead of starting a project: the task is the change, made on a "
        "new branch l2mac/<slug> in a worktree under the workspace; the repository's own branch, index and "
        "files are left as they are.",
    )
    allow_dirty: bool = Field(
        default=False, description="With repo: start from its last commit even when it has uncommitted changes."
    )
    max_check_failures: int = Field(
        default=4,
        ge=0,
        description="Failed checks a step may meet before it fails (8 in the text protocol when not set: its "
        "attempts are cheap, one short fresh context each).",
    )
    max_stalled_attempts: int = Field(
        default=3,
        ge=0,
        description="Failed checks in a row that come no closer to passing than the step's best before it ends "
        "(its best files kept), so a stuck step leaves its time to the next ones (0: off).",
    )
    max_turns: int = Field(default=40, gt=0, description="Model calls one step may make.")
    max_context_restarts: int = Field(default=3, ge=0, description="Summarise-and-restart cycles per step.")
    samples: int = Field(
        default=3,
        ge=0,
        description="When a step's tests fail, implementations sampled without the tests to tell a wrong test "
        "from wrong code (kept: the one most implementations agree with; 0: off). When not set, the protocol's "
        "default: 3 in the text protocol (small models write wrong tests), 0 with tool calls.",
    )
    context_margin: float = Field(default=0.2, gt=0, lt=1, description="Share of the window kept free.")
    recoveries: bool = Field(default=True, description="Turn code blocks that name a file into writes.")
    readme_step: bool = Field(
        default=True,
        description="When a planned project's steps write no README.md, a last step writes one (what it does, how "
        "to install, test and run it), whose commands verify_readme then runs.",
    )
    verify_readme: bool = Field(
        default=True,
        description="At the end, run the README's commands as written in a fresh copy with a fresh venv, and "
        "report which work (install commands get the network).",
    )
    report_page: bool = Field(
        default=True,
        description="At the end (or when interrupted), write .l2mac/report.html: the run as one page to look at.",
    )
    project_env: bool = Field(
        default=True,
        description="Give the project its own .venv with the dependencies it declares, installed from the package "
        "index pip is configured for (the only network access). Off: its code runs on l2mac's own interpreter.",
    )
    protocol: Literal["auto", "tools", "text"] = Field(
        default="auto",
        description="How the model writes files: tool calls, or fenced blocks (text; for small local models). "
        "auto: text for the embedded/GGUF models, tools otherwise.",
    )
    sandbox: Literal["auto", "bubblewrap", "subprocess"] = Field(
        default="auto",
        description="Where generated code runs: bubblewrap (isolated; required by --require-sandbox), subprocess "
        "(resource limits only) or auto (bubblewrap when it works here).",
    )
    command_timeout_s: float = Field(default=60.0, gt=0, description="Timeout for run_python.")
    test_timeout_s: float = Field(default=180.0, gt=0, description="Timeout for one test run.")


class Settings(BaseModel):
    llm: LLMSettings = Field(default_factory=LLMSettings)
    run: RunSettings = Field(default_factory=RunSettings)
    config_path: Path | None = Field(default=None, description="The config file these settings were read from.")


def server_slots(runs_at_once: int, run: RunSettings | None = None) -> int:
    """The slots of a llama-server that ``runs_at_once`` runs share: one for each model call a run may have in
    flight (``run.concurrency``: soa's agents; the l2mac strategy's agreement samples are 3), so that no request
    waits for a slot, and a request continued after l2mac stopped it (a given stub, a loop cut) finds its prompt
    still cached in the slot it left. Seen on ClassEval with 3 slots for 3 soa tasks: requests queued, each
    freed slot went to another task's request, and 23 of 43 slot assignments kept under half of the slot's cache,
    so thousands of prompt tokens were read again while every other slot's decoding waited (0.5-2 tokens/s per
    slot, against 3-4 with the cache kept)."""
    return runs_at_once * (run or RunSettings()).concurrency


def default_config_path(environ: Mapping[str, str] | None = None) -> Path:
    """``$L2MAC_CONFIG`` or ``~/.l2mac/config.yaml`` (the reference implementation's location)."""
    env = os.environ if environ is None else environ
    if env.get("L2MAC_CONFIG"):
        return Path(env["L2MAC_CONFIG"]).expanduser()
    return Path("~/.l2mac/config.yaml").expanduser()


def init_config(path: Path) -> bool:
    """Write a commented config template at ``path`` (mode 0600). Returns False if a file is already there."""
    if path.exists():
        return False
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(CONFIG_TEMPLATE)
    return True


def _read_config(path: Path) -> dict[str, Any]:
    if not path.exists():
        return {}
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (yaml.YAMLError, UnicodeDecodeError) as e:
        raise ConfigError(f"{path} is not valid YAML: {e}. Fix it, or delete it and run `l2mac --init-config`.") from e
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigError(f"{path} must hold a mapping with `llm:` and `run:` sections.")
    if data.get("llm", {}).get("api_key") == "YOUR_API_KEY":
        # The untouched template: treat as unconfigured rather than send a placeholder key.
        data["llm"] = {k: v for k, v in data["llm"].items() if k not in {"api_key", "model"}}
    return data


_ENV_LLM = {
    "L2MAC_API_TYPE": "api_type",
    "L2MAC_MODEL": "model",
    "L2MAC_BASE_URL": "base_url",
    "L2MAC_API_KEY": "api_key",
    "L2MAC_CONTEXT_WINDOW": "context_window",
    "L2MAC_LLAMA_SERVER": "llama_server",
    "L2MAC_SEED": "seed",
}
_ENV_RUN = {
    "L2MAC_WORKSPACE": "workspace",
    "L2MAC_MAX_COST": "max_cost",
    "L2MAC_MAX_TOKENS": "max_tokens",
    "L2MAC_DOMAIN": "domain",
    "L2MAC_PROTOCOL": "protocol",
    "L2MAC_SANDBOX": "sandbox",
    "L2MAC_MAX_STEPS": "max_steps",
    "L2MAC_MAX_WALL_TIME": "max_wall_time_s",
    "L2MAC_KEEP_BEST": "keep_best",
    "L2MAC_HELD_BY_OWN": "held_by_own",
    "L2MAC_PLAN_FROM_SPEC": "plan_from_spec",
    "L2MAC_README_STEP": "readme_step",
}


def _merge(base: dict[str, Any], over: Mapping[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for k, v in over.items():
        if v is not None:
            out[k] = v
    return out


def load_settings(
    *,
    config_path: Path | None = None,
    environ: Mapping[str, str] | None = None,
    llm: Mapping[str, Any] | None = None,
    run: Mapping[str, Any] | None = None,
) -> Settings:
    """Build settings from the config file, then the environment, then ``llm``/``run`` overrides (None = unset)."""
    env = os.environ if environ is None else environ
    path = config_path if config_path is not None else default_config_path(env)
    data = _read_config(path)
    llm_d: dict[str, Any] = dict(data.get("llm") or {})
    run_d: dict[str, Any] = dict(data.get("run") or {})
    llm_d = _merge(llm_d, {field: env.get(var) or None for var, field in _ENV_LLM.items()})
    run_d = _merge(run_d, {field: env.get(var) or None for var, field in _ENV_RUN.items()})
    llm_d = _merge(llm_d, llm or {})
    run_d = _merge(run_d, run or {})
    # A bare key in the environment is enough to pick the provider's flagship model.
    if not llm_d.get("model"):
        if env.get("OPENAI_API_KEY") and llm_d.get("api_type", "openai") in {"openai", "azure"}:
            llm_d["model"] = "gpt-4o"
        elif env.get("ANTHROPIC_API_KEY"):
            llm_d.setdefault("api_type", "anthropic")
            llm_d["model"] = llm_d.get("model") or "claude-sonnet-4-5"
    try:
        return Settings(llm=LLMSettings.model_validate(llm_d), run=RunSettings.model_validate(run_d), config_path=path)
    except ValidationError as e:
        first = e.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise ConfigError(f"Invalid setting {where!r}: {first['msg']} (from {path}, L2MAC_* or flags).") from e
