"""Session and tumbling-window counts in event time, in plain Python (the Spark processor only
loads, applies and saves them), with Kafka Streams' rules:

- stream time is the largest event time seen so far, per source partition (see :class:`Clock`);
  it only moves forward;
- a tumbling window ``[start, start + size)`` closes when stream time reaches its end + grace;
  a session (events no more than ``gap`` apart) closes when stream time reaches its last event
  + gap + grace; an event that would land in a closed window or session is too late: it is
  counted and returned, never silently dropped;
- state for a window or session is deleted once stream time passes its retention.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from boardstream.errors import InvalidOptionError

FINAL, UPDATES = "final", "updates"


@dataclass
class Result:
    group: str
    start_ms: int
    end_ms: int
    count: int
    final: bool

    def to_json(self, kind: str) -> dict[str, Any]:
        names = (
            ("window_start", "window_end") if kind == "window" else ("session_start", "session_end")
        )
        return {
            "group": self.group,
            names[0]: self.start_ms,
            names[1]: self.end_ms,
            "count": self.count,
            "final": self.final,
        }


@dataclass(frozen=True)
class Late:
    group: str
    event_ms: int
    partition: int
    offset: int
    stream_ms: int


@dataclass
class Clock:
    """Stream time per source partition (the largest event time seen in it), as Kafka Streams
    keeps one per task: a record is too late when its window or session had closed by its own
    partition's clock, so a backlog read one partition after another does not make the other
    partitions' older records late. Windows and sessions close, and state expires, on the job's
    stream time: the smallest partition clock, never moving back (a partition that receives
    nothing more holds it back, as an idle input holds back a Flink watermark)."""

    partitions: dict[int, int] = field(default_factory=dict)
    stream_ms: int = -(2**62)
    late: int = 0

    def observe(self, partition: int, event_ms: int) -> int:
        """The partition's clock after ``event_ms``."""
        self.partitions[partition] = max(self.partitions.get(partition, event_ms), event_ms)
        return self.partitions[partition]

    def advance(self) -> None:
        self.stream_ms = max(self.stream_ms, min(self.partitions.values(), default=self.stream_ms))

    def row(self) -> tuple[list[int], list[int], int, int]:
        return list(self.partitions), list(self.partitions.values()), self.stream_ms, self.late

    @classmethod
    def from_row(cls, row: tuple) -> Clock:
        partitions, clocks, stream_ms, late = row
        return cls(dict(zip(partitions, clocks, strict=True)), stream_ms, late)


def _require_spans(span: str, span_ms: int, grace_ms: int, retention_ms: int) -> None:
    """A window's size or a session's gap (``span``) is positive, grace not negative, and the
    retention covers both: state must outlive the lateness it allows."""
    if span_ms <= 0:
        raise InvalidOptionError(f"{span} must be > 0, got {span_ms} ms", span)
    if grace_ms < 0:
        raise InvalidOptionError(f"grace must be >= 0, got {grace_ms} ms", "grace")
    if retention_ms < span_ms + grace_ms:
        raise InvalidOptionError(
            f"retention ({retention_ms} ms) must be at least {span} + grace "
            f"({span_ms + grace_ms} ms): state must outlive the lateness it allows",
            "retention",
            span,
            "grace",
        )


@dataclass(frozen=True)
class WindowSpec:
    """Tumbling windows of ``size_ms``, open to records ``grace_ms`` late, kept in state for
    ``retention_ms``; ``emit`` final counts once closed, or every update."""

    size_ms: int
    grace_ms: int
    retention_ms: int
    emit: str = FINAL

    def __post_init__(self) -> None:
        _require_spans("size", self.size_ms, self.grace_ms, self.retention_ms)
        if self.emit not in (FINAL, UPDATES):
            raise InvalidOptionError(
                f"emit must be {FINAL} or {UPDATES}, got {self.emit!r}", "emit"
            )


@dataclass(frozen=True)
class SessionSpec:
    """Sessions of activity ended by ``gap_ms`` without a record, open to records ``grace_ms``
    late, kept in state for ``retention_ms``."""

    gap_ms: int
    grace_ms: int
    retention_ms: int

    def __post_init__(self) -> None:
        _require_spans("gap", self.gap_ms, self.grace_ms, self.retention_ms)


Spec = TypeVar("Spec", WindowSpec, SessionSpec)


@dataclass
class _Counts(Generic[Spec]):
    """What windows and sessions share: their spec, the stream's clock, and one batch's steps:
    each record counted unless too late for its window or session (``_count`` says which),
    then the clock advanced and what closed (or changed) emitted (``_emit``)."""

    spec: Spec
    clock: Clock = field(default_factory=Clock)

    def apply(self, rows: list[tuple[str, int, int, int]]) -> tuple[list[Result], list[Late]]:
        """``rows``: (group, event_ms, partition, offset) in arrival order."""
        late: list[Late] = []
        for group, event_ms, partition, offset in rows:
            own = self.clock.observe(partition, event_ms)
            if not self._count(group, event_ms, own):
                late.append(Late(group, event_ms, partition, offset, own))
        self.clock.late += len(late)
        self.clock.advance()
        return self._emit(), late

    def _count(self, group: str, event_ms: int, own_ms: int) -> bool:
        raise NotImplementedError

    def _emit(self) -> list[Result]:
        raise NotImplementedError


@dataclass
class Windows(_Counts[WindowSpec]):
    """Tumbling windows: (group, start) → [count, closed]."""

    windows: dict[tuple[str, int], list[Any]] = field(default_factory=dict)

    COLUMNS = (
        ("group", "string"),
        ("start_ms", "bigint"),
        ("count", "bigint"),
        ("closed", "boolean"),
    )

    # windows counted into since the last emit (UPDATES emits each once per batch)
    _changed: set[tuple[str, int]] = field(default_factory=set, init=False, repr=False)

    def _count(self, group: str, event_ms: int, own_ms: int) -> bool:
        size, grace = self.spec.size_ms, self.spec.grace_ms
        start = event_ms - event_ms % size
        emitted = self.windows.get((group, start), [0, False])[1]
        expired = start + self.spec.retention_ms <= self.clock.stream_ms
        if emitted or expired or start + size + grace <= own_ms:
            return False
        self.windows.setdefault((group, start), [0, False])[0] += 1
        self._changed.add((group, start))
        return True

    def _emit(self) -> list[Result]:
        size, grace = self.spec.size_ms, self.spec.grace_ms
        out = []
        for (group, start), window in sorted(self.windows.items()):
            closes = start + size + grace <= self.clock.stream_ms and not window[1]
            if closes:
                window[1] = True
            if closes and self.spec.emit == FINAL:
                out.append(Result(group, start, start + size, window[0], True))
            elif (group, start) in self._changed and self.spec.emit == UPDATES:
                out.append(Result(group, start, start + size, window[0], closes))
        self._changed.clear()
        self.windows = {
            key: w
            for key, w in self.windows.items()
            if key[1] + self.spec.retention_ms > self.clock.stream_ms
        }
        return out

    def rows(self) -> list[tuple]:
        return [(g, s, w[0], w[1]) for (g, s), w in self.windows.items()]

    def load(self, rows: list[tuple]) -> None:
        self.windows = {(g, s): [c, closed] for g, s, c, closed in rows}


@dataclass
class Sessions(_Counts[SessionSpec]):
    """Per group, its sessions: [start, end, count, closed]."""

    sessions: dict[str, list[list[Any]]] = field(default_factory=dict)

    COLUMNS = (
        ("group", "string"),
        ("start_ms", "bigint"),
        ("end_ms", "bigint"),
        ("count", "bigint"),
        ("closed", "boolean"),
    )

    def _count(self, group: str, event_ms: int, own_ms: int) -> bool:
        gap, grace = self.spec.gap_ms, self.spec.grace_ms
        sessions = self.sessions.setdefault(group, [])
        touching = [s for s in sessions if s[0] - gap <= event_ms <= s[1] + gap]
        start = min([event_ms, *(s[0] for s in touching)])
        end = max([event_ms, *(s[1] for s in touching)])
        # Closed by the clock, flagged or not yet: the same verdict however batches fall.
        closed = any(s[3] or s[1] + gap + grace <= own_ms for s in touching)
        expired = end + self.spec.retention_ms <= self.clock.stream_ms
        if closed or expired or end + gap + grace <= own_ms:
            return False
        count = 1 + sum(s[2] for s in touching)
        sessions[:] = [s for s in sessions if s not in touching] + [[start, end, count, False]]
        return True

    def _emit(self) -> list[Result]:
        gap, grace = self.spec.gap_ms, self.spec.grace_ms
        out = []
        for group, sessions in sorted(self.sessions.items()):
            for session in sorted(sessions):
                if not session[3] and session[1] + gap + grace <= self.clock.stream_ms:
                    session[3] = True
                    out.append(Result(group, session[0], session[1], session[2], True))
            sessions[:] = [
                s for s in sessions if s[1] + self.spec.retention_ms > self.clock.stream_ms
            ]
        self.sessions = {g: s for g, s in self.sessions.items() if s}
        return out

    def rows(self) -> list[tuple]:
        return [(g, *s) for g, sessions in self.sessions.items() for s in sessions]

    def load(self, rows: list[tuple]) -> None:
        self.sessions = {}
        for group, start, end, count, closed in rows:
            self.sessions.setdefault(group, []).append([start, end, count, closed])
