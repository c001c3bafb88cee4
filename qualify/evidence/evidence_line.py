"""One line of evidence: where it was read and what it says."""

from __future__ import annotations

from typing import Any

from qualify import records
from qualify.records import frozen_record

MAX_EVIDENCE_TEXT = 400


@frozen_record
class Evidence:
    """One line that a decision rests on."""

    source: str
    """The file it was read from (as given on the command line or inside the run dir)."""
    line: int | None
    """1-based line number (None for a value read from a JSON document)."""
    text: str
    """The line, stripped and bounded to MAX_EVIDENCE_TEXT characters."""
    kind: str = ""
    """The parser's name for it (kernel_oom_kill, exit_code, cuda_oom, audit...)."""

    @classmethod
    def of(cls, source: str, line: int | None, text: str, kind: str = "") -> Evidence:
        """Evidence with the text stripped and bounded."""
        text = text.strip()
        if len(text) > MAX_EVIDENCE_TEXT:
            text = text[: MAX_EVIDENCE_TEXT - 3] + "..."
        return cls(source, line, text, kind)

    def cite(self) -> str:
        """ "file:12: the line" """
        where = f"{self.source}:{self.line}" if self.line is not None else self.source
        return f"{where}: {self.text}"

    def to_dict(self) -> dict[str, Any]:
        """JSON form."""
        return records.asdict(self)


@frozen_record
class LineSignal:
    """What one line says: a kind and its parsed fields (the kinds are listed in
    ``qualify.evidence.lines``)."""

    kind: str
    fields: dict[str, Any] = records.field(default_factory=dict)
