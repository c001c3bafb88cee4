"""Stage 1, plan: a request (flags, family.toml, a profile) validated into a frozen RunSpec.

Nothing here starts a process or writes a file: every input is checked before the run
directory exists, so bad input costs nothing (exit 2, earlier reports untouched).
"""
