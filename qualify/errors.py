"""Errors a user can cause (exit 2) and failures of the toolkit or sandbox (verdict ERROR)."""

from __future__ import annotations


class UsageError(Exception):
    """Bad input: one line naming the bad value and what is valid; exit code 2."""


class SandboxError(Exception):
    """The sandbox could not be set up or torn down; the run's verdict is ERROR."""
