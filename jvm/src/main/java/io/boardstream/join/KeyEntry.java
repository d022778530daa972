package io.boardstream.join;

import io.boardstream.join.Records.Input;
import io.boardstream.join.Records.Version;
import io.boardstream.join.Records.Waiting;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;

/**
 * What the join holds for one table key, and the join's semantics on it: the same rules as
 * {@code boardstream.joins.member_table.MemberTable} (a property test holds the two to identical
 * outputs), for the one key a state key names.
 *
 * <p>A stream record whose row is unknown waits; it is joined when the row arrives, or leaves
 * as unmatched once it has waited the unmatched timeout (missing, or deleted), or when too many
 * wait for one key (overflow). Nothing is dropped. Latest mode joins the row current when the
 * record is processed; as-of mode the version valid at the record's own event time.
 */
final class KeyEntry {
  final Object key;
  List<Version> versions = new ArrayList<>(); // oldest first; at most one in latest mode
  Long deletedAtMs; // Kafka time of the tombstone, if the row's last record was one
  List<Waiting> waiting = new ArrayList<>(); // oldest first
  // What apply or expire changed: the row's versions and deletion, the records waiting. A
  // batch whose stream records all find their row changes nothing and writes nothing back; one
  // that changes a row leaves the waiting records' state as it was, and the other way round.
  boolean rowChanged;
  boolean waitingChanged;

  KeyEntry(Object key) {
    this.key = key;
  }

  /** Records in the order the join applies them: Kafka time, tables first, then offset. */
  static final Comparator<Input> ORDER =
      Comparator.comparingLong(Input::timestampMs)
          .thenComparingInt(Input::tablesFirst)
          .thenComparingLong(Input::offset);

  /**
   * Apply this key's records (in {@link #ORDER}); joined and overflowing records go to {@code
   * out}. Returns whether a record was left waiting (it needs a timer at now + timeout).
   */
  boolean apply(List<Input> rows, long nowMs, JoinOptions options, Outputs out) {
    boolean waited = false;
    Layout layout = out.layout;
    for (Input row : rows) {
      if (row.isStream()) {
        Waiting record =
            new Waiting(row.fields(), row.partition(), row.offset(), row.timestampMs(), nowMs);
        Version version = versionFor(layout.eventMs(record), options);
        if (version == null) {
          waiting.add(record);
          waited = true;
          waitingChanged = true;
        } else {
          out.joined(key, record, version);
        }
      } else {
        applyRow(row, options);
        release(options, out);
        rowChanged = true;
      }
    }
    if (waited) {
      int excess = waiting.size() - options.maxWaitingPerKey();
      if (excess > 0) {
        for (Waiting record : waiting.subList(0, excess)) {
          out.unmatched(key, record, layout.overflow);
        }
        waiting = new ArrayList<>(waiting.subList(excess, waiting.size()));
      }
    }
    return waited;
  }

  /** Records that have waited the unmatched timeout or more leave as unmatched. */
  void expire(long nowMs, JoinOptions options, Outputs out) {
    long cutoff = nowMs - options.unmatchedTimeoutMs();
    if (waiting.isEmpty() || waiting.get(0).arrivedMs() > cutoff) {
      return;
    }
    String reason = deletedAtMs != null ? out.layout.deleted : out.layout.missing;
    waitingChanged = true;
    List<Waiting> keep = new ArrayList<>();
    for (Waiting record : waiting) {
      if (record.arrivedMs() <= cutoff) {
        out.unmatched(key, record, reason);
      } else {
        keep.add(record);
      }
    }
    waiting = keep;
  }

  /** Whether apply or expire changed anything to write back. */
  boolean changed() {
    return rowChanged || waitingChanged;
  }

  /**
   * Whether the entry can go: it holds nothing, or its row was deleted longer ago than the
   * retention and nothing waits. State stays bounded by the live rows, the records waiting, and
   * recent deletions.
   */
  boolean disposable(long nowMs, JoinOptions options) {
    if (!waiting.isEmpty()) {
      return false;
    }
    long horizon = nowMs - options.deletedRetentionMs();
    return deletedAtMs == null ? versions.isEmpty() : deletedAtMs < horizon;
  }

  private void applyRow(Input row, JoinOptions options) {
    boolean deleted = row.isTombstone();
    Version version =
        new Version(row.fields(), row.eventMs(), row.partition(), row.offset(), deleted);
    deletedAtMs = deleted ? row.timestampMs() : null;
    if (!options.asOf()) {
      versions = deleted ? new ArrayList<>() : new ArrayList<>(List.of(version));
      return;
    }
    List<Version> merged = new ArrayList<>();
    for (Version v : versions) {
      if (v.validFromMs() != version.validFromMs()) {
        merged.add(v);
      }
    }
    merged.add(version);
    merged.sort(Comparator.comparingLong(Version::validFromMs)); // stable, as Python's sort
    long horizon = merged.get(merged.size() - 1).validFromMs() - options.historyRetentionMs();
    List<Version> kept = new ArrayList<>();
    Version edge = null;
    for (Version v : merged) {
      if (v.validFromMs() < horizon) {
        edge = v; // the version in force at the retention's edge: records inside it may need it
      } else {
        kept.add(v);
      }
    }
    if (edge != null) {
      kept.add(0, edge);
    }
    versions = kept;
  }

  private Version versionFor(long eventMs, JoinOptions options) {
    if (versions.isEmpty()) {
      return null;
    }
    if (!options.asOf()) {
      return versions.get(versions.size() - 1);
    }
    Version valid = null;
    for (Version version : versions) {
      if (version.validFromMs() > eventMs) {
        break;
      }
      valid = version;
    }
    return valid == null || valid.deleted() ? null : valid;
  }

  /** After a row change, join every waiting record that now has a row. */
  private void release(JoinOptions options, Outputs out) {
    List<Waiting> keep = new ArrayList<>();
    for (Waiting record : waiting) {
      Version version = versionFor(out.layout.eventMs(record), options);
      if (version == null) {
        keep.add(record);
      } else {
        out.joined(key, record, version);
        waitingChanged = true;
      }
    }
    waiting = keep;
  }
}
