"""qualify's sitecustomize: read the sandbox's limits once, watch for ``import torch``.

The host puts this directory on the sandbox's PYTHONPATH, so Python's ``site`` module imports
this file at start-up. Inside a qualify run (a no-op outside one) the first process records
the memory limits it sees and every process gets a one-shot import finder for torch
(harness/_startup.py, which imports nothing more until one of them acts). Then it hands over
to the environment's own ``sitecustomize``, if there is one further down ``sys.path`` (a
distribution's or a venv's), which ours would otherwise shadow.
"""

from __future__ import annotations

import os
import sys


def _install_hook() -> None:
    # Never let the hook break interpreter start-up: a broken harness must not fail the E2E.
    # (Nothing but os and sys here: this runs in every Python process of the E2E.)
    try:
        from harness import _startup

        _startup.start()
    except Exception:
        return


def _chain_next_sitecustomize() -> None:
    here = os.path.dirname(os.path.abspath(__file__))
    ours = sys.modules.pop("sitecustomize", None)
    saved = list(sys.path)
    sys.path[:] = [entry for entry in sys.path if os.path.abspath(entry or ".") != here]
    try:
        __import__("sitecustomize")
    except ModuleNotFoundError as exc:
        if exc.name != "sitecustomize":
            raise
        if ours is not None:
            sys.modules["sitecustomize"] = ours
    finally:
        sys.path[:] = saved


_install_hook()
_chain_next_sitecustomize()
