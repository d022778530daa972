"""Spark entry point of the repair job; its flags: boardstream.entrypoints.reconciliation."""

import sys

from boardstream.entrypoints.reconciliation import repair_main

if __name__ == "__main__":
    sys.exit(repair_main())
