package io.boardstream.join;

import java.io.Serializable;

/** The join's options, as {@code boardstream.joins.member_table.JoinOptions} holds them. */
public record JoinOptions(
    boolean asOf,
    long unmatchedTimeoutMs,
    int maxWaitingPerKey,
    long historyRetentionMs,
    long deletedRetentionMs)
    implements Serializable {}
