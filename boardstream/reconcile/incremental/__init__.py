"""The incremental machinery (#22): the digest ledger of records read, the facts of each key's
last check, the table watch's bucket digests, and the keys new data touches."""
