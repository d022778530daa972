"""The tuning policy: measurements and targets in, cleaner settings with reasons out.

Pure (no I/O) so every rule is unit-tested. The model: a restore replays the cleaned part of the
log (about one record per live key, plus tombstones still retained) and everything not cleaned
yet: the active segment, which the cleaner never touches, and the dirty part below
``min.cleanable.dirty.ratio``. The waste the targets allow is split between those two.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from boardstream.errors import InvalidOptionError

MS_PER_MINUTE = 60_000
MS_PER_HOUR = 60 * MS_PER_MINUTE
MS_PER_DAY = 24 * MS_PER_HOUR
MIB = 1024 * 1024

SETTINGS = (
    "segment.bytes",
    "segment.ms",
    "min.cleanable.dirty.ratio",
    "min.compaction.lag.ms",
    "max.compaction.lag.ms",
    "delete.retention.ms",
)


@dataclass(frozen=True)
class Targets:
    """What the operator asks for."""

    max_replay_waste: float = 0.10  # share of replayed records that are not live keys
    update_rate: float | None = None  # records/s written to the topic; None: as measured
    restore_rate: float = 50_000.0  # records/s a restore replays
    restore_budget_s: float = 300.0
    max_consumer_downtime_ms: int = MS_PER_DAY  # tombstones must outlive it
    reconciliation_interval_ms: int = 15 * MS_PER_MINUTE
    reconciled: bool = False  # a topic reconciliation reads: nothing compacted before it is

    def __post_init__(self) -> None:
        """Refuse the first target that makes no sense, before anything is read or changed."""
        if not 0 < self.max_replay_waste < 1:
            raise _invalid(f"max replay waste must be in (0, 1), got {self.max_replay_waste}")
        for name in ("restore_rate", "restore_budget_s"):
            if getattr(self, name) <= 0:
                raise _invalid(f"{name.replace('_', ' ')} must be positive")
        if self.update_rate is not None and self.update_rate <= 0:
            raise _invalid(f"update rate must be positive, got {self.update_rate}")
        for name in ("max_consumer_downtime_ms", "reconciliation_interval_ms"):
            if getattr(self, name) < 0:
                raise _invalid(f"{name.replace('_', ' ')} must not be negative")


def _invalid(problem: str) -> InvalidOptionError:
    return InvalidOptionError(f"invalid target: {problem}")


@dataclass(frozen=True)
class Guardrails:
    """Floors and ceilings no recommendation crosses, whatever the measurements say."""

    limits: dict[str, tuple[float, float]] = field(
        default_factory=lambda: {
            # Kafka 4 refuses segments under 1 MiB; tiny segments cost file handles.
            "segment.bytes": (MIB, 1024 * MIB),
            # Kafka 5 will refuse under a minute; a week is Kafka's default.
            "segment.ms": (MS_PER_MINUTE, 7 * MS_PER_DAY),
            "min.cleanable.dirty.ratio": (0.01, 0.9),
            "min.compaction.lag.ms": (0, 7 * MS_PER_DAY),
            "max.compaction.lag.ms": (MS_PER_MINUTE, 30 * MS_PER_DAY),
            "delete.retention.ms": (MS_PER_HOUR, 90 * MS_PER_DAY),
        }
    )

    def clamp(self, setting: str, value: float) -> tuple[float, str]:
        """``value`` within the limits, and a note when a limit decided it."""
        low, high = self.limits[setting]
        if value < low:
            return low, f" (raised to the floor {_show(setting, low)})"
        if value > high:
            return high, f" (lowered to the ceiling {_show(setting, high)})"
        return value, ""


@dataclass(frozen=True)
class TopicShape:
    """What the measurement says about one topic, summed over partitions."""

    topic: str
    partitions: int
    records: int
    live_keys: int
    tombstones: int
    bytes: int
    observed_rate: float | None  # records/s between the oldest and newest record, if known


@dataclass(frozen=True)
class Recommendation:
    setting: str
    value: str
    reason: str


def recommend(
    shape: TopicShape, targets: Targets, guardrails: Guardrails | None = None
) -> list[Recommendation]:
    """One recommendation per setting in :data:`SETTINGS`, each with its reason."""
    rails = guardrails or Guardrails()
    keys = max(shape.live_keys, 1)
    avg_bytes = shape.bytes / shape.records if shape.records else 1024.0
    rate = targets.update_rate or shape.observed_rate or 1.0
    rate_source = "expected" if targets.update_rate else "measured"

    # Extra records a restore may replay: bounded by the waste target and the time budget.
    by_waste = keys * targets.max_replay_waste / (1 - targets.max_replay_waste)
    by_budget = targets.restore_rate * targets.restore_budget_s - keys
    extra = max(min(by_waste, by_budget), 1.0)
    budget_note = (
        f"; the restore budget ({targets.restore_budget_s:g} s at {targets.restore_rate:,.0f}"
        " records/s) binds before the waste target"
        if by_budget < by_waste
        else ""
    )
    per_partition = extra / 2 / max(shape.partitions, 1)  # half active segment, half dirty

    out: list[Recommendation] = []

    def add(setting: str, wanted: float, why: str, integral: bool = True) -> float:
        value, note = rails.clamp(setting, wanted)
        value = round(value) if integral else round(value, 3)
        out.append(Recommendation(setting, str(value), why + note))
        return value

    add(
        "segment.bytes",
        per_partition * avg_bytes,
        f"an active segment (never cleaned) holds about {per_partition:,.0f} records of"
        f" {avg_bytes:,.0f} B per partition: half the {extra:,.0f} extra records allowed"
        + budget_note,
    )
    segment_ms = add(
        "segment.ms",
        per_partition * shape.partitions / rate * 1000,
        f"at {rate:,.1f} records/s ({rate_source}) the active segments fill that share in"
        " this time; rolling then hands them to the cleaner",
    )
    add(
        "min.cleanable.dirty.ratio",
        (extra / 2) / (keys + extra / 2),
        f"clean once the dirty records reach half of the allowed extra ({extra / 2:,.0f}) over"
        f" {keys:,} live keys",
        integral=False,
    )
    lag_floor = targets.reconciliation_interval_ms if targets.reconciled else 0
    min_lag = add(
        "min.compaction.lag.ms",
        lag_floor,
        "reconciliation reads this topic: keep every version until it has been reconciled"
        if targets.reconciled
        else "nothing needs old versions kept once a newer one exists",
    )
    add(
        "max.compaction.lag.ms",
        min_lag + 2 * segment_ms,
        "a stale version is cleaned within this time even when too few updates arrive to pass"
        " the dirty ratio (it also rolls the active segment)",
    )
    downtime = targets.max_consumer_downtime_ms
    retention, note = rails.clamp("delete.retention.ms", downtime)
    retention = max(retention, downtime)  # never shorter than the downtime it is set for
    out.append(
        Recommendation(
            "delete.retention.ms",
            str(round(retention)),
            f"tombstones outlive the longest consumer downtime"
            f" ({_show('delete.retention.ms', downtime)}), so a consumer that returns still"
            " sees the deletes" + (note if retention != downtime else ""),
        )
    )
    return out


def _show(setting: str, value: float) -> str:
    if setting.endswith(".ms"):
        for unit, size in (("d", MS_PER_DAY), ("h", MS_PER_HOUR), ("min", MS_PER_MINUTE)):
            if value >= size:
                return f"{value / size:g} {unit}"
        return f"{value:g} ms"
    if setting.endswith(".bytes"):
        return f"{value / MIB:g} MiB"
    return f"{value:g}"
