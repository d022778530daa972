"""Spark entry point of the board-detail-sink job; its flags: boardstream.entrypoints.jobs."""

import sys

from boardstream.entrypoints.jobs import sink_main

if __name__ == "__main__":
    sys.exit(sink_main())
