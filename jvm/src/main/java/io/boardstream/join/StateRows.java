package io.boardstream.join;

import io.boardstream.join.Records.Version;
import io.boardstream.join.Records.Waiting;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;

/**
 * A record as a state row and back: its fields in their declared order, then its bookkeeping
 * (the layouts' {@code VERSION_BOOKKEEPING} and {@code WAITING_BOOKKEEPING}), by position.
 */
final class StateRows {
  private StateRows() {}

  static Row row(Version version) {
    return withFields(
        version.fields(),
        version.validFromMs(),
        version.partition(),
        version.offset(),
        version.deleted());
  }

  static Row row(Waiting waiting) {
    return withFields(
        waiting.fields(),
        waiting.partition(),
        waiting.offset(),
        waiting.timestampMs(),
        waiting.arrivedMs());
  }

  static Version version(Row row, int fields) {
    return new Version(
        fields(row, fields),
        row.getLong(fields),
        row.getInt(fields + 1),
        row.getLong(fields + 2),
        row.getBoolean(fields + 3));
  }

  static Waiting waiting(Row row, int fields) {
    return new Waiting(
        fields(row, fields),
        row.getInt(fields),
        row.getLong(fields + 1),
        row.getLong(fields + 2),
        row.getLong(fields + 3));
  }

  /** The first {@code count} values of {@code row} (or of nothing: nulls). */
  static Object[] fields(Row row, int count) {
    Object[] values = new Object[count];
    for (int i = 0; row != null && i < count; i++) {
      values[i] = row.get(i);
    }
    return values;
  }

  private static Row withFields(Object[] fields, Object... bookkeeping) {
    Object[] values = new Object[fields.length + bookkeeping.length];
    System.arraycopy(fields, 0, values, 0, fields.length);
    System.arraycopy(bookkeeping, 0, values, fields.length, bookkeeping.length);
    return RowFactory.create(values);
  }
}
