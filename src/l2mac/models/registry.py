"""Build a pydantic-ai model from settings. Model names may carry their provider: ``openai:gpt-4o``,
``anthropic:claude-sonnet-4-5``, ``azure:my-deployment``, ``ollama:qwen2.5-coder``, ``openai-compatible:NAME``
(with a base URL), ``local:NAME`` or ``gguf:/path/model.gguf`` (the embedded model).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from pydantic_ai.models import Model
from pydantic_ai.settings import ModelSettings

from l2mac.errors import ConfigError
from l2mac.settings import LLMSettings

PROVIDERS = ("openai", "azure", "anthropic", "openai-compatible", "ollama", "local", "gguf")
_ALIASES = {
    "vllm": "openai-compatible",
    "llamacpp": "openai-compatible",
    "llama.cpp": "openai-compatible",
    "openrouter": "openai-compatible",
    "claude": "anthropic",
}
OLLAMA_URL = "http://localhost:11434/v1"

# Context windows (tokens) by model-name prefix, longest prefix wins. Unknown models get DEFAULT_WINDOW.
CONTEXT_WINDOWS = {
    "gpt-3.5": 16_385,
    "gpt-4": 8_192,
    "gpt-4-32k": 32_768,
    "gpt-4-turbo": 128_000,
    "gpt-4o": 128_000,
    "gpt-4.1": 1_047_576,
    "gpt-5": 400_000,
    "o1": 200_000,
    "o3": 200_000,
    "o4": 200_000,
    "claude": 200_000,
    "qwen2.5-coder": 32_768,
    "qwen2.5": 32_768,
    "qwen3": 32_768,
    "llama3": 8_192,
    "llama-3": 8_192,
    "llama3.1": 131_072,
    "mistral": 32_768,
    "deepseek": 65_536,
}
DEFAULT_WINDOW = 8_192


@dataclass(frozen=True)
class ModelInfo:
    model: Model
    provider: str
    name: str
    context_window: int
    close: Callable[[], None] | None = None  # frees an in-process model (the embedded one) when a run ends
    #: whether requests made at once are answered at once; an in-process model answers one at a time
    parallel: bool = True
    #: whether the model continues an answer the request begins (a prefill): the embedded model does
    continues: bool = False

    @property
    def label(self) -> str:
        return f"{self.provider}:{self.name}"


def given_model_info(model: Model, window: int) -> ModelInfo:
    """A model the caller built (tests, benchmarks sharing one model): what it can do is what it says of itself
    (the embedded model says it continues begun answers, and whether it answers at once)."""
    return ModelInfo(
        model=model,
        provider="custom",
        name=model.model_name,
        context_window=window,
        parallel=bool(getattr(model, "parallel", True)),
        continues=bool(getattr(model, "continues", False)),
    )


def context_window_for(name: str) -> int:
    base = name.rsplit("/", 1)[-1].lower()
    best = ""
    for prefix in CONTEXT_WINDOWS:
        if base.startswith(prefix) and len(prefix) > len(best):
            best = prefix
    return CONTEXT_WINDOWS[best] if best else DEFAULT_WINDOW


def split_model_spec(llm: LLMSettings) -> tuple[str, str]:
    """(provider, model name) from ``llm.model`` (``provider:name`` wins over ``api_type``)."""
    if not llm.model:
        raise ConfigError("no model is configured")
    provider, sep, name = llm.model.partition(":")
    provider = _ALIASES.get(provider.lower(), provider.lower())
    if sep and provider in PROVIDERS and name:
        return provider, name
    api_type = _ALIASES.get(llm.api_type.lower(), llm.api_type.lower())
    if api_type == "openai" and llm.base_url and "api.openai.com" not in llm.base_url:
        api_type = "openai-compatible"
    return api_type, llm.model


def model_settings(llm: LLMSettings) -> ModelSettings:
    s = ModelSettings(max_tokens=llm.max_output_tokens, timeout=llm.timeout_s)
    if llm.temperature is not None:
        s["temperature"] = llm.temperature
    if llm.seed is not None:
        s["seed"] = llm.seed
    return s


def _openai(llm: LLMSettings, provider: str, name: str, key: str | None) -> Model:
    from openai import AsyncOpenAI
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider

    base_url = llm.base_url or (OLLAMA_URL if provider == "ollama" else None)
    if provider == "openai-compatible" and not base_url:
        raise ConfigError(f"{llm.model}: an OpenAI-compatible server needs --base-url (e.g. http://localhost:8000/v1)")
    if provider == "openai" and not key:
        raise ConfigError(
            "OpenAI needs an API key: set OPENAI_API_KEY, or llm.api_key in ~/.l2mac/config.yaml "
            "(create it with `l2mac --init-config`)"
        )
    # Retries are ours (ModelClient), so the SDK's own are off: one policy, one place.
    client = AsyncOpenAI(api_key=key or "not-needed", base_url=base_url, max_retries=0, timeout=llm.timeout_s)
    return OpenAIChatModel(name, provider=OpenAIProvider(openai_client=client))


def _azure(llm: LLMSettings, provider: str, name: str, key: str | None) -> Model:
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.azure import AzureProvider

    if not llm.base_url:
        raise ConfigError("Azure OpenAI needs base_url: your endpoint, e.g. https://NAME.openai.azure.com")
    return OpenAIChatModel(
        name, provider=AzureProvider(azure_endpoint=llm.base_url, api_version=llm.api_version, api_key=key)
    )


def _anthropic(llm: LLMSettings, provider: str, name: str, key: str | None) -> Model:
    from anthropic import AsyncAnthropic
    from pydantic_ai.models.anthropic import AnthropicModel
    from pydantic_ai.providers.anthropic import AnthropicProvider

    if not key:
        raise ConfigError("Anthropic needs an API key: set ANTHROPIC_API_KEY or llm.api_key in ~/.l2mac/config.yaml")
    client = AsyncAnthropic(api_key=key, base_url=llm.base_url, max_retries=0, timeout=llm.timeout_s)
    return AnthropicModel(name, provider=AnthropicProvider(anthropic_client=client))


def local_model_file(llm: LLMSettings, provider: str, name: str, environ: Mapping[str, str]) -> Path:
    """The GGUF file for ``local:NAME`` (from the models folder) or ``gguf:/path``."""
    if provider == "gguf":
        path = Path(name).expanduser()
        if not path.is_file():
            raise ConfigError(f"no GGUF file at {path}")
        return path
    from l2mac.models.local import get_spec, model_path, models_dir

    path = model_path(get_spec(name), models_dir(environ))
    if not path.is_file():
        raise ConfigError(f"the local model {name} is not downloaded yet: run `l2mac models pull {name}`")
    return path


def _local_info(llm: LLMSettings, provider: str, name: str, environ: Mapping[str, str]) -> ModelInfo:
    from l2mac.models.local import models_dir
    from l2mac.models.local.llama import DEFAULT_CONTEXT_CAP, SERVED_REQUEST_TIMEOUT_S, LocalChat
    from l2mac.models.local.server import find_server

    path = local_model_file(llm, provider, name, environ)
    server = find_server(llm.llama_server, dict(environ)) if llm.llama_server else None
    chat = LocalChat(
        path,
        context_cap=llm.context_window or DEFAULT_CONTEXT_CAP,
        temperature=0.2 if llm.temperature is None else llm.temperature,
        seed=llm.seed or 0,
        server=server,
        slots=llm.local_slots,
        threads=llm.local_threads,
        server_log=models_dir(environ) / "llama-server.log" if server else None,
        request_timeout_s=max(llm.timeout_s, SERVED_REQUEST_TIMEOUT_S),
    )
    return ModelInfo(
        model=chat.as_model(f"{provider}:{name}"),
        provider=provider,
        name=name,
        context_window=chat.context_window,
        close=chat.close,
        parallel=server is not None,
        continues=True,  # the prompt is rendered here, so a begun answer is continued
    )


_BUILDERS = {
    "openai": _openai,
    "openai-compatible": _openai,
    "ollama": _openai,
    "azure": _azure,
    "anthropic": _anthropic,
}
_KEY_VARS = {"openai": "OPENAI_API_KEY", "azure": "AZURE_OPENAI_API_KEY", "anthropic": "ANTHROPIC_API_KEY"}


def build_model(llm: LLMSettings, environ: Mapping[str, str] | None = None) -> ModelInfo:
    """A ready model for ``llm``; ConfigError says what to set when something is missing."""
    env = os.environ if environ is None else environ
    provider, name = split_model_spec(llm)
    if provider in ("local", "gguf"):
        return _local_info(llm, provider, name, env)
    builder = _BUILDERS.get(provider)
    if builder is None:
        raise ConfigError(f"unknown provider {provider!r}; choose one of: {', '.join(PROVIDERS)}")
    key = llm.api_key.get_secret_value() if llm.api_key else env.get(_KEY_VARS.get(provider, ""))
    window = llm.context_window or context_window_for(name)
    return ModelInfo(model=builder(llm, provider, name, key), provider=provider, name=name, context_window=window)
