"""The agents' tools: what a lead and an agent write, as argument models (their schemas are what a tool-calling
model sees), each with its *text form*: how a model that answers in text writes the same call
(:meth:`l2mac.control.protocol.StepProtocol.read_call` reads it)."""

from __future__ import annotations

import re
from typing import Any

from pydantic import BaseModel, Field

from l2mac.checks.layout import is_test_file
from l2mac.tools import Tool

#: an answer's fenced blocks, each with the file it names (or None)
Blocks = list[tuple[str | None, str]]


def _is_tests(path: str) -> bool:  # "Tests/x.py" too: seen beside tests/x.py, a pytest name clash
    return path.lower().startswith("tests/") or is_test_file(path)


class ModuleArgs(BaseModel):
    path: str = Field(description="Path of the module, e.g. app/core.py")
    code: str = Field(description="The complete module; functions left to the team have a `...` body")


class SkeletonArgs(BaseModel):
    modules: list[ModuleArgs] = Field(min_length=1, description="The modules of the design")
    tests: str = Field(description="pytest tests of the modules' behaviour")
    dependencies: list[str] = Field(
        default_factory=list, description="Third-party libraries the modules import, as package names"
    )

    @classmethod
    def from_answer(cls, blocks: Blocks, text: str) -> dict[str, Any] | None:
        """Each module as its path and a fenced block; the test files' blocks are the lead's one test file; a
        requirements.txt block lists the dependencies."""
        files = {p: c for p, c in blocks if p is not None}
        modules = [{"path": p, "code": c} for p, c in files.items() if not _is_tests(p) and p.endswith(".py")]
        tests = "\n\n".join(c for p, c in files.items() if _is_tests(p))
        needs = [line.strip() for line in files.get("requirements.txt", "").splitlines() if line.strip()]
        return {"modules": modules, "tests": tests, "dependencies": needs} if modules else None


class FunctionArgs(BaseModel):
    code: str = Field(description="The complete function, with any new helper functions (stubs are delegated)")
    tests: str = Field(
        default="", description="When you split the function into helper stubs: pytest tests of your function"
    )

    @classmethod
    def from_answer(cls, blocks: Blocks, text: str) -> dict[str, Any] | None:
        """The first block that defines a function is the code; blocks of tests are its tests."""
        tests: list[str] = []
        defining: list[str] = []
        for path, body in blocks:
            if (path or "").startswith("tests/") or re.search(r"^def test_", body, re.MULTILINE):
                tests.append(body)
            elif re.search(r"^\s*(?:async\s+)?def \w+", body, re.MULTILINE):
                defining.append(body)
        return {"code": defining[0], "tests": "\n\n".join(tests)} if defining else None


_CHANGE = re.compile(r"CONTRACT CHANGE:\s*((?:async\s+)?def .+?:)\s*BECAUSE\s*(.+)", re.IGNORECASE | re.DOTALL)


class ContractChangeArgs(BaseModel):
    signature: str = Field(description="The signature needed, e.g. def f(a: int, b: int) -> int:")
    reason: str

    @classmethod
    def from_answer(cls, blocks: Blocks, text: str) -> dict[str, Any] | None:
        """One line: ``CONTRACT CHANGE: <signature> BECAUSE <why>``."""
        found = _CHANGE.search(text)
        return {"signature": found.group(1).strip(), "reason": found.group(2).strip()[:500]} if found else None


class DecisionArgs(BaseModel):
    accept: bool
    reason: str

    @classmethod
    def from_answer(cls, blocks: Blocks, text: str) -> dict[str, Any] | None:
        """ACCEPT or REJECT, and why; an answer that says neither (or both) rejects."""
        accept = bool(re.search(r"\bACCEPT", text)) and not re.search(r"\bREJECT", text)
        return {"accept": accept, "reason": text.strip()[:500]}


class DraftArgs(BaseModel):
    code: str = Field(description="The complete module: its imports and every function implemented")

    @classmethod
    def from_answer(cls, blocks: Blocks, text: str) -> dict[str, Any] | None:
        """The first block that is not tests and defines a class or function."""
        found = (
            body
            for path, body in blocks
            if not (path and _is_tests(path)) and re.search(r"^\s*(?:async\s+def|def|class) \w+", body, re.MULTILINE)
        )
        code = next(found, None)
        return {"code": code} if code is not None else None


class TestsArgs(BaseModel):
    tests: str = Field(description="pytest tests of the modules' behaviour")

    @classmethod
    def from_answer(cls, blocks: Blocks, text: str) -> dict[str, Any] | None:
        """The test files' blocks, else the one Python block of the answer."""
        tests = [c for p, c in blocks if p is not None and _is_tests(p)]
        unnamed = [c for p, c in blocks if p is None and re.search(r"^def test_|^class Test", c, re.MULTILINE)]
        found = tests or unnamed[:1]
        return {"tests": "\n\n".join(found)} if found else None


WRITE_SKELETON = Tool("write_skeleton", "Write the module's design and its tests.", SkeletonArgs)
WRITE_MODULE = Tool("write_module", "Write the module complete, every function implemented.", DraftArgs)
WRITE_TESTS = Tool("write_tests", "Write the tests of the modules the task designs.", TestsArgs)
WRITE_FUNCTION = Tool("write_function", "Write your function (and helper stubs to delegate).", FunctionArgs)
REQUEST_CHANGE = Tool("request_contract_change", "Ask your lead to change your signature.", ContractChangeArgs)
DECIDE = Tool("decide_contract", "Accept or reject an agent's signature change.", DecisionArgs)
