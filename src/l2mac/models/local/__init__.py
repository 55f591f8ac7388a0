"""The embedded local model: a catalog of GGUF models, a verified pull, and in-process serving (llama.cpp)."""

from l2mac.models.local.catalog import CATALOG, DEFAULT_LOCAL_MODEL, LocalModelSpec, get_spec, models_dir
from l2mac.models.local.fetch import PullError, model_path, pull

__all__ = [
    "CATALOG",
    "DEFAULT_LOCAL_MODEL",
    "LocalModelSpec",
    "PullError",
    "get_spec",
    "model_path",
    "models_dir",
    "pull",
]
