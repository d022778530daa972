package io.boardstream.join;

import io.boardstream.join.Records.Input;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.types.StructType;

/**
 * The stream operator's per-key logic and timers, driven batch by batch without Spark: each
 * {@link #batch} applies its records key by key, then fires the timers due by its time, as a
 * micro-batch of {@link JoinProcessor} does, and keeps each key's entry in two maps as that
 * keeps it in two state variables ({@link EntryState}). The property test holds its outputs
 * equal to the Python {@code MemberTable}'s; repair joins its records again with it
 * ({@link #rejoin}).
 */
public final class JoinTables {
  private final JoinOptions options;
  private final Layout layout;
  private final Map<Object, Row> rows = new HashMap<>(); // the row's state variable
  private final Map<Object, Row> waiting = new HashMap<>(); // the waiting records'
  private final TreeMap<Long, List<Object>> timers = new TreeMap<>(); // time -> keys

  public JoinTables(Layout layout, JoinOptions options) {
    this.layout = layout;
    this.options = options;
  }

  /**
   * One micro-batch at {@code nowMs}: {@code records} are valid routed records, each a list of
   * kind, key, event ms, timestamp ms, partition, offset and its side's fields (a list, or
   * null for a tombstone); returns the output rows without the dead-letter columns.
   */
  public List<List<Object>> batch(List<List<Object>> records, long nowMs) {
    List<Input> inputs = new ArrayList<>();
    for (List<Object> record : records) {
      inputs.add(input(record));
    }
    Outputs out = new Outputs(layout);
    apply(inputs, nowMs, out);
    List<List<Object>> result = new ArrayList<>();
    for (Row row : out.rows) {
      List<Object> values = new ArrayList<>();
      for (int i = 0; i < row.length() - 2; i++) { // without the dead-letter columns
        values.add(row.get(i));
      }
      result.add(values);
    }
    return result;
  }

  /**
   * Repair's join: {@code routed} (the layout's routed rows: the stream records to join again
   * and their table rows' records, read as of a snapshot) as one micro-batch at {@code nowMs},
   * then the batch at {@code nowMs} plus the unmatched timeout, so a record whose row never
   * came is unmatched; each row read as the stream's operator reads it. Returns the operator's
   * rows in {@code outputDdl}, the dead letters' included.
   */
  public static Dataset<Row> rejoin(
      Dataset<Row> routed, String outputDdl, Layout layout, JoinOptions options, long nowMs) {
    JoinTables tables = new JoinTables(layout, options);
    Outputs out = new Outputs(layout);
    List<Input> inputs = new ArrayList<>();
    for (Row row : routed.collectAsList()) {
      if (!row.isNullAt(StreamTableJoin.DEAD_LETTER)) {
        out.deadLetter(
            row.getString(StreamTableJoin.DEAD_KEY), row.getString(StreamTableJoin.DEAD_LETTER));
      } else if (!StreamTableJoin.TICK.equals(row.getString(StreamTableJoin.KIND))) {
        inputs.add(StreamTableJoin.input(row, layout));
      }
    }
    tables.apply(inputs, nowMs, out);
    tables.apply(List.of(), nowMs + options.unmatchedTimeoutMs(), out);
    return routed.sparkSession().createDataFrame(out.rows, StructType.fromDDL(outputDdl));
  }

  /** Apply {@code inputs} key by key, then fire the timers due by {@code nowMs}, into out. */
  private void apply(List<Input> inputs, long nowMs, Outputs out) {
    Map<Object, List<Input>> byKey = new LinkedHashMap<>();
    for (Input input : inputs) {
      byKey.computeIfAbsent(input.key(), id -> new ArrayList<>()).add(input);
    }
    for (Map.Entry<Object, List<Input>> keyed : byKey.entrySet()) {
      Object key = keyed.getKey();
      List<Input> keyInputs = keyed.getValue();
      keyInputs.sort(KeyEntry.ORDER);
      KeyEntry entry = load(key);
      if (entry.apply(keyInputs, nowMs, options, out)) {
        register(nowMs + options.unmatchedTimeoutMs(), key);
      }
      if (entry.changed()) { // as the stream's processor, which writes back changed entries only
        save(entry, nowMs);
      }
    }
    // The timers due when the batch's timers are read: one registered while they fire waits
    // for the next batch, as a RocksDB iterator over the timers does not see it.
    Map<Long, List<Object>> due = new TreeMap<>(timers.headMap(nowMs, true));
    timers.keySet().removeAll(due.keySet());
    for (Map.Entry<Long, List<Object>> timer : due.entrySet()) {
      for (Object key : timer.getValue()) {
        KeyEntry entry = load(key);
        entry.expire(timer.getKey(), options, out);
        save(entry, timer.getKey());
      }
    }
  }

  /** How many keys the table holds an entry of (what the state store would). */
  public int size() {
    Set<Object> keys = new HashSet<>(rows.keySet());
    keys.addAll(waiting.keySet());
    return keys.size();
  }

  private void register(long at, Object key) {
    List<Object> due = timers.computeIfAbsent(at, t -> new ArrayList<>());
    if (!due.contains(key)) {
      due.add(key);
    }
  }

  private KeyEntry load(Object key) {
    return EntryState.load(key, layout, slot(rows, key), slot(waiting, key));
  }

  private void save(KeyEntry entry, long nowMs) {
    Object key = entry.key;
    EntryState.save(
        entry, nowMs, options, slot(rows, key), slot(waiting, key), at -> register(at, key));
  }

  private static EntryState.Slot slot(Map<Object, Row> values, Object key) {
    return new EntryState.Slot() {
      @Override
      public Row get() {
        return values.get(key);
      }

      @Override
      public void update(Row row) {
        values.put(key, row);
      }

      @Override
      public void clear() {
        values.remove(key);
      }
    };
  }

  @SuppressWarnings("unchecked")
  private Input input(List<Object> record) {
    String kind = (String) record.get(0);
    int width = "stream".equals(kind) ? layout.streamFields : layout.tableFields;
    List<Object> fields = (List<Object>) record.get(6);
    Object[] values = fields == null ? new Object[width] : fields.toArray();
    return new Input(
        kind,
        key(record.get(1)),
        number(record.get(2)),
        number(record.get(3)),
        (int) number(record.get(4)),
        number(record.get(5)),
        values);
  }

  /** A key as the state holds it: an integer one as a Long, whatever size the gateway sent. */
  private static Object key(Object value) {
    return value instanceof Number number ? (Object) number.longValue() : value;
  }

  private static long number(Object value) {
    return ((Number) value).longValue();
  }
}
