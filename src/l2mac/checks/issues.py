"""One problem found in a project file by a static check."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class CodeIssue:
    path: str
    line: int
    kind: str  # "syntax" | "lint" | "import" | "dependency" | "test" | "type"
    message: str
    blocking: bool = True

    def __str__(self) -> str:
        tag = "" if self.blocking else " (warning)"
        return f"{self.path}:{self.line}: {self.kind}{tag}: {self.message}"
