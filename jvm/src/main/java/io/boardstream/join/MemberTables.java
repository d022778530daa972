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
import org.apache.spark.sql.Row;

/**
 * The stream operator's per-member logic and timers, driven batch by batch without Spark: each
 * {@link #batch} applies its records member by member, then fires the timers due by its time,
 * as a micro-batch of {@link MemberJoinProcessor} does, and keeps each member's entry in two maps
 * as that keeps it in two state variables ({@link EntryState}). Repair re-joins through it, and
 * the property test holds its outputs equal to the Python {@code MemberTable}'s.
 */
public final class MemberTables {
  private final JoinOptions options;
  private final Map<Long, Row> members = new HashMap<>(); // state variable "member"
  private final Map<Long, Row> waiting = new HashMap<>(); // state variable "waiting"
  private final TreeMap<Long, List<Long>> timers = new TreeMap<>(); // time -> member ids

  public MemberTables(
      boolean asOf,
      long unmatchedTimeoutMs,
      int maxPendingPerMember,
      long historyRetentionMs,
      long deletedRetentionMs) {
    options =
        new JoinOptions(
            asOf, unmatchedTimeoutMs, maxPendingPerMember, historyRetentionMs, deletedRetentionMs);
  }

  /**
   * One micro-batch at {@code nowMs}: {@code rows} are valid input records, each a list in
   * schema.INPUT's column order; returns the output rows, each a list in schema.OUTPUT's order.
   */
  public List<List<Object>> batch(List<List<Object>> rows, long nowMs) {
    Map<Long, List<Input>> byMember = new LinkedHashMap<>();
    for (List<Object> row : rows) {
      Input input = input(row);
      byMember.computeIfAbsent(input.memberId(), id -> new ArrayList<>()).add(input);
    }
    Outputs out = new Outputs();
    for (Map.Entry<Long, List<Input>> member : byMember.entrySet()) {
      long memberId = member.getKey();
      List<Input> inputs = member.getValue();
      inputs.sort(MemberEntry.ORDER);
      MemberEntry entry = load(memberId);
      if (entry.apply(inputs, nowMs, options, out)) {
        register(nowMs + options.unmatchedTimeoutMs(), memberId);
      }
      if (entry.changed()) { // as the stream's processor, which writes back changed entries only
        save(entry, nowMs);
      }
    }
    // The timers due when the batch's timers are read: one registered while they fire waits
    // for the next batch, as a RocksDB iterator over the timers does not see it.
    Map<Long, List<Long>> due = new TreeMap<>(timers.headMap(nowMs, true));
    timers.keySet().removeAll(due.keySet());
    for (Map.Entry<Long, List<Long>> timer : due.entrySet()) {
      for (long memberId : timer.getValue()) {
        MemberEntry entry = load(memberId);
        entry.expire(timer.getKey(), options, out);
        save(entry, timer.getKey());
      }
    }
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

  /** How many members the table holds an entry of (what the state store would). */
  public int size() {
    Set<Long> ids = new HashSet<>(members.keySet());
    ids.addAll(waiting.keySet());
    return ids.size();
  }

  private void register(long at, long memberId) {
    List<Long> due = timers.computeIfAbsent(at, t -> new ArrayList<>());
    if (!due.contains(memberId)) {
      due.add(memberId);
    }
  }

  private MemberEntry load(long memberId) {
    return EntryState.load(memberId, slot(members, memberId), slot(waiting, memberId));
  }

  private void save(MemberEntry entry, long nowMs) {
    long id = entry.memberId;
    EntryState.save(
        entry, nowMs, options, slot(members, id), slot(waiting, id), at -> register(at, id));
  }

  private static EntryState.Slot slot(Map<Long, Row> values, long memberId) {
    return new EntryState.Slot() {
      @Override
      public Row get() {
        return values.get(memberId);
      }

      @Override
      public void update(Row row) {
        values.put(memberId, row);
      }

      @Override
      public void clear() {
        values.remove(memberId);
      }
    };
  }

  private static Input input(List<Object> row) {
    return new Input(
        (String) row.get(0),
        number(row.get(1)),
        number(row.get(2)),
        number(row.get(3)),
        (int) number(row.get(4)),
        number(row.get(5)),
        (String) row.get(6),
        (String) row.get(7),
        (String) row.get(8),
        number(row.get(9)),
        (String) row.get(10),
        (String) row.get(11),
        (String) row.get(12),
        (String) row.get(13),
        (String) row.get(14));
  }

  private static long number(Object value) {
    return ((Number) value).longValue();
  }
}
