"""The exceptions l2mac raises, as one tree.

``L2MACError`` is the root; catch it to handle anything l2mac reports on purpose. Each error's message says
what went wrong and, where there is one, how to fix it.
"""

from __future__ import annotations


class L2MACError(Exception):
    """Base of every error l2mac raises on purpose."""


class ConfigError(L2MACError):
    """The settings are unusable: a bad config file, a missing API key, an unknown provider or domain."""


class PromptProgramError(L2MACError):
    """A prompt program (plan) could not be made or loaded."""


class WorkspaceError(L2MACError):
    """The workspace cannot be used: not writable, or a path outside it was asked for."""


class PathOutsideWorkspace(WorkspaceError):
    """A path resolves outside the workspace (absolute, ``..``, or through a symlink)."""


class ProviderError(L2MACError):
    """The model provider failed and retries did not help."""


class RunError(L2MACError):
    """A run stopped before its end."""


class BudgetExceeded(RunError):
    """A budget (tokens or cost) is spent; the run stops cleanly with its work saved."""


def first_line(e: BaseException) -> str:
    """An error's first line, cut to 500 characters (its type's name when it has no message): what a log or a
    model is told of it."""
    return str(e).splitlines()[0][:500] if str(e) else type(e).__name__
