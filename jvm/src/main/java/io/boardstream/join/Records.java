package io.boardstream.join;

import java.io.Serializable;

/** The join's rows by name, in the column orders of {@code boardstream.joins.schema}. */
final class Records {
  private Records() {}

  /** A member version: the profile plus where it came from (schema.MEMBER). */
  record Version(
      String nickname,
      String city,
      String phone,
      String createdAt,
      String modifiedAt,
      long validFromMs,
      int partition,
      long offset,
      boolean deleted)
      implements Serializable {}

  /** A board waiting for its member (schema.PENDING). */
  record WaitingBoard(
      String boardId,
      String title,
      String body,
      long createdTs,
      String createdAt,
      String modifiedAt,
      int partition,
      long offset,
      long timestampMs,
      long arrivedMs)
      implements Serializable {}

  /** One parsed, valid input record (schema.INPUT), read by name from the routed row. */
  record Input(
      String kind,
      long memberId,
      long eventMs,
      long timestampMs,
      int partition,
      long offset,
      String boardId,
      String title,
      String body,
      long createdTs,
      String nickname,
      String city,
      String phone,
      String createdAt,
      String modifiedAt) {

    boolean isBoard() {
      return "board".equals(kind);
    }

    /** Tables before streams on equal timestamps. */
    int tablesFirst() {
      return isBoard() ? 1 : 0;
    }
  }
}
