"""Checks on the file store: syntax, lint (undefined names, broken imports) and the project's tests."""

from l2mac.checks.issues import CodeIssue
from l2mac.checks.output import trim_output
from l2mac.checks.python import find_code_issues
from l2mac.checks.runner import ProcessResult, SubprocessRunner
from l2mac.checks.tests import TestRun, run_tests

__all__ = ["CodeIssue", "ProcessResult", "SubprocessRunner", "TestRun", "find_code_issues", "run_tests", "trim_output"]
