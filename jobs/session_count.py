"""Spark entry point of the session-count job; the logic lives in boardstream.aggregations."""

import sys

from boardstream.aggregations.event_time_job import session_main

if __name__ == "__main__":
    sys.exit(session_main())
