#!/usr/bin/env bash
# Mutation testing of the modules a red verdict rests on: the verdict ladder, the CUDA OOM
# classifier, the parity gate and the sanitizer ([tool.mutmut] in pyproject.toml lists the
# files and the in-process unit tests that judge them). Prints the survivors; not part of
# `make test` (several minutes on 2 cores).
#
#   scripts/mutation.sh            every mutant
#   scripts/mutation.sh 'qualify.judge.ladder*'   only those matching a pattern
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/bootstrap.sh
rm -rf mutants
.venv/bin/mutmut run --max-children "$(nproc)" "$@" >/dev/null 2>&1 || true
.venv/bin/mutmut results 2>/dev/null | python3 -c '
import collections, re, sys
lines = [line.strip() for line in sys.stdin if line.strip()]
counts = collections.defaultdict(collections.Counter)
for line in lines:
    name, status = line.rsplit(": ", 1)
    module = re.split(r"\.x[_\u01c1]", name)[0]
    counts[module][status] += 1
    print(f"{status:10} {name}")
print()
print("not killed, per module (survived = no test failed; no tests = no unit test reaches it):")
for module, found in sorted(counts.items()):
    print(f"  {module}: " + ", ".join(f"{n} {s}" for s, n in sorted(found.items())))
print(f"total not killed: {len(lines)}")
'
