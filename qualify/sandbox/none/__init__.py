"""``--backend none``: no cap at all, labelled uncapped in every report."""

from __future__ import annotations

from qualify.sandbox.base import Sandbox, SandboxRequest


def create(request: SandboxRequest) -> Sandbox:
    """The uncapped sandbox (the user asked for it explicitly)."""
    from qualify.sandbox.none.backend import NoSandbox

    sandbox = NoSandbox()
    sandbox.reason = request.reason
    return sandbox
