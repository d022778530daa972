package io.boardstream.join;

import io.boardstream.join.Records.Input;
import io.boardstream.join.Records.Version;
import io.boardstream.join.Records.WaitingBoard;
import java.util.ArrayList;
import java.util.List;
import org.apache.spark.sql.Encoders;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.streaming.ExpiredTimerInfo;
import org.apache.spark.sql.streaming.OutputMode;
import org.apache.spark.sql.streaming.StatefulProcessor;
import org.apache.spark.sql.streaming.TTLConfig;
import org.apache.spark.sql.streaming.TimeMode;
import org.apache.spark.sql.streaming.TimerValues;
import org.apache.spark.sql.streaming.ValueState;
import org.apache.spark.sql.types.StructType;
import scala.jdk.javaapi.CollectionConverters;

/**
 * One member's entry per state key ({@code member}: versions, deletion time, waiting boards), so
 * a micro-batch reads and writes only the members its records name: its cost follows the batch,
 * not the member table.
 */
final class MemberJoinProcessor extends StatefulProcessor<Long, Row, Row> {
  private static final long serialVersionUID = 1L;

  private static final int KIND = MemberJoin.INPUT.indexOf("kind");
  private static final int DEAD_KEY = MemberJoin.INPUT.indexOf("dead_key");
  private static final int DEAD_LETTER = MemberJoin.INPUT.indexOf("dead_letter");
  private static final String TICK = "tick";

  private final JoinOptions options;
  private final StructType stateSchema;
  private transient ValueState<Row> state;

  MemberJoinProcessor(JoinOptions options, StructType stateSchema) {
    this.options = options;
    this.stateSchema = stateSchema;
  }

  @Override
  public void init(OutputMode outputMode, TimeMode timeMode) {
    state = getHandle().getValueState("member", Encoders.row(stateSchema), TTLConfig.NONE());
  }

  @Override
  public scala.collection.Iterator<Row> handleInputRows(
      Long key, scala.collection.Iterator<Row> rows, TimerValues timerValues) {
    // Each row is what its columns say, not what its key says: the dead letters' and the
    // ticks' keys are valid member ids too (a member with id Long.MIN_VALUE shares its group
    // with the dead letters and is joined all the same).
    Outputs out = new Outputs();
    List<Input> inputs = new ArrayList<>();
    while (rows.hasNext()) {
      Row row = rows.next();
      if (!row.isNullAt(DEAD_LETTER)) {
        out.deadLetter(row.getString(DEAD_KEY), row.getString(DEAD_LETTER));
      } else if (!TICK.equals(row.getString(KIND))) { // a tick only makes the batch happen
        inputs.add(RecordRows.fromRow(Input.class, row));
      }
    }
    if (inputs.isEmpty()) {
      return emit(out);
    }
    inputs.sort(MemberEntry.ORDER);
    long now = timerValues.getCurrentProcessingTimeInMs();
    MemberEntry entry = load(key);
    if (entry.apply(inputs, now, options, out)) {
      getHandle().registerTimer(now + options.unmatchedTimeoutMs());
    }
    if (entry.changed) {
      save(entry, now);
    }
    return emit(out);
  }

  @Override
  public scala.collection.Iterator<Row> handleExpiredTimer(
      Long key, TimerValues timerValues, ExpiredTimerInfo expiredTimerInfo) {
    long expiry = expiredTimerInfo.getExpiryTimeInMs();
    Outputs out = new Outputs();
    MemberEntry entry = load(key);
    entry.expire(expiry, options, out);
    save(entry, expiry);
    return emit(out);
  }

  private static scala.collection.Iterator<Row> emit(Outputs out) {
    return CollectionConverters.asScala(out.rows.iterator());
  }

  private MemberEntry load(long memberId) {
    MemberEntry entry = new MemberEntry(memberId);
    Row stored = state.get();
    if (stored == null) {
      return entry;
    }
    for (Row v : stored.<Row>getList(0)) {
      entry.versions.add(RecordRows.fromRow(Version.class, v));
    }
    entry.deletedAtMs = stored.isNullAt(1) ? null : stored.getLong(1);
    for (Row b : stored.<Row>getList(2)) {
      entry.waiting.add(RecordRows.fromRow(WaitingBoard.class, b));
    }
    return entry;
  }

  /**
   * Write the entry back, or clear it when it can go. A deletion is remembered for the deleted
   * retention: a timer then comes back to forget it even if the member is never named again.
   */
  private void save(MemberEntry entry, long nowMs) {
    if (entry.disposable(nowMs, options)) {
      state.clear();
      return;
    }
    List<Row> versions = entry.versions.stream().map(RecordRows::toRow).toList();
    List<Row> waiting = entry.waiting.stream().map(RecordRows::toRow).toList();
    state.update(
        RowFactory.create(
            CollectionConverters.asScala(versions).toSeq(),
            entry.deletedAtMs,
            CollectionConverters.asScala(waiting).toSeq()));
    if (entry.deletedAtMs != null && entry.waiting.isEmpty()) {
      getHandle().registerTimer(entry.deletedAtMs + options.deletedRetentionMs() + 1);
    }
  }
}
