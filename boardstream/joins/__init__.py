"""The board ⋈ member stream-table join: parsing, the stateful processor, and the job."""
