"""A Kubernetes pod's memory limit, from ``kubectl describe pod`` output or the pod as YAML or
JSON: the limit an OOMKilled container was held to, for the remedy's numbers."""

from __future__ import annotations

import re
from collections.abc import Iterator

from qualify.evidence.evidence_line import Evidence

_QUANTITY = re.compile(r"^(\d+(?:\.\d+)?)(Ki|Mi|Gi|Ti|k|K|M|G|T|e\d+)?$")
_UNITS = {
    None: 1, "Ki": 1 << 10, "Mi": 1 << 20, "Gi": 1 << 30, "Ti": 1 << 40,
    "k": 1000, "K": 1000, "M": 1000**2, "G": 1000**3, "T": 1000**4,
}  # fmt: skip
_LIMITS = re.compile(r'^(\s*)"?[Ll]imits"?\s*:\s*(\{.*)?$')
_MEMORY = re.compile(r'^\s*"?memory"?\s*:\s*"?([\w.]+)"?,?\s*$')
_INLINE = re.compile(r'"memory"\s*:\s*"([\w.]+)"')


def quantity_bytes(text: str) -> int | None:
    """A Kubernetes quantity (``4Gi``, ``512Mi``, ``4G``, ``4294967296``) in bytes."""
    match = _QUANTITY.match(text.strip())
    if match is None:
        return None
    unit = match.group(2)
    if unit and unit.startswith("e"):
        return int(float(match.group(1)) * 10 ** int(unit[1:]))
    return int(float(match.group(1)) * _UNITS[unit])


def pod_memory_limit(text: str, source: str) -> tuple[Evidence, int] | None:
    """The first container memory limit in ``text``: a ``memory:`` line indented under a
    ``Limits:``/``limits:`` line (describe, YAML, JSON spread over lines), or
    ``"limits": {"memory": "4Gi"}`` on one line."""
    lines = text.splitlines()
    for number, line in enumerate(lines, start=1):
        header = _LIMITS.match(line)
        if header is None:
            continue
        if header.group(2) and (inline := _INLINE.search(header.group(2))):
            size = quantity_bytes(inline.group(1))
            if size:
                return Evidence.of(source, number, line, "pod_memory_limit"), size
        indent = len(header.group(1))
        for offset, below in enumerate(lines[number : number + 8], start=number + 1):
            if below.strip() and len(below) - len(below.lstrip()) <= indent:
                break  # the next key at the same level: the limits are over
            match = _MEMORY.match(below)
            if match and (size := quantity_bytes(match.group(1))):
                return Evidence.of(source, offset, below, "pod_memory_limit"), size
    return None


_PLATFORM = re.compile(
    r"(?<![A-Za-z0-9_])(?:oomkilled|containers?|pods?|kubernetes|k8s|kubelet|kubectl|docker\w*|podman|cgroups?"
    r"|memcg|cloud ?foundry|app instance|dynos?|slurm\w*|sbatch|srun|sacct|ecs|fargate"
    # Hadoop's YARN, not the JavaScript package manager of the same name ("$ yarn install",
    # "yarn install v1.22.22", "yarn run build": its commands and its version)
    r"|yarn(?!\s+(?:install|add|build|run|dev|start|test|lint|remove|upgrade|workspaces?|global"
    r"|cache|set|config|dlx|why|info|init|link|pack|publish|v?\d)\b)(?![.-]lock)"
    r"|aws lambda|cloud run|nomad|mesos|openshift|helm)(?![A-Za-z0-9_])",
    re.IGNORECASE,
)
"""A platform that runs work under a memory limit of its own: a container, a pod, a job of a
batch scheduler or of Hadoop's YARN, a PaaS's instance or dyno, a cgroup. (Its edges are ASCII
ones: in a script written without spaces, "ステータスがOOMKilledになる", a word edge (``\\b``) is
not seen.)"""


_KERNEL_RECORD = re.compile(r"\[\s*\d+\.\d{6}\]")
"""The kernel's time stamp on a record of its log (dmesg's ``[162803.729479]``)."""


def platform_named(text: str, source: str) -> Evidence | None:
    """The first line of ``text`` (a file's head) that names a platform running work under a
    limit of its own, as evidence; None when none does. A kernel's record is not one, whatever
    header a log puts before it: its process table lists the host's daemons (``dockerd``), and a
    host's dmesg names docker0 and its veths."""
    for match in _PLATFORM.finditer(text):
        line, body = _line_of(text, match)
        if _KERNEL_RECORD.search(body) is None:
            return Evidence.of(source, line, body, "platform")
    return None


def _line_of(text: str, match: re.Match[str]) -> tuple[int, str]:
    """The number (from 1) and the text of the line of ``text`` that holds ``match``."""
    first = text.rfind("\n", 0, match.start()) + 1
    last = text.find("\n", match.end())
    return text.count("\n", 0, first) + 1, text[first : last if last >= 0 else len(text)]


_MEMORY_WORDS = (
    r"(?:the |my |our |its |their |your |of (?:the |my |our )?)?"
    r"(?:available |free |system |physical |server'?s? |machine'?s? |host'?s? )?(?:ram|memory)\b"
)
_USED_UP = re.compile(
    r"\b(?:uses?|used|using|consum\w*|eats?|eating|ate|eaten|fill\w*|exhaust\w*|takes?|took"
    r"|taking|hog\w*|grabs?|grabbed) (?:up )?(?:all|100 ?%) (?:of )?"
    + _MEMORY_WORDS
    + r"|\ball (?:of )?"
    + _MEMORY_WORDS
    + r"(?: [\w()-]+){0,3} (?:is|was|gets|got|has been|had been|were) (?:\w+ )?"
    r"(?:used|filled|consumed|exhausted|eaten|taken|full)\b"
    # the whole of the machine's memory, by its size (CVXPY's maintainer: "I ran this on my
    # 128GB machine and you're right - it filled up the whole 128GB before finishing")
    r"|\b(?:fill\w*|us(?:es|ed|ing)|consum\w*|eats?|ate|eaten|eating) (?:up )?(?:the |my |our )?"
    r"(?:whole|entire) (?:\d+(?:\.\d+)? ?[kmgt]i?b\b|ram\b|memory\b)"
    r"(?! (?:of )?(?:disk|ssd|hdd|drive|storage|swap|space)\b)"
    r"|\b(?:excessive|huge|massive|enormous|extreme|runaway) (?:ram|memory)"
    r" (?:usage|use|consumption)\b"
    r"|\b(?:ran|run|runs|running) out of (?:\w+ )?(?:ram|memory|mem)\b"
    # the work's own memory used up to its limit, the limit named as memory's ("the Langflow
    # container hits the 4Gb limits of memory on startup")
    r"|\b(?:hits?|hitting|reach(?:es|ed|ing)?) (?:the |its |their |my |our )?"
    r"(?:\d+(?:\.\d+)? ?[kmgt]i?b )?limits? of (?:ram|memory)\b"
    r"|\b(?:ram|memory)(?: usage| use| consumption)? (?:blows? up|blew up|explodes?|exploded)\b"
    # Chinese: memory (内存) soaring, exploding, exhausted, filled or used up (飙升, 暴涨, 耗尽,
    # 占满, 爆满, 用完), perhaps "kept" (持续, 一直, 不断) so
    r"|\u5185\u5b58(?:\u5360\u7528)?(?:\u6301\u7eed|\u4e00\u76f4|\u4e0d\u65ad)?"
    r"(?:\u98d9\u5347|\u66b4\u6da8|\u8017\u5c3d|\u5360\u6ee1|\u7206\u6ee1|\u7528\u5b8c)"
    r"|\b(?:fill\w*|exhaust\w*|max\w* out|us\w*|eat\w*|ate|consum\w*|takes?|took|taking)"
    r" (?:up )?(?:all (?:of )?)?(?:my|our|the (?:whole|entire|machine'?s?|system'?s?|host'?s?))"
    r" \d+(?:\.\d+)? ?[gmt]i?b?\b (?:of )?(?:ram|memory)\b(?! (?:card|stick|module))"
    # the machine's available or free memory said to go to zero (Cloud Hypervisor's user: "my
    # 'available' memory goes basically down to zero which is when the CLH process gets killed")
    r"|\b(?:available|free)\W{1,3}(?:ram|memory|mem)\b(?: \w+){0,2}? (?:goes|go|went|gone"
    r"|going|drops?|dropped|dropping|falls?|fell|falling|reach\w*|hits?|hitting|comes?|came)"
    r"(?: \w+)? (?:down )?(?:to )?(?:zero|nothing|0(?![.,\d]))\b",
    re.IGNORECASE,
)
"""A sentence saying the machine's memory was all used ("it uses all the memory on my server",
"All available RAM is used", "all the ram is filled"), or its use said to be excessive (Gleam's
"Excessive memory usage / killed when compiling"), or memory said to have run out (openMVS'
maintainer's "you run out of mem"), the machine's memory by its owner and size filled (typst's
"it quickly fills my 32GB of RAM"), memory that "blows up" (whisperX's), or the same in Chinese
(CocoaPods' user: "内存持续飙升", memory kept soaring): with a kill that says nothing of its
cause, the reason an on-call engineer reads into the kill."""
_SUPPOSING = re.compile(
    r"\b(?:if|whether|unless|may|might|could|would|should|will|can|to avoid"
    r"|to prevent|avoid\w*|prevent\w*|without|not|never|no longer|doesn't|don't|didn't|isn't"
    r"|wasn't|won't|usually|often|typically|indicates?|means|possibl[ey]|probably|likely|perhaps"
    r"|maybe)\b|\?"
    r"|\b(?:time ?outs?|time ?limits?|deadlines?) or\b|\bor (?:an? |the )?(?:time ?outs?"
    r"|time ?limits?|deadlines?)\b",
    re.IGNORECASE,
)
"""What makes such a sentence a supposition, a question or a denial ("so that it does not use
all the memory", "may use all the RAM", Dagster's "This usually indicates that the process was
killed by the operating system due to running out of memory"), or offers a time limit as the
other cause (Read the Docs' "Command killed due to timeout or excessive memory consumption"):
not a report that memory was used up."""
_SENTENCE = re.compile(r"[.!?;,](?:\s|$)|\n|\s[-\u2013\u2014]{1,2}\s")
"""Where a clause ends: a sentence's end, a comma, a line's end, a dash between spaces (dune's
maintainer: "it ran out of memory - fortunately simply running it again typically works": the
advice after the dash supposes nothing of the cause before it)."""


def _supposed(text: str, match: re.Match[str]) -> bool:
    """Whether the clause of ``text`` that holds ``match`` supposes, asks or denies."""
    starts = [m.end() for m in _SENTENCE.finditer(text, max(0, match.start() - 300), match.start())]
    start = starts[-1] if starts else text.rfind("\n", 0, match.start()) + 1
    after = _SENTENCE.search(text, match.end())
    stop = after.start() if after is not None else len(text)
    return _SUPPOSING.search(text, start, stop) is not None


_OVER_NORMAL = re.compile(
    r"\b(?:uses?|using|used|reach\w*|grows? to|grew to|balloons? to|ballooned to)"
    r" (?:about |around |almost |nearly |over |up to )?(\d+(?:\.\d+)?) ?([kmgt])i?b?\b"
    r"[^.;\n]{0,24}?\bnormal(?:ly)?\b[^.;\n]{0,24}?\b(\d+(?:\.\d+)?) ?([kmgt])i?b?\b",
    re.IGNORECASE,
)
"""A use stated against its normal, in the same sentence (APISIX's "I see the worker process vsz
use about 35G, normal it only needs 200M"): a hundredfold and more is memory blown up, as
"blows up" is; a few times its normal is a heavier load, an amount."""
_KIB = {"k": 1, "m": 1 << 10, "g": 1 << 20, "t": 1 << 30}
_BLOWN_UP = 100


def _over_normal(text: str) -> Iterator[re.Match[str]]:
    for match in _OVER_NORMAL.finditer(text):
        used = float(match[1]) * _KIB[match[2].lower()]
        normal = float(match[3]) * _KIB[match[4].lower()]
        if normal > 0 and used >= _BLOWN_UP * normal:
            yield match


def memory_used_up(text: str, source: str) -> Evidence | None:
    """The first line of ``text`` (a file's head) that says, in a clause that supposes nothing,
    that all of the machine's memory was used, or a use a hundredfold its normal; None when none
    does."""
    matches = sorted(
        (*_USED_UP.finditer(text), *_over_normal(text)), key=lambda match: match.start()
    )
    for match in matches:
        if _supposed(text, match):
            continue
        line, body = _line_of(text, match)
        return Evidence.of(source, line, body, "memory_used_up")
    return None


_CAPPED = re.compile(
    r"(?<![\w-])(?:--memory|--mem|-m)(?:=|\s+)[\"']?\d+(?:\.\d+)?\s*[kmgt]i?b?\b"
    r"|\bmem_limit\s*[:=]\s*[\"']?\d+(?:\.\d+)?\s*[kmgt]i?b?\b"
    r"|\blimit(?:s|ed|ing)?\b (?:the )?(?:[\w-]+'s )?(?:ram|memory)\b(?: [\w-]+){0,6} to "
    r"\d+(?:\.\d+)?\s*[kmgt]i?b?\b"
    r"|(?<![\w.])\d+(?:\.\d+)?\s*[kmgt]i?b?\b (?:(?:memory|ram|container|cgroup|pod|job)\s+){0,3}"
    r"limit\b",
    re.IGNORECASE,
)
"""A memory cap set on the work in the input: docker's ``--memory="100g"`` and ``-m 4g``, Slurm's
``--mem=8G``, compose's ``mem_limit: 4g``, or a person's "When I limit the RAM available to the
container to 4Gb", "I limited the container's memory to 4G" (BunkerWeb's user), "We've put a
1GB limit on the containers", "a test that specifies 10m container cgroup limit"."""


def memory_capped(text: str, source: str) -> Evidence | None:
    """The first line of ``text`` (a file's head) that sets a memory cap on the work, in a
    clause that supposes nothing; None when none does."""
    for match in _CAPPED.finditer(text):
        line, body = _line_of(text, match)
        if _supposed(text, match) and not body.lstrip().startswith(("$", "#", "docker", "srun")):
            continue
        return Evidence.of(source, line, body, "memory_capped")
    return None
