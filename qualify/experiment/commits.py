"""The first commit at which a family stops passing under a cap, found by bisection over real
runs of each commit.

The history between ``--good`` and ``--bad`` is taken in order (``git rev-list --reverse
--ancestry-path``). Both ends are run first: the search needs a good commit that is good and a
bad one that is bad, and says so when either is not. Each probe then halves the range between
the last good and the first bad commit. A commit that cannot be run (its family missing or
broken, qualify's own ERROR) is skipped, as ``git bisect skip`` does: the next probe is the
nearest commit to the middle that has not been skipped; when only skipped commits are left
between the two, the answer is the range they span.

A probe is ``repeat`` runs of its commit; it is bad when any of them is bad (a flaky boundary
shows as k of n in its row, and the commit is flagged).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from qualify.experiment.repetition import Repetition
from qualify.records import frozen_record


@frozen_record
class Commit:
    """One commit of the range: its full id and subject line."""

    sha: str
    subject: str

    @property
    def short(self) -> str:
        """Its abbreviated id."""
        return self.sha[:12]


@frozen_record
class CommitProbe:
    """The runs of one commit and what they make it."""

    commit: Commit
    runs: tuple[Repetition, ...]
    run_bad: tuple[bool, ...]
    """Whether each run was bad."""
    bad: bool | None
    """True or False; None when the commit was skipped."""
    why: str
    """Why it is bad or good (the verdicts, or the phase peak against the bound), or skipped."""

    @property
    def flaky(self) -> bool:
        """Bad in some runs and good in others."""
        return self.bad is True and not all(self.run_bad)

    def to_dict(self) -> dict[str, Any]:
        """The JSON form."""
        return {
            "commit": self.commit.sha,
            "subject": self.commit.subject,
            "bad": self.bad,
            "flaky": self.flaky,
            "why": self.why,
            "runs": [run.to_dict() for run in self.runs],
        }


@frozen_record
class CommitSearch:
    """The probes made, in the order made, and what they show."""

    commits: tuple[Commit, ...]
    probes: tuple[CommitProbe, ...]
    first_bad: Commit | None
    last_good: Commit | None
    suspects: tuple[Commit, ...]
    """The commits the answer lies among: one when found; the skipped ones and the first bad
    after them when skips hid the boundary."""
    stopped: str | None
    """Why no boundary was found (an end that is not what it was said to be)."""

    def to_dict(self) -> dict[str, Any]:
        """The JSON form."""
        return {
            "commits": [commit.sha for commit in self.commits],
            "first_bad": self.first_bad.sha if self.first_bad else None,
            "last_good": self.last_good.sha if self.last_good else None,
            "suspects": [commit.sha for commit in self.suspects],
            "stopped": self.stopped,
            "probes": [probe.to_dict() for probe in self.probes],
        }


Probe = Callable[[Commit], CommitProbe]


def search_commits(commits: Sequence[Commit], probe: Probe) -> CommitSearch:
    """Bisect ``commits`` (oldest first: the good end first, the bad end last) with ``probe``."""
    made: list[CommitProbe] = []
    ends = tuple(commits)

    def done(
        first_bad: int | None, last_good: int | None, suspects: Sequence[int], stopped: str | None
    ) -> CommitSearch:
        return CommitSearch(
            ends,
            tuple(made),
            ends[first_bad] if first_bad is not None else None,
            ends[last_good] if last_good is not None else None,
            tuple(ends[i] for i in suspects),
            stopped,
        )

    good_end = probe(ends[0])
    made.append(good_end)
    if good_end.bad is not False:
        what = "could not be run" if good_end.bad is None else "is bad"
        return done(None, None, (), f"the good end {ends[0].short} {what}: {good_end.why}")
    bad_end = probe(ends[-1])
    made.append(bad_end)
    if bad_end.bad is not True:
        what = "could not be run" if bad_end.bad is None else "is good"
        return done(None, 0, (), f"the bad end {ends[-1].short} {what}: {bad_end.why}")
    good, bad = 0, len(ends) - 1
    skipped: set[int] = set()
    while bad - good > 1:
        inner = [i for i in range(good + 1, bad) if i not in skipped]
        if not inner:
            break
        middle = (good + bad) / 2
        at = min(inner, key=lambda i: (abs(i - middle), i))
        found = probe(ends[at])
        made.append(found)
        if found.bad is None:
            skipped.add(at)
        elif found.bad:
            bad = at
        else:
            good = at
    suspects = [i for i in range(good + 1, bad) if i in skipped] + [bad]
    return done(bad if len(suspects) == 1 else None, good, suspects, None)
