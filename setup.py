"""Ships qualify's data with the package: ``cgroup_profiles/`` and ``families/`` stay at the top
of the repository (the design's layout) and are copied into the wheel as ``qualify/_data/``,
where ``qualify.plan.data`` finds them in an installed qualify.

Everything else is declared in pyproject.toml.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

DATA_DIRS = ("cgroup_profiles", "families")
IGNORED = shutil.ignore_patterns("__pycache__", "*.pyc", ".pytest_cache", "*.egg-info")


class BuildWithData(build_py):
    """build_py, then the data directories into ``qualify/_data/`` of the build."""

    def run(self) -> None:
        # An in-tree build (pip install .) reuses build/lib: a module removed from the tree
        # since the last build would otherwise still ship.
        shutil.rmtree(self.build_lib, ignore_errors=True)
        super().run()
        for name in DATA_DIRS:
            source = Path(name)
            target = Path(self.build_lib) / "qualify" / "_data" / name
            if target.exists():
                shutil.rmtree(target)
            shutil.copytree(source, target, ignore=IGNORED)


setup(cmdclass={"build_py": BuildWithData})
