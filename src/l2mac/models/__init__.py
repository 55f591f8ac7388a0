"""Model access: build a pydantic-ai model from settings, call it with retries, count tokens and cost."""

from l2mac.models.client import CallRecord, ModelClient, RetryPolicy
from l2mac.models.registry import ModelInfo, build_model, context_window_for

__all__ = ["CallRecord", "ModelClient", "ModelInfo", "RetryPolicy", "build_model", "context_window_for"]
