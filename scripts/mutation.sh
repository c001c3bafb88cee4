#!/usr/bin/env bash
# Mutation testing of the modules a red verdict rests on: the verdict ladder, the CUDA OOM
# classifier, the parity gate and the sanitizer ([tool.mutmut] in pyproject.toml lists the
# files and the in-process unit tests that judge them). Prints every mutant no test killed,
# marking those docs/mutation-equivalents.md explains (equivalent, detected by a hang, or a
# bound kept on purpose); not part of `make test` (about 8 minutes on one core).
#
#   scripts/mutation.sh                              every mutant
#   scripts/mutation.sh 'qualify.judge.ladder*'      only those matching a pattern
#   MUTATION_CHILDREN=1 scripts/mutation.sh          one test process at a time (default: nproc)
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/bootstrap.sh
rm -rf mutants
.venv/bin/mutmut run --max-children "${MUTATION_CHILDREN:-$(nproc)}" "$@" >/dev/null 2>&1 || true
.venv/bin/mutmut results --all true 2>/dev/null | python3 -c '
import collections, pathlib, re, sys
doc = pathlib.Path("docs/mutation-equivalents.md").read_text(encoding="utf-8")
explained = set(re.findall(r"`(qualify\.[^`]+__mutmut_\d+)`", doc))
results = [line.strip().rsplit(": ", 1) for line in sys.stdin if line.strip()]
checked = [(name, status) for name, status in results if status != "not checked"]
lines = [(name, status) for name, status in checked if status != "killed"]
counts = collections.defaultdict(collections.Counter)
for name, status in lines:
    if name in explained:
        status = f"{status}, explained"
    module = re.split(r"\.x[_\u01c1]", name)[0]
    counts[module][status] += 1
    print(f"{status:22} {name}")
print()
print("not killed, per module (survived = no test failed; no tests = no unit test reaches it;")
print("timeout = the tests ran past the limit; explained = in docs/mutation-equivalents.md):")
for module, found in sorted(counts.items()):
    print(f"  {module}: " + ", ".join(f"{n} {s}" for s, n in sorted(found.items())))
unexplained = sum(1 for name, _ in lines if name not in explained)
print(f"mutants checked: {len(checked)}, killed: {len(checked) - len(lines)}, "
      f"not killed: {len(lines)}, not explained: {unexplained}")
'
