"""What a run leaves for people: the run ledger (counts, findings, verdict), its heartbeat,
the Great Expectations suite and its offline Data Docs."""
