"""The docker backend: the E2E in a container of ``--image``, capped by the engine."""

from __future__ import annotations

from qualify.errors import UsageError
from qualify.sandbox.base import Sandbox, SandboxRequest


def create(request: SandboxRequest) -> Sandbox:
    """A container sandbox on the engine ``DOCKER_HOST`` names; the engine and the image are
    checked now (UsageError), before any run directory exists."""
    from qualify.sandbox.docker.backend import DockerSandbox, check_image, connect

    docker, family_dir, harness_root = request.docker, request.family_dir, request.harness_root
    if docker is None or family_dir is None or harness_root is None:
        raise UsageError("--backend docker needs --image IMAGE")
    client = connect()
    check_image(client, docker.image)
    sandbox = DockerSandbox(client, docker, request.run_id, family_dir, harness_root)
    sandbox.reason = request.reason
    return sandbox
