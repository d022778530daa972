"""Reconciliation: prove that board-detail and board_detail hold exactly every source board."""
