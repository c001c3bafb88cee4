"""Any out-of-memory sentence, read by its parts: the reader of last resort.

The named parsers (:mod:`qualify.evidence.lines`, :mod:`qualify.evidence.gpu_lines`, PyTorch's
allocator message) know the wordings they were written from. A line none of them recognises,
but that says memory ran out, is read here by what it states, whatever the ecosystem:

- **what happened**: an allocation refused (``failed to allocate``, ``can't allocate``,
  ``RESOURCE_EXHAUSTED``, ``bad_alloc``, ``MemoryError``, ``OOM when allocating``, ``would
  exceed``), a process killed (``killed``, ``OOMKilled``, ``evicted``, ``terminated``), or an
  OOM handled (``retrying``, ``falling back``, ``not a failure``): handled decides nothing;
- **which memory**: an accelerator's (CUDA, HIP/ROCm, XPU, MPS, Metal, TPU, HPU, Neuron, Vulkan,
  DirectML, ``GPU_0_bfc``, ``CUDA0``, ``device 0``, VRAM) or the host's (CPU, RAM, heap, the
  node, ``DefaultCPUAllocator``, ``MemoryError``);
- **whose limit**: for an allocation, a per-process budget (``allowed``, ``max allowed``,
  ``fraction``, ``budget``, ``limit``) or the device's capacity; for a kill, a cgroup,
  container, pod, job or task limit (``memory limit``, ``quota``, ``cgroup``, ``container``),
  or the node (``node``, ``host``, ``system``, ``low on memory``, ``memory pressure``, a
  user-space killer such as earlyoom);
- **the numbers**: sizes with their units, each taken as what the nearest word before it says
  (``tried to allocate``/``requested`` -> requested, ``free``/``available`` -> free,
  ``total``/``capacity`` -> total, ``allowed``/``limit``/``max`` -> limit).

It names only what the line shows: the ecosystem when a word of the line names it, else the
device ("a CUDA device", "an accelerator").
"""

from __future__ import annotations

import re
from typing import Any

from qualify import cuts
from qualify.evidence.evidence_line import LineSignal
from qualify.evidence.prefilter import guarded

_CANNOT = r"can ?not|can't|could ?not|couldn't|unable to|failed to"
"""The words of a refusal ("could not", "unable to"), shared by every reading of one."""
_REFUSED = (
    rf"(?:{_CANNOT}|fail to) (?:\w+ )?"
    r"(?:map|reserve|commit|obtain|grow|enlarge|expand|extend|allocate)\b"
    r"(?: (?:\d[\d.,]*\s?[kmgt]i?b )?[\w-]+){0,4} (?:memory|heap|ram)\b"
    r"|(?:requires?|needs?|needed) more (?:\w+ ){0,2}memory\b.{0,40}?\bthan\b"
    r"|\b(?:memory|heap)\b(?: [\w-]+){0,8},? exhausted\b|\bjava heap space\b"
    r"|\bmemory\b.{0,80}?\bwould (?:use|be larger than|exceed)\b.{0,60}?\b(?:maximum|limit)\b"
    r"|circuit_?breaking_?exception|errno[ =:]*12\b|\benomem\b|alloc(?:ation)?_failure"
    r"|\b(?:mmap|\w*alloc|s?brk)\b.{0,60}\bfailed\W{1,3}error code[ =:]*12\b"
    # an allocator's own structure not made at its size (Erlang's "erts_mmap: Failed to create
    # super carrier of size 512 MB")
    rf"|(?:{_CANNOT}) (?:create|allocate|map|reserve) (?:an? |the )?(?:[\w-]+ ){{0,2}}?"
    r"(?:carrier|heap|arena|memory pool|memory region|segment) of size \d"
    rf"|(?:{_CANNOT}|\bfail\w*|\berror)\b[^:]{{0,80}}:\s*no (?:more )?memory\b"
    rf"|(?:{_CANNOT}) (?:be )?\w+ (?:in|within) (?:the )?(?:allotted|available|allowed|assigned)"
    r" memory\b"
    r"|\b(?:[a-z0-9]+_)*err(?:or)?_(?:[a-z0-9]+_)*?(?:mem_?alloc|no_?mem(?:ory)?"
    r"|not_enough_(?:[a-z]+_)?mem(?:ory)?)\b"
    r"|\bos error 12\b|\berror\(12\)|cache resources exhausted"
    r"|\boom\b.{0,40}\b(?:not allowed|refused|rejected|denied)\b"
    r"|\bfail\w*\W+(?:\w+\W+){0,2}to allocate\b"
    r"|\b\w*alloc\w*(?:\(\))?(?: (?:memory|mem|buffer))? fail(?:ed|s)?\b"
    r"|\bmemory pool\b[^.]{0,40}\b(?:exhausted|depleted|full|in use)\b"
    r"|\b(?:killed|terminated|stopped|evicted)\b(?: by signal \d+(?: \(sig\w+\))?)?.{0,20}"
    r"\b(?:due to|because of|for)\b.{0,20}"
    r"\bmemory\b|^\W*vm: killing process\b"
    r"|\bcapacity exceeded\b[^.]{0,40}\bmemory\b"
    r"|\b(?:gpu|vram) capacity exceeded\b(?!\W{0,3}too many)"
    r"|\balloc\w* size\b.{0,80}?\b(?:is )?(?:more|greater|larger|bigger) than (?:the )?total "
    r"(?:\w+ )?mem(?:ory)?\b"
    r"|\bimpossible d'allouer\b(?=[^.;]{0,60}?(?:m[ée]moire|\d[\d.,]*\s?(?:[kmg]o|octets?)\b))"
    r"|\b(?:refus\w*|declin\w*|den(?:y|ies|ied)) to (?:provide|give|grant|supply|allocate|lend)"
    r" (?:\w+ ){0,2}(?:memory|ram)\b"
    # solvers' error codes for memory run out, by number: Gurobi's 10001 (GRB_ERROR_OUT_OF_MEMORY),
    # MOSEK's 1051 (MSK_RES_ERR_SPACE)
    r"|\bgurobi error 10001\b|\bmosek error 1051\b"
    # CUDA's code 2 by number (the runtime's cudaErrorMemoryAllocation, the driver's
    # CUDA_ERROR_OUT_OF_MEMORY: nvdiffrast's "RuntimeError: Cuda error: 2[cudaMalloc(&m_gpuPtr,
    # bytes);]")
    r"|\bcuda error\W{0,2}2\b(?![\d.])"
)
"""Memory refused by any verb that gets it (map, reserve, commit, enlarge, grow: Postgres' "could
not map anonymous shared memory", Emscripten's "Cannot enlarge memory arrays"), more of it
needed than there is (Ollama's "model requires more system memory ... than is available"),
memory the subject of "exhausted" (PHP's "Allowed memory size of N bytes exhausted"), a request
refused because it would pass a limit (ClickHouse's "would use 18.75 GiB ..., maximum: 18.63
GiB", a circuit breaker's "would be larger than limit of"), ENOMEM by its number (macOS malloc's
"mmap(size=16777216) failed (error code=12)": a memory call's failure and its code), an allocation
failure named as such (OpenCL's ``CL_MEM_OBJECT_ALLOCATION_FAILURE``, an error code whose parts
say so: Suricata's ``SC_ERR_MEM_ALLOC``, Windows' ``ERROR_NOT_ENOUGH_MEMORY``) and work refused
for an OOM (Redis' "OOM command not allowed when used memory > 'maxmemory'"), an allocation that
failed in other words (kraken2's "Failed attempt to allocate", MECAT2's "calloc fail",
OceanBase's object between, "allocate memory fail(attr=..., nbyte=2088960)"), a memory pool used
up (Godot's "All memory pool allocations are in use"), and a process ended because of memory
(Xcode's "Terminated due to memory issue", a run wrapper's "Terminated by signal 9 (SIGKILL) due
to explosive use of memory": the signal between), ENOMEM as Rust words it ("os error 12",
"Error(12)"), ImageMagick's resource limit ("cache resources exhausted"), Linux 2.4's OOM killer
("VM: killing process"), a failure whose reason is "no memory" (Kong's "could not write to
lua_shared_dict: no memory"), work that cannot be done in the memory it is given (BigQuery's
"The query could not be executed in the allotted memory"), a pool's capacity (TeX's "TeX
capacity exceeded, sorry [main memory size=5000000]", guppy's "Maximum GPU capacity exceeded")
and a request past the total (MindSpore's "... plus alloc size : 301990400 is more than total
mem size : 29464985600."), and memory a system refuses to provide (Stata's "op. sys. refuses to
provide memory": the refusal said by its verb), and a refusal in French, as R and other programs
translate it ("Erreur : impossible d'allouer un vecteur de taille 26.8 Go")."""
_CLAUSE = (
    r"\b(?:enough|insufficient|out of(?! bounds\b| range\b)) (?:[a-z0-9_-]{1,12} ){1,2}memory\b"
)
"""A shortage, a word or two, then memory, whatever the words between ("Not enough GPU memory to
compute a single tile.", MySQL's "Out of sort memory, consider increasing server sort buffer
size"). The scanner's clauses (:data:`qualify.evidence.scan.CLAUSES`) admit the same lines."""
_SHORT = (
    r"\bmemory (?:allocation|alloc) errors?\b"
    r"|\b(?:error|failure|failed|fail) (?:while |when |in )?allocating\b"
    r"|\bmemory (?:request|reservation)s? (?:has )?failed\b"
    r"|\bmemory (?:is |was )?(?:full|insufficient|not enough)\b"
    r"|\b(?:lack|shortage) of (?:\w+ )?memory\b|\bmemory shortage\b"
    r"|\bshort (?:of|on) (?:\w+ )?memory\b"
    r"|\bexceed(?:ed|s|ing)? (?:the |its |available |allowed )?(?:gpu |device |video )?memory\b"
    r"|\bout of (?:\w+ )?heap\b"
    r"|not enough storage is available to (?:process this command|complete this operation)"
    r"|\bmemory (?:is |was |has been )?(?:exceeded|depleted|used up|not sufficient)\b"
    r"|\bmemory ran out\b|\bmemory (?:usage|use|consumption) (?:is |was )?(?:too high|exceeded)\b"
    r"|\bmemory (?:commit|mapping|reservation) (?:has )?failed\b|\bmmap(?:\(\))? failed\b"
    r"|\bfailed to mmap\b"
    # the dynamic loader's mapping of a library refused (QingdaoU's judge under its address-space
    # limit: "libc.so.6: failed to map segment from shared object"), unless the reason it gives
    # after is another ("...: Operation not permitted", a noexec mount)
    r"|\bfailed to map segment from shared object\b(?!: (?:operation not permitted|permission))"
    r"|\b(?:maximum )?heap (?:limit|size) (?:was |has been )?(?:reached|exceeded)\b"
    # the heap's limit crossed, in the active voice, with whose heap it is (bpmn-modeler's PR:
    # "The Theia production build ... exceeded the default Node.js heap limit")
    r"|\b(?:exceed(?:ed|s|ing)?|reach(?:ed|es|ing)|hit(?:s|ting)?) (?:the |its |their |your )?"
    r"(?:[\w.-]+ ){0,2}heap (?:limit|size)\b"
    r"|\b(?:not enough|insufficient|out of) (?:free |physical |system )?v?ram\b"
    r"|\bv?ram (?:is |was )?(?:full|exhausted)\b"
)
"""Memory said to run short in the plain grammatical forms of the statement that no
ecosystem's wording is needed for: a noun ("memory allocation error", "memory shortage", "lack
of memory"), a failure and what it was doing ("error allocating 4096 bytes"), memory as the
subject ("memory is full", "memory insufficient", word orders a translated message keeps), a
crossing ("exceeded memory"), the heap run out of ("out of heap space"), Windows' message of
ERROR_NOT_ENOUGH_MEMORY, and RAM or VRAM said short ("not enough VRAM", "out of RAM"). Each is
read as any other statement: reported only by a program's line, a mention otherwise."""
_TOO_MUCH = (
    r"\b(?:uses?|used|using|consum\w*|requir\w*|needs?|needed|allocat\w*|takes?|took|taking)"
    r" too much (?:memory|ram)\b"
)
"""Too much memory used: a reason (a kill's, a refusal's), not a refusal by itself."""
_USAGE_REACHED = (
    r"\bmemory (?:usage|use|consumption) (?:has )?(?:reached|exceeded|hit) [\d.]+ ?[kmgt]i?b\b"
    r"[^;]{0,60}\blimit\b"
)
"""Memory's use said to reach a figure, then a limit in the same clause (V's "compiler memory
usage reached 2568 MiB RSS during compilation (limit: 2560 MiB)")."""
_LIMIT_ERROR_MET = (
    r"\b(?:encounter\w*|hits?|hitting|runs? into|running into|ran into|gets?|got|getting"
    r"|receiv\w*|throw\w*|threw) (?:an? |the )?mem(?:ory)? limit (?:error|exception)s?\b"
)
"""The error of a memory limit, met by what ran (Gotenberg's user on Cloud Run: "the container
always eventually encounters a memory limit error, which results in a failure"): the limit
crossed, in other words."""
_SETTING_CROSSED = (
    r"\bexceed(?:ed|s|ing)? (?:the |its |their |your |this )?(?:default|configured|allotted"
    r"|allowed|assigned|maximum|max) (?:amount of )?memory\b(?! (?:usage|use|consumption))"
)
"""Memory's setting said to be exceeded, the setting named by what it is (Pipedream's "you've
exceeded the default memory for this workflow"): a limit crossed, in other words."""
_OOM_VERB = re.compile(r"\boom(?:ed|'d|ing|'ing|thrash\w*)\b")
"""OOM as a verb, in any of its forms but the bare one (a noun as often): something ran out of
memory ("the pods keep OOMing", "istio-proxy would be getting OOM'd", SpiceDB's "pods
OOMthrashing with 250mb of limit")."""
_GETTING_MEMORY_ERROR = (
    r"\b(?:i|we) (?:am |are |was |were |keep |kept )?(?:get|getting|got|hit|hitting|receiv\w*"
    r"|encounter\w*|run into|ran into|running into) (?:an? |the |this )?memory error\b"
)
"""A person's "I am getting Memory Error" (DLRM's user): Python's MemoryError, spaced."""
_SAID = guarded(
    _REFUSED
    + r"|"
    + _CLAUSE
    + r"|"
    + _SHORT
    + r"|"
    + _TOO_MUCH
    # (not an access out of bounds: wasmtime's "wasm trap: out of bounds memory access")
    + r"|out of (?!bounds\b|range\b)(?:[\w-]+ ){0,4}mem(?:ory)?\b|:\s*out-of-memory\b|\boom\b"
    + r"|outofmemory|out_of_memory"
    # Java's OutOfMemoryError by its short name (Helidon's "Within 5 minutes OOME on the
    # helidon-se kicks in"); an allocation's error with no memory named (p4's "allocation error in
    # pdmatrix 2.")
    r"|\boome\b|\ballocation error\b"
    r"|\b(?:it|and|then|that|which|model|process|job|run|training) oom(?:s|ed|'d)\b"
    r"|\b(?:it|still) oom\b(?![ _-]?(?:kill|score|adj|event|handler|guard|protect))"
    + r"|"
    + _OOM_VERB.pattern
    + r"|resource[_ ]exhausted"
    + r"|"
    + _GETTING_MEMORY_ERROR
    # a request refused as too big, in the program's words (OpenBLAS's "Program is Terminated.
    # Because you tried to allocate too many memory regions.")
    + r"|\b(?:tried|trying|attempted|attempting) to allocate too (?:many|much)\b"
    r"|out of swap|(?:failed|unable) to reclaim (?:\w+ )?memory"
    rf"|memory (?:is )?exhausted|(?:{_CANNOT})"
    r" (?:\w+ )?\w*alloc(?:ate|\b(?![ \t]+\w))"
    r"|alloc(?:ation)?[_ ]failed|allocation (?:of|on) .{0,80}?(?:failed|would exceed)"
    r"|bad_alloc|bad allocation|memoryerror|nomemoryerror|not enough (?:\w+ )?memory"
    r"|insufficient (?:\w+ )?memory|too little (?:\w+ )?memory"
    r"|(?:exceed(?:ed|s|ing)?|over|above|reach(?:ed|es|ing)|hit(?:s|ting)?|beyond)"
    r" (?:the |its |their |your )?(?:[\w%-]+ ){0,2}mem(?:ory)? (?:usage )?(?:limit|quota|budget)"
    r"|mem(?:ory)?[ _](?:limit|quota|budget)s?(?: \([^)]{1,30}\))?(?: of [\w.]+(?: ?[kmgt]i?b)?)?"
    r"[ _](?:was |has been |is )?(?:\w+ly )?(?:exceeded|reached|hit)"
    r"|\bmax(?:imum)?\.? memory (?:was |has been )?exceeded\b"
    r"|\bmemory\b[^;:]{0,80}?\bexceed\w* (?:the |its )?(?:hard |soft )?limit\b"
    r"|"
    + _USAGE_REACHED
    + r"|"
    + _SETTING_CROSSED
    + r"|"
    + _LIMIT_ERROR_MET
    + r"|gc overhead limit exceeded|\b(?:winerror|error)[ =]?1455\b"
    r"|(?:error\b.{0,200}?|exception \(0x[0-9a-f]{8}\): )the paging file is too small"
    r"|(?<![a-z])memlimit|low on memory|low memory|memory ?pressure|oom[- _]?kill"
    r"|running low on memory"
    r"|low on resource: memory|failed to alloc\b|enough memory resources"
    # an allocation call and what it asked for, then failed ("malloc failed", x264's "malloc of
    # size 11453376 failed", "malloc(1024) failed", "calloc of 12 bytes failed")
    r"|alloc\w*(?:\(\s*[\d, ]*\))?"
    r"(?: (?:of|for) (?:size )?\d[\d,.]*\s?(?:[kmgt]i?b|bytes?)?)? failed"
    r"|outofdevicememory|(?:attempting|trying|tried) to (?:reserve|allocate) .{0,80}not possible"
    r"|alloc\w* <= (?:available|free)\w* failed"
    # an error code named for a memory allocation (CUDA's runtime: ``cudaErrorMemoryAllocation``,
    # spelled "cuda Error Memory Allocation" when its identifier is read as words)
    r"|\berror[ _]memory[ _]allocation\b"
    # an allocation call's failure as its reason (OpenSSL's error queue: "...:BUF_MEM_grow_clean:
    # malloc failure:crypto/buffer/buffer.c:129:")
    r"|\b(?:m|c|re)alloc failure\b"
    # memory as what a thing exhausts (Prisma's "The query engine gets killed by linux as it
    # exhausts the memory for the system")
    r"|\bexhaust(?:s|ed|ing)? (?:the |its |all (?:the )?|available |system )?memory\b"
    r"|\b(?:used|using|consumed|consuming|exhausted|exhausting|took|taking|taken|ate|eaten"
    r"|eating) (?:up )?all (?:the |of the |my |our )?(?:available |free |system |its )?"
    r"(?:ram|memory)\b"
    # a memory killer acting (Android's "lowmemorykiller: Killing 'com.example' (12345)"; macOS's
    # Jetsam by its kernel name, "memorystatus: killing largest compressed process X [58077]")
    r"|(?:lowmemorykiller|\blmkd\b|jetsam|memorystatus)\W.{0,80}\bkill"
    # a request over a maximum, its size stated (MATLAB's "Requested 100000x100000 (74.5GB)
    # array exceeds maximum array size preference")
    r"|\brequest\w*\b[^.;]{0,40}\d[\d.,]*\s?[kmgt]i?b\b[^.;]{0,40}\bexceed\w* (?:the )?max"
    # an allocation's size over the largest an allocator supports, in hexadecimal or bytes
    # (AddressSanitizer's "requested allocation size 0x1fdfffffc04 (...) exceeds maximum
    # supported size of 0x10000000000")
    r"|\ballocation size (?:0x[0-9a-f]+|\d+)\b.{0,80}?\bexceeds? (?:the )?max(?:imum)? supported"
    # a hard limit of a memory resource crossed (Grid Engine's 'exceeds job hard limit "h_vmem"')
    r"|\bexceed\w* (?:\w+ ){0,3}limit \W?(?:[hs]_)?(?:vmem|rss|mem)\b"
)
"""Words that say memory ran out (on the lowered line). Windows' "The paging file is too small
..." counts when an error or a .NET exception with its HRESULT reports it on the line (what the
scanner's needles find; on a line of its own it is the message of a code, ``in_context``)."""
_CODE = re.compile(
    r"^\s*(?:(?:if|elif|else|for|while|return|raise|throw|except|catch|case|def|class)\b"
    # a comment; BuildKit's step prefix is none ("#0 2.558 terminate called after throwing ...")
    r"|(?:#(?!\d+ \d+\.\d+ )|//|/\*)"
    r"(?!.*\w(?:Error|Exception): )(?!\s*(?:[Ff]atal|FATAL|[Ee]rror|ERROR)\b)"
    r"(?!.*\b(?i:fatal error|java runtime environment|native memory allocation)\b))"
    # a stack frame: the kernel's "warn_alloc_failed+0x104/0x128", a backtrace's "0x101b0f440
    # v8::...::FatalProcessOutOfMemory(...) + 616", gdb's "#3 0x... in", lldb's "frame #3:"
    r"|\w\+0x[0-9a-f]+/0x[0-9a-f]+\b|0x[0-9a-f]{8,}\s.*\s\+ \d+\s*$"
    r"|^\s*#\d+\s+0x[0-9a-f]+ in |^\s*frame #\d+:"
    r"|^\s+\*\s|^\s*[\"'].*[,({;+\\]\s*$|^(?!.*\w\. [A-Z]).*[({+\\]\s*$"
    # ending in a comma: code when it holds code's punctuation or is short (an enum's
    # ``OutOfMemory,``); a hard-wrapped paragraph's line, near the wrap column, is prose
    # (Knative's PR: "three `eventing-webhook` replicas get `OOMKilled` and enter
    # `CrashLoopBackOff`,")
    r"|^(?!.*\w\. [A-Z])(?:(?=.*[=(){}\[\]<>;:])|(?=.{0,59}$)).*,\s*$"
    r"|^(?!.*\w\. [A-Z])(?=.*[=(){}]).*;\s*$|^\s+\"[^\"]+\"\s*$"
)
"""Source code quoted in a log (a traceback's source line, a snippet): the report follows it.
A line that ends open (``,``, ``(``) is code when it is a string literal's or holds no sentence
(a wrapped message in YAML or prose holds one); an indented string literal alone on its line
is a message's source (PyTorch's ``"CUDA out of memory. Tried to allocate more than 1EB
memory."`` quoted from its allocator), not its output."""


_LEVEL_LEAD = re.compile(r"[\s>]*(?:FATAL ERROR|FATAL|ERROR|CRITICAL|PANIC|SEVERE):\s")
"""A program's message led by its level in capitals and a colon (V8's "FATAL ERROR: Ineffective
mark-compacts near heap limit ...", pasted as a list with a comma after each line, Wekan's
issue): a log's line, not code, whatever it ends with."""


def _quoted_code(line: str) -> bool:
    """Whether ``line`` is source code (:data:`_CODE`). A program's log line that ends open is
    a wrapped line, not code (Android's kernel wraps "lowmemorykiller: Killing 'x' (123), adj
    900," before "to free 81920kB")."""
    if line.startswith("* "):
        # a Markdown list's item, read as its words as a "- " item is (a C comment's
        # continuation is indented: " * "; Cellpose's "*  If I run ... it will crash and output
        # this error : _RuntimeError: CUDA out of memory. ...")
        return _quoted_code(line[2:].lstrip())
    if _CODE.search(line) is None:
        return False
    if _MESSAGE_FIELD.match(line) or _LEVEL_LEAD.match(line):
        return False
    return not (line.rstrip().endswith(",") and _LOG_SHAPED.match(line))


_MESSAGE_FIELD = re.compile(
    r"^\s*\"(?:message|msg|error|err|reason|detail|description|exception)\"\s*:\s*"
    r"\"[A-Z][^\"]*[a-z][.!]?\",?\s*$"
)
"""A structured log's message field, a sentence as its value (Cloudflare Workers' JSON log
``"message": "Worker exceeded memory limit.",``): the record a program wrote, not a string
literal in source code, though it ends open as code does."""


_TEST_PROGRESS = re.compile(
    r"\S+::\S+.*\b(?:PASSED|FAILED|SKIPPED|XFAIL|XPASS|ERROR)\b|::\S+\s+\[\s*\d+%\]\s*$"
    r"|^(?:PASSED|SKIPPED|XFAIL|XPASS) \S+::"
)
"""A test's progress line (``t.py::test_oom_is_retried PASSED [ 50%]``): its words are a test's
name, not a report (pytest's own FAILED lines are read by the pytest parser)."""
_EVENT = re.compile(
    r"error(?!s)|exception(?!s)|fatal|fail|kill|abort|panic|can't|cannot|can not|unable|terminat"
    r"|couldn't|could not"
    r"|exceed|sigterm|sigkill|evict|refused|refuses|exhausted|crash|\boome?\b|low memory"
    r"|running low"
    r"|would exceed|to continue|paging file is too small|\bwhat\(\):|bad alloc|\btried to alloc"
    r"|impossible d'allouer"
    # what happened, in Chinese: occurred, happened, an error reported, crashed, failed ("在第12轮
    # 左右便发生了OOM", VLMEvalKit's user)
    r"|出现|发生|报错|崩溃|失败"
    r"|\boom(?:s|ed|'d|ing|'ing|thrash\w*)\b|\bthr(?:ows?|owing|own|ew)\b"
    r"|^\W*\d{4}-\d\d-\d\d[t ][\d:.,]+\S*\s+(?:[ef]|fatal|error|crit\w*|severe|panic|emerg\w*)\b"
)
"""What makes a line that names running out of memory a report of it (besides a size)."""
_BARE = re.compile(
    r"^\W*(?:[\w.]+(?:::|\.))?(?:bad_alloc|bad allocation|\w*memoryerror|outofmemory\w*)\W*$"
    r"|^\W*(?:java heap space|metaspace|gc overhead limit exceeded)\W*$"
    r"|^\W*(?:[\w.-]+: )?(?:fatal|error)?\W*(?:(?:the )?(?:system|device|gpu|host|machine|process"
    r"|program|application|server|node|worker|(?:[\w-]+ )?container)\b[^.]{0,30}"
    r"\b(?:is|ran|has run) )?"
    r"(?:out of|not enough|insufficient) (?:[\w-]+ ){0,4}memory"
    r"(?:\W*$| (?:in|at|while|during|on|allocating)\b|\. [a-z]\w|, [a-z])"
)
"""A line that is the statement alone ("Out of memory!", Perl's), a system said to be out of it
(Blender's "System is out of GPU and shared host memory"), the statement and where (Blender's
"Out of memory in cuStreamCreate(...)"), a container said to be out of it (AWS Amplify's "Build
container ran out of memory"), an exception's name alone on its line (LightGBM's
"Met Exceptions:" then ``std::bad_alloc``), or the statement as a sentence of its own before the
next (MATLAB's "Out of memory. Type HELP MEMORY for your options.", ComfyUI's "Not enough GPU
memory. Try reducing image resolution ..."), or before its advice (MySQL's "Out of sort memory,
consider increasing server sort buffer size"), a program's name before it (Lua's "lua: not enough
memory"): a program's message, not a person's sentence
(which starts with its speaker, "I ran out of memory")."""
_CONTAINER_RAN_OUT = re.compile(
    r"^\W*(?:[\w.-]+: )?(?:[\w.-]+ ){0,2}(?:container|pod)\b(?:(?!\bprocess)[^.]){0,30}"
    r"\b(?:(?:ran|has run|is|was) )?out of memory\b"
)
"""A container said, as the subject of the line, to have run out of memory (AWS Amplify's build
status "Build container ran out of memory"): its memory is the container's limit, which the
platform enforces by ending it, as a limit's kill. The verb may be left out, as a status is worded
(shinyapps.io's "oom- container out of memory"). A process said between them is what ran out
(Wekan's "Docker container crash (process out of memory)")."""
_CONTAINER_OOMED = re.compile(
    r"\b(?:container|pod)s?\b[^.;:!?]{0,40}?(?:"
    + _OOM_VERB.pattern
    + r"|\b(?:reports?|reported|reporting|hits?|hitting|got|gets) (?:an? |the )?oom\b"
    r"(?![- _]?(?:score|adj|killer|protection|guard)))"
)
"""A container or a pod said in its clause to have OOMed, or to report or hit an OOM (RadonDB's
user: "the log shows the container of xenon reports OOM"): what runs out of memory in a
container is its limit, which the platform enforces by ending it, as for ``_CONTAINER_RAN_OUT``."""
_SOURCE_LOCATION = (
    r"(?:\.{0,2}/)?[\w./-]+\.(?:c|cc|cpp|cxx|h|hh|hpp|rs|go|zig|m|mm|swift):\d+:(?:\d+:)?"
)
"""A compiled program's source file and line (and column), as its log and assertion macros put
before their message: ``../src/server.c:886:``."""
_LOG_SHAPED = re.compile(
    r"^\W{0,3}(?:\d{4}[-/.]\d\d[-/.]\d\d[t ]\d\d:\d\d"  # 2023-05-01 12:00:00, ISO 8601
    r"|" + _SOURCE_LOCATION + r"\s"  # ../src/server.c:886: out of memory
    r"|\d\d:\d\d:\d\d[.,]\d+\b"  # 12:00:00.123
    r"|[A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d\b"  # syslog: May  1 12:00:00
    r"|[EFW]\d{4} \d\d:\d\d:\d\d"  # glog: E0501 12:00:00.123
    r"|\d\d-\d\d \d\d:\d\d:\d\d\.\d+\b"  # Android's logcat: 12-05 16:30:00.123
    r"|[VDIWEF]/[\w.$-]+\(\s*\d+\):"  # logcat's priority, tag and pid: I/lowmemorykiller(  123):
    r"|\[?(?:error|err|fatal|crit(?:ical)?|severe|panic|emerg(?:ency)?|alert|warn(?:ing)?|info"
    r"|notice|debug)\]?(?:\s*[\]:|-]))",
    re.IGNORECASE,
)
"""A line shaped as a program's log writes it: a timestamp or a severity first. What such a line
says of memory is the program's report, not a person's sentence."""
_OPTION = re.compile(r"(?<![\w.-])-(?:xx:[+-]?|-?)[\w.+:=-]*(?:oom|outofmemory)[\w.+:=/-]*")
"""A command-line option whose name holds the words (the JVM's
``-XX:+HeapDumpOnOutOfMemoryError``, ``--oom-score-adj=500``, quoted in a list as Gradle's
``['-XX:+ExitOnOutOfMemoryError']``): a setting, not an event; blanked before the line is read."""
_IMPLAUSIBLE = 1 << 60
_NEGATIVE_SIZE = re.compile(r"(?<![\w.])-\d+\s*(?:bytes|[kmgt]i?b)\b|\bmore than 1 ?eb\b")
"""A negative size, or PyTorch's "Tried to allocate more than 1EB memory" (a size past 2^60)."""
_SQLITE_CANTOPEN = re.compile(
    r"sqlite\w*\W.{0,40}?\bcode\W{0,2}14\b"
    r"|\bunable to open database file\W{1,3}out of memory \(14\)"
)
"""SQLite's code 14 (SQLITE_CANTOPEN), which its API words "out of memory" for a handle that
never opened, by its code or with its own message before it (go-sqlite3's "unable to open
database file: out of memory (14)", dblab's wrong path)."""
_PATH_TO_PATH = re.compile(
    r"\[(?:win ?error|errno|error) \d+\][^'\"\n]*:\s*(['\"]).+?\1\s*->\s*['\"]"
)
"""An operating system's error on a call that moves or links one path to another (Python's
``OSError: [WinError 8] Not enough memory: 'a.notanexecutable' -> 'a.exe'`` from ``os.rename``
under Wine): a rename allocates no memory of the program's, the code is another failure
worded as memory (a filesystem's, an emulation layer's)."""
_ARGUMENT_REFUSED = re.compile(
    r"\binvalid value\b[^:]{0,60}?\bfor\W{0,2}-{1,2}\w[\w-]*"
    r"|\berror: argument -{1,2}\w[\w/-]*: invalid\b"
)
"""A command-line parser refusing an option's value (clap's "error: invalid value '184KiB' for
'--memory-size <MEMORY_SIZE>': Not enough guest memory. Must be at least 16 MiB", argparse's
"error: argument -m/--memory: invalid ..."): a size checked before anything ran, not memory
running out."""
_TITLE_FIELD = re.compile(
    r"^[\s+>*-]*(?:[\w-]+[_-])?(?:title|description|label|summary|subject|heading)\s*[:=]\s"
)
"""A document's title, description or label given as a field (a docs page's front matter:
``sidebar_label: 'Job failures due to exceeded memory limits'``): what a page is about."""
_PLACEHOLDER = re.compile(r"(?<!\w)(?:x{3,}|n{3,}|#{3,}|<\w+>|\{\w*\})\s*(?:bytes|[kmgt]i?b)\b")
"""A size written as a placeholder ("Allowed memory size of XXXXXXXX bytes exhausted"): a
message's template quoted in documentation or a request, not an occurrence."""
_HEDGE = re.compile(
    r"\b(?:possible (?:\w+ )?causes?|possibly|potential(?:ly)? (?:\w+ )?(?:causes?|reasons?)"
    r"|may have been|might be"
    r"|might have|could be|can be caused|one of the following|if you see|to avoid|to prevent"
    r"|\b(?:an?|the|some) possibility of"
    r"|(?:reduc|lower|minimi[sz]|decreas)\w* (?:the )?(?:probability|risk|chances?|likelihood"
    r"|odds|frequency) of|less likely"
    r"|\w+ly (?:means|indicates)|(?:usually|often) (?:means|indicates|caused by)"
    r"|(?:common|typical|usual|frequent|likely) (?:causes?|reasons?)"
    r"|(?:will|would|may|might|could|can) (?:\w+ )?(?:lead to|result in|cause)"
    r"|(?:may|might|could|can) (?:\w+ )?(?:indicate|mean|suggest|point to|be due to|be caused by"
    r"|be related to|involve|entail)"
    r"|(?:likely|probably|possibly) (?:to be )?(?:due to|caused by))\b"
    r"|^\W*(?:if|in case)\b|\b(?:perhaps|maybe|probably|whether)\b|\btells you\b"
    r"|\b(?:seems?|seemed) like\b"
    # or a feeling or a sound like one, a guess at its kind (Moonlight's user: "It feels like an
    # out of memory error.")
    r"|\b(?:feels?|felt|sounds?|sounded) like\b"
    # or what the person thought it was, a belief they tell as past (gPodder's user: "I thought
    # it was that I reached the x84 memory limit")
    r"|\b(?:i|we) (?:first |initially )?thought (?:it was|that)\b"
    # a rule told of any one ("when a sysbox container exceeds its memory limit the kernel
    # OOM-kills it"): an indefinite subject, a verb in the present
    r"|\bwhen(?:ever)? (?:a|an|any) (?:[\w/-]+ ){0,2}(?:container|pod|process|job|task|worker"
    r"|program|vm|guest|sandbox|service)s? (?:exceeds|hits|reaches|runs out|uses up|goes over)\b"
    r"|\b(?:appears?|appeared|seems?|seemed) (?:\w+ )?to (?:be |have )?"
    r"(?:run|ran|running|hit|go|gone)\b"
    r"|\bmeans(?: that)?\b"
    # a wish for what a program should do on a condition ("When it is using GPU but unable to
    # allocate memory, it can provide a warning to user"): a proposal, not a report
    r"|^\W*when(?:ever)?\b[^.;]*,\s*(?:it|we|you|they|this|the \w+) (?:should|could|can)"
    r" (?:\w+ )?(?:provide|give|show|warn|raise|print|emit|log|suggest|switch|fall back"
    r"|notify|tell|report)\b"
    r"|\beither\b[^.;]{0,30}\b(?:oom|out[ -]of[ -]memory)[\w-]*[^.;]{0,30}\bor\b"
    r"|\b(?:it is|it's|it may be) possible\b|\b(?:indicates|signals?) that\b"
    # a situation put as a condition (libde265's issue: "In an out of memory situation,
    # de265_image::alloc_image() may fail to allocate memory")
    r"|\bin (?:an?|the|any) (?:out[ -]of[ -]memory|oom) (?:situation|condition"
    r"|case|scenario)s?\b"
    r"|\bpotential(?:ly)? (?:an? )?(?:oom|out[ -]of[ -]memory|kill\w*|terminat\w*)\b"
    r"|\bto (?:track|monitor|detect|catch|debug|investigate|reproduce|simulate|test|handle)"
    r" (?:the |an? )?(?:\w+ ){0,2}(?:oom|out[ -]of[ -]memory)"
)
"""A cause offered as one of several, as the usual one or as a possibility ("the most common cause
of a ``hermes_fatal`` is an Out of Memory (OOM) condition", "It is possible that dataloader's
workers are out of shared memory", "I've seen 137 referenced as a potential OOM termination"), a
generic explanation ("exit code 137 typically means", "Error 53200 is ... signal that the ...
budget has run out"), advice, a condition ("If you encounter CUDA out of memory, try ..."), a
risk lowered (Teleport's changelog: "to reduce the probability of Teleport exceeding its memory
limits and being OOM-Killed"), a consequence foretold (petastorm's "This will lead to OOM
exception while loading big datasets"), an appearance (rspack's issue title "rspack appears to
run out of memory and fail silently": the author's guess), a question put ("detect whether a OOM
happened") or a purpose ("This will help us to track OOM kills"): a mention, not a report."""
_INTRO = re.compile(
    r"^\W*(?:this is|here is|here's|below is|the following|i (?:get|got|see|saw|am getting"
    r"|keep getting|have|had)|we (?:get|got|see|saw))\b"
)
"""A person introducing a paste ("This is the status of the pod with out of memory error:")."""
_PERSON = re.compile(r"^\W*(?:i|i'm|i've|we|we're|we've|my|our)\s")
_QUOTED = re.compile(r"`[^`]+`|\"[^\"]+\"|\*\*[^*]+\*\*")
"""A sentence a person starts with themselves ("I am receiving a strange error that my vector
memory limit has been reached:"): a description, not the program's report, unless it quotes
the report (``Our services exit with the message `Exit Code: 137, Exit Message: "OOM
Killed"` ``)."""


_ERROR_FORM = re.compile(r"\[errno \d+\]|\berrno\W|\b\w*(?:error|exception)\b\W{0,3}:|\benomem\b")
"""An error's own form (``[Errno 12] Cannot allocate memory``, ``MemoryError:``)."""


def supposes(low: str) -> bool:
    """Whether ``low`` (lowercased) offers a cause as a possibility, a condition or advice
    (``_HEDGE``), rather than reporting one."""
    return _HEDGE.search(low) is not None


def _hedged(low: str, said: re.Match[str]) -> bool:
    """Whether a hedge governs the words that say memory ran out: on the line, unless the hedge
    stands before a colon after which the error is quoted in its own form (Ansible's "ERROR!
    Unexpected Exception, this is probably a bug: [Errno 12] Cannot allocate memory": the bug is
    supposed, the error is reported)."""
    hedge = _HEDGE.search(low)
    if hedge is None:
        return False
    if hedge.start() >= said.end():
        ended = _SENTENCE_END.search(low, said.end(), hedge.start())
        if ended is not None and (
            not _ENDING.search(low[: ended.start()]) or _RAISED_LOW.search(low, 0, said.start())
        ):
            return False  # an allocation's failure stated, its cause supposed after it
        raised = _RAISED_LOW.search(low, said.start(), hedge.start())
        if raised is not None and raised.start() <= said.end() + 8:
            return False  # the exception raised, its message supposing a cause ("OutOfMemoryError:
            # unable to create native thread: possibly out of memory or ... limits reached")
    colon = low.rfind(": ", hedge.end(), said.start())
    if colon < 0:
        return True
    return (
        _ERROR_FORM.search(low, colon, said.end()) is None or _HEDGE.search(low, colon) is not None
    )


_KILL_ALTERNATIVE = guarded(
    r"[^.;]{0,40}?\bor\b[^.;]{0,60}?(?:\bkill\s+-(?:9|kill)\b|\bsigkill\b|\bsignal 9\b)"
)
"""A SIGKILL offered in the same sentence as the other cause of an end whose first cause is
memory supposed (react-scripts' "The build failed because the process exited too early. This
probably means the system ran out of memory or someone called `kill -9` on the process."): the
process died of SIGKILL, which both causes share; that memory ran out is only supposed."""


_TIME_CAUSE = r"(?:time ?outs?|timing out|time ?limits?|deadlines?|running too long)"
_MEMORY_CAUSE = r"(?:(?:excessive |too much |high )?(?:memory|ram)(?: \w+)?|oom|out of memory)"
_KILL_EITHER = re.compile(
    r"\b(?:killed|terminated|stopped|cancel+ed|aborted)\b(?: \w+){0,2}? (?:due to|because of"
    rf"|for) (?:an? |the )?(?:{_TIME_CAUSE} or (?:an? |the )?{_MEMORY_CAUSE}"
    rf"|{_MEMORY_CAUSE} or (?:an? |the )?{_TIME_CAUSE})\b"
)
"""A kill whose cause is given as one of two the platform does not tell apart, its time or its
memory (Read the Docs' "Command killed due to timeout or excessive memory consumption"): a
kill, whose memory is only supposed."""


_EITHER_IN_PARENS = re.compile(
    r"\bkill\w*\W{0,3}\(([^()]{1,60}?\bor\b[^()]{1,60}?)\)"
    r"|\(([^()]{0,40}?\bor (?:was |got |been )?kill\w*[^()]{1,40}?)\)"
)
"""A kill whose cause is put in parentheses as one of two, memory one of them (a browser's
"Render process (9006) kill (OOM or update) wasn't handed by all associated webviews", its
service "onServiceDisconnected (crash or killed by oom)"): the program does not know which, so the
kill is what it reports, its memory only supposed."""
_MEMORY_ALTERNATIVE = re.compile(r"\b(?:oom|out[ -]of[ -]memory|(?:low )?memory|ram)\b")


def _kill_either_in_parens(low: str) -> bool:
    """Whether ``low`` gives a kill's cause as one of two in parentheses, memory one of them
    (:data:`_EITHER_IN_PARENS`)."""
    return " or " in low and any(
        _MEMORY_ALTERNATIVE.search(match[1] or match[2])
        for match in _EITHER_IN_PARENS.finditer(low)
    )


def _kill_supposed(low: str, said: re.Match[str]) -> LineSignal | None:
    """A death by SIGKILL where memory is supposed as its cause and a kill as the other
    (:data:`_KILL_ALTERNATIVE`): the kill is what both causes say."""
    if _KILL_ALTERNATIVE.match(low, said.end()) and _hedged(low, said):
        return LineSignal("terminated_externally", {"parts": True, "memory_supposed": True})
    return None


_KIND_ITEM = re.compile(
    r"^\s*(?:\d{1,2}[.)]|[-*\u2022])\s+(?:an? |the )?(?:[\w-]+ ){1,4}"
    r"(?:errors?|issues?|problems?|crash(?:es)?|failures?)\s*$"
)
"""An item of a list that names a kind of problem and says nothing of it (Lighthouse's issue: "I've
come across two types of issues ...:", then "1) Out of memory error", "2) Segfault"): a heading
of what the author will describe, not a program's report, which says where or how much."""

_SENTENCE_OR_CLAUSE = re.compile(r"[;.!?](?:\s|$)")


def _clause_stop(low: str, start: int) -> int:
    """Where the sentence or clause that runs on at ``start`` ends (a ``;``, a sentence's end)."""
    stop = _SENTENCE_OR_CLAUSE.search(low, start)
    return stop.start() if stop is not None else len(low)


_SENTENCE_END = re.compile(r"[.!]\s+(?=[a-z])")
"""The end of a sentence before the next one (PETSc's "Out of memory. This could be due to
allocating too large an object ...": the statement is made, then its causes are supposed; a
kill's or a limit's cause supposed after it still hedges it: ``_ENDING``)."""


_OCCASION = re.compile(
    r"\b(?:after|when|once) (?:it|they|the \w+) (?:\w+ly )?(?:died|was|were|got|had been"
    r"|crashed|exited|ended) (?:with |from |by )?(?:an? |the )?[^.;:,]*$"
)
"""A paste introduced by the moment it was taken (Semgrep's issue: "Here's the log output from
the container after it died with an OOMKilled status"): the end is reported as the paste's
occasion, not described."""


_LABELLED = re.compile(r"(?:^|[\s(])(?:error|erreur|fehler)\s?:\s*$")
"""A program's error label just before the words that say memory ran out, in a person's sentence
without quote marks (glmmSeq's issue: "R will give me Error: cannot allocate vector of size 6223.5
Gb."): with the figure the message states, the person quotes the program's report, unmarked."""


def _introduced(low: str, said: re.Match[str]) -> bool:
    """Whether ``low`` introduces a paste or describes in a person's words, unless it names the
    end as the paste's occasion (:data:`_OCCASION`)."""
    if _OCCASION.search(low[max(0, said.start() - 60) : said.start()]):
        return False
    if (_KILLED_BECAUSE.search(low) or _HAD_THE_KILLER.search(low)) and not _HEDGE.search(low):
        return False  # a kill for memory, the person's report of it (:data:`_KILLED_BECAUSE`)
    if _LABELLED.search(low, max(0, said.start() - 20), said.start()) and _DIGIT.search(
        low, said.end(), _clause_stop(low, said.end())
    ):
        return False  # the program's error in its own form, its figure with it: quoted
    if not (_INTRO.search(low) or _described(low)):
        return False
    # and the sentence that holds the words, when one comes before it on the line: one no person
    # tells is introduced by none before it (h5py's "I have a compound dataset `ds` that's too
    # large to fit in memory, ... However `ds['col'][0]` gives a `MemoryError` exception as ...":
    # the second sentence states what the code did)
    starts = [end.end() for end in _SENTENCE_END.finditer(low, 0, said.start())]
    return not starts or _FIRST_PERSON.search(low, starts[-1]) is not None


_FIRST_PERSON = re.compile(r"\b(?:i|i'm|i've|i'd|we|we're|we've|my|our|me|us)\b")
"""A person telling the sentence, anywhere in it ("While I can ..., I run into a CUDA out of
memory error when I attempt ...")."""


def _described(low: str) -> bool:
    """Whether ``low`` is a person's own sentence that quotes no report of memory running out
    and says of no error by its name that they got it."""
    if not _PERSON.search(low):
        return False
    if _KILLER_ACTED.search(low):
        return False  # "We found the memory usage ... increase ..., until oom-killer kicks in"
    if (
        (_GOT_NAMED.search(low) or _MET_BY_WORK.search(low) or _CONTAINER_OOMED.search(low))
        and not _HEDGE.search(low) and not low.rstrip().endswith((":", "?"))
    ):  # fmt: skip
        return False  # "I get a crash with a bad_alloc error -6 and core dump."
    return not any(_SAID.search(quote[0]) for quote in _QUOTED.finditer(low))


_KILLER_ACTED = re.compile(
    r"\b(?:until|till|then|and(?: then)?)(?: (?:finally|eventually|suddenly))? (?:the )?"
    r"(?:kernel'?s? |linux'?s? )?"
    r"oom[- _]?killer (?:(?:kicks|kicked|steps|stepped|comes|came|jumps|jumped) in"
    r"|kills|killed|(?:is|was|gets|got) (?:invoked|triggered)|terminates|terminated)\b"
    # or the killer named as the kill's agent (Virtuoso's user: "I regularly see server getting
    # killed due by OOM killer")
    r"|\b(?:getting|got|gets|was|were|been|being) (?:killed|terminated) (?:due )?by (?:the )?"
    r"(?:kernel'?s? |linux'?s? )?oom[- _]?killer\b"
)
"""The kernel's OOM killer acting as the subject of a clause a person's sentence runs on to,
framed in time (syslog-ng's issue: "We found the memory usage of syslog-ng gradually increase
..., until oom-killer kicks in and device reboots"), or as the agent of a kill told in the
passive ("server getting killed due by OOM killer"): the person narrates what the killer did, an
event, not a description of memory. A killer that should, would or may act is no such clause
(its verb is not in the present or past), nor one the person only names."""


_GOT_NAMED = re.compile(
    r"\b(?:i|we) (?:get|got|hit|see|saw|am getting|are getting|keep getting|encounter\w*|ran into"
    r"|run into|receive\w*) (?:an? |the )?(?:[\w-]+ ){0,3}(?:std::)?(?:bad_alloc|memoryerror"
    r"|outofmemoryerror|outofmemoryexception|enomem)\b"
    r"|\b(?:i|we) (?:am |are )?(?:get|getting|got) (?:an? |the )?memory error\b"
    # or the program giving it to them ("suddenly it threw me a MemoryError", PyExcelerate's user)
    r"|\b(?:it|this|that) (?:threw|throws|gave|gives) (?:me|us) (?:an? |the )?(?:[\w-]+ ){0,2}"
    r"(?:std::)?(?:bad_alloc|memoryerror|outofmemoryerror|outofmemoryexception|enomem)\b"
)
"""A person saying they got an error that only memory running out raises, by its name (DIAMOND's
"I get a crash with a bad_alloc error -6 and core dump."): their report of it, where nothing
else shows it."""


_KILLED_BECAUSE = re.compile(
    r"(?<!\bmay )(?<!\bmight )(?<!\bcould )(?<!\bwould )(?<!\bwill )(?<!\bcan )"
    r"\b(?:gets?|got|was|were|is|are|being|been) (?:(?:\w+ly|always|often|still|sometimes) )?"
    r"killed\b[^.;]{0,30}?\b(?:because|as|since|due to)\b"
    r"(?:[^.;]{0,40}?\b(?:runs?|ran|running) out of (?:\w+ )?(?:memory|ram)\b"
    # or memory's lack named as the reason (GATE's user: "my simulation is always killed by the
    # system due to the limited memory")
    r"|(?: of)?(?: the| an?)? (?:limited|insufficient|lack of|low|not enough|too little"
    r"|shortage of) (?:\w+ )?(?:memory|ram)\b)"
    # or the OOM it came from (LinkChecker's title: "Process being killed from out of memory
    # error on Ubuntu")
    r"|\b(?:gets?|got|was|were|is|are|being|been) killed from (?:an? |the )?"
    r"(?:oom|out[ -]of[ -]memory)\b"
)
"""A kill told with memory running out as its reason, in a person's sentence (klaus' user:
"when cloning, git-remote-https gets killed because the system runs out of memory"), or its
lack ("killed by the system due to the limited memory"), or the OOM it came from: their report
of it."""
_HAD_THE_KILLER = re.compile(
    r"\b(?:we|i) (?:also )?(?:had|hit|got|saw|ran into|encountered) (?:the |an? )?"
    r"(?:(?:issue|problem) with the )?oom[ -]?killer\b"
    # or what they did set it off (Whoogle's user: "I tried to deploy this to a t3a.nano in EC2
    # (456MB RAM), but triggered OOM killer")
    r"|\b(?:but|and|which|it|i|we) (?:\w+ )?triggered (?:the |an? )?oom[ -]?killer\b"
)
"""The OOM killer as what a person had or hit (Alaveteli's "We had the OOM Killer show up today
while a batch was being sent", Machinekit's "We also hit the issue with the OOM killer on a
BBB"): their report of its kill."""
_MET_BY_WORK = re.compile(
    r"\bthe (?:container|pod|job|process|function|service|worker|instance|task)s?\b"
    r"(?:(?!\b(?:might|may|could|would|will|should|can|if|when|whether)\b)[^,;.]){0,40}?"
    + _LIMIT_ERROR_MET
)
"""What ran said to meet its memory limit's error, in a person's sentence (Gotenberg's user: "we
allow, the container always eventually encounters a memory limit error"): their report of it."""


_GOT_THE = re.compile(
    r"\b(?:i|we|they) (?:get|got|hit|saw|see|are getting|keep getting|ran into|run into"
    r"|receive[ds]?) (?:an? |the |this |that )?$"
)
"""A person's clause that ends where the words that say memory ran out begin (Typesense's issue:
"All the memories was occupied by the typesense and we got the out of memory error from the
server.")."""


def _narrated(low: str, said: re.Match[str]) -> bool:
    """Whether the words that say memory ran out are the object of a person's clause, in the
    middle of their sentence as at its start (:data:`_GOT_THE`): their account, unless they
    name an error only memory running out raises (:data:`_GOT_NAMED`) or give its code or a
    figure ("we are getting OOM exit code 137 in the kubernetes"): what they saw, quoted."""
    return (
        _GOT_THE.search(low, max(0, said.start() - 40), said.start()) is not None
        and not _GOT_NAMED.search(low)
        and not _DIGIT.search(low, said.start())
    )


_DIGIT = re.compile(r"\d")


_AN_ERROR_BEFORE = re.compile(r"(?:^|\s)an?\s+[`\"'*]*(?:[\w.]+(?:::|\.))?$")
_IS_SAID_OF = re.compile(
    r"\w*[`\"'*]*\s+(?:is|are|means|can|could|may|might|usually|often|generally|tends)\b"
    r"(?!\s+(?:raised|thrown|reported|printed|shown|triggered|happening|occurring)\b)"
)


def _spoken_of(low: str, said: re.Match[str]) -> bool:
    """Whether the words are an error's name spoken of as a kind, the subject of what it is or
    may be (OctoPrint's maintainer: "A `MemoryError` is sadly something outside of the control
    of OctoPrint"): an indefinite article before the name, a verb of being after it. A program
    prints the error it raised, never "a MemoryError is"; "a MemoryError is raised" reports."""
    return (
        _AN_ERROR_BEFORE.search(low, max(0, said.start() - 40), said.start()) is not None
        and _IS_SAID_OF.match(low, said.end()) is not None
    )


_OOM_AGENT = (
    r"\boom[ _-]?(?:controller|manager|monitor)\b.{0,40}\b(?:trigger\w*|kill\w*|error|sigkill)\b"
)
"""A user-space OOM controller, manager or monitor acting (Talos' "OOM controller triggered", an
HPC system's "OOM manager error, which is killing the job"); its start or its settings are not."""
_EVICTION = re.compile(r"low on resource: memory|had condition: \[memorypressure\]")
"""The kubelet's eviction messages for node memory (said only when it evicts a pod)."""
_HANDLED = re.compile(
    r"\bretry|retrying|\bwill retry|not a failure|falling back|fall(?:ing)? back|recovered"
    r"|trying again|try again with|makes? another attempt\b"
    r"|reducing (?:the )?batch|skipping tactic"
    r"|attempting to free|freeing up|cache flush|\bretract|\bpreempt"
    r"|\breturning (?:an? )?(?:null|none|nil|nullptr|empty)\b"
    r"|[;,]\s*(?:switching|switched|reverting|degrading|dropping) (?:back )?to\b(?![^.;]*\bfail)"
    r"|\b(?:catch(?:es|ing)?|caught)\b (?:the |this |that |an? )?(?:[\w.]+ )?exception\b"
    r"|\brestart(?:s|ing|ed)?\b[^.;]{0,40}?"
    r"\b(?:without|with (?:less|fewer|lower|reduced|a smaller))\b"
)
"""An OOM handled: retried, fallen back from, recovered, or answered with an empty result (Qt's
"QImage: out of memory, returning null image": the caller gets nothing and goes on; the SYCL
program manager's "it will clear the cache and make another attempt": a retry in other words), or
caught as an exception by the program that goes on ("Sometimes an OutOfMemory exception happens
and we catch the exception"), met by switching to a cheaper way in the next clause ("Not enough
memory to continue with full-resolution; switching to tiled mode"), or restarted a cheaper way
(vcpkg's "Restarting Build without parallelism because memory exceeded")."""
_KILLER_SET = re.compile(
    r"\boom[- _]?killer\W{0,3}(?:is |was |has been |gets |got |being )?"
    r"(?:disabled|enabled|turned (?:off|on)|switched (?:off|on))\b(?![^.;]{0,60}\bkill)"
    r"|\b(?:disabl|enabl)\w*\W+(?:the )?(?:kernel'?s? )?oom[- _]?killer\b(?![^.;]{0,60}\bkill)"
)
"""The OOM killer's setting stated, enabled or disabled (a game panel's question: "OOM Killer
Disabled"): how the machine is set up, not a kill; unless a kill is said after it."""
_KINDS_OF = re.compile(r"\b(?:and|or) (?:other|similar) (?:\w+ )?(?:errors|crashes|exceptions)\b")
"""Errors spoken of as a kind among others (a feature request: "Minetest completely crashes due
to Bad_Alloc and other errors from lack of memory"): what happens in general, not one run's
report of its error."""
_WISHED_AFTER = re.compile(r"\w*\s*(?:exceptions?|errors?)?\s*(?:should|must|ought to)\s+(?!not\b)")
"""The words as the subject of a wish, a modal of duty after them (tModLoader's issue title
"OutOfMemory should crash to desktop"): what a program should do, proposed, not what happened."""
_NONE_OF = re.compile(r"\b(?:no|without)\s+[`'\"*]?$")
"""An out of memory error denied by "no" or "without" just before its words (pytket-cutensornet's
issue title "Provide a simulation mode that guarantees no out of memory errors", SyncYomi's test
"the Suwayomi log must contain no `OutOfMemoryError`"): none happened or none is wanted. (Not
"no enough memory": there "no" is a learner's "not".)"""
_PREVIOUSLY = re.compile(r"\b(?:previously|formerly|used to|no longer)\s+$")
"""What used to happen, just before the words (adapy's pull request: "large CAD assemblies that
previously OOM-killed the worker ... convert within a worker pod's budget"): a change's
before, not a report."""
_USED_TO = re.compile(r"\bused to (?!work|run|pass|succeed|be (?:fine|ok|good))")
_NOW_AFTER = re.compile(r"[.!;]\s+now\b")


def _used_to(low: str, said: re.Match[str]) -> bool:
    """Whether the words stand between what "used to" happen and a sentence that says how it is
    "now" (xlrd's pull request: "`on_demand` with `mmap`ed used to have no effect ... caused it to
    load the whole data ... and `MemoryError` for big `xls` files (>100MB). Now the `mmap` part
    work as in ..."): a change's before and after, not a report. ("It used to work, ..." says
    the opposite: the failure is new.)"""
    return (
        _USED_TO.search(low, 0, said.start()) is not None
        and _NOW_AFTER.search(low, said.end()) is not None
    )


_EXAMPLE = re.compile(r"\b(?:such as|e\.g\.,?|for example,?|for instance,?)\s*[\"'`*]?$")
"""The words given as an example just after "such as" or "e.g." (ZoKrates' feature request: "it
had an information message, such as \"Out of memory\" or \"malloc() failed\""): a kind of
message named, not one a run printed."""
_GOT_SUCH = re.compile(
    r"\b(?:getting|gets?|got|seeing|see|saw|receiving|received|hitting|hit)"
    r"(?: (?:an?|the|this|these|some))?(?: [\w-]+){0,2}? such as\s*[\"'`*]?$"
)
"""An example the person says they are getting (Frappe CRM's user: "I am getting error such as
`Out of memory: killed process <pid> (node)`"): what they got, in its shape, not a kind of
message named."""
_CALLED_WRONG = re.compile(
    r"\b(?:incorrect|wrong|bogus|misleading|spurious|erroneous|false|confusing|inaccurate)"
    r"\s+[`\"'*]?$"
)
"""A message called wrong just before its words (plink's PR: "the program shows an incorrect
\"Out of memory\" error message"): what the message says did not happen."""
_SIZE_JUDGED = re.compile(
    r"(?<![\w.])\d[\d.,]*\s?[kmgt]i?b (?:of (?:\w+ )?(?:ram|memory) )?(?:is|are) (?:not enough"
    r"|insufficient|too little)\b(?![^.;]{0,60}\balloc)"
)
"""A size as the subject judged not enough (a server's updater: "ERROR - 1.71 GiB is not enough
memory - read ...#system-requirements"): the machine's memory checked against a requirement
before anything ran, not an allocation refused."""
_MACHINE_SIZED = re.compile(
    r"\b(?:machine|server|node|host|computer|laptop|workstation|vm)\b[^.;]{0,40}?\bwith\b"
    r"[^.;]{0,30}?\d[\d.]*\s?[gt]i?b\b(?: of)? (?:memory|ram)\b"
)
"""The person's machine named with its memory's size (TensorCircuit's user: "I use a machine with
36 cores and 251GB memory run the script. ... But the job is killed because of being out of
memory"): a kill for memory in that sentence is the machine's, its "job" only the work it ran,
unless a cgroup, container, pod or limit is named."""
_SCOPED = re.compile(r"cgroup|memcg|container|\bpod\b|\blimit|quota|slurm|sbatch|\bqsub\b")
_GAVE_UP = re.compile(r"\bretr(?:y|ies) (?:failed|exhausted)\b|\bafter \d+ (?:retries|attempts)\b")
"""A retry that failed in turn (MXNet's "cudaMalloc retry failed: out of memory"): the end, not a
recovery."""
_ENDED_FOR = re.compile(r"\b(?:terminated|exited|died|crashed|stopped|aborted)(?: \w+)?: (?=\S)")
"""A process's end with its reason after a colon (Ollama's "llama runner process has terminated:
cudaMalloc failed: out of memory"): the reason is the program's own error."""
_KILLED = re.compile(
    r"\b(?:killed|killing|kill(?:s|ed)? (?:the |a )?(?:process|task|worker|job|container|pod)"
    r"|oom ?killed|oomkilled|oom[- _]kill(?:s|ing)?|evicted|eviction|terminated|sigkill|signal 9"
    r"|sending sigterm|sending sigkill)\b"
)
_KILL_DENIED = re.compile(r"\b(?:no|not|without|never)\s+(?:an?\s+|any\s+)?$")
"""A kill denied by the words just before it ("there is no OOM kill in dmesg", "was not OOM
killed"): none happened."""


def _kill_told(low: str) -> bool:
    """Whether ``low`` tells of a kill (:data:`_KILLED`), a killer (:data:`_KILLER`) or an
    eviction (:data:`_EVICTION`) that no word just before denies (:data:`_KILL_DENIED`)."""
    return any(
        _KILL_DENIED.search(low, max(0, found.start() - 16), found.start()) is None
        for pattern in (_KILLED, _KILLER, _EVICTION)
        for found in pattern.finditer(low)
    )


_KILLER = re.compile(
    r"earlyoom|nohang|lowmemorykiller|lmkd|jetsam|memorystatus|systemd-oomd|oom[- _]?killer"
    r"|" + _OOM_AGENT
)
"""Programs and kernel parts whose work is killing for memory (a user-space OOM controller acting:
the node's, as earlyoom is)."""
_ALLOCATING = guarded(
    _REFUSED
    + r"|"
    + _CLAUSE
    + r"|"
    + _SHORT
    + r"|alloc|to reserve|gc overhead limit|paging file|\b1455\b"
    r"|resource[_ ]exhausted|memoryerror|nomemoryerror|would exceed|not enough|bad allocation"
    r"|\babort\w*\W{0,3}\(\s*(?:oom|out of memory)\s*\)"
    # a program's message that is "OOM" alone after its source's location (neatvnc's
    # "../subprojects/neatvnc/src/server.c:886: OOM")
    r"|^\s*" + _SOURCE_LOCATION + r"\s*oom!?\s*$"
    r"|insufficient|too little|out of (?:[\w-]+ ){0,4}mem(?:ory)?\b|outofmemory|out_of_memory"
    r"|\boome\b|" + _GETTING_MEMORY_ERROR + r"|outofdevicememory|out_of_device_memory"
    r"|\b(?:fail\w*|error|exception)\b.{0,60}\boom\b|\boom\b.{0,60}\b(?:fail\w*|error|exception)\b"
    # an OOM said to have occurred, in Chinese ("便发生了OOM", "出现了OOM")
    r"|(?:出现|发生)了?\s?(?:oom|out of memory)\b"
    r"|\b(?:it|and|then|that|which|model|process|job|run|training) oom(?:s|ed|'d)\b"
    r"|\b(?:it|still) oom\b(?![ _-]?(?:kill|score|adj|event|handler|guard|protect))"
    + r"|"
    + _OOM_VERB.pattern
    + r"|memory (?:is )?exhausted|heap,? exhausted|java heap space|memory budget exceeded"
    r"|max(?:imum)?\.? memory (?:was |has been )?exceeded"
    r"|\brequest\w*\b[^.;]{0,40}\d[\d.,]*\s?[kmgt]i?b\b[^.;]{0,40}\bexceed\w* (?:the )?max"
)
_ACCELERATOR = re.compile(
    # (Apple's Metal, not a bare-metal machine: bladeRF's user "installed on a bare-metal
    # machine"; AMD's HIP, not Erlang's HiPE compiler: "hipe_rtl_arch.beam")
    r"\b(?:cuda\w*|\w*gpu\w*|hip(?!e(?:_|\b))\w*|rocm\w*|xpu\w*|mps|(?<!bare-)(?<!bare )metal"
    r"|tpu\w*|hpu\w*|neuron\w*|vulkan"
    r"|directml|dml|\w*opencl\w*|vram|hbm|device[ _:]?\d+|cu\w*alloc\w*|ggml\w*|\w*_bfc|cl_mem\w*"
    r"|nvidia\w*|accelerator|xla\w*|jax\w*|cupy\w*|rmm|vk[a-z]*(?:alloc|memory|buffer)\w*"
    r"|device memory|device buffer|\w*outofdevicememory\w*|\w*out_of_device_memory\w*"
    r"|on device|allocated so far|8007000e|npu\w*|ascend\w*|rtmalloc\w*|aclrt\w*|habana\w*"
    r"|gl_out_of_memory|opengl|gles\w*|video memory|video ram|graphics memory|d3d\d*\w*"
    r"|direct3d\w*|dxgi\w*|mtl\w*|textures?|framebuffers?|optix|video card|graphics card"
    r"|unified memory|nccl"
    r"|gaudi\w*|synhelper|device_id\W?\d+|mindspore)\b"
)
_HOST = guarded(
    r"\b(?:cpu\w*|host|ram|system memory|physical memory|heap|memoryerror|nomemoryerror|bad_alloc"
    r"|oome|bad allocation"
    r"|malloc|mmap|node|swap|jvm|java\w*|javascript|runtime: out of memory|defaultcpuallocator"
    r"|fork|errno 12|enomem|gc overhead|paging file|winerror|out of swap"
    r"|(?!\w*(?:cuda|hip|gpu|device|vk|metal|sycl|npu|acl|cl_))\w+_(?:aligned_)?(?:m|c|re)alloc)\b"
)
"""Words naming the host's memory; among them a host allocation call by its name, a library's
prefix before it (ggml's "ggml_aligned_malloc: insufficient memory"): C's heap, whatever the
library also runs on, unless the name holds a device's."""
_NODE = re.compile(
    r"\bkernel: |^\W*vm: killing process\b"
    # (a word of a dotted name or a call is the code's: WebAssembly's "WebAssembly.Instance(): Out
    # of memory: wasm memory")
    r"|(?<![.\w])(?:node|host|system|machine|instance)\b(?!\.\w|\()"
    r".{0,40}\b(?:low on memory|running low"
    r"|memory pressure|out of memory|memory usage threshold|ran out|low on resource: memory)"
    r"|low on memory|memory ?pressure|low memory|all (?:the )?available (?:ram|memory)"
    # the person's machine, its memory and its swap both used up (wkhtmltopdf's user: "After it
    # taken up all my memory and swap, it was killed by system")
    r"|\ball (?:the |of the |my |our )?(?:ram|memory) and (?:the |my |our )?swap\b"
    r"|running low on memory|earlyoom|nohang|lowmemorykiller|lmkd|jetsam|memorystatus|\boomd\b"
    r"|usage threshold"
    r"|" + _OOM_AGENT
)
_REFUSAL = re.compile(
    rf"(?:{_CANNOT}) (?:\w+ )?"
    r"(?:\w*allocate|get|obtain|map|reserve|commit)\b"
    r"|\bbad[ _]alloc(?:ation)?\b"
)
"""A program saying it could not get memory: a refusal, whatever else the line says of the
system (Unity's "Could not allocate memory: System out of memory!"; Kusto's "Low memory
condition (E_LOW_MEMORY_CONDITION). (message: 'bad allocation ...')", C++'s refusal)."""
_OOM_KILLER = re.compile(r"\bby the (?:kernel's |linux |linux's |system's )?oom(?:[- ]?killer)?\b")
_SYSTEM_OOM = re.compile(r"\b(?:system|node|host|machine)[ _-]?oom\b")
"""An OOM of the whole system (the kubelet's "SystemOOM ... System OOM encountered, victim
process: git"): the kernel's global OOM killer acted."""
_BECAUSE_ALLOCATING = re.compile(
    r"\bbecause (?:you|it|we|the (?:program|process|application)) (?:tried|attempted) to allocate\b"
)
"""An end whose reason given is an allocation attempted: the program ending itself on a refusal."""
_BY_THE_KERNEL = re.compile(r"\bkilled by (?:the )?(?:linux |linux's )?kernel\b")
"""A kill the kernel made (LightZero's "The training process gets killed by the kernel. There is a
log in `dmesg` stating that the reason is "out of memory"."): out of memory is the reason the
kernel gives for its kill (an OOM kill, the node's or a cgroup's), not the process's own
allocator refusing."""
_OWN_OOM = re.compile(r"\breason\W{1,3}(?:oom|out[ _-]of[ _-]memory)\b|\bprocess\W{1,3}oom\b")
"""A process that ended because it ran out of memory itself, by the reason given for its end
(Chromium's and Electron's "renderer process gone (reason: oom, ...)", VS Code's "The window
terminated unexpectedly (reason 'oom', ...)", "Renderer process oom"): its own allocator gave
up, nothing killed it."""
_LIMIT_KILL = re.compile(
    # (a word of a dotted name or a call is the code's: angr's "in one of `path.step()`")
    r"cgroup|memcg|container|(?<![.\w])(?:pod|job|step|dyno)\b(?!\.\w|\()|memory (?:usage )?limit"
    # an LXC container, as Proxmox calls it ("renderd runs in a proxmox CT")
    r"|\blxc\b|\b(?:proxmox|pve|lxc) ct\b"
    r"|memlimit|quota|request(?:ed)? memory|\blimit\b"
    # OpenVZ's container, its user beancounter ("Out of memory in UB 101")
    r"|\bin ub \d|beancounter"
)
"""What bounds a kill for memory to a limit: a cgroup, a container, a pod, a scheduler's job or
step, a limit or quota named. Not a task: any tool's unit of work is one (Turborepo's "a task
is OOM-killed", a Gradle or Celery task), and a scheduler's task that has a limit names it."""
_LINK = re.compile(r"\b[a-z][a-z0-9+.-]*://\S+")


def _unlinked(low: str) -> str:
    """``low`` with its links blanked: a word of a link's path is no part of the sentence (a
    CI's "https://openqa.suse.de/tests/524500#step/gcc5_Cpp_compilation/19" names no job's step
    that a limit bounds)."""
    return _LINK.sub(lambda link: " " * len(link[0]), low) if "://" in low else low


_SCOPE_NAMED = re.compile(r"\b(?:memory )?cgroup\W{0,3}(?:out of memory|oom)\b")
"""The kill's own scope said just before what happened (the kernel's "Memory cgroup out of
memory: Kill process 17811 (python3)" quoted after "Check the dmesg on node 10.151.40.161,
found"): a node named before it is where the report was read, not whose memory ran out."""
_OWN_LIMIT_CROSSED = re.compile(
    r"\bexceed(?:ed|s|ing)? (?:its |the |their )?(?:own |hard |per[- ]process )?mem(?:ory)? limit\b"
)
"""A process said to have exceeded its memory limit, in a memory killer's report: that limit."""
_BUDGET = re.compile(
    r"\ballowed\b|max(?:imum)? allowed|\bbudget\b|\bfraction\b|memory_fraction|mem_limit"
    r"|memory limit|limit of|\bquota\b|per[- ]process|utilization"
)
_LIMIT_CROSSED = re.compile(
    _LIMIT_ERROR_MET + r"|"
    r"(?:exceed\w*|over|above|reach(?:ed|es|ing)|hit(?:s|ting)?|beyond) (?:the |its |their |your )?"
    r"(?:[\w%-]+ ){0,2}mem(?:ory)? (?:usage )?(?:limit|budget)"
    r"|mem(?:ory)?[ _]limits?(?: \([^)]{1,30}\))?(?: of [\w.]+(?: ?[kmgt]i?b)?)?"
    r"[ _](?:was |has been |is )?(?:exceeded|reached|hit)|(?<![a-z])memlimit"
    r"|\bmemory\b[^;:]{0,80}?\bexceed\w* (?:the |its )?(?:hard |soft )?limit\b"
    r"|" + _USAGE_REACHED + r"|" + _SETTING_CROSSED
)
"""A memory limit (or a worker's memory budget, as Dask's nanny enforces it) crossed, in any
words that put memory before the crossing (StarRocks' "MEM_LIMIT_EXCEEDED Memory of process
exceed limit", YARN's "running beyond physical memory limits"); not a quota: a quota may be
soft, as Heroku's R14 is."""
_WORK_REFUSED = re.compile(
    r"\b(?:query|queries|statement|request|transaction|try consume|failed alloc\w*)\b"
)
"""A limit crossed by a unit of work a server refuses (Trino's "Query exceeded per-node memory
limit of 4.80GB", StarRocks' "try consume", Doris' "failed alloc size"): the server refused the
allocation and lives on; nothing was killed."""
_QUOTA_CROSSED = re.compile(
    r"memory (?:usage )?quota(?: of [\w.]+(?: ?[kmgt]i?b)?)? (?:was |has been |is )?(?:\w+ly )?"
    r"exceeded"
    r"|(?:exceed\w*|over|above) (?:the |its |their |your )?(?:\w+ ){0,2}memory (?:usage )?quota"
)
"""A memory quota crossed: a warning until something is stopped for it (Heroku's R14 is followed
by nothing, its R15 by ``Stopping process with SIGKILL``): ``limit_noted``, which the lines after
it decide (``in_context``)."""
_BUDGET_WORDS = re.compile(
    r"\bbudget\b|\bfraction\b|memory_fraction|mem_limit|per[- ]process|memory_utilization"
    r"|max(?:imum)? allowed|maximum pool size|pool size exceeded|limit set to|capped at"
)
"""A limit that is the process's own whatever the numbers (a budget is named)."""
_ENDED = re.compile(r"(?:exit\w*|status|code)\W{0,3}(?:137|-9)\b|exit[_ ]description")
"""A process's end said with its code 137 (-9: SIGKILL) or an exit description."""
_KILL_TOLD = re.compile(r"kill|\boom|terminat|evict|stopp|abort|crash|exit|died|dead|signal")
"""Words that tell a kill or an end beside a limit crossed."""


def _told(low: str, said: re.Match[str], fields: dict[str, Any]) -> dict[str, Any]:
    """``fields``, marked ``told`` when the line is a person's sentence that a limit was crossed
    (no kill told, no program's prefix before it): the limit's kill, unless a program's own
    refusal shows whose limit it was (``qualify.triage.classify``)."""
    if _KILL_TOLD.search(low) or ": " in low[: said.start()]:
        return fields
    return {**fields, "told": True}


_WOULD = re.compile(r"\bwould (?:use|exceed|be larger)\b|\battempt(?:ed|ing)? to allocate\b")
"""A limit that a request would pass, so it was refused (ClickHouse's "Memory limit (total)
exceeded: would use 113.21 GiB (attempt to allocate chunk of 6783276 bytes)"): an allocation
refused, not a process killed."""
_SOFT_LIMIT = re.compile(
    r"(?:exceed\w*|over|above|reached) (?:the |its |their |your )?soft (?:\w+ )?limit"
    r"|soft (?:\w+ )?limit(?: of [\w.]+(?: ?[kmgt]i?b)?)? (?:was |has been |is )?exceeded"
)
"""A soft limit crossed (App Engine's "Exceeded soft memory limit of 256 MB with 340 MB"): a
warning, as a quota's, until something is stopped for it (``in_context``)."""
_FRAGMENTATION = re.compile(r"fragment")
_MESSAGE_1455 = re.compile(r"paging file|页面文件")
"""ERROR_COMMITMENT_LIMIT's message (English, Chinese) on the line that states the code."""
_SIZE = re.compile(
    r"(?<![\w.,])(\d{1,3}(?:,\d{3})+|\d+(?:[.,]\d+)?)\s*"
    r"(bytes|byte|b|kib|kb|k|mib|mb|m|gib|gb|g|tib|tb"
    r"|kilobytes?|megabytes?|gigabytes?|terabytes?|ko|mo|go|octets?)\b"
    # (a bare letter before a count's noun or a name's hyphen is no unit: "500k rows",
    # "cpython-36m-x86_64")
    r"(?!(?<=[kmg])(?:-|\s+(?:rows?|lines?|records?|items?|entries|elements|nodes|files|cols?"
    r"|columns?|samples|tokens|steps|iterations|epochs|users|requests|points|atoms|params"
    r"|parameters|cells|pixels|documents|docs|vectors|edges|vertices)\b))"
    r"|(?<![\w.,*#-])(\d{1,3}(?:,\d{3}){2,}|\d{4,})(?![\w%.]|\s*[\w%])"
)
"""A size with its unit, or a bare count of bytes (``1,073,741,824`` with its thousands
separators, or 4 digits and more; not a negative number: a code, "code: -536870904"; not a number
marked as one, nginx's connection ``*127975840`` or an issue's ``#1234``)."""
_THOUSANDS = re.compile(r"\d{1,3}(?:,\d{3})+")
_UNITS = {
    "b": 1, "byte": 1, "bytes": 1,
    "k": 1 << 10, "kib": 1 << 10, "kb": 1000,
    "m": 1 << 20, "mib": 1 << 20, "mb": 1000**2,
    "g": 1 << 30, "gib": 1 << 30, "gb": 1000**3,
    "tib": 1 << 40, "tb": 1000**4,
    # spelled out (HTCondor's "memory limit of 2048 megabytes"), as their abbreviations
    "kilobyte": 1000, "kilobytes": 1000, "megabyte": 1000**2, "megabytes": 1000**2,
    "gigabyte": 1000**3, "gigabytes": 1000**3, "terabyte": 1000**4, "terabytes": 1000**4,
    # French octets ("26.8 Go"), as R's translated messages give them
    "octet": 1, "octets": 1, "ko": 1 << 10, "mo": 1 << 20, "go": 1 << 30,
}  # fmt: skip
_LABELS = (
    ("requested_bytes", re.compile(r"(?:allocat\w*|request\w*|size|needs?|needed|trying|tried|"
                                   r"wants?|for)\W*(?:\w+\W+){0,2}$")),
    ("free_bytes", re.compile(r"(?:free|available|avail)\W*(?:\w+\W+){0,2}$")),
    ("total_bytes", re.compile(r"(?:total|capacity|(?<!limit )(?<!quota )of|/)\W*"
                               r"(?:\w+\W+){0,1}$")),
    ("limit_bytes", re.compile(r"(?:allowed|limit|max|maximum|quota|budget|capped at|cap)\W*"
                               r"(?:\w+\W+){0,2}$")),
    ("allocated_bytes", re.compile(r"(?:allocated|in use|used|usage)\W*(?:\w+\W+){0,2}$")),
)  # fmt: skip
_ECOSYSTEMS = (
    ("jax", "JAX"), ("xla", "XLA"), ("tensorflow", "TensorFlow"), ("_bfc", "TensorFlow"),
    ("mps backend", "PyTorch's MPS backend"), ("torch", "PyTorch"), ("ggml", "ggml"),
    ("llama", "llama.cpp"), ("cupy", "CuPy"), ("allocated so far", "CuPy"), ("rmm", "RMM"),
    ("cudf", "cuDF"), ("8007000e", "DirectML"), ("vkallocate", "Vulkan"),
    ("paddle", "PaddlePaddle"), ("mindspore", "MindSpore"), ("mxnet", "MXNet"),
    ("onnxruntime", "ONNX Runtime"),
    ("openvino", "OpenVINO"), ("julia", "Julia"), ("cuda.jl", "CUDA.jl"), ("ray", "Ray"),
    ("earlyoom", "earlyoom"), ("nohang", "nohang"), ("deepspeed", "DeepSpeed"),
    ("javascript", "Node.js"), ("node.js", "Node.js"), ("java", "the JVM"),
    ("gc overhead", "the JVM"), ("paging file", "Windows"), ("winerror", "Windows"),
    ("runtime: out of memory", "the Go runtime"), ("defaultcpuallocator", "PyTorch"),
    ("memoryerror", "Python"), ("bad_alloc", "C++"), ("slurm", "Slurm"), ("srun", "Slurm"),
    ("kubernetes", "Kubernetes"), ("kubelet", "Kubernetes"), ("docker", "Docker"),
    ("ecs", "Amazon ECS"), ("cloud run", "Cloud Run"), ("heroku", "Heroku"),
    ("kernel: ", "the kernel"), ("vm: killing", "the kernel"), ("magick", "ImageMagick"),
    ("matlab", "MATLAB"),
)  # fmt: skip
_DEVICES = (
    ("rocm", "a ROCm device"), ("hip", "a ROCm device"), ("xpu", "an XPU"),
    ("mps", "an MPS device"), ("metal", "a Metal device"), ("tpu", "a TPU"),
    ("hpu", "a Gaudi HPU"), ("habana", "a Gaudi HPU"), ("gaudi", "a Gaudi HPU"),
    ("synhelper", "a Gaudi HPU"), ("npu", "an NPU"), ("ascend", "an Ascend NPU"),
    ("rtmalloc", "an Ascend NPU"), ("neuron", "a Neuron device"), ("vulkan", "a Vulkan device"),
    ("directml", "a DirectML device"), ("8007000e", "a DirectML device"),
    ("vkallocate", "a Vulkan device"), ("vk::", "a Vulkan device"), ("cuda", "a CUDA device"),
    ("gpu", "a GPU"),
)  # fmt: skip


def _bytes(number: str, unit: str | None) -> int | None:
    if _THOUSANDS.fullmatch(number):
        value = float(number.replace(",", ""))
    else:
        value = float(number.replace(",", "."))
    return int(value * _UNITS[unit]) if unit else int(value)


def _numbers(line: str, low: str) -> dict[str, int]:
    """Sizes in ``line``, each named by the nearest label word before it (first of each)."""
    found: dict[str, int] = {}
    for match in _SIZE.finditer(low):
        number, unit = (match[1], match[2]) if match[1] else (match[3], "b")
        if unit == "b" and not match[1] and int(number.replace(",", "")) < 1 << 20:
            continue  # a bare count that is not a size in bytes
        if unit == "b" and "." in number:
            continue  # a fraction of a byte is a count of something else ("a 0.5B model")
        if unit == "b" and not match[1] and _ID_BEFORE.search(low, 0, match.start()):
            continue  # an identifier's number ("UB 221814591", "pid 4242424", "job #2097152")
        if unit in _FRENCH_UNITS and (len(line) != len(low) or line[match.start(2)].islower()):
            continue  # octets are written with a capital ("26.8 Go"); "3 mo" is three months
        size = _bytes(number, unit)
        if size is None:
            continue
        after = _AFTER.match(low, match.end())
        if after is not None:
            name = _AFTER_NAMES[after[1]]
            found.setdefault(name, size)
            continue
        before = low[max(0, match.start() - 40) : match.start()]
        name = next((name for name, label in _LABELS if label.search(before)), "size_bytes")
        found.setdefault(name, size)
    return found


_FRENCH_UNITS = frozenset({"ko", "mo", "go"})
_ID_BEFORE = re.compile(
    r"(?:\b(?:pid|process|job|task|id|ub|ct|ve|ctid|veid|rank|thread|tid)\s*[#:=]?|#)\s*$"
)
"""What names a bare number as an identifier rather than a size."""
_AFTER = re.compile(r"\)?\s*(allowed|free|total|reserved|in use|available|limit|requested)\b")
"""A size named by the word after it (``8.27 GiB allowed``, ``2.00 GiB free``)."""
_AFTER_NAMES = {
    "allowed": "limit_bytes", "limit": "limit_bytes", "free": "free_bytes",
    "available": "free_bytes", "total": "total_bytes", "reserved": "reserved_bytes",
    "in use": "allocated_bytes", "requested": "requested_bytes",
}  # fmt: skip


_AT_WORD_START = frozenset({"llama"})
"""Longer words that another project's name holds ("exllamav2" is not llama.cpp)."""


def _table_regex(table: tuple[tuple[str, str], ...]) -> re.Pattern[str]:
    """One alternation of a table's words, in its order, a short word (4 letters or fewer, and
    ``_AT_WORD_START``'s) only at the start of a word: "array" does not name Ray, "specs" not
    Amazon ECS, "exllamav2" not llama.cpp."""
    return re.compile(
        "|".join(
            ("(?<![a-z0-9])" if (len(word) <= 4 or word in _AT_WORD_START) and word[0].isalnum()
             else "") + re.escape(word)
            for word, _ in table
        )
    )  # fmt: skip


def _named(low: str, table: tuple[tuple[str, str], ...]) -> str | None:
    """The name of the first of ``table``'s words (in table order) that ``low`` holds."""
    found = {match[0] for match in _TABLE_REGEXES[id(table)].finditer(low)}
    return next((name for word, name in table if word in found), None)


_TABLE_REGEXES = {id(table): _table_regex(table) for table in (_ECOSYSTEMS, _DEVICES)}


def _worded_as_memory(low: str) -> dict[str, str] | None:
    """Another failure a code words as memory, with the fields it names; None when not one."""
    if _SQLITE_CANTOPEN.search(low):
        # SQLite words its code 14 (SQLITE_CANTOPEN) "out of memory" when the database was
        # never opened: a file that cannot be opened, not memory.
        return {"ecosystem": "SQLite"}
    if "->" in low and _PATH_TO_PATH.search(low):
        return {}  # a rename's or a link's error, not memory
    if "invalid" in low and _ARGUMENT_REFUSED.search(low):
        return {}  # an option's value refused by the parser, not memory
    return None


_WITHOUT = re.compile(
    r"\bwithout (?:(?:worrying|thinking|caring) about )?(?:exceed\w*|hitting|reaching"
    r"|running out)\b"
)
"""A limit not crossed, or only feared, just before the words (BunkerWeb's user: "impossible to
load the web UI without worrying about exceeding the memory consumption limit")."""


def parse_oom_parts(
    line: str, low: str | None = None, *, reported: bool = False
) -> LineSignal | None:
    """The signal of a line that says memory ran out, read by its parts; None otherwise.

    A line that says it but reports nothing (a title, a person's sentence, a cause offered as
    one of several) is ``memory_noted``: shown when nothing decides, never deciding. A node's
    memory said to be low with no action on the line is ``memory_low`` (what follows it may
    show the kill: ``in_context``). An allocation refused that names no memory is
    ``host_alloc_failed`` with ``memory_named`` false: the lines before it may name a device.
    ``reported``: the line is known to be a program's output (a fenced block), though it states
    no event of its own ("Insufficient memory for GC_all_nils").
    """
    low = line.lower() if low is None else low
    if "kill" in low and (
        (_KILL_EITHER.search(low) and not _HEDGE.search(low)) or _kill_either_in_parens(low)
    ):
        return LineSignal("terminated_externally", {"parts": True, "memory_supposed": True})
    if "-" in low and ("oom" in low or "outofmemory" in low):
        low = _OPTION.sub(lambda option: " " * len(option[0]), low)
    said = _SAID.search(low)
    if said is None:
        return _grown_then_killed(line, low)
    if (
        _quoted_code(line)
        or _TEST_PROGRESS.search(line)
        or _WITHOUT.search(low, max(0, said.start() - 40), said.end())  # not crossed, or feared
    ):
        return None
    said = _past_questions(low, said)
    if said is None:  # the cause asked about ("Not Enough GPU memory?") and nothing said after
        return LineSignal("memory_noted", {"parts": True})
    numbers = _numbers(line, low)
    ecosystem = _named(low, _ECOSYSTEMS)
    accelerator = _ACCELERATOR.search(low) is not None
    host = _HOST.search(low) is not None
    fields: dict[str, Any] = {"parts": True, **numbers}
    if ecosystem:
        fields["ecosystem"] = ecosystem
    if (early := _handled_or_resulted(low, fields, accelerator, ecosystem)) is not None:
        return early
    if any(size >= _IMPLAUSIBLE for size in numbers.values()) or _NEGATIVE_SIZE.search(low):
        # 2^60 bytes and more, or a negative size: an allocation refused all the same, but the
        # request is an overflow (a bug) rather than memory running out (Unreal's "Ran out of
        # memory allocating 18446744068997660672 bytes"): said in the summary.
        fields["implausible"] = True
    if (other := _worded_as_memory(low)) is not None:
        return LineSignal("memory_noted", {**fields, **other, "other_error": True})
    if (pasted := _pasted_reading(line, low, said, fields)) is not None:
        return pasted
    if (
        _introduced(low, said) or _hedged(low, said) or _PLACEHOLDER.search(low)
        or _TITLE_FIELD.match(low)  # a document's title or label as a field
        or _KILLER_SET.search(low)  # the OOM killer's setting, not its act
        or _SIZE_JUDGED.search(low)  # a requirement checked, not an allocation
        or _KINDS_OF.search(low)  # errors spoken of as a kind, not one reported
        or _WISHED_AFTER.match(low, said.end())  # what it should do, proposed
        or (
            said[0].startswith(("out", "oom"))
            and _NONE_OF.search(low[max(0, said.start() - 12) : said.start()]) is not None
        )  # "no out of memory errors": none
        or _CHANGE_INTRO.search(low)  # a message being changed or proposed, described
        or _denied(low, said) or _other_error(low, said) or _LOCKING.search(low)
        or _OTHER_CODE.search(low, said.end())
        or _AVOIDED.search(low[max(0, said.start() - 60) : said.start()])
        or _CALLED_WRONG.search(low, max(0, said.start() - 20), said.start())
        or (
            _EXAMPLE.search(low, max(0, said.start() - 20), said.start())
            and not _GOT_SUCH.search(low, max(0, said.start() - 60), said.start())
        )
        or _PREVIOUSLY.search(low, max(0, said.start() - 16), said.start())
        or _used_to(low, said)
        or _CONDITION.search(low[max(0, said.start() - 80) : said.start()])
        or (
            _WHEN.search(low[: said.start()]) and "kill" not in low[said.end() :]
            and not _GREW_THEN_KILLED.search(low, 0, said.start())
        )
        or _foretold(low, said)
        or _TREATED.search(low, 0, said.start()) or _NONE_COUNTED.search(low)
        or handled_code(low, said.start())
        or _KIND_ITEM.match(low) or _narrated(low, said) or _spoken_of(low, said)
        or numbers.get("requested_bytes") == 0  # nothing asked: a wrong size, not a shortage
    ):  # fmt: skip
        return _kill_supposed(low, said) or LineSignal("memory_noted", fields)
    message = _quoted_reading(line, said, fields) or _reason_reading(line, low, said)
    if message is not None:
        return message
    reported = reported or _BARE.match(low) is not None or _LOG_SHAPED.match(line) is not None
    if not (reported or numbers or _EVENT.search(low) or _EVICTION.search(low)):
        # A mention (a title, prose), unless the lines around show it is a program's output
        # (inside a fenced block: ``in_context``).
        return LineSignal("memory_noted", {**fields, "unreported": True})
    if _BECAUSE_ALLOCATING.search(low) or (
        _OWN_OOM.search(low) and not _KILLER.search(low) and not accelerator
        and not _BY_THE_KERNEL.search(low)
    ):  # fmt: skip
        # A process that ended of its own memory, by the reason given for its end (an
        # accelerator's API giving out of memory as its reason, dlib's "Error while calling
        # cudaMalloc(...) ... reason: out of memory", is the device's refusal), or by the
        # allocation it attempted (OpenBLAS's "Program is Terminated. Because you tried to
        # allocate too many memory regions."): refused, not killed.
        return LineSignal("host_alloc_failed", {**fields, "memory_named": True, "ended": True})
    if _SYSTEM_OOM.search(low):
        return LineSignal("node_oom_kill", fields)
    if _kill_told(low):
        # (a memory killer reporting the process's own limit crossed, the iOS kernel's
        # "memorystatus: exceeded mem limit: ActiveHard 50 MB (fatal)", is that limit's kill, not
        # the machine running low)
        if (
            _node_memory(low, numbers) and not _OWN_LIMIT_CROSSED.search(low)
            and not _SCOPE_NAMED.search(low)
        ) or (
            _MACHINE_SIZED.search(low) and not _SCOPED.search(low)
        ):  # fmt: skip
            # (the node's memory named, or the machine named with its memory's size)
            return LineSignal("node_oom_kill", fields)
        if _LIMIT_KILL.search(_unlinked(low)):
            return LineSignal("limit_oom_kill", fields)
        if _OOM_KILLER.search(low):
            # The kernel's OOM killer named, no limit of anything named (systemd's "A process of
            # this unit has been killed by the OOM killer"): taken as the host's memory, as a
            # kernel report cut before its scope is.
            return LineSignal("node_oom_kill", {**fields, "ecosystem": "the kernel's OOM killer"})
        return LineSignal("oom_kill", fields)
    # (a container out of memory is ended by its platform: Amplify's "Build container ran out")
    ended = (
        _ENDED.search(low) is not None or _CONTAINER_RAN_OUT.search(low) is not None
        or _CONTAINER_OOMED.search(low) is not None
    )  # fmt: skip
    if (ended or "crashed" in low) and not accelerator and _node_memory(low, numbers):
        # A process or session ended after using all the machine's memory (Colab's "Your
        # session crashed after using all available RAM"): the node's memory.
        return LineSignal("node_oom_kill", fields)
    if ended and not accelerator:
        # A process's end with memory as its reason (Cloud Foundry's "Exited with status 137
        # (out of memory)", an ``exit_description`` of "out of memory"): killed for memory. (A
        # crash alone may be the program's own error about memory.)
        return LineSignal(
            "limit_oom_kill"
            if _LIMIT_KILL.search(low) or _CONTAINER_OOMED.search(low)
            else "oom_kill",
            fields,
        )
    if _SOFT_LIMIT.search(low) and not _DEVICE_WORD.search(low):
        return LineSignal("limit_noted", fields)  # a soft limit warns; a kill may follow
    over = numbers.get("allocated_bytes", 0) > numbers.get("limit_bytes", 1 << 62)
    if (
        (_LIMIT_CROSSED.search(low) or over)
        and not _DEVICE_WORD.search(low)
        and not _WOULD.search(low)
    ):  # a limit crossed, in words or in numbers ("used: 2613Mb; limit: 2560Mb")
        if (
            _WORK_REFUSED.search(low) or _RAISED.search(line) or _OWN_ERROR.match(line)
            or _PANICKED.search(low) or _LIMIT_CODE.search(line)
        ):  # fmt: skip
            return LineSignal("host_alloc_failed", {**fields, "memory_named": True})
        return LineSignal("limit_oom_kill", _told(low, said, fields))  # enforced by a kill
    if _QUOTA_CROSSED.search(low) and not _DEVICE_WORD.search(low):
        return LineSignal("limit_noted", fields)
    if said[0].endswith("1455") and not _MESSAGE_1455.search(low):
        fields["code_only"] = True  # Windows' code; its message may follow (``in_context``)
    if not _ALLOCATING.search(low):
        if _NODE.search(low):
            return LineSignal("memory_low", fields)
        return None
    if accelerator and _ON_HOST.search(low):
        # an allocation said to be on the host, whatever API reports it (TensorFlow's "could
        # not allocate pinned host memory", "failed to alloc N bytes on host:
        # CUDA_ERROR_OUT_OF_MEMORY"): host memory
        return LineSignal("host_alloc_failed", {**fields, "memory_named": True})
    if accelerator and not (host and not _DEVICE_WORD.search(low)):
        return _device_oom(low, fields, numbers, ecosystem, _named(low, _DEVICES))
    # the node said in the statement's own sentence, not in advice after it (MySQL's "Out of
    # memory; check if mysqld or some other process uses all available memory")
    node = _NODE.search(low, 0, _clause_stop(low, said.end())) is not None
    if node and not _REFUSAL.search(low):
        return LineSignal("node_oom_kill", fields)
    named = host or node
    return LineSignal("host_alloc_failed", {**fields, "memory_named": named})


def _grown_then_killed(line: str, low: str) -> LineSignal | None:
    """Memory told growing in one run, then the run killed (:data:`_GREW_THEN_KILLED`), on a
    line that says no memory ran out in other words: a kill for memory, unless supposed."""
    if "kill" not in low or _quoted_code(line) or _TEST_PROGRESS.search(line):
        return None
    if _GREW_THEN_KILLED.search(low) is None or _HEDGE.search(low):
        return None
    return LineSignal("oom_kill", {"parts": True, **_numbers(line, low)})


def _node_memory(low: str, numbers: dict[str, int]) -> bool:
    """Whether the node's memory is named (:data:`_NODE`); "all available memory" with a limit's
    size on the line is the limit's memory, not the node's (authentik's "workers consistently
    consume all available memory (tested up to 16GB limit) and experience OOM kills (Exit Code
    137)")."""
    node = _NODE.search(low)
    return node is not None and not (node[0].startswith("all ") and "limit_bytes" in numbers)


def _device_oom(
    low: str, fields: dict[str, Any], numbers: dict[str, int], ecosystem: str | None,
    device: str | None,
) -> LineSignal:  # fmt: skip
    device = device or "an accelerator"
    fields = {**fields, "engine": ecosystem or device, "device": device}
    if _FRAGMENTATION.search(low):
        return LineSignal("gpu_oom", {**fields, "fragmentation": True})
    if _BUDGET_WORDS.search(low) or ("limit_bytes" in numbers and _BUDGET.search(low)):
        return LineSignal("gpu_budget", {**fields, "what": "the limit the message states"})
    return LineSignal("gpu_oom", fields)


CONTEXT_KINDS = frozenset(
    {"host_alloc_failed", "gpu_oom", "memory_low", "limit_noted", "memory_noted"}
)
"""Kinds whose lines around them may change what they are (``in_context``)."""
CONTEXT_BEFORE = 2048
CONTEXT_AFTER = 1024
"""Bytes read around such a line: the lines of the same message or traceback."""
_BEFORE_LINES = 12
_AFTER_LINES = 6
_HOST_CONTEXT = re.compile(
    r"\b(?:cpu|host memory|system memory|ram|defaultcpuallocator|device:cpu\S*|numpy|heap)\b"
)
_CAP_CONTEXT = re.compile(r"capped at|\blimit(?:ed)? (?:at|to|of)\b|\ballowed\b|\bbudget\b")
_KILL_ACTION = re.compile(
    r"sending sig\w+ to|\bkill(?:ing|ed)? (?:process|pid|task)\b|\bkilled process\b"
    r"|\bterminating process\b|\bstopping process with sig(?:kill|term)\b"
)


def _memory_named(lines: Any) -> str | None:
    """The first of ``lines`` that names an accelerator (that line), or "host" when the first
    that names any memory names the host's; None when none does."""
    for text in lines:
        low = text.lower()
        hosted = _HOST_CONTEXT.search(low) or _HOST.search(low)
        if _ACCELERATOR.search(low) and not (hosted and not _DEVICE_WORD.search(low)):
            return str(text)
        if hosted:
            return "host"
    return None


_FENCE = re.compile(r"^[\s>]*(?:```|~~~)", re.MULTILINE)


_FIELD = re.compile(r"^\s*(?!what\b)[\w.\"'-]+\s*[:=]\s")
"""A key and its value (``reason: OutOfmemory`` in a pod's YAML): data, read by the structured
parsers, not a message. ``what:`` is not a key: it labels a C++ exception's message (its
``what()``), as GLib prints an exception its signal handler caught (``what: std::bad_alloc``)."""


def in_fence(before: str) -> bool:
    """Whether the text just before a line leaves a Markdown fence open (an odd count)."""
    return len(_FENCE.findall(before)) % 2 == 1


_SOURCE_FENCE = re.compile(
    r"^[\s>]*(?:```|~~~)`*\s*(?:go|golang|python|py|javascript|js|typescript|ts|jsx|tsx|java"
    r"|kotlin|kt|scala|groovy|c|h|cpp|c\+\+|cc|cxx|hpp|objc|objective-c|cs|csharp|c#|fsharp|f#"
    r"|rust|rs|swift|ruby|rb|php|perl|pl|lua|r|julia|jl|dart|elixir|ex|erlang|erl|haskell|hs"
    r"|clojure|clj|ocaml|ml|zig|nim|d|vb|vbnet|matlab|sql|cuda|cu|proto|solidity|sol)\s*$",
    re.IGNORECASE,
)
"""A fence opened for a programming language's source (```go, ```python): its lines are code,
whatever they say (Woodpecker's ``stepState.ExitCode = 137`` in the Go it quotes); a log's
fence (``` alone, ```console, ```text, ```log, ```shell) holds output."""


_COMMENT = re.compile(r"(?:^|\s)(?:#|//|--|/\*)\s")
"""A comment in source, where a reproduction quotes the output it got (CuPy's ``# An error is
raised : cupy.cuda.memory.OutOfMemoryError: ...``, TiDB's ``-- ERROR 1105 (HY000): Out Of Memory
Quota!``)."""


def in_source(before: str, line: str) -> bool:
    """Whether ``line`` (after ``before``, the text just before it, bounded by its reader) is
    source code: inside a fence opened for a programming language, and not a comment that quotes
    what the code printed."""
    if "```" not in before and "~~~" not in before:
        return False
    if _COMMENT.search(line) or _PRINTED_EXCEPTION.match(line):
        return False
    if not in_fence(before):
        return False
    lines = before.splitlines()
    at = max(i for i, text in enumerate(lines) if _FENCE.match(text))
    if _SOURCE_FENCE.match(lines[at]) is None:
        return False
    if _NOT_A_STATEMENT.match(line):
        return False  # no statement's punctuation or keyword: what the program printed
    if any(_TRACEBACK_HEAD.match(text) for text in lines[at + 1 :]):
        return False  # a traceback pasted in a fence marked for its language: what was printed
    # An interactive session (Python's ``>>>``, IPython's ``In [1]:``): the lines without a prompt
    # are what the session printed ("MemoryError: std::bad_alloc" after ``>>> haar_like(...)``).
    return (
        not any(_PROMPT.match(text) for text in lines[at + 1 :]) or _PROMPT.match(line) is not None
    )


_NOT_A_STATEMENT = re.compile(
    r"^(?!\s*(?:import|from|package|using|include|return|raise|throw|if|else|for|while|def|class"
    r"|fn|func|let|var|val|const|pub|use|mod|static|public|private|protected|void|int|print\w*"
    r"|echo|assert|await|async|yield|@)\b)[^(){}\[\];=]*$"
)
"""A line in a fence marked for a language that holds none of a statement's punctuation (no
call, block, index, assignment or terminator) and starts with none of its keywords (OpenFold's
"Killed" after PyTorch's error under ```` ```python ````, cugraph's "MemoryError: std::bad_alloc:
out_of_memory: RMM failure at:/conda/...: Maximum pool size exceeded"): what the program
printed, pasted under its language's highlighting."""
_TRACEBACK_HEAD = re.compile(
    r"^\s*Traceback \(most recent call last\):\s*$"
    r"|^[^\"]{0,80}?(?<!\S)File \"[^\"]+\", line \d+, in [\w<>.]+\s*$"
)
"""The head a Python traceback is printed under, or one of its frames (``File "x.py", line 97, in
master_loop``, where the paste starts below the head). A fence opened for Python that holds one
(the reporter's ```` ``` python ```` around Graphite's render traceback ending in a bare
``MemoryError``, hummingbird's mpi4py frames ending in one) holds what the interpreter printed,
highlighted as Python, not source: source never holds the head or a frame as a line of its
own (behind a quote's or a program's lead, the frame is still one)."""


_PRINTED_EXCEPTION = re.compile(
    r"^\s*(?:caused by: )?[a-z_][\w$]*(?:\.[\w$]+)+\.[A-Z][\w$]*(?:exception|error)\b:? \S",
    re.IGNORECASE,
)
"""An exception's qualified name first on its line, then its message (Armeria's "    org.junit.
runners.model.TestTimedOutException: test timed out after 5 seconds" under ```` ```java ````):
no language's statement starts so, it is what a runtime printed, pasted in a fence highlighted as
its language (a ``raise``, ``throw`` or ``catch`` before the name stays source)."""
_PROMPT = re.compile(r"^\s*(?:>>>|\.\.\.|In \[\d+\]:)(?: |$)")
"""An interactive interpreter's prompt (Python's, IPython's): the line is what was typed."""
_EXAMPLE_INTRO = re.compile(
    r"\b(?:(?<!\blooks )(?<!\blooked )(?<!\bis )(?<!\bwas )something like|e\.g\.|such as"
    r"|would (?:be|read|look like))\b",
    re.IGNORECASE,
)
"""Words that introduce an example when the sentence ends with a colon. ("For instance:" and "for
example:" are not among them: before a pasted log they introduce one occurrence of a failure that
happened, as agda-unimath's "the typecheck workflow fails due to reaching its designated max heap
size. For instance:"; nor a message said to look "something like this:", GitAhead's user
describing the one got.)"""
_YOU_MAY_SEE = re.compile(
    r"\byou (?:might|may|will|could)(?: \w+)? (?:see|get|encounter|receive|hit"
    r"|notice|run into)\b",
    re.IGNORECASE,
)
"""A sentence telling the reader what they may come to see (Trigger.dev's docs: "Sometimes you
might see one of your runs fail with an "Out Of Memory" error.", then the message quoted): what
follows, quoted as a block (``>``), is the message as an example, not an occurrence. The
introducing line's last sentence only: Chocolatey's "you may run into an error. Upon inspecting
the ELMAH logs, you find this lovely gem:" introduces the log the author found; "as you can see"
shows, it does not suppose."""
_CHANGE_INTRO = re.compile(
    r"\b(?:message (?:is now|would be|will be|now reads)|instead of (?:only )?reporting|we now"
    r" (?:report|print|show|raise)|proposed (?:message|wording|text)|the new (?:error|message))\b",
    re.IGNORECASE,
)
"""Words that say a message is being changed or proposed: what follows shows it."""
_GUESSED_INTRO = re.compile(
    r"\b(?:may|might|could|possibl\w*|perhaps|probabl\w*|potential\w*|likely)\b"
    r"|\u53ef\u80fd|\u4e5f\u8bb8|\u6216\u8bb8",
    re.IGNORECASE,
)
"""The words of a guess in a list's intro (English's "may", "possible"; Chinese's 可能 "may",
也许 and 或许 "perhaps"): what the list gives are possibilities."""
_CHANGE_TREATS = re.compile(
    r"\b(?:this|the) (?:change|pr|pull request|commit|patch)\b[^.?!]{0,40}?"
    r"\b(?:avoid|fix|prevent|address|resolv|mitigat|work(?:s|ing)? around)\w*\b[^.?!]{0,40}?"
    r"\bthe following\b",
    re.IGNORECASE,
)
"""A change said to treat the error that follows (Stylelint's pull request: "This change aims to
avoid the following error that sometimes happens with the CI test coverage job.", then the
message in a fence): the message is what the change treats, shown. (A person's "How do I fix the
following error:" names no change: the error is theirs.)"""
_TREATED = re.compile(
    r"\b(?:fix(?:es|ed|ing)?|resolv(?:es|ed|ing)|address(?:es|ed|ing)|mitigat(?:es|ed|ing)"
    r"|explain(?:s|ed|ing)?|document(?:ed|ing)"
    r"|regression test for|tests? (?:for|that)|checks? (?:that|for)|(?:pytest\.)?raises"
    r"|assertraises|assert_raises|tothrow|to throw|should (?:raise|throw)"
    r"|would (?:\w+ )?(?:fail|crash|die)"
    r"|(?:allow|allows|enable|enables|support|supports) (?:\w+ ){0,2}?"
    r"(?:captur|catch|handl|detect|report)ing)\b"
    r"(?![-_])"
)
"""The words a change, a document or a test uses of an error, before the error's words: a fix
("This fixes the out of memory error when loading large files", "Release notes: fixed a crash on
out of memory", ABACUS's "This PR addresses frequent Out-of-Memory (OOM) errors"), an
explanation, a test that expects it (``pytest.raises(MemoryError)``, ``toThrow(RangeError: Array
buffer allocation failed)``), what used to happen ("Previously this would fail with 'Cannot
allocate memory'"), what a change lets a program catch (caikit's "Add subprocess exit code
handling for training to allow capturing OOM type failures"): the error is the subject, not an
event."""
_NONE_COUNTED = re.compile(
    r"\b(?:oom[ _-]?kill(?:ed|s)?|oomkilled|oom_kill|under_oom)[\"'`]?\s*[:=]?\s*[\"'`]?"
    r"(?:false|0)\b(?![.\d])|\bkill(?:ed)?[\"']?\s*[:=]\s*[\"']?(?:false|no)\b"
)
"""An OOM state counted none or false (docker's ``"OOMKilled": false``, cgroup v2's ``oom_kill 0``,
also quoted as code: "`oom_kill` 0"): a field of a healthy state, no event; or a limit's report
whose own field says it killed nothing (Erlang's max_heap_size report: "maximum heap size
reached, Max Heap Size: 8388608, Total Heap Size: 35478866, Kill: false, Error Logger: true": it
only logged)."""
_BLANK_OR_TICKS = re.compile(r"^[\s`~>+]*$")


def _an_example(before: str, line: str = "") -> bool:
    """Whether the line after ``before`` is an example of a message rather than an occurrence:
    inside a fenced ``diff`` (a document's change), or after a sentence that introduces an
    example ("I believe the error message is now:", "something like:", "we now report ...:") or
    a list of guesses ("the cause may be:", then "1. ..."), the nearest sentence before it or
    before its fence."""
    lines = before.splitlines()
    if in_fence(before):
        opener = max(i for i, text in enumerate(lines) if _FENCE.match(text))
        if re.match(r"^[\s>]*(?:```|~~~)`*\s*(?:diff|patch)\b", lines[opener]):
            return True
        lines = lines[:opener]
    sentences = [text for text in lines[-4:] if not _BLANK_OR_TICKS.match(text)]
    if not sentences:
        return False
    last = sentences[-1]
    told = re.split(r"[.!?]\s+(?=\S)", last.strip())[-1]  # the line's last sentence
    if line.lstrip().startswith(">") and _YOU_MAY_SEE.search(told):
        return True  # a message quoted as what the reader may see
    # the example's words in the colon's own clause (not "... templates such as `Email002.jsx`,
    # and crashes with:", react-email's user telling what it did before the error)
    intro = re.split(r"[,;]\s", last)[-1]
    listed = last.rstrip().endswith("\uff1a") or (
        last.rstrip().endswith(":") and line.lstrip()[:1].isdigit()
    )
    if listed and _GUESSED_INTRO.search(intro):
        # causes offered as a list, its intro hedged (E-Hentai-Downloader's maintainer: "...,
        # 原因有可能是" and a full-width colon, "the cause may be:", then "1. ... out of memory")
        return True
    return bool(_CHANGE_INTRO.search(last) or _CHANGE_TREATS.search(last)) or (
        last.rstrip().endswith(":") and bool(_EXAMPLE_INTRO.search(intro))
    )


_FELL_BACK_NEXT = re.compile(
    r"(?:\s*\n)*[^\n]{0,40}?(?:^|[\s|:\]-])(?:falling back|fell back|retrying|trying again)"
    r"\b(?! failed)[^\n]{0,80}$",
    re.IGNORECASE | re.MULTILINE,
)
"""The program's next line saying it goes on another way (trunk-recorder's "Failed to allocate
zero-copy buffer for transfer 0", then "trunk-recorder | Falling back to buffers in userspace"):
the refusal handled, as on its own line (:data:`_HANDLED`)."""


def in_context(
    found: LineSignal, line: str, before: str, after: str
) -> tuple[LineSignal, int, str]:
    """The signal of a line read with the lines around it (``before`` ends just before the
    line, ``after`` starts just after it): (signal, how many lines after this one it now
    stands, that line's text).

    - an allocation refused that names no memory, after lines that name an accelerator (the
      nearest line naming any memory decides: a JAX traceback, a ggml Metal context): a device's;
    - a device OOM whose next lines (the same message, up to a blank line) state a cap on the
      allocator ("capped at 14.000 GiB", "limit of"): that cap refused it, a budget; or the
      allocator's pool, reserved and in use, with room for the request: fragmentation;
    - a node's memory said to be low, with a kill within the next lines: the node killed;
    - a memory quota said to be exceeded, with a kill within the next lines (Heroku's R15 and
      its ``Stopping process with SIGKILL``): the quota enforced, a limit kill; else a warning;
    - a line that says memory ran out but reports no event, inside a fenced block (a log pasted
      in an issue): read as the program's report it is.
    """
    kind, fields = found.kind, found.fields
    if in_source(before, line):
        return LineSignal("memory_noted", {**fields, "source": True}), 0, line
    if kind in ("host_alloc_failed", "gpu_oom") and _an_example(before, line):
        return LineSignal("memory_noted", {**fields, "example": True}), 0, line
    if kind == "memory_noted":
        if not fields.get("unreported") or _FIELD.match(line) or not in_fence(before):
            return found, 0, line
        # Inside a fenced block (a pasted log): the program's own words, a report.
        reread = parse_oom_parts(line, reported=True)
        if reread is None or reread.kind == "memory_noted":
            return found, 0, line
        if reread.kind in CONTEXT_KINDS:
            return in_context(reread, line, before, after)
        return reread, 0, line
    if kind in ("host_alloc_failed", "gpu_oom") and _FELL_BACK_NEXT.match(after):
        handled = "gpu_oom_handled" if kind == "gpu_oom" else "oom_handled"
        return LineSignal(handled, {**fields, "detail": "retried"}), 0, line
    if kind == "host_alloc_failed" and _what_names_other_error(after):
        return LineSignal("memory_noted", {**fields, "other_error": True}), 0, line
    if kind == "host_alloc_failed" and fields.get("code_only"):
        # An error code on its own line, its system message on the next (Windows prints 1455,
        # then "The paging file is too small ..."): the message is the report.
        for delta, text in enumerate(after.splitlines()[:2], 1):
            if _MESSAGE_1455.search(text.lower()):
                return LineSignal(kind, {**fields, "memory_named": True}), delta, text
        return found, 0, line
    if kind == "host_alloc_failed" and not fields.get("memory_named"):
        # The nearest line before that names a memory decides; when none does, the message's
        # own next lines may (Paddle's "at [.../gpu_info.cc:89]", a traceback after its error).
        for lines in (reversed(before.splitlines()[-_BEFORE_LINES:]), after.splitlines()[:6]):
            named = _memory_named(lines)
            if named is None:
                continue
            if named == "host":
                break
            numbers = {k: v for k, v in fields.items() if k.endswith("_bytes")}
            low = named.lower()
            ecosystem = fields.get("ecosystem") or _named(low, _ECOSYSTEMS)
            signal = _device_oom(line.lower(), fields, numbers, ecosystem, _named(low, _DEVICES))
            signal.fields["device_from"] = cuts.head(named.strip(), 200)
            return signal, 0, line
        return found, 0, line
    following = after.splitlines()[:_AFTER_LINES]
    if kind == "gpu_oom":
        for delta, text in enumerate(following, 1):
            low = text.lower()
            if not low.strip():
                break
            if _CAP_CONTEXT.search(low) and (numbers := _numbers(text, low)):
                merged = {**fields, **numbers, "what": "the cap the message states"}
                merged["limit_bytes"] = numbers.get("limit_bytes", next(iter(numbers.values())))
                return LineSignal("gpu_budget", merged), delta, text
            numbers = _numbers(text, low) if "reserved" in low else {}
            if (
                "requested_bytes" in fields and "allocated_bytes" in numbers
                and "reserved_bytes" in numbers
                and numbers["reserved_bytes"] - numbers["allocated_bytes"]
                >= fields["requested_bytes"]
            ):  # fmt: skip
                # the pool's reserved but unallocated memory would have held the request (CUDA.jl's
                # "Memory pool usage: 960.548 MiB (2.688 GiB reserved)" two lines after "Out of GPU
                # memory trying to allocate 146.250 MiB"): fragmentation, in the allocator's words
                merged = {**fields, **numbers, "fragmentation": True}
                return LineSignal("gpu_oom", merged), delta, text
        return found, 0, line
    if kind in ("memory_low", "limit_noted"):
        killed = "node_oom_kill" if kind == "memory_low" else "limit_oom_kill"
        for text in following[:3]:
            if _KILL_ACTION.search(text.lower()):
                return LineSignal(killed, fields), 0, line
        return LineSignal("memory_noted", fields), 0, line
    return found, 0, line


def _what_names_other_error(after: str) -> bool:
    """Whether the exception's message on the next line (C++'s ``what():`` after "terminate
    called after throwing an instance of 'thrust::system::detail::bad_alloc'") names another
    accelerator error (``cudaErrorIllegalAddress``): the allocation exception carries a crash."""
    following = after.split("\n", 1)[0].lower()
    if "what():" not in following:
        return False
    said = _SAID.search(following)
    start = said.end() if said is not None else following.index("what():")
    return _OTHER_CODE.search(following, start) is not None


_ON_HOST = re.compile(
    r"\bon (?:the )?host\b(?! \w)|\b(?:pinned |page-locked )host memory\b|\w*_host_bfc\b"
    r"|\bcuda(?:host|mallochost)\w*|\bpinned memory\b"
)
"""An allocation said to be of the host's memory ("pinned host memory", "bytes on host:", XLA's
pinned host allocator ``xla_gpu_host_bfc``, CUDA's ``cudaHostAlloc`` and ``cudaMallocHost``)."""
_DEVICE_WORD = re.compile(
    r"\b(?:cuda\w*|gpu\w*|hip(?!e(?:_|\b))\w*|rocm\w*|xpu\w*|mps|(?<!bare-)(?<!bare )metal"
    r"|tpu\w*|hpu\w*|vulkan|vram|\w*_bfc"
    r"|device[ _:]?\d+|device memory|device buffer|on device|rmm|npu\w*|rtmalloc\w*|synhelper"
    r"|device_id\W?\d+|\w*opencl\w*|mem_object_allocation_failure)\b"
)
"""An accelerator named outright (``node``/``host`` words next to it do not make it the
host's: "GPU 0 on host x")."""


_ENDING = re.compile(
    "|".join(p.pattern for p in (_KILLED, _LIMIT_CROSSED, _QUOTA_CROSSED, _ENDED, _SOFT_LIMIT))
)
"""A kill, a limit crossed, an end: a supposition after it still hedges it (what supposes the
cause of a kill supposes the kill's reading)."""

_LOCKING = re.compile(
    r"\b(?:cannot|can't|could not|couldn't|unable to|failed to) (?:m?lock|pin)(?: down)?\b"
    r"(?! \w*(?:host|cuda|device|gpu))|\bmlock(?:all)?\b"
)
"""Memory refused to be locked in RAM (JACK's "Cannot lock down 107341338 byte memory area
(Cannot allocate memory)", ``mlock``): the ENOMEM of a limit on locked memory
(``RLIMIT_MEMLOCK``), which the program works on without, not memory running out. (Pinned
host memory for a device, ``cudaHostAlloc``, is a refusal: not read here.)"""
_DENIED = re.compile(
    r"(?:\b(?:not|never|no longer)|n't)\s+(?:\w+ )?(?:killed|oom[- ]?killed|evicted|terminated)\b"
    r"|\bwithout (?:\w+ )?(?:running into|hitting|getting|seeing|triggering|causing)\b"
    r"|\b(?:discard|skipp|ignor|exclud)\w* (?:the )?(?:device|gpu|card|platform)\b"
    r"|\boom\w*[\"'`)]*\s+(?:\w+ )?(?:never|does not|doesn't|did not|didn't)"
    r" (?:occur|happen|appear|show)"
    # running out denied by what the person watched (the NDK's user: "I was inspecting `top`
    # while building AOSP and I didn't see it run out of memory")
    r"|(?:\b(?:not|never)|n't)\s+(?:see|saw|seen|notice|observe)\w*\s+(?:it |them |the \w+ )?"
    r"(?:run|running|ran|go|going|get|getting) (?:out of|close to|near)\b"
)
"""A kill denied ("processes in containers are not killed when the configured memory limit is
reached"), an error avoided ("allowed me to build #665 without running into `FATAL ERROR: ...
JavaScript heap out of memory`"), a device passed over for its memory (darktable's "discarding
device 0 ... due to insufficient global memory (6069MB)": a choice made at start, nothing
allocated), a state said never to occur (Kubernetes' docs issue: 'The mentioned status
"OOMKilled" never occurs.'), running out denied by what the person watched ("I didn't see it
run out of memory"): what did not happen is no report of it."""
_KILLED_AFTER = re.compile(
    r"\b(?:after|once|since|because)\b[^,;.]{0,80}?\b(?:is|was|were|got|gets|been|being) killed\b"
)
"""A clause after a denied kill that states a kill of its own ("Selenium standalone container is
not killed after Java Selenium process is killed by host due to memory limit settings")."""


def _denied(low: str, said: re.Match[str]) -> bool:
    """Whether ``low`` denies the kill or the error it states (:data:`_DENIED`); a denial of one
    thing's kill does not deny the kill a later clause states of another."""
    denied = _DENIED.search(low)
    if denied is None:
        return False
    return _KILLED_AFTER.search(low, denied.end(), said.end()) is None


_AVOIDED = re.compile(
    r"\b(?:instead of|rather than) (?:[\w']+ ){0,2}(?:crash\w*|fail\w*|dying|abort\w*|erroring"
    r"|rais\w*|throw\w*)\b(?: (?:with|from|on|because of|due to))?(?: an?| the)?(?: [\w-]+)?"
    r" [`\"]?$"
)
"""An error avoided, said just before its words (Composer's "Instead of crashing with CUDA out
of memory, we dynamically scale the number of microbatches"): what did not happen. (After them,
it names another end: Emscripten's "... if you want malloc to return NULL (0) instead of this
abort".) Its subject may be named ("instead of the JVM raising a catchable `OutOfMemoryError`",
Tika's PR), the error quoted."""
_CONDITION = re.compile(
    r"\b(?:if|whenever|in case|in the case|unless)\b(?:[^.;:!?\"`'()\[\]]|(?<=\w)'(?=\w))*$"
    r"|\b(?:on|upon) (?:an? |the )?$"
)
"""A condition opened before the words in their clause (advice's "Increase the memory limit if
your pods get OOMKilled frequently"), or "on" just before them (Armeria's PR: "Added JVM flags
that drops heap dump on OOME"): supposed, not reported. (At the line's start, ``_HEDGE``
reads it; a quote or a bracket after it is what a report says; an apostrophe inside a word is
no quote: Kill Bill's "Whenever tomcat crashes (in case there's not enough ram for example)".)"""
_WHEN = re.compile(
    r"(?:^|[.!?]\s+)(?:(?!\b(?:i|we|i'm|we're|i've|we've)\b)[^.!?])*"
    r"\bwhen (?:(?:got|gets?|getting|it|they|the|an?|this|that|there)\b[^.;:!?,\"`'()\[\]]*)?$"
)
"""A ``when`` whose clause holds the words, or that they follow at once ("Devs get more clue
when OOME occurs during tests"), and is no person's, in a sentence no person tells
(Pipedream's feature request: "When the workflow throws Out of Memory error, there's no further
information", Lithops': "Cloud Function service kills the entire action when got out of
memory"): each time it happens, not once, as a condition is. Turborepo's "We are encountering
this when a task is OOM-killed" is the person's account; a comma ends the clause (Demucs' "When
running on long tracks, we are getting OOM exit code 137"), and a kill told after it makes the
``when`` its occasion ("when the container exceeds its memory limit the kernel OOM-kills it")."""
_LIMIT_RESULTED = re.compile(
    r"\b(?:resulted|results) in (?:an? |the )?(?:oom|out[ -]of[ -]memory)\b(?![ -]?(?:score|adj))"
    r"|\b(?:led|leads) to (?:an? |the )?(?:oom|out[ -]of[ -]memory)\b(?![ -]?(?:score|adj))"
)
"""An OOM told as what a stated limit resulted in (enroot's report: "We set systemd's
MemoryMax=3G, and this resulted in an OOM during enroot create"): the line gives the limit with
its size and the OOM as what happened under it, the limit's kill; a limit set with no result
told, or an OOM foretold ("will result in an OOM"), is not."""


def _handled_or_resulted(
    low: str, fields: dict[str, Any], accelerator: bool, ecosystem: str | None
) -> LineSignal | None:
    """An OOM handled (:data:`_HANDLED`, unless the retry gave up), or told as a stated limit's
    result (:data:`_LIMIT_RESULTED`, neither hedged nor foretold before it); None otherwise."""
    if _HANDLED.search(low) and not _GAVE_UP.search(low):
        kind = "gpu_oom_handled" if accelerator else "oom_handled"
        return LineSignal(kind, {**fields, "engine": ecosystem or "", "detail": "retried"})
    result = _LIMIT_RESULTED.search(low) if "limit_bytes" in fields else None
    if result is not None and not _HEDGE.search(low, 0, result.end()):
        return None if _foretold(low, result) else LineSignal("limit_oom_kill", fields)
    return None


_GREW_THEN_KILLED = re.compile(
    r"\b(?:memory|ram|usage|rss)\b(?: \w+){0,2} (?:keeps?|kept) (?:on )?"
    r"(?:increas|grow|ris|climb)ing\b[^.;!?]{0,40}\b(?:and|until|till|then)"
    r" (?:the |my |our |it |\w+ )?(?:\w+ )?"
    r"(?:gets?|got|is|was) (?:\w+ly )?(?:oom[- ]?)?killed\b"
    # or growing, as what a thing was doing until the kill (OR-Tools' user: "consistently
    # increasing memory usage until it was Killed (linux)")
    r"|\b(?:increas|grow|ris|climb)ing (?:memory|ram|rss)(?: usage| use| consumption)?\b"
    r"[^.;!?]{0,40}?\b(?:until|till)\b[^.;!?]{0,30}?"
    r"\b(?:gets?|got|is|was) (?:\w+ly )?(?:oom[- ]?)?killed\b"
    # or grown to a size, then the kill (Cornac's user: "Memory consumption starts at around
    # 500MB, then quickly grows to ~60GB until, at some point, the process is killed.")
    r"|\b(?:memory|ram|rss)(?: (?:usage|use|consumption))?\b[^.;!?]{0,40}?\b(?:grows|grew)"
    r" (?:up )?to ~?\d[\d.,]*\s?[kmgt]i?b\b[^.;!?]{0,30}?\b(?:until|till|then|and|before)\b"
    r"[^.;!?]{0,40}?(?<!\bmay )(?<!\bmight )(?<!\bwill )(?<!\bwould )(?<!\bcould )(?<!\bcan )"
    r"\b(?:gets?|got|is|was) (?:\w+ly )?(?:oom[- ]?)?killed\b"
    # or a use over a size, then the kill (open-discussions' "The task eventually consumes over
    # 2 GB memory and is killed.")
    r"|\b(?:consumes|consumed|uses|used|takes|took) (?:over|more than|above) ~?\d[\d.,]*\s?"
    r"[kmgt]i?b\b (?:of )?(?:memory|ram)\b (?:and|then|before)"
    r" (?:(?:gets?|got|is|was) )?(?:\w+ly )?(?:oom[- ]?)?killed\b"
)
"""Memory told growing in one run, then the run killed (the OME-Zarr resave's "the memory keeps
increasing and the job gets killed when it runs out of pod memory (96G)"): a ``when`` after
that story is the kill's occasion, once; not each time, as a service's rule is (Lithops' "kills
the entire action when got out of memory")."""
_FORETOLD = re.compile(
    r"\b(?:will|would|might|may|could|should)\s+(?!not\b|never\b|only\b|\d)"
    r"[^.;:!?`()\[\]]{0,60}$"
)
"""A modal verb governing the clause that holds the words, before them (faasd's PR: "Memory
limits now work and a function will be killed with OOM", Trigger.dev's docs: "Sometimes you
might see one of your runs fail with an "Out Of Memory" error", OpenFaaS' question: "The image
processing job will return memory not enough error."): what will, would or may happen, foretold
or supposed, not what happened. Not a negation ("could not allocate" is a refusal), not a date
("May 22 08:36:54 host kernel: ..."; a colon ends the clause in any case)."""
_HABITUAL = re.compile(
    r"^\W*when(?:ever)?\s+(?!i\b|we\b|i'm\b|we're\b|my\b|our\b)[^.;:!?,]*,\s*"
    r"(?!(?:i|we|i'm|we're|my|our)\b)[^.;:!?,]*\b(?:is|are|gets|get)\b[^.;:!?]*$"
)
"""What happens each time a condition holds, in the present (Scalingo's docs request: "When this
appear, the app is killed by the system because of OOM"): a sentence opened by ``when`` whose
main clause is in the present: how a platform behaves, not an end it reports. A person's own
``when`` ("When running on long tracks, we are getting OOM exit code 137") is their account of
a run, read elsewhere."""

_WISHED = re.compile(
    r"^\W*(?:please |it would be (?:nice|great|helpful) to )?(?:show|display|surface|expose"
    r"|indicate|highlight|identify|tell|name) (?:the|which|what|where|more|some)\b[^:]*$"
)
"""A feature asked for in the imperative, the words its object (Pipedream's request: "Show the
step that caused the Out of Memory error"): what a program should tell, not what it told."""

_REASONED = re.compile(r"(?:\u2248|~ ?\d)[^\u2192]*\u2192[^\u2192]*(?:\u2192[^\u2192]*)*$")
"""A chain of estimates that arrives at the words (Modal's risk analysis: "even 3-4 concurrent
search requests \u2248 200-400MB \u2192 exceeds 256MB \u2192 **OOM kill**"): a figure estimated
(``\u2248``, ``~``), then arrows to what it would lead to: a reckoning, not a report."""


def _foretold(low: str, said: re.Match[str]) -> bool:
    """Whether the words are foretold, supposed, told as a platform's habit, wished for or
    reckoned (:data:`_FORETOLD`, :data:`_HABITUAL`, :data:`_WISHED`, :data:`_REASONED`), in a
    line that would otherwise state an event (an allocation refused or a kill): a line that
    states none is left as it reads (Istio's "this would just be getting OOM'd repeatedly if i
    was to roll it out" names no event the reader takes)."""
    return bool(
        (
            _FORETOLD.search(low, max(0, said.start() - 70), said.start())
            or _HABITUAL.search(low, 0, said.start())
            or _WISHED.search(low, 0, said.start())
            or _REASONED.search(low, 0, said.start())
        )
        and (_ALLOCATING.search(low) or _KILLED.search(low) or _KILLER.search(low))
    )


_OTHER_ERROR = re.compile(
    r": (?:no such file or directory|no such file|permission denied|operation not permitted"
    r"|connection refused|file exists|is a directory|not a directory|invalid argument)\b"
)
"""An error of its own after the words (containerd's "notify OOM events error=open
.../memory.oom_control: no such file or directory"): the memory words name what was being done,
another errno says why it failed."""
_DISK_FULL = re.compile(r"\bno space left\b|\benospc\b|\bdisk (?:is )?full\b")
"""A disk that has no space left: what a resource said to be exhausted is, when it says so
(ghcup's user: "It ends with the message `resource exhausted (no space left on device)`")."""


def _other_error(low: str, said: re.Match[str]) -> bool:
    """Another errno after the memory words, unless it is joined to them by its colon alone; or
    a resource exhausted that is a disk's space (``_DISK_FULL``).

    A message whose memory words end right where an errno's text begins is one said the way
    ``perror`` says it, the program's own statement and then the errno its library held (the
    compiler's "virtual memory exhausted: Operation not permitted" on a build farm): the
    statement is complete and the errno adds nothing to it. Words between them (containerd's
    "notify OOM events error=open .../memory.oom_control: no such file or directory") make the
    memory words what was being done.
    """
    if said[0].startswith("resource") and _DISK_FULL.search(low) is not None:
        return True  # a disk's space run out, in gRPC's or Haskell's words for any resource
    other = _OTHER_ERROR.search(low, said.end())
    return other is not None and other.start() > said.end()


_OTHER_CODE = re.compile(
    r"\b(?:cuda|hip)[_ ]?error[_ ]?(?!(?:memory[_ ]?allocation|out[_ ]?of[_ ]?(?:device[_ ]?|host"
    r"[_ ]?)?memory|in|at|on|of|while|when|during|code|was|has|is|the|an?|and|or)\b)[a-z][a-z_]*\b"
)
"""An accelerator API's error code after the words that names another error (thrust's
"std::bad_alloc: cudaErrorIllegalAddress: an illegal memory access was encountered"): the
allocation exception carries the error the runtime met, here a crash, not memory used up.
(``cudaErrorMemoryAllocation`` and ``CUDA_ERROR_OUT_OF_MEMORY`` are memory's own codes.)"""

_RAISED = re.compile(r"\b[A-Z][A-Za-z0-9]*[a-z0-9](?:Exception|Error)\b:")
"""An exception class raised with the limit in its message (QuestDB's "CairoException: [-1]
global RSS memory limit exceeded [usage=..., RSS_MEM_LIMIT=..., size=64]"): the program refused
its own allocation and lives on to raise it; a kill is not raised in the process it ends."""

_OWN_ERROR = re.compile(
    r"\s*(?:error|fatal error|fatal): (?!.*\b(?:kill\w*|terminat\w*|oom)\b)|==\d+==\s*ERROR: "
)
_LIMIT_CODE = re.compile(r"\(\s*(?:[A-Z][A-Z0-9]*_)*MEMORY_LIMIT_EXCEEDED\s*\)")
"""A program's error code in capitals, in parentheses, for its own memory limit crossed
(ClickHouse's "... (MEMORY_LIMIT_EXCEEDED), Stack trace ...", after "Memory limit (total)
exceeded: would use 4.39 GiB (attempt to allocate chunk of 4361728 bytes)"): it refused the
allocation and lived to say so, as :data:`_OWN_ERROR`'s programs do."""
"""A program's own lower-case error prefix, as compilers and command-line tools write it (V's
"error: v3 compiler memory usage reached 2568 MiB RSS during compilation (limit: 2560 MiB)"), or a
sanitizer runtime's ``==PID== ERROR:`` (libFuzzer's "==58528== ERROR: libFuzzer: out-of-memory
(used: 2613Mb; limit: 2560Mb)"): the program stopped its own work at its limit and lived to say
so."""

_PANICKED = re.compile(r"(?<!kernel )\bpanic(?:ked|king)?\b|\bbacktrace\b")
"""A limit crossed that the program reports in its own panic, with its backtrace (Databend's
alloc-error hook: "memory usage 15.0 GB(15041424373) exceeds limit 15.0 GB(15032385536)
backtrace= panic.file=..."): the program's own memory tracker refused and it aborted; a process
killed for its limit writes no backtrace (the kernel's panic is not the program's)."""

_QUOTE = re.compile(r"`([^`]*)`|\"([^\"]*)\"|\*\*([^*]*)\*\*")
"""A span quoted in backticks, in double quotes or in Markdown's bold (a pasted message set off
in ``**...**``). Spans pair from the line's start, short ones too: the closing mark of a short
span opens none (Tika's PR: "The `tika` deployment ... both replicas are being OOMKilled
(`exitCode: 137`)" quotes no words between `tika` and `exitCode: 137`)."""
_QUOTED_MIN = 12
"""Characters a quoted span holds at least to be read as a quoted message."""


def _quote_holding(line: str, at: int) -> str | None:
    """The text of a quoted span of ``line`` (backticks, double quotes or bold, 12 characters and
    more) that holds offset ``at`` and that is not the whole line; None otherwise."""
    if "`" not in line and '"' not in line and "**" not in line:
        return None
    for match in _QUOTE.finditer(line):
        if match.start() < at < match.end() and len(match[0]) < len(line.strip()):
            text = next(group for group in match.groups() if group is not None)
            if len(text) < _QUOTED_MIN:
                return None
            text = text.strip()
            while len(text) > 2 and text[0] == text[-1] and text[0] in "`\"'":
                text = text[1:-1].strip()  # a quote quoted again: "` \"...\"`"
            return text
    return None


_HANDLED_CODE = re.compile(
    r"\b(?:(?:take[sn]?|taking|took) into account|account(?:s|ed|ing)? for|handl(?:e|es|ed|ing)"
    r"|add(?:s|ed|ing)?|catch(?:es|ing)?|check(?:s|ed|ing)? for)(?: the| an?)?[ \t]+[`'\"]?$"
)
"""A verb of code's handling right before an error's constant (intel/llvm's PR: "Additionally take
into account UR_RESULT_ERROR_OUT_OF_DEVICE_MEMORY error", "add UR_RESULT_ERROR_OUT_OF_DEVICE_MEMORY
value to testing"): the constant as a value a change handles, not a program's report of it."""


def handled_code(low: str, at: int) -> bool:
    """Whether the identifier that holds offset ``at`` of ``low`` is the object of a verb of
    code's handling (:data:`_HANDLED_CODE`)."""
    if at < 0:
        return False
    while at > 0 and (low[at - 1].isalnum() or low[at - 1] == "_"):
        at -= 1  # the identifier's start ("ur_result_" before "error_out_of_device_memory")
    return _HANDLED_CODE.search(low, max(0, at - 40), at) is not None


_RAISED_LOW = re.compile(r"[a-z0-9](?:exception|error)\b:")
"""``_RAISED`` on a lowered line: an exception class's name joined to its kind
(``resourceallocationexception:``), not a bare "error:"."""

_REFUSAL_KINDS = frozenset({"host_alloc_failed", "gpu_oom", "gpu_budget"})

_ASKED = re.compile(r"[ \t]*\?")
"""A question mark right after the words: the cause asked about, not stated (ColabFold's "Could
not predict NF006199. Not Enough GPU memory? INTERNAL: cublas error"); a report after it still
counts ("Not Enough GPU memory? RESOURCE_EXHAUSTED: Out of memory while trying to allocate
7866899248 bytes.")."""


def _past_questions(low: str, said: re.Match[str]) -> re.Match[str] | None:
    """``said``, or the words after the question it asks ("Not Enough GPU memory?
    RESOURCE_EXHAUSTED: Out of memory ..."); None when a question is all it says."""
    while (asked := _ASKED.match(low, said.end())) is not None:
        later = _SAID.search(low, asked.end())
        if later is None:
            return None
        said = later
    return said


def _reason_reading(line: str, low: str, said: re.Match[str]) -> LineSignal | None:
    """The reading of an end by the refusal given as its reason after a colon (``_ENDED_FOR``);
    None when it gives none."""
    ended_for = _ENDED_FOR.search(low)
    if ended_for is None or ended_for.end() > said.start():
        return None
    reason = parse_oom_parts(line[ended_for.end() :], reported=True)
    return reason if reason is not None and reason.kind in _REFUSAL_KINDS else None


_STREAM_LABEL = re.compile(r"\b(?:stderr|stdout)\s*:\s+")
"""A stream's label in a sentence (Av1an's "I got the error source pipe stderr:  Failed to
allocate memory for plane. Out of memory."): what follows is the program's output, pasted."""


_UNSEEN = re.compile(r"\b(?:not|never|no longer|if|whether)\b|n't\b")
"""Words before the label that make the paste what was not seen, or a case supposed."""


def _pasted_reading(
    line: str, low: str, said: re.Match[str], fields: dict[str, Any]
) -> LineSignal | None:
    """A program's words pasted into a person's sentence: after a stream's label
    (:func:`_stream_reading`), or after a person's introduction and a colon ("I get the
    following error: **cannot create image (OpenGL error: out of memory)**"): the quote is
    read; unquoted, the sentence is the person's. None: no paste."""
    if (streamed := _stream_reading(line, low, said)) is not None:
        return streamed
    if _INTRO.search(low) and ":" in low[: said.start()]:
        quoted = _quoted_reading(line, said, fields)
        return quoted if quoted is not None else LineSignal("memory_noted", fields)
    return None


def _stream_reading(line: str, low: str, said: re.Match[str]) -> LineSignal | None:
    """The reading of the program's output a stream's label pastes into a sentence, when the
    words that say memory ran out follow the label: a refused allocation is the program's,
    whatever the person's words around it say; anything else is left to the whole line."""
    labels = list(_STREAM_LABEL.finditer(low, 0, said.start()))
    label = labels[-1] if labels else None
    if (
        label is None or low[label.end() : said.start()].count(".") > 1
        or _UNSEEN.search(low, 0, label.start())
    ):  # fmt: skip
        return None
    message = parse_oom_parts(line[label.end() :], reported=True)
    return message if message is not None and message.kind in _REFUSAL_KINDS else None


def _quoted_reading(line: str, said: re.Match[str], fields: dict[str, Any]) -> LineSignal | None:
    """The reading of a person's sentence by the program's message it quotes, when the words
    say memory ran out inside the quote: a refused allocation quoted is read alone (vitest's
    "The test runner crashes with `FATAL ERROR: Reached heap limit Allocation failed -
    JavaScript heap out of memory` ... The worker process is killed": the message decides, not
    the kill the person's words add); a quote that reports nothing by itself is a mention. None:
    the line is read whole (a quoted kill, whose words around may say whose memory it was),
    unless the quote is a container's own status of running out (shinyapps.io's "causes a
    memory kill error `oom- container out of memory`"): the container's limit, whatever the words
    around."""
    quoted = _quote_holding(line, said.start())
    if quoted is None or _LOG_SHAPED.match(line) or _BY_THE_KERNEL.search(line.lower()):
        return None  # (a kill by the kernel: the quote is the reason it gave, read whole)
    message = parse_oom_parts(quoted)
    if message is None or message.kind == "memory_noted":
        return LineSignal("memory_noted", fields)
    if message.kind == "limit_oom_kill" and _CONTAINER_RAN_OUT.match(quoted):
        return message  # a container's status quoted ("`oom- container out of memory`"): its limit
    return message if message.kind in _REFUSAL_KINDS else None
