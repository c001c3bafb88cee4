"""Images for the docker backend that the GitHub Action prepares (``qualify run`` never pulls).

``qualify doctor --plan`` makes the image ready before the run: an ``--image`` that is not in
the engine is pulled, and without one the host-Python image is imported. That image holds only
empty mount points and the merged-/usr symlinks; a run in it uses ``--mount-host-python``, which
binds this host's /usr and qualify's interpreter read-only, so the E2E runs the same Python and
packages as the step (the family's stack included). It only works where the engine runs on this
host, which ``qualify.sandbox.choice`` checks first.
"""

from __future__ import annotations

import io
import tarfile
from typing import Any

from qualify import __version__
from qualify.errors import UsageError

HOST_PYTHON_IMAGE = f"qualify-host-python:{__version__}"
"""The empty image of host-Python runs (tagged with qualify's version)."""


def host_python_rootfs() -> bytes:
    """The image's root filesystem as a tar: mount points and the merged-/usr symlinks."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        # sbin is a real directory: the engine mounts docker-init at /sbin/docker-init.
        for directory in ("usr", "sbin", "tmp", "proc", "sys", "dev", "etc", "run"):
            info = tarfile.TarInfo(directory)
            info.type, info.mode = tarfile.DIRTYPE, 0o1777 if directory == "tmp" else 0o755
            tar.addfile(info)
        for link in ("bin", "lib", "lib64"):
            info = tarfile.TarInfo(link)
            info.type, info.linkname = tarfile.SYMTYPE, f"usr/{link}"
            tar.addfile(info)
    return buffer.getvalue()


def _present(client: Any, image: str) -> bool:
    import docker  # type: ignore[import-untyped]

    try:
        client.images.get(image)
    except docker.errors.ImageNotFound:
        return False
    return True


def ensure_image(client: Any, image: str | None) -> str:
    """The image a run will use, present in the engine: ``image`` (pulled when missing) or the
    host-Python image (imported when missing). UsageError (one line) when it cannot be had."""
    import docker

    try:
        if image is None:
            if not _present(client, HOST_PYTHON_IMAGE):
                repository, tag = HOST_PYTHON_IMAGE.rsplit(":", 1)
                client.api.import_image_from_data(
                    host_python_rootfs(), repository=repository, tag=tag
                )
            return HOST_PYTHON_IMAGE
        if not _present(client, image):
            client.images.pull(image)  # the SDK splits "name:tag", "host:5000/x", "x@sha256:..."
    except docker.errors.DockerException as exc:
        what = image or HOST_PYTHON_IMAGE
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        raise UsageError(f"cannot make the image {what} ready in the engine: {first}") from None
    return image
