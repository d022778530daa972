package io.boardstream.join;

import io.boardstream.join.Records.Input;
import java.util.ArrayList;
import java.util.List;
import org.apache.spark.sql.Encoders;
import org.apache.spark.sql.Row;
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
 * One member's entry per state key, so a micro-batch reads and writes only the members its
 * records name: its cost follows the batch, not the member table. The entry is two state
 * variables, {@code member} and {@code waiting}, loaded and written back by {@link EntryState}.
 */
final class MemberJoinProcessor extends StatefulProcessor<Long, Row, Row> {
  private static final long serialVersionUID = 1L;

  private static final int KIND = MemberJoin.INPUT.indexOf("kind");
  private static final int DEAD_KEY = MemberJoin.INPUT.indexOf("dead_key");
  private static final int DEAD_LETTER = MemberJoin.INPUT.indexOf("dead_letter");
  private static final String TICK = "tick";

  private final JoinOptions options;
  private final StructType memberSchema;
  private final StructType waitingSchema;
  private transient EntryState.Slot member;
  private transient EntryState.Slot waiting;

  MemberJoinProcessor(JoinOptions options, StructType memberSchema, StructType waitingSchema) {
    this.options = options;
    this.memberSchema = memberSchema;
    this.waitingSchema = waitingSchema;
  }

  @Override
  public void init(OutputMode outputMode, TimeMode timeMode) {
    member = slot(state("member", memberSchema));
    waiting = slot(state("waiting", waitingSchema));
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
    if (entry.changed()) {
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
    return EntryState.load(memberId, member, waiting);
  }

  private void save(MemberEntry entry, long nowMs) {
    EntryState.save(entry, nowMs, options, member, waiting, getHandle()::registerTimer);
  }

  private ValueState<Row> state(String name, StructType schema) {
    return getHandle().getValueState(name, Encoders.row(schema), TTLConfig.NONE());
  }

  private static EntryState.Slot slot(ValueState<Row> state) {
    return new EntryState.Slot() {
      @Override
      public Row get() {
        return state.get();
      }

      @Override
      public void update(Row row) {
        state.update(row);
      }

      @Override
      public void clear() {
        state.clear();
      }
    };
  }
}
