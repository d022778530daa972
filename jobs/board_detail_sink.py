"""Spark entry point of the board-detail-sink job; the logic lives in boardstream.sink.job."""

import sys

from boardstream.sink.job import main

if __name__ == "__main__":
    sys.exit(main())
