package io.boardstream.join;

import io.boardstream.join.Records.Input;
import io.boardstream.join.Records.Version;
import io.boardstream.join.Records.WaitingBoard;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;

/**
 * What the join holds for one member id, and the join's semantics on it: the same rules as
 * {@code boardstream.joins.member_table.MemberTable} (a property test holds the two to identical
 * outputs), for the one member a state key names.
 *
 * <p>A board whose member is unknown waits; it is joined when the member arrives, or leaves as
 * unmatched once it has waited the unmatched timeout ({@code member_missing} or {@code
 * member_deleted}), or when too many boards wait for one member ({@code pending_overflow}).
 * Nothing is dropped. Latest mode joins the profile current when the board is processed; as-of
 * mode the version valid at the board's own event time.
 */
final class MemberEntry {
  static final String MISSING = "member_missing";
  static final String DELETED = "member_deleted";
  static final String OVERFLOW = "pending_overflow";

  final long memberId;
  List<Version> versions = new ArrayList<>(); // oldest first; at most one in latest mode
  Long deletedAtMs; // Kafka time of the tombstone, if the member's last record was one
  List<WaitingBoard> waiting = new ArrayList<>(); // oldest first
  // What apply or expire changed: the member's versions and deletion, its waiting boards. A
  // batch whose boards all find their member changes nothing and writes nothing back; one that
  // changes a profile leaves the waiting boards' state as it was, and the other way round.
  boolean memberChanged;
  boolean waitingChanged;

  MemberEntry(long memberId) {
    this.memberId = memberId;
  }

  /** Records in the order the join applies them: Kafka time, tables first, then offset. */
  static final Comparator<Input> ORDER =
      Comparator.comparingLong(Input::timestampMs)
          .thenComparingInt(Input::tablesFirst)
          .thenComparingLong(Input::offset);

  /**
   * Apply this member's records (in {@link #ORDER}); joined and overflowing boards go to {@code
   * out}. Returns whether a board was left waiting (it needs a timer at now + timeout).
   */
  boolean apply(List<Input> rows, long nowMs, JoinOptions options, Outputs out) {
    boolean waited = false;
    for (Input row : rows) {
      if (row.isBoard()) {
        WaitingBoard board =
            new WaitingBoard(
                row.boardId(),
                row.title(),
                row.body(),
                row.createdTs(),
                row.createdAt(),
                row.modifiedAt(),
                row.partition(),
                row.offset(),
                row.timestampMs(),
                nowMs);
        Version version = versionFor(board.createdTs(), options);
        if (version == null) {
          waiting.add(board);
          waited = true;
          waitingChanged = true;
        } else {
          out.joined(memberId, board, version);
        }
      } else {
        applyMember(row, options);
        release(options, out);
        memberChanged = true;
      }
    }
    if (waited) {
      int excess = waiting.size() - options.maxPendingPerMember();
      if (excess > 0) {
        for (WaitingBoard board : waiting.subList(0, excess)) {
          out.unmatched(memberId, board, OVERFLOW);
        }
        waiting = new ArrayList<>(waiting.subList(excess, waiting.size()));
      }
    }
    return waited;
  }

  /** Boards that have waited the unmatched timeout or more leave as unmatched. */
  void expire(long nowMs, JoinOptions options, Outputs out) {
    long cutoff = nowMs - options.unmatchedTimeoutMs();
    if (waiting.isEmpty() || waiting.get(0).arrivedMs() > cutoff) {
      return;
    }
    String reason = deletedAtMs != null ? DELETED : MISSING;
    waitingChanged = true;
    List<WaitingBoard> keep = new ArrayList<>();
    for (WaitingBoard board : waiting) {
      if (board.arrivedMs() <= cutoff) {
        out.unmatched(memberId, board, reason);
      } else {
        keep.add(board);
      }
    }
    waiting = keep;
  }

  /** Whether apply or expire changed anything to write back. */
  boolean changed() {
    return memberChanged || waitingChanged;
  }

  /**
   * Whether the entry can go: it holds nothing, or its member was deleted longer ago than the
   * retention and no board waits. State stays bounded by the live members, the boards waiting,
   * and recent deletions.
   */
  boolean disposable(long nowMs, JoinOptions options) {
    if (!waiting.isEmpty()) {
      return false;
    }
    long horizon = nowMs - options.deletedRetentionMs();
    return deletedAtMs == null ? versions.isEmpty() : deletedAtMs < horizon;
  }

  private void applyMember(Input row, JoinOptions options) {
    boolean deleted = "tombstone".equals(row.kind());
    Version version =
        new Version(
            row.nickname(),
            row.city(),
            row.phone(),
            row.createdAt(),
            row.modifiedAt(),
            row.eventMs(),
            row.partition(),
            row.offset(),
            deleted);
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
        edge = v; // the version in force at the retention's edge: boards inside it may need it
      } else {
        kept.add(v);
      }
    }
    if (edge != null) {
      kept.add(0, edge);
    }
    versions = kept;
  }

  private Version versionFor(long boardEventMs, JoinOptions options) {
    if (versions.isEmpty()) {
      return null;
    }
    if (!options.asOf()) {
      return versions.get(versions.size() - 1);
    }
    Version valid = null;
    for (Version version : versions) {
      if (version.validFromMs() > boardEventMs) {
        break;
      }
      valid = version;
    }
    return valid == null || valid.deleted() ? null : valid;
  }

  /** After a member change, join every waiting board that now has a profile. */
  private void release(JoinOptions options, Outputs out) {
    List<WaitingBoard> keep = new ArrayList<>();
    for (WaitingBoard board : waiting) {
      Version version = versionFor(board.createdTs(), options);
      if (version == null) {
        keep.add(board);
      } else {
        out.joined(memberId, board, version);
        waitingChanged = true;
      }
    }
    waiting = keep;
  }
}
