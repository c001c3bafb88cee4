"""Where qualify's own data is: the resource profiles and the embedded families.

In an installed qualify they are package data, ``qualify/_data/`` (``setup.py`` copies the
repository's top-level ``cgroup_profiles/`` and ``families/`` there when it builds the wheel);
in a source checkout (an editable install, or ``python -m qualify`` from a clone) they are
those top-level directories themselves.
"""

from __future__ import annotations

from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent
"""The qualify package directory."""
CHECKOUT = PACKAGE.parent


def data_dir(name: str) -> Path:
    """``qualify/_data/<name>`` when installed, else ``<checkout>/<name>``.

    The checkout counts only when it is one (it holds qualify's pyproject.toml): an installed
    qualify's parent is site-packages, where another distribution may have a ``families/``.
    """
    installed = PACKAGE / "_data" / name
    if installed.is_dir():
        return installed
    if (CHECKOUT / "pyproject.toml").is_file() and (CHECKOUT / name).is_dir():
        return CHECKOUT / name
    return installed


PROFILES_DIR = data_dir("cgroup_profiles")
FAMILIES_DIR = data_dir("families")
