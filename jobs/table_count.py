"""Spark entry point of the table-count job; its flags: boardstream.entrypoints.jobs."""

import sys

from boardstream.entrypoints.jobs import table_count_main

if __name__ == "__main__":
    sys.exit(table_count_main())
