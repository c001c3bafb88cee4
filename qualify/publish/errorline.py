"""The one-line error of bad input, as qualify prints it."""

from __future__ import annotations

import os


def error_line(command: str, message: object) -> str:
    """``<command>: error: <message>`` as qualify prints it to a log that may be public (a CI
    job's): a secret in the bad value (a token passed by mistake, a password in a URL) is
    redacted, as in everything else qualify prints; when the redaction itself fails, the line
    says the message was withheld (fail closed). The sanitizer is loaded only here: bad input
    is the rare path, and its rules are a twentieth of a second to load."""
    text = f"{command}: error: {message}\n"
    try:
        from qualify.publish.sanitize import Identities, Sanitizer

        return Sanitizer(os.environ, Identities()).redact(text)
    except Exception as exc:
        return f"{command}: error: (message withheld: redacting it failed: {type(exc).__name__})\n"
