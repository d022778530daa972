"""Loading ``board-detail`` into the relational table ``board_detail``, idempotently."""
