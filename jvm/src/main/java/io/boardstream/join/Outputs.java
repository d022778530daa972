package io.boardstream.join;

import io.boardstream.join.Records.Version;
import io.boardstream.join.Records.WaitingBoard;
import java.util.ArrayList;
import java.util.List;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;

/**
 * The rows a batch emits, in the processor's output layout: schema.OUTPUT, then a dead letter's
 * key and envelope ({@code MemberJoin.OUTPUT}).
 */
final class Outputs {
  final List<Row> rows = new ArrayList<>();

  void joined(long memberId, WaitingBoard board, Version version) {
    rows.add(
        RowFactory.create(
            "joined",
            null,
            board.boardId(),
            memberId,
            version.nickname(),
            version.city(),
            version.phone(),
            board.title(),
            board.body(),
            board.createdTs(),
            board.createdAt(),
            board.modifiedAt(),
            version.modifiedAt(),
            board.partition(),
            board.offset(),
            board.timestampMs(),
            version.partition(),
            version.offset(),
            null,
            null));
  }

  void unmatched(long memberId, WaitingBoard board, String reason) {
    rows.add(
        RowFactory.create(
            "unmatched",
            reason,
            board.boardId(),
            memberId,
            null,
            null,
            null,
            board.title(),
            board.body(),
            board.createdTs(),
            board.createdAt(),
            board.modifiedAt(),
            null,
            board.partition(),
            board.offset(),
            board.timestampMs(),
            null,
            null,
            null,
            null));
  }

  void deadLetter(String key, String letter) {
    Object[] values = new Object[MemberJoin.OUTPUT.size()];
    values[0] = "dead_letter";
    values[values.length - 2] = key;
    values[values.length - 1] = letter;
    rows.add(RowFactory.create(values));
  }
}
