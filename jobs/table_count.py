"""Spark entry point of the table-count job; the logic lives in boardstream.aggregations."""

import sys

from boardstream.aggregations.table_count import main

if __name__ == "__main__":
    sys.exit(main())
