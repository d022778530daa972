"""Spark entry point of the repair job; the logic lives in boardstream.reconcile.repair."""

import sys

from boardstream.reconcile.repair import main

if __name__ == "__main__":
    sys.exit(main())
