package io.boardstream.join;

import io.boardstream.join.Records.Version;
import io.boardstream.join.Records.WaitingBoard;
import java.util.List;
import java.util.function.LongConsumer;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import scala.jdk.javaapi.CollectionConverters;

/**
 * A member's entry as kept between batches: two values per member id, {@code member} (versions,
 * deletion time) and {@code waiting} (the boards waiting for it), so that a reader of the
 * waiting boards (reconciliation) reads only them. The stream keeps them in Spark's state store
 * ({@link MemberJoinProcessor}), {@link MemberTables} in maps: both load and write back through
 * here, so the property test that drives {@code MemberTables} covers what the stream writes.
 */
final class EntryState {
  private EntryState() {}

  /** One value of one member: Spark's {@code ValueState}, or a map's entry. */
  interface Slot {
    Row get();

    void update(Row row);

    void clear();
  }

  static MemberEntry load(long memberId, Slot member, Slot waiting) {
    MemberEntry entry = new MemberEntry(memberId);
    Row stored = member.get();
    if (stored != null) {
      for (Row v : stored.<Row>getList(0)) {
        entry.versions.add(RecordRows.fromRow(Version.class, v));
      }
      entry.deletedAtMs = stored.isNullAt(1) ? null : stored.getLong(1);
    }
    Row boards = waiting.get();
    if (boards != null) {
      for (Row b : boards.<Row>getList(0)) {
        entry.waiting.add(RecordRows.fromRow(WaitingBoard.class, b));
      }
    }
    return entry;
  }

  /**
   * Write back what changed, or clear the entry when it can go. A deletion is remembered for
   * the deleted retention: a timer ({@code timers}, at the time given) then comes back to
   * forget it even if the member is never named again.
   */
  static void save(
      MemberEntry entry,
      long nowMs,
      JoinOptions options,
      Slot member,
      Slot waiting,
      LongConsumer timers) {
    if (entry.disposable(nowMs, options)) {
      member.clear();
      waiting.clear();
      return;
    }
    if (entry.memberChanged) {
      member.update(RowFactory.create(rows(entry.versions), entry.deletedAtMs));
    }
    if (entry.waitingChanged && entry.waiting.isEmpty()) {
      waiting.clear();
    } else if (entry.waitingChanged) {
      waiting.update(RowFactory.create(rows(entry.waiting)));
    }
    if (entry.deletedAtMs != null && entry.waiting.isEmpty()) {
      timers.accept(entry.deletedAtMs + options.deletedRetentionMs() + 1);
    }
  }

  private static scala.collection.immutable.Seq<Row> rows(List<? extends Record> records) {
    return CollectionConverters.asScala(records.stream().map(RecordRows::toRow).toList()).toSeq();
  }
}
