"""Files l2mac leaves alone in a repository it did not write: secrets are neither shown to the model nor
written, and lockfiles are not written (their tools write them; the project's declarations are what l2mac edits).
"""

from __future__ import annotations

from fnmatch import fnmatch
from pathlib import PurePosixPath

#: file names that hold secrets: never read into a prompt, never written
SECRETS = (
    ".env",
    ".env.*",
    "*.env",
    ".envrc",
    "*.pem",
    "*.key",
    "*.p12",
    "*.pfx",
    "id_rsa*",
    "id_ed25519*",
    "id_ecdsa*",
    ".netrc",
    ".pypirc",
    ".npmrc",
    ".git-credentials",
    "credentials",
    "credentials.json",
    "credentials.y*ml",
    "credentials.toml",
    "secrets.json",
    "secrets.y*ml",
    "secrets.toml",
    "*.secret",
    "*.secrets",
)
#: lockfiles: written by their package managers, not by hand
LOCKFILES = (
    "uv.lock",
    "poetry.lock",
    "pdm.lock",
    "Pipfile.lock",
    "requirements.lock",
    "package-lock.json",
    "yarn.lock",
    "pnpm-lock.yaml",
    "Cargo.lock",
)


def is_secret(path: str) -> bool:
    """Whether ``path`` may hold secrets, by its name (a template, ``.env.example``, does not)."""
    name = PurePosixPath(path).name
    return any(fnmatch(name, pattern) for pattern in SECRETS) and not name.endswith(
        (".example", ".sample", ".template")
    )


def refusal(path: str, write: bool) -> str | None:
    """Why ``path`` may not be read (``write`` False) or written, or None when it may."""
    if is_secret(path):
        return f"{path}: may hold secrets; l2mac neither reads nor writes it in a repository it did not write"
    name = PurePosixPath(path).name
    if write and name in LOCKFILES:
        return (
            f"{path}: a lockfile, written by its package manager; declare dependencies in pyproject.toml (or the "
            "project's requirements file) instead"
        )
    return None
