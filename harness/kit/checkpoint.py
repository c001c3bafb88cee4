"""A family's Hugging Face checkpoint: a cache of checkpoints created once, loaded like any.

A checkpoint is created in a child process (what creation leaves in the allocator and the
imported modules would otherwise raise every later phase's memory), into a hidden sibling of
its cache directory, and renamed into place: a reader never sees a half-written one, and when
two processes race the first rename wins. ``save_model`` writes ``model.safetensors`` one
tensor at a time, so that creating a checkpoint never holds the weights twice (transformers'
``save_pretrained`` hands the whole state dict to safetensors, which serializes every tensor
into one buffer before writing).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO

from harness.kit.durable import fsync_dir, fsync_tree

if TYPE_CHECKING:
    import torch

WEIGHTS = "model.safetensors"


class CheckpointCache:
    """Where one family's checkpoints live, and how a missing one is created.

    ``env_var`` overrides the cache directory (default ``~/.cache/qualify/<name>``);
    ``module`` is the family's ``python -m`` entry that creates one checkpoint;
    ``package_dirs`` are the directories its child process needs on ``PYTHONPATH`` (those
    holding the family's packages: pytest puts them on the path of the E2E, not of a child).
    """

    def __init__(self, env_var: str, name: str, module: str, package_dirs: Iterable[Path]) -> None:
        self.env_var = env_var
        self.name = name
        self.module = module
        self.package_dirs = tuple(package_dirs)

    def root(self) -> Path:
        """``$<env_var>`` or ``~/.cache/qualify/<name>``."""
        configured = os.environ.get(self.env_var)
        return Path(configured) if configured else Path.home() / ".cache" / "qualify" / self.name

    def ensure(self, target: Path, argv: list[str]) -> Path:
        """``target``, created first by ``python -m <module> *argv`` if it is not there."""
        if not target.is_dir():
            command = [sys.executable, "-m", self.module, *argv]
            subprocess.run(command, check=True, env=self.child_env())
        return target

    def child_env(self) -> dict[str, str]:
        """This environment with the family's packages and the harness first on PYTHONPATH."""
        env = dict(os.environ)
        harness_parent = Path(__file__).resolve().parents[2]
        paths = [*map(str, self.package_dirs), str(harness_parent), env.get("PYTHONPATH")]
        env["PYTHONPATH"] = os.pathsep.join(filter(None, paths))
        return env


def create(target: Path, write: Callable[[Path], None]) -> None:
    """``write`` the checkpoint into a temporary sibling of ``target``; rename it into place."""
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{target.name}.", dir=target.parent))
    try:
        # mkdtemp's 0700 would make a shared cache unreadable to other users.
        staging.chmod(0o755)
        write(staging)
        fsync_tree(staging)
        try:
            staging.rename(target)
        except OSError:
            if not target.is_dir():
                raise
        fsync_dir(target.parent)
    finally:
        shutil.rmtree(staging, ignore_errors=True)


_DTYPES = {
    "float32": "F32",
    "float16": "F16",
    "bfloat16": "BF16",
    "float64": "F64",
    "int64": "I64",
    "int32": "I32",
    "int16": "I16",
    "int8": "I8",
    "uint8": "U8",
    "bool": "BOOL",
}


def save_model(model: Any, directory: Path) -> None:
    """``config.json`` and ``model.safetensors`` of ``model``, the weights written one tensor
    at a time (``write_safetensors``); ``from_pretrained`` loads the directory as it loads one
    of ``save_pretrained``. A model with tied weights is refused (``save_pretrained`` knows
    which of two tied names to drop; this writer does not)."""
    model.config.architectures = [type(model).__name__]  # as save_pretrained records it
    model.config.save_pretrained(directory)
    write_safetensors(directory / WEIGHTS, model.state_dict(), metadata={"format": "pt"})


def write_safetensors(
    path: Path, tensors: dict[str, torch.Tensor], metadata: dict[str, str] | None = None
) -> None:
    """Write ``tensors`` in the safetensors layout: the header (every name's dtype, shape and
    byte range, known before any data is written), then each tensor's bytes straight from its
    storage, in name order. Nothing is copied but a tensor that is not contiguous."""
    header: dict[str, Any] = {"__metadata__": metadata} if metadata else {}
    offset, storages = 0, set()
    for name in sorted(tensors):
        tensor = tensors[name]
        key = (tensor.untyped_storage().data_ptr(), tensor.storage_offset())
        if tensor.numel() and key in storages:
            raise ValueError(f"{name}: shares its storage with another tensor (tied weights)")
        storages.add(key)
        dtype = str(tensor.dtype).removeprefix("torch.")
        if dtype not in _DTYPES:
            raise ValueError(f"{name}: dtype {dtype} is not one of {', '.join(_DTYPES)}")
        size = tensor.numel() * tensor.element_size()
        header[name] = {
            "dtype": _DTYPES[dtype],
            "shape": list(tensor.shape),
            "data_offsets": [offset, offset + size],
        }
        offset += size
    encoded = json.dumps(header, separators=(",", ":")).encode()
    encoded += b" " * (-len(encoded) % 8)  # the data starts 8-byte aligned, as safetensors does
    with path.open("xb") as handle:
        handle.write(len(encoded).to_bytes(8, "little"))
        handle.write(encoded)
        unsynced = 0
        for name in sorted(tensors):
            data = _tensor_bytes(tensors[name])
            handle.write(data)
            unsynced += len(data)
            if unsynced >= _SYNC_EVERY_BYTES:
                _write_back(handle)
                unsynced = 0
        _write_back(handle)


_SYNC_EVERY_BYTES = 64 << 20
"""How much of a checkpoint is written before it is written back and dropped from the cache."""


def _write_back(handle: BinaryIO) -> None:
    """Write the file's dirty pages to disk and drop them from the page cache. A checkpoint is
    written under the run's cap, where its pages are charged: in a cgroup v1 memory controller,
    which does not throttle a writer by its own dirty pages, a cap full of them stalls the
    writer for minutes instead of letting it write."""
    handle.flush()
    os.fdatasync(handle.fileno())
    os.posix_fadvise(handle.fileno(), 0, 0, os.POSIX_FADV_DONTNEED)


def _tensor_bytes(tensor: torch.Tensor) -> memoryview:
    """A view of ``tensor``'s bytes (a copy only where it is not contiguous)."""
    import torch

    flat = tensor.detach().contiguous().reshape(-1)
    return flat.view(torch.uint8).numpy().data


def load_model(directory: Path, dtype: torch.dtype, *, trust_remote_code: bool = False) -> Any:
    """``AutoModelForCausalLM.from_pretrained`` in ``dtype`` with eager attention, eval mode."""
    from transformers import AutoModelForCausalLM

    quiet_transformers()
    model = AutoModelForCausalLM.from_pretrained(
        directory, dtype=dtype, attn_implementation="eager", trust_remote_code=trust_remote_code
    )
    return model.eval()  # type: ignore[no-untyped-call]


def load_tokenizer(directory: Path) -> Any:
    """``AutoTokenizer.from_pretrained``: the tokenizer and its chat template."""
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(directory)


def stop_token_ids(directory: Path) -> list[int]:
    """Token ids that end a generation, from the checkpoint's ``generation_config.json``."""
    from transformers import GenerationConfig

    eos = GenerationConfig.from_pretrained(directory).eos_token_id
    return [eos] if isinstance(eos, int) else list(eos or [])


def quiet_transformers() -> None:
    """No progress bars: transformers 5 draws one per load and save; the E2E's logs need none."""
    from transformers.utils import logging

    logging.disable_progress_bar()  # type: ignore[no-untyped-call]
