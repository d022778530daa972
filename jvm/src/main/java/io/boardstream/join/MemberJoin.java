package io.boardstream.join;

import java.util.List;
import org.apache.spark.api.java.function.MapFunction;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Encoders;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.streaming.OutputMode;
import org.apache.spark.sql.streaming.TimeMode;
import org.apache.spark.sql.types.StructType;

/**
 * The join's stateful operator on the JVM: the routed input grouped by member id, each member's
 * entry two RocksDB state values (its versions; the boards waiting for it), one processing-time
 * timer per member with boards waiting.
 *
 * <p>Called from PySpark through the JVM gateway ({@code boardstream.joins.jvm_operator}), which passes
 * the layouts written once in {@code boardstream.joins.schema} as DDL; the names checked here
 * are the positions this code reads and writes.
 */
public final class MemberJoin {
  /**
   * The key dead letters travel under (they have no member id): out as they came in. A member
   * may have this id too; the processor tells the rows apart by their columns.
   */
  public static final long DEAD_LETTER_KEY = Long.MIN_VALUE;

  /** The key tick records travel under: they only make a micro-batch happen. */
  public static final long TICK_KEY = Long.MIN_VALUE + 1;

  static final List<String> INPUT =
      List.of(
          "kind", "member_id", "event_ms", "timestamp_ms", "partition", "offset", "board_id",
          "title", "body", "created_ts", "nickname", "city", "phone", "created_at",
          "modified_at", "dead_key", "dead_letter", "join_key");
  static final List<String> OUTPUT =
      List.of(
          "outcome", "reason", "board_id", "member_id", "nickname", "city", "phone", "title",
          "body", "created_ts", "created_at", "modified_at", "member_modified_at",
          "board_partition", "board_offset", "board_timestamp_ms", "member_partition",
          "member_offset", "dead_key", "dead_letter");
  static final List<String> MEMBER_STATE = List.of("versions", "deleted_at_ms");
  static final List<String> WAITING_STATE = List.of("boards");
  static final List<String> VERSION =
      List.of(
          "nickname", "city", "phone", "created_at", "modified_at", "valid_from_ms", "partition",
          "offset", "deleted");
  static final List<String> WAITING =
      List.of(
          "board_id", "title", "body", "created_ts", "created_at", "modified_at", "partition",
          "offset", "timestamp_ms", "arrived_ms");

  private MemberJoin() {}

  /**
   * The joined, unmatched and dead-letter rows (in {@code outputDdl}) of {@code routed} (the
   * parsed input plus its {@code join_key}: the member id, or one of the two keys above).
   * {@code update} is the query's output mode: update under the real-time trigger (the only
   * mode it runs), append otherwise; the operator emits each row once either way.
   */
  public static Dataset<Row> apply(
      Dataset<Row> routed,
      String outputDdl,
      String memberStateDdl,
      String waitingStateDdl,
      boolean asOf,
      long unmatchedTimeoutMs,
      int maxPendingPerMember,
      long historyRetentionMs,
      long deletedRetentionMs,
      boolean update) {
    StructType output = StructType.fromDDL(outputDdl);
    StructType memberState = StructType.fromDDL(memberStateDdl);
    StructType waitingState = StructType.fromDDL(waitingStateDdl);
    requireNames("input", routed.schema(), INPUT);
    requireNames("output", output, OUTPUT);
    requireNames("member state", memberState, MEMBER_STATE);
    requireNames("waiting state", waitingState, WAITING_STATE);
    requireNames("a member version", element(memberState, "versions"), VERSION);
    requireNames("a waiting board", element(waitingState, "boards"), WAITING);
    JoinOptions options =
        new JoinOptions(
            asOf, unmatchedTimeoutMs, maxPendingPerMember, historyRetentionMs, deletedRetentionMs);
    int keyIndex = INPUT.indexOf("join_key");
    return routed
        .groupByKey((MapFunction<Row, Long>) row -> row.getLong(keyIndex), Encoders.LONG())
        .transformWithState(
            new MemberJoinProcessor(options, memberState, waitingState),
            TimeMode.ProcessingTime(),
            update ? OutputMode.Update() : OutputMode.Append(),
            Encoders.row(output));
  }

  private static StructType element(StructType state, String field) {
    return (StructType)
        ((org.apache.spark.sql.types.ArrayType) state.apply(field).dataType()).elementType();
  }

  private static void requireNames(String what, StructType schema, List<String> expected) {
    List<String> names = List.of(schema.fieldNames());
    if (!names.equals(expected)) {
      throw new IllegalArgumentException(
          "the join's " + what + " layout is " + names + ", this code reads " + expected);
    }
  }
}
