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
 * One table key's entry per state key, so a micro-batch reads and writes only the keys its
 * records name: its cost follows the batch, not the table. The entry is two state variables
 * (the row's, the waiting records'), loaded and written back by {@link EntryState}.
 *
 * @param <K> the table key's type (a Long or a String)
 */
final class JoinProcessor<K> extends StatefulProcessor<K, Row, Row> {
  private static final long serialVersionUID = 1L;

  private final JoinOptions options;
  private final Layout layout;
  private final String rowVariable;
  private final String waitingVariable;
  private final StructType rowSchema;
  private final StructType waitingSchema;
  private transient EntryState.Slot row;
  private transient EntryState.Slot waiting;

  JoinProcessor(
      JoinOptions options,
      Layout layout,
      List<String> variables,
      StructType rowSchema,
      StructType waitingSchema) {
    this.options = options;
    this.layout = layout;
    this.rowVariable = variables.get(0);
    this.waitingVariable = variables.get(1);
    this.rowSchema = rowSchema;
    this.waitingSchema = waitingSchema;
  }

  @Override
  public void init(OutputMode outputMode, TimeMode timeMode) {
    row = slot(state(rowVariable, rowSchema));
    waiting = slot(state(waitingVariable, waitingSchema));
  }

  @Override
  public scala.collection.Iterator<Row> handleInputRows(
      K key, scala.collection.Iterator<Row> rows, TimerValues timerValues) {
    // Each row is what its columns say, not what its key says: the dead letters' and the
    // ticks' keys may be valid table keys too (a row with such a key shares its group with
    // them and is joined all the same).
    Outputs out = new Outputs(layout);
    List<Input> inputs = new ArrayList<>();
    while (rows.hasNext()) {
      Row routed = rows.next();
      if (!routed.isNullAt(StreamTableJoin.DEAD_LETTER)) {
        out.deadLetter(
            routed.getString(StreamTableJoin.DEAD_KEY),
            routed.getString(StreamTableJoin.DEAD_LETTER));
      } else if (!StreamTableJoin.TICK.equals(routed.getString(StreamTableJoin.KIND))) {
        inputs.add(StreamTableJoin.input(routed, layout));
      } // a tick only makes the batch happen
    }
    if (inputs.isEmpty()) {
      return emit(out);
    }
    inputs.sort(KeyEntry.ORDER);
    long now = timerValues.getCurrentProcessingTimeInMs();
    KeyEntry entry = EntryState.load(key, layout, row, waiting);
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
      K key, TimerValues timerValues, ExpiredTimerInfo expiredTimerInfo) {
    long expiry = expiredTimerInfo.getExpiryTimeInMs();
    Outputs out = new Outputs(layout);
    KeyEntry entry = EntryState.load(key, layout, row, waiting);
    entry.expire(expiry, options, out);
    save(entry, expiry);
    return emit(out);
  }

  private static scala.collection.Iterator<Row> emit(Outputs out) {
    return CollectionConverters.asScala(out.rows.iterator());
  }

  private void save(KeyEntry entry, long nowMs) {
    EntryState.save(entry, nowMs, options, row, waiting, getHandle()::registerTimer);
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
