"""Spark entry point of the board-detail-join job; its flags: boardstream.entrypoints.jobs."""

import sys

from boardstream.entrypoints.jobs import join_main

if __name__ == "__main__":
    sys.exit(join_main())
