"""Spark entry point of the window-count job; its flags: boardstream.entrypoints.jobs."""

import sys

from boardstream.entrypoints.jobs import window_main

if __name__ == "__main__":
    sys.exit(window_main())
