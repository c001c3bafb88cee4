"""A log line's message (``qualify.evidence.headers``): real lines from the corpus, as written
and as CI runners, docker, journald and terminals shape them."""

from __future__ import annotations

import pytest

from qualify.evidence.headers import body, message, messages, plain, structured, unquoted

COUCHDB = (
    "sh: 1: exec: /opt/couchdb/bin/../lib/couch-3.3.2/priv/couchspawnkillable: Cannot allocate "
    "memory"
)
"""A real journald line's message (tests/data/triage: CouchDB under docker, syslog-headed)."""


@pytest.mark.parametrize(
    ("line", "said"),
    [
        # journald: the time and the host go, the program that speaks stays
        (
            f"Feb 20 20:49:59 ippbx-0a.example.com docker[999209]: {COUCHDB}",
            f"docker[999209]: {COUCHDB}",
        ),
        # GitHub Actions' raw log, GitLab's stream mark, docker -t, Buildkite, a logging library
        (f"2024-04-14T21:49:58.7397481Z {COUCHDB}", COUCHDB),
        (f"2024-05-22T10:38:36.150398Z 01O+ {COUCHDB}", COUCHDB),
        (f"2025-02-03T04:05:06.123456789Z {COUCHDB}", COUCHDB),
        (f"[2025-02-03T04:05:06Z] {COUCHDB}", COUCHDB),
        # the container a line came from (kubectl logs --prefix, docker compose logs)
        (f"[pod/couchdb-7c5b8d65b7-x2x9q/couchdb] {COUCHDB}", COUCHDB),
        (f"couchdb-1  | {COUCHDB}", COUCHDB),
        (
            "2024-03-18 22:47:57,179 [nioEventLoopGroup-3-6] ERROR i.m.b.NewNettyMQTTHandler:93 - "
            "Unexpected exception",
            "[nioEventLoopGroup-3-6] ERROR i.m.b.NewNettyMQTTHandler:93 - Unexpected exception",
        ),
        # a terminal's colours, a Windows line end
        ("\x1b[31;1mMemoryError\x1b[0m", "MemoryError"),
        ("2024-04-14T21:49:58.7397481Z \x1b[36;1mpython -m pytest\x1b[0m", "python -m pytest"),
        ("MemoryError\r", "MemoryError"),
        # a header alone is an empty line (a paragraph's end stays one)
        ("2024-04-14T21:49:58.7397481Z ", ""),
        # kept: a kernel line (its header says who speaks), dmesg, a level, pytest's E lines
        (
            "Mar 17 22:36:50 node kernel: Memory cgroup out of memory: Killed process 4120",
            "Mar 17 22:36:50 node kernel: Memory cgroup out of memory: Killed process 4120",
        ),
        ("[  219.350000] Out of memory: Killed process 1",) * 2,
        ("WARNING: out of memory, retrying", "WARNING: out of memory, retrying"),
        ("E       MemoryError", "E       MemoryError"),
        # a date that starts a sentence is no header when nothing follows it on the line's terms
        ("2024 was the year", "2024 was the year"),
    ],
)  # fmt: skip
def test_a_lines_message(line: str, said: str) -> None:
    assert message(line) == said


@pytest.mark.parametrize(
    ("said", "lead_less"),
    [
        (f"docker[999209]: {COUCHDB}", COUCHDB),
        ("systemd-oomd[840]: Killed /user.slice/app.scope due to memory pressure", "Killed "
         "/user.slice/app.scope due to memory pressure"),
        ("ERROR [worker-1] MemoryError", "MemoryError"),
        ("- root - ERROR - Killed", "Killed"),
        ("[nioEventLoopGroup-3-6] ERROR i.m.b.NewNettyMQTTHandler:93 - Unexpected exception",
         "Unexpected exception"),
        ("E/AndroidRuntime( 4512): java.lang.OutOfMemoryError: Failed to allocate", "java.lang."
         "OutOfMemoryError: Failed to allocate"),
        # no lead: a warning's level stays (its words are no report), pytest's E, a bare line
        ("WARNING [w] MemoryError", None),
        ("INFO Killed", None),
        ("E       MemoryError", None),
        ("MemoryError", None),
        ("worker[12]: ", None),
    ],
)  # fmt: skip
def test_a_lines_lead(said: str, lead_less: str | None) -> None:
    assert body(said) == lead_less


@pytest.mark.parametrize(
    ("line", "unquoted_line"),
    [
        ("> MemoryError", "MemoryError"),
        ("> > Killed", "Killed"),
        (">MemoryError", "MemoryError"),
        # Python's prompt, pytest's failing source line: no quotes
        (">>> haar_like(image)", ">>> haar_like(image)"),
        (">       assert len(x) == 3", ">       assert len(x) == 3"),
    ],
)
def test_a_quote(line: str, unquoted_line: str) -> None:
    assert unquoted(line) == unquoted_line


def test_lines_keep_their_numbers() -> None:
    text = "2024-04-14T21:49:58.7397481Z a\n2024-04-14T21:49:58.7397481Z \n\x1b[1mb\x1b[0m"
    assert messages(text) == "a\n\nb"
    assert messages("ERROR [w] x\nERROR [w] y", leads=True) == "x\ny"
    assert plain("\x1b[0Kdone\r") == "done"


@pytest.mark.parametrize(
    ("line", "said"),
    [
        # real lines of the corpus: zap (etcd's client, Jaeger), Spark's JSON layout
        (
            '{"level":"warn","ts":"2020-05-26T06:52:20.826-0400","caller":"clientv3/retry_'
            'interceptor.go:61","msg":"retrying of unary invoker failed","attempt":0}',
            "WARNING: retrying of unary invoker failed",
        ),
        (
            '{"level":"info","ts":1527668119.7661645,"caller":"memory/factory.go:55","msg":"Memory'
            ' storage configuration","configuration":{"MaxTraces":100}}',
            "Memory storage configuration",
        ),
        (
            '{"level":"WARN","timestamp":"2023-03-30 23:38:41,633","message":"Not enough space to '
            'cache rdd_6_5592 in memory! (computed 24.6 MiB so far)"}',
            "WARNING: Not enough space to cache rdd_6_5592 in memory! (computed 24.6 MiB so far)",
        ),
        # docker's json-file driver: one line of output a record, its own timestamp inside
        (
            '{"log":"2024-04-14T21:49:58.7397481Z MemoryError\\n","stream":"stderr","time":"2024-'
            '04-14T21:49:58.74Z"}',
            "MemoryError",
        ),
        # a traceback in one record: the exception's own line
        (
            '{"msg":"Traceback (most recent call last):\\n  File \\"a.py\\"\\nMemoryError"}',
            "MemoryError",
        ),
        # no message field, not an object, not JSON: not a structured log's message
        ('{"reason":"OOMKilled","exitCode":137}', None),
        ('["MemoryError"]', None),
        ('{"msg": "unterminated', None),
        ('{"msg": "  "}', None),
    ],
)  # fmt: skip
def test_a_structured_lines_message(line: str, said: str | None) -> None:
    assert structured(line) == said
