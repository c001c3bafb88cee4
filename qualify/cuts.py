"""Cuts of a log's text that never fall inside a value: :mod:`harness.cuts`, shared with the
harness (its plugin cuts a test's message and text inside the sandbox the same way)."""

from __future__ import annotations

from harness.cuts import SEAM, after_cut, head, seam, tail

__all__ = ["SEAM", "after_cut", "head", "seam", "tail"]
