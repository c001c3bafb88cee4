"""Errors a user can cause (exit 2) and failures of the toolkit or sandbox (verdict ERROR)."""

from __future__ import annotations


class UsageError(Exception):
    """Bad input: one line naming the bad value and what is valid; exit code 2."""


class SandboxError(Exception):
    """The sandbox could not be set up or torn down; the run's verdict is ERROR."""


def error_line(command: str, message: object) -> str:
    """``<command>: error: <message>`` as qualify prints it to a log that may be public (a CI
    job's): a secret in the bad value (a token passed by mistake, a password in a URL) is
    redacted, as in everything else qualify prints; when the redaction itself fails, the line
    says the message was withheld (fail closed)."""
    text = f"{command}: error: {message}\n"
    try:
        import os

        from qualify.publish.sanitize import Identities, Sanitizer

        return Sanitizer(os.environ, Identities()).redact(text)
    except Exception as exc:
        return f"{command}: error: (message withheld: redacting it failed: {type(exc).__name__})\n"
