"""What a reconciliation run reads: the snapshot of every topic and job, the topics and the
table as of it, the join's waiting boards, and the evidence of outputs the topics deleted."""
