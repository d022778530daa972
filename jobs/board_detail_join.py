"""Spark entry point of the board-detail-join job; the logic lives in boardstream.joins.job."""

import sys

from boardstream.joins.job import main

if __name__ == "__main__":
    sys.exit(main())
