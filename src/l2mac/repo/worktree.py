"""Working on a repository l2mac did not write, without touching the user's work.

A change is made on a new branch, ``l2mac/<slug>``, checked out in a git worktree of its own outside the
repository: the user's branch, index, working tree and untracked files are never read or written (git's own
``worktrees/`` record and the new branch are all that is added to the repository). Each step commits there; the
user reviews with ``git diff <base>...l2mac/<slug>`` and merges when satisfied. A working tree with uncommitted
changes is refused unless allowed: they would not be part of what l2mac starts from.
"""

from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

from platformdirs import user_data_dir

from l2mac.errors import ConfigError
from l2mac.store import GitHistory

BRANCH_PREFIX = "l2mac/"


@dataclass(frozen=True)
class Worktree:
    """Where a change to ``repo`` is made: ``path``, on ``branch``, begun from ``base`` (a commit) on
    ``base_ref`` (the branch the user was on, or the commit when detached)."""

    repo: Path
    path: Path
    branch: str
    base: str
    base_ref: str

    def review_commands(self) -> list[str]:
        """How the user looks at the change, merges it, and removes the worktree afterwards (with the run's
        record in it: --force, since l2mac's records and the environment are not committed)."""
        repo = _quote(str(self.repo))
        return [
            f"git -C {repo} diff {self.base_ref}...{self.branch}",
            f"git -C {repo} merge {self.branch}",
            f"git -C {repo} worktree remove --force {_quote(str(self.path))}",
        ]

    def as_dict(self) -> dict[str, str]:
        return {
            "repo": str(self.repo),
            "path": str(self.path),
            "branch": self.branch,
            "base": self.base,
            "base_ref": self.base_ref,
        }

    @classmethod
    def from_dict(cls, data: dict[str, str]) -> Worktree:
        return cls(Path(data["repo"]), Path(data["path"]), data["branch"], data["base"], data["base_ref"])

    def set_aside_for_resume(self) -> str:
        """Before a replay rebuilds the change from the base commit: the files as the interrupted run left them
        are committed, kept under a ref of their own (returned), and the worktree is put back at the base. The
        user's branch, index and files are not touched; nothing the run wrote is lost."""
        GitHistory(self.path).commit("interrupted: the files as the run left them")
        slug = self.branch.removeprefix(BRANCH_PREFIX)
        n = 1
        while (
            _git(self.path, "rev-parse", "--verify", "--quiet", f"refs/l2mac/before-resume/{slug}/{n}").returncode == 0
        ):
            n += 1
        ref = f"refs/l2mac/before-resume/{slug}/{n}"
        _git(self.path, "update-ref", ref, "HEAD")
        for step in (("reset", "-q", "--hard", self.base), ("clean", "-q", "-fdx", "-e", ".l2mac/", "-e", ".venv/")):
            done = _git(self.path, *step)
            if done.returncode != 0:
                raise ConfigError(
                    f"could not put {self.path} back at {self.base[:12]} to resume: {done.stderr.strip()}"
                )
        return ref

    def discard_if_unused(self) -> None:
        """Remove the worktree and its branch when no step committed to it (the run failed before it began)."""
        ahead = _git(self.repo, "rev-list", "--count", f"{self.base}..{self.branch}")
        if ahead.returncode == 0 and ahead.stdout.strip() == "0":
            _git(self.repo, "worktree", "remove", "--force", str(self.path))
            _git(self.repo, "branch", "-D", self.branch)


def _quote(text: str) -> str:
    return text if re.fullmatch(r"[\w./:@+-]+", text) else "'" + text.replace("'", "'\"'\"'") + "'"


def _git(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=False, timeout=120)
    except FileNotFoundError:
        raise ConfigError("--repo needs git, and git is not installed (or not on PATH)") from None


def branch_slug(change: str) -> str:
    """A branch name's last part from the change's first words: ``add-csv-export``."""
    words = re.findall(r"[a-z0-9]+", change.lower())[:6] or ["change"]
    return "-".join(words)[:50].strip("-")


def repository_root(path: Path) -> Path:
    """The top folder of the git repository ``path`` is in; a clear error when it is in none."""
    if not path.is_dir():
        raise ConfigError(f"--repo {path}: no such folder")
    top = _git(path, "rev-parse", "--show-toplevel")
    if top.returncode != 0:
        raise ConfigError(f"--repo {path} is not in a git repository (git init and commit it first)")
    return Path(top.stdout.strip()).resolve()


def uncommitted(repo: Path) -> list[str]:
    """Tracked files with changes not committed (staged or not), as ``git status`` names them."""
    status = _git(repo, "status", "--porcelain", "--untracked-files=no")
    return [line[3:] for line in status.stdout.splitlines() if line.strip()]


def worktrees_folder(repo: Path, workspace: Path) -> Path:
    """Where worktrees go: the workspace, unless it is inside the repository (``l2mac --repo .`` run in the
    repository, with the default ./workspace), where the user's git status and pytest would see them; then
    l2mac's data folder."""
    workspace = workspace.resolve()
    if workspace == repo or repo in workspace.parents:
        return Path(user_data_dir("l2mac")) / "worktrees"
    return workspace


def open_worktree(repo_path: Path, change: str, workspace: Path, *, allow_dirty: bool = False) -> Worktree:
    """A new branch ``l2mac/<slug>`` from the repository's HEAD, checked out at ``<worktrees>/<repo>-<slug>``
    (``-2``, ``-3``... when taken; see :func:`worktrees_folder`). Refuses a repository with uncommitted changes
    unless ``allow_dirty``."""
    repo = repository_root(repo_path)
    head = _git(repo, "rev-parse", "--verify", "HEAD^{commit}")
    if head.returncode != 0:
        raise ConfigError(f"{repo} has no commit yet: commit what l2mac should start from first")
    changed = uncommitted(repo)
    if changed and not allow_dirty:
        shown = ", ".join(changed[:5]) + (f" and {len(changed) - 5} more" if len(changed) > 5 else "")
        raise ConfigError(
            f"{repo} has uncommitted changes ({shown}). l2mac starts from the last commit and would leave them "
            "out: commit or stash them first, or pass --allow-dirty to start from the last commit anyway."
        )
    current = _git(repo, "symbolic-ref", "--quiet", "--short", "HEAD")
    base = head.stdout.strip()
    base_ref = current.stdout.strip() if current.returncode == 0 else base[:12]
    slug = branch_slug(change)
    branch, path = _free_names(repo, worktrees_folder(repo, workspace), slug)
    made = _git(repo, "worktree", "add", "--quiet", "-b", branch, str(path), base)
    if made.returncode != 0:
        raise ConfigError(f"could not make a worktree for {repo} at {path}: {made.stderr.strip()}")
    return Worktree(repo, path, branch, base, base_ref)


def _free_names(repo: Path, workspace: Path, slug: str) -> tuple[str, Path]:
    """A branch that does not exist yet and a folder that does not either, numbered alike."""
    n = 1
    while True:
        suffix = "" if n == 1 else f"-{n}"
        branch = f"{BRANCH_PREFIX}{slug}{suffix}"
        path = workspace / f"{repo.name}-{slug}{suffix}"
        taken = _git(repo, "rev-parse", "--verify", "--quiet", f"refs/heads/{branch}").returncode == 0
        if not taken and not path.exists():
            return branch, path
        n += 1
