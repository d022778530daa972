package io.boardstream.join;

import io.boardstream.join.Records.Version;
import io.boardstream.join.Records.Waiting;
import java.util.ArrayList;
import java.util.List;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;

/**
 * The rows a batch emits, in the layout's output: outcome, reason, each joined column as the
 * plan reads it, then a dead letter's key and envelope.
 */
final class Outputs {
  final Layout layout;
  final List<Row> rows = new ArrayList<>();

  Outputs(Layout layout) {
    this.layout = layout;
  }

  void joined(Object key, Waiting record, Version version) {
    rows.add(row("joined", null, key, record, version));
  }

  void unmatched(Object key, Waiting record, String reason) {
    rows.add(row("unmatched", reason, key, record, null));
  }

  void deadLetter(String key, String letter) {
    Object[] values = new Object[layout.outputWidth()];
    values[0] = "dead_letter";
    values[values.length - 2] = key;
    values[values.length - 1] = letter;
    rows.add(RowFactory.create(values));
  }

  private Row row(String outcome, String reason, Object key, Waiting record, Version version) {
    Object[] values = new Object[layout.outputWidth()];
    values[0] = outcome;
    values[1] = reason;
    for (int i = 0; i < layout.plan.length; i++) {
      values[i + 2] = value(layout.plan[i], key, record, version);
    }
    return RowFactory.create(values);
  }

  private static Object value(Layout.Source source, Object key, Waiting record, Version version) {
    return switch (source.from()) {
      case KEY -> key;
      case STREAM -> record.fields()[source.index()];
      case STREAM_PARTITION -> record.partition();
      case STREAM_OFFSET -> record.offset();
      case STREAM_TIMESTAMP -> record.timestampMs();
      case TABLE -> version == null ? null : version.fields()[source.index()];
      case TABLE_PARTITION -> version == null ? null : version.partition();
      case TABLE_OFFSET -> version == null ? null : version.offset();
    };
  }
}
