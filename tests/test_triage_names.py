"""The build corpus read without its names: every artifact whose text names its ecosystem or its
project has those names replaced by one no rule can know (``Zorblax``), and the class must hold.

A reader that knew an ecosystem only by its name would lose it here, and would lose the next
ecosystem, which nobody has named yet. The names replaced are the ecosystem of the file's name
(``kill-nomad-...``) and the words of the source's repository (``hashicorp/nomad``), as whole
words in any case; the words that say what happened rather than who said it (a device, a kernel,
a container runtime, an orchestrator, a language) are kept: they are parts of the sentence,
not names of its speaker. The figure is printed; the rows whose class the names decide are
listed below with the reason.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from qualify.triage import Sources, triage
from tests.test_triage_corpus import CORPUS, KNOWN_MISSES, ROWS

_REPOSITORY = re.compile(r"https://(?:github\.com|gitlab\.com)/([^/\s]+)/([^/\s]+)/")
UNKNOWN_NAME = "Zorblax"

KEPT_WORDS = frozenset(
    {
        # what happened and where: the device, the kernel and the runtime that enforce memory
        "cuda", "hip", "rocm", "mps", "metal", "tpu", "xpu", "npu", "gpu", "rmm", "wgpu",
        "vulkan", "opencl", "kernel", "linux", "docker", "podman", "containerd", "kubernetes",
        "k8s", "slurm", "systemd", "cgroup", "cgroups", "python", "java", "jvm", "node",
        "nodejs", "pytest", "oom", "memory", "out", "of", "killed", "kill",
        # words of a repository's name that are no one's name
        "the", "and", "for", "org", "lab", "labs", "team", "project", "app", "apps", "server",
        "client", "core", "dev", "tools", "agent", "agents", "issues", "community", "official",
    }
)  # fmt: skip

NAMED = {
    "kill-nomad-client-task-failed-wait-returned-exit-code-137-error-oom-killed-hashicorp-nomad-"
    "5887.txt": (
        "Nomad's client says a task was 'OOM Killed': knowing that Nomad runs a task in a "
        "container with a memory limit is what makes it the limit's kill, not the machine's"
    ),
    "gpu-mindspore-npu-gemma-total-mem-candle-org-MindAct-1761.txt": (
        "the allocator's source path (mindspore/ccsrc/.../mem_dynamic_allocator.cc) is what says "
        "the refused block is the NPU's, not the host's"
    ),
    "gpu-mindspore-opensora-i2v-npu-oom-mindspore-lab-mindone-820.txt": (
        "as above: MindSpore's device allocator is named only by its source path"
    ),
}
"""Rows whose class the ecosystem's name decides, and why that is knowledge, not a guess."""


def named_rows() -> list[tuple[str, str, frozenset[str]]]:
    """(file, expected class, the names to replace) of every build row but the known misses and
    the pytest outputs (whose second word is a kind of failure, not an ecosystem)."""
    found = []
    for name, source, expected, _ in ROWS:
        if name in KNOWN_MISSES or name.startswith("pytest-"):
            continue
        repository = _REPOSITORY.search(source)
        parts = [name.split("-")[1], *(repository.groups() if repository else ())]
        words = {word for part in parts for word in re.split(r"[-_.]", part)}
        names = frozenset(
            word
            for word in words
            if len(word) >= 3 and not word.isdigit() and word.lower() not in KEPT_WORDS
        )
        found.append((name, expected, names))
    return found


def without_names(text: str, names: frozenset[str]) -> str:
    for name in sorted(names, key=len, reverse=True):  # (the longer first: ``mindone`` ...)
        whole = rf"(?<![A-Za-z0-9]){re.escape(name)}(?![A-Za-z0-9])"
        text = re.sub(whole, UNKNOWN_NAME, text, flags=re.IGNORECASE)
    return text


def test_no_unknown_name_is_in_the_corpus() -> None:
    assert not any(
        UNKNOWN_NAME.lower() in path.read_text(errors="replace").lower()
        for path in CORPUS.glob("*.txt")
    )


def test_without_their_names(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    changed: dict[str, str] = {}
    read = 0
    for name, expected, names in named_rows():
        text = (CORPUS / name).read_text(errors="replace")
        anonymous = without_names(text, names)
        if anonymous == text:
            continue  # the text never names them
        read += 1
        path = tmp_path / name
        path.write_text(anonymous)
        got = triage(Sources(paths=(path,))).triage_class.value
        if got != expected:
            changed[name] = f"{expected} -> {got}"
    with capsys.disabled():
        print(
            f"\ntriage without names: {read} build rows name their ecosystem or project; "
            f"{len(changed)} change class when the names are replaced "
            f"({len(NAMED)} listed where the name is knowledge)"
        )
    assert read >= 500
    assert sorted(changed) == sorted(NAMED), changed


def test_the_replacement_is_whole_words() -> None:
    text = "nomad: task failed (NOMAD_ALLOC_ID); nomadic; client: Nomad 1.9; hashicorp2"
    assert without_names(text, frozenset({"nomad", "hashicorp"})) == (
        "Zorblax: task failed (Zorblax_ALLOC_ID); nomadic; client: Zorblax 1.9; hashicorp2"
    )
