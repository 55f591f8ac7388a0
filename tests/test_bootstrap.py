"""The set-up script the README's commands run: how it builds the embedded model on the machine it is on."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

import pytest


def _bootstrap() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bootstrap", Path(__file__).parents[1] / "bootstrap.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_on_a_cpu_with_amx_the_embedded_model_is_compiled_without_its_amx_kernels_and_not_from_the_cache(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """llama.cpp built for a native CPU with AMX died of SIGSEGV in its AMX kernel here (a Xeon, this Q4_K_M
    model): on such a CPU it is compiled from source without them, and the flags the user set stay."""
    bootstrap = _bootstrap()
    monkeypatch.setenv("CFLAGS", "-O2")
    monkeypatch.delenv("CXXFLAGS", raising=False)
    monkeypatch.setattr(bootstrap, "has_amx", lambda: True)
    env, options = bootstrap.build_env("local,dev")
    assert env is not None and options == ["--no-cache-dir", "--no-binary", "llama-cpp-python"]
    assert env["CFLAGS"] == "-O2 -mno-amx-tile -mno-amx-int8 -mno-amx-bf16"
    assert env["CXXFLAGS"] == "-mno-amx-tile -mno-amx-int8 -mno-amx-bf16"
    assert bootstrap.build_env("dev") == (None, [])  # no embedded model, nothing compiled

    monkeypatch.setattr(bootstrap, "has_amx", lambda: False)
    assert bootstrap.build_env("local") == (None, [])  # elsewhere, built as llama-cpp-python builds by default
