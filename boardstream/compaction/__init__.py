"""Changelog compaction tuning: measure compacted topics, recommend cleaner settings, apply them
with a log that can be rolled back, and verify the effect on the replay a restore reads."""
