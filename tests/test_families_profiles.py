"""family.toml and profile loading: the shipped files load; every mistake names itself."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from qualify.errors import UsageError
from qualify.plan.families import BUNDLED_FAMILIES, find_family, load_family, validate_name
from qualify.plan.profiles import available_profiles, find_profile

GIB = 2**30


def test_shipped_profiles() -> None:
    assert {"standard", "large", "l4-budget", "small"} <= set(available_profiles())
    standard = find_profile("standard")
    assert standard.memory_bytes == 48 * GIB == standard.host_memory_bytes * 3 // 4
    assert standard.swap_bytes == 0
    assert standard.gpu is not None and standard.gpu.model == "NVIDIA L4"
    assert standard.gpu.memory_bytes == int(22.04 * GIB)
    large = find_profile("large")
    assert large.host_memory_bytes == 128 * GIB and large.gpu is not None
    assert large.gpu.model == "NVIDIA L40S"
    budget = find_profile("l4-budget")
    assert budget.gpu is not None and budget.gpu.budget_bytes == int(21.8 * GIB)
    small = find_profile("small")
    assert small.memory_bytes <= 8 * GIB and small.gpu is None


def family_dir(tmp_path: Path, body: str, name: str = "fam") -> Path:
    directory = tmp_path / name
    directory.mkdir()
    (directory / "family.toml").write_text(textwrap.dedent(body))
    return directory


MINIMAL = """
name = "fam"
[e2e]
command = ["python", "-c", "pass"]
"""


def test_minimal_family_defaults(tmp_path: Path) -> None:
    family = load_family(family_dir(tmp_path, MINIMAL))
    assert family.command == ("python", "-c", "pass")
    assert family.timeout_s == 1800 and family.memory_bytes is None
    assert family.parity is None and not family.is_pytest


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ('name = "other"\n[e2e]\ncommand = ["x"]\n', "must equal the directory name"),
        ('name = "fam"\n[e2e]\ncommand = "pytest -q"\n', "command must be a non-empty list"),
        ('name = "fam"\n[e2e]\ncommand = []\n', "command must be a non-empty list"),
        (MINIMAL + 'colour = "red"\n', "unknown key 'colour'"),
        (MINIMAL + '[resources]\nmemory = "lots"\n', "memory 'lots' is not valid"),
        (MINIMAL + '[resources]\ngpus = "one"\n', "gpus = 'one' must be int"),
        (MINIMAL + '[allocator]\nexpandable_segments = "yes"\n', "must be bool"),
        (MINIMAL + "[options]\nlist = [1, 2]\n", "must be a bool, number or string"),
        ('name = "fam"\n[e2e]\ncommand = ["x"]\ntimeout = "forever"\n', "timeout 'forever'"),
        ('name = "fam"\n[e2e]\ncommand = ["x"]\nenv = { A = 1 }\n', "env A = 1 must be a string"),
        ('name = "fam"\n[e2e]\ncommand = ["x"]\nworkdir = "missing"\n', "is not a directory"),
        ('name = "fam"\n[e2e\n', "not valid TOML"),
    ],
)
def test_family_errors_name_the_problem(tmp_path: Path, body: str, message: str) -> None:
    with pytest.raises(UsageError, match=message.replace("[", r"\[")):
        load_family(family_dir(tmp_path, body))


@pytest.mark.parametrize("name", ["../x", "a/b", "..", ".hidden", "", "a b", "x..y"])
def test_bad_family_names(name: str) -> None:
    with pytest.raises(UsageError, match="is not valid"):
        validate_name(name)


def test_unknown_family_lists_available(tmp_path: Path) -> None:
    family_dir(tmp_path, MINIMAL)
    with pytest.raises(UsageError, match=r"unknown family 'nope' \(available: fam\)"):
        find_family("nope", [tmp_path])


def test_shipped_families_load() -> None:
    for path in BUNDLED_FAMILIES.glob("*/family.toml"):
        family = load_family(path.parent)
        assert family.name == path.parent.name


def test_package_versions_are_those_importlib_metadata_gives(tmp_path: Path) -> None:
    """The fingerprint reads each distribution's metadata itself (the importlib machinery
    costs more than the reading); the answer must be importlib.metadata's, first on the path
    first, spellings alike, an egg-info file or directory too, absent as None."""
    import importlib.metadata
    import sys

    from qualify.plan.fingerprint import PACKAGES, installed_versions

    names = (*PACKAGES, "qualify", "junitparser", "Typing-Extensions", "no-such-package")
    mine = installed_versions(names, sys.path)
    for name in names:
        try:
            expected: str | None = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            expected = None
        assert mine[name] == expected, name
    first, second = tmp_path / "first", tmp_path / "second"
    for where, version in ((first, "1.0"), (second, "2.0")):
        (where / f"demo_pkg-{version}.dist-info").mkdir(parents=True)
        (where / f"demo_pkg-{version}.dist-info" / "METADATA").write_text(
            f"Metadata-Version: 2.1\nName: demo-pkg\nVersion: {version}\n\nVersion: 9\n"
        )
    (second / "old_egg-0.3-py3.11.egg-info").write_text("Name: old-egg\nVersion: 0.3\n")
    path = [str(tmp_path / "missing"), str(first), str(second)]
    assert installed_versions(["Demo.Pkg", "old-egg", "gone"], path) == {
        "Demo.Pkg": "1.0", "old-egg": "0.3", "gone": None,
    }  # fmt: skip
    for name, version in (("demo-pkg", "1.0"), ("old-egg", "0.3")):  # importlib's own answer
        found = list(importlib.metadata.distributions(name=name, path=path))
        assert found[0].version == version


def test_the_fingerprints_host_fields_are_platforms() -> None:
    """The fingerprint reads the host without importing ``platform`` (its import and patterns
    cost more than the rest of it): the answers must be ``platform``'s."""
    import platform

    from qualify.plan.fingerprint import fingerprint

    found = fingerprint(2, "cgroup-v2")
    assert [found[k] for k in ("python", "python_implementation", "kernel", "os", "machine")] == [
        platform.python_version(), platform.python_implementation(), platform.release(),
        platform.system(), platform.machine(),
    ]  # fmt: skip
