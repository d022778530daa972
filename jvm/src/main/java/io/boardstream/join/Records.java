package io.boardstream.join;

import java.io.Serializable;

/**
 * The join's records. Each side's fields are the declared pipeline's, in the state layouts
 * {@code boardstream.joins.layout} derives: the operator never reads one but the event time.
 */
final class Records {
  private Records() {}

  /** A table row's version: its fields but the key, and where and when it came from. */
  record Version(Object[] fields, long validFromMs, int partition, long offset, boolean deleted)
      implements Serializable {}

  /** A stream record waiting for its table row: its fields but the join key, and its place. */
  record Waiting(Object[] fields, int partition, long offset, long timestampMs, long arrivedMs)
      implements Serializable {}

  /** One parsed, valid input record (the routed layout), its fields those its side keeps. */
  record Input(
      String kind,
      Object key,
      long eventMs,
      long timestampMs,
      int partition,
      long offset,
      Object[] fields) {

    boolean isStream() {
      return "stream".equals(kind);
    }

    boolean isTombstone() {
      return "tombstone".equals(kind);
    }

    /** Tables before streams on equal timestamps. */
    int tablesFirst() {
      return isStream() ? 1 : 0;
    }
  }
}
