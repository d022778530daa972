package io.boardstream.join;

import io.boardstream.join.Records.Version;
import io.boardstream.join.Records.Waiting;
import java.util.List;
import java.util.function.LongConsumer;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import scala.jdk.javaapi.CollectionConverters;

/**
 * A key's entry as kept between batches: two values per table key, the row's (versions,
 * deletion time) and the waiting records', so that a reader of the waiting records
 * (reconciliation) reads only them. The stream keeps them in Spark's state store ({@link
 * JoinProcessor}), {@link JoinTables} in maps: both load and write back through here, so the
 * property test that drives {@code JoinTables} covers what the stream writes.
 */
final class EntryState {
  private EntryState() {}

  /** One value of one key: Spark's {@code ValueState}, or a map's entry. */
  interface Slot {
    Row get();

    void update(Row row);

    void clear();
  }

  static KeyEntry load(Object key, Layout layout, Slot row, Slot waiting) {
    KeyEntry entry = new KeyEntry(key);
    Row stored = row.get();
    if (stored != null) {
      for (Row v : stored.<Row>getList(0)) {
        entry.versions.add(StateRows.version(v, layout.tableFields));
      }
      entry.deletedAtMs = stored.isNullAt(1) ? null : stored.getLong(1);
    }
    Row records = waiting.get();
    if (records != null) {
      for (Row w : records.<Row>getList(0)) {
        entry.waiting.add(StateRows.waiting(w, layout.streamFields));
      }
    }
    return entry;
  }

  /**
   * Write back what changed, or clear the entry when it can go. A deletion is remembered for
   * the deleted retention: a timer ({@code timers}, at the time given) then comes back to
   * forget it even if the key is never named again.
   */
  static void save(
      KeyEntry entry,
      long nowMs,
      JoinOptions options,
      Slot row,
      Slot waiting,
      LongConsumer timers) {
    if (entry.disposable(nowMs, options)) {
      row.clear();
      waiting.clear();
      return;
    }
    if (entry.rowChanged) {
      List<Row> versions = entry.versions.stream().map(StateRows::row).toList();
      row.update(RowFactory.create(seq(versions), entry.deletedAtMs));
    }
    if (entry.waitingChanged && entry.waiting.isEmpty()) {
      waiting.clear();
    } else if (entry.waitingChanged) {
      List<Row> records = entry.waiting.stream().map(StateRows::row).toList();
      waiting.update(RowFactory.create(seq(records)));
    }
    if (entry.deletedAtMs != null && entry.waiting.isEmpty()) {
      timers.accept(entry.deletedAtMs + options.deletedRetentionMs() + 1);
    }
  }

  private static scala.collection.immutable.Seq<Row> seq(List<Row> rows) {
    return CollectionConverters.asScala(rows).toSeq();
  }
}
