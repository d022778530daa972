"""The checks: each finding's rule (the join's balance, the table against its topic, liveness),
the vocabulary their numbers go by, run by Spark for a full run and over Arrow for an
incremental one."""
