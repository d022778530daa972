"""Spark entry point of the session-count job; its flags: boardstream.entrypoints.jobs."""

import sys

from boardstream.entrypoints.jobs import session_main

if __name__ == "__main__":
    sys.exit(session_main())
