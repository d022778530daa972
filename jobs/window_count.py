"""Spark entry point of the window-count job; the logic lives in boardstream.aggregations."""

import sys

from boardstream.aggregations.event_time_job import window_main

if __name__ == "__main__":
    sys.exit(window_main())
