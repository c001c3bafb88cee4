"""Launch shim: join the run's cgroups, then exec the E2E.

Run as ``python -I -S enter.py PROCS_FILE... -- ARGV...``. The shim moves itself into every
given cgroup before it executes anything of the family, so the family's very first byte is
charged to the cap. Standard library only and tiny: its own startup is charged to the caller's
cgroup, which is outside the cap.
"""

import os
import sys


def main(arguments: list[str]) -> int:
    """Join the cgroups named before ``--`` and exec the argv after it."""
    split = arguments.index("--")
    procs_files, argv = arguments[:split], arguments[split + 1 :]
    for procs_file in procs_files:
        with open(procs_file, "w", encoding="ascii") as handle:
            handle.write(str(os.getpid()))
    try:
        os.execv(argv[0], argv)
    except OSError as exc:
        sys.stderr.write(f"qualify: cannot execute {argv[0]!r}: {exc.strerror}\n")
    return 127


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
