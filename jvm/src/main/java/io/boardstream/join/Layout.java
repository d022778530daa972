package io.boardstream.join;

import java.io.Serializable;
import java.util.List;

/**
 * A pipeline's join rows as {@code boardstream.joins.layout.JoinLayout} derives them: how many
 * fields each side keeps, which of the stream's is its event time in epoch milliseconds, the
 * output's plan (per joined column: the key, a field of either side, or a record's position)
 * and the reasons an unmatched record leaves with.
 */
public final class Layout implements Serializable {
  private static final long serialVersionUID = 1L;

  enum From {
    KEY,
    STREAM,
    TABLE,
    STREAM_PARTITION,
    STREAM_OFFSET,
    STREAM_TIMESTAMP,
    TABLE_PARTITION,
    TABLE_OFFSET
  }

  record Source(From from, int index) implements Serializable {}

  final int streamFields;
  final int tableFields;
  final int eventIndex;
  final Source[] plan;
  final String missing;
  final String deleted;
  final String overflow;

  public Layout(
      List<String> plan,
      int streamFields,
      int tableFields,
      int eventIndex,
      String missing,
      String deleted,
      String overflow) {
    this.streamFields = streamFields;
    this.tableFields = tableFields;
    this.eventIndex = eventIndex;
    this.plan = plan.stream().map(Layout::source).toArray(Source[]::new);
    this.missing = missing;
    this.deleted = deleted;
    this.overflow = overflow;
  }

  /** The output's width: outcome, reason, the joined columns, a dead letter's key and value. */
  int outputWidth() {
    return plan.length + 4;
  }

  long eventMs(Records.Waiting waiting) {
    return ((Number) waiting.fields()[eventIndex]).longValue();
  }

  private static Source source(String text) {
    return switch (text) {
      case "key" -> new Source(From.KEY, -1);
      case "stream.partition" -> new Source(From.STREAM_PARTITION, -1);
      case "stream.offset" -> new Source(From.STREAM_OFFSET, -1);
      case "stream.timestamp" -> new Source(From.STREAM_TIMESTAMP, -1);
      case "table.partition" -> new Source(From.TABLE_PARTITION, -1);
      case "table.offset" -> new Source(From.TABLE_OFFSET, -1);
      default -> {
        String[] parts = text.split(":", 2);
        From from =
            switch (parts[0]) {
              case "stream" -> From.STREAM;
              case "table" -> From.TABLE;
              default -> throw new IllegalArgumentException("no output source " + text);
            };
        yield new Source(from, Integer.parseInt(parts[1]));
      }
    };
  }
}
