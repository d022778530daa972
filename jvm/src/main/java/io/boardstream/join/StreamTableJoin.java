package io.boardstream.join;

import io.boardstream.join.Records.Input;
import java.util.List;
import org.apache.spark.api.java.function.MapFunction;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Encoder;
import org.apache.spark.sql.Encoders;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.streaming.OutputMode;
import org.apache.spark.sql.streaming.TimeMode;
import org.apache.spark.sql.types.ArrayType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructType;

/**
 * The join's stateful operator on the JVM, for any declared pipeline: the routed input grouped
 * by table key, each key's entry two RocksDB state values (its row's versions; the stream
 * records waiting for it), one processing-time timer per key with records waiting.
 *
 * <p>Called from PySpark through the JVM gateway ({@code boardstream.joins.jvm_operator}), which
 * passes the layouts {@code boardstream.joins.layout} derives from the declaration as DDL and a
 * {@link Layout}; the names checked here are the positions this code reads and writes.
 */
public final class StreamTableJoin {
  static final List<String> ROUTED =
      List.of(
          "kind", "join_key", "event_ms", "timestamp_ms", "partition", "offset", "stream",
          "table", "dead_key", "dead_letter");
  static final List<String> ROW_STATE = List.of("versions", "deleted_at_ms");
  static final List<String> VERSION_BOOKKEEPING =
      List.of("valid_from_ms", "partition", "offset", "deleted");
  static final List<String> WAITING_BOOKKEEPING =
      List.of("partition", "offset", "timestamp_ms", "arrived_ms");
  static final int KIND = ROUTED.indexOf("kind");
  static final int DEAD_KEY = ROUTED.indexOf("dead_key");
  static final int DEAD_LETTER = ROUTED.indexOf("dead_letter");
  static final String TICK = "tick";
  private static final int KEY = ROUTED.indexOf("join_key");

  private StreamTableJoin() {}

  /**
   * The joined, unmatched and dead-letter rows (in {@code outputDdl}) of {@code routed}. {@code
   * variables} names the two state variables (the row's, the waiting records'); {@code update}
   * is the query's output mode: update under the real-time trigger (the only mode it runs),
   * append otherwise; the operator emits each row once either way.
   */
  public static Dataset<Row> apply(
      Dataset<Row> routed,
      String outputDdl,
      String rowStateDdl,
      String waitingStateDdl,
      Layout layout,
      List<String> variables,
      JoinOptions options,
      boolean update) {
    StructType output = StructType.fromDDL(outputDdl);
    StructType rowState = StructType.fromDDL(rowStateDdl);
    StructType waitingState = StructType.fromDDL(waitingStateDdl);
    requireNames("input", List.of(routed.schema().fieldNames()), ROUTED);
    requireNames("row state", List.of(rowState.fieldNames()), ROW_STATE);
    if (waitingState.size() != 1) { // one array, named after the stream's records
      throw new IllegalArgumentException(
          "the join's waiting state is " + waitingState.simpleString() + ", one array expected");
    }
    requireTail(
        "a version", element(rowState, "versions"), layout.tableFields, VERSION_BOOKKEEPING);
    requireTail(
        "a waiting record",
        element(waitingState, waitingState.fieldNames()[0]),
        layout.streamFields,
        WAITING_BOOKKEEPING);
    if (output.size() != layout.outputWidth()) {
      throw new IllegalArgumentException(
          "the join's output has " + output.size() + " columns, its plan "
              + layout.outputWidth());
    }
    JoinProcessor<Object> processor =
        new JoinProcessor<>(options, layout, variables, rowState, waitingState);
    Encoder<?> keys =
        routed.schema().apply(KEY).dataType().equals(DataTypes.LongType)
            ? Encoders.LONG()
            : Encoders.STRING();
    return group(routed, keys, processor, update, output);
  }

  @SuppressWarnings("unchecked")
  private static <K> Dataset<Row> group(
      Dataset<Row> routed,
      Encoder<K> keys,
      JoinProcessor<Object> processor,
      boolean update,
      StructType output) {
    return routed
        .groupByKey((MapFunction<Row, K>) row -> (K) row.get(KEY), keys)
        .transformWithState(
            (JoinProcessor<K>) (JoinProcessor<?>) processor,
            TimeMode.ProcessingTime(),
            update ? OutputMode.Update() : OutputMode.Append(),
            Encoders.row(output));
  }

  /** A valid routed row as the join's input: its side's fields, as the state keeps them. */
  static Input input(Row row, Layout layout) {
    String kind = row.getString(KIND);
    boolean stream = "stream".equals(kind);
    int side = ROUTED.indexOf(stream ? "stream" : "table");
    Row fields = row.isNullAt(side) ? null : row.getStruct(side);
    return new Input(
        kind,
        row.get(KEY),
        row.getLong(ROUTED.indexOf("event_ms")),
        row.getLong(ROUTED.indexOf("timestamp_ms")),
        row.getInt(ROUTED.indexOf("partition")),
        row.getLong(ROUTED.indexOf("offset")),
        StateRows.fields(fields, stream ? layout.streamFields : layout.tableFields));
  }

  private static StructType element(StructType state, String field) {
    return (StructType) ((ArrayType) state.apply(field).dataType()).elementType();
  }

  private static void requireTail(
      String what, StructType schema, int fields, List<String> bookkeeping) {
    List<String> names = List.of(schema.fieldNames());
    if (names.size() != fields + bookkeeping.size()) {
      throw new IllegalArgumentException(
          "the join's " + what + " has " + names + ", the layout " + fields + " fields and "
              + bookkeeping);
    }
    requireNames(what + "'s bookkeeping", names.subList(fields, names.size()), bookkeeping);
  }

  private static void requireNames(String what, List<String> names, List<String> expected) {
    if (!names.equals(expected)) {
      throw new IllegalArgumentException(
          "the join's " + what + " layout is " + names + ", this code reads " + expected);
    }
  }
}
