"""Spark entry point of the reconcile job; the logic lives in boardstream.reconcile.run."""

import sys

from boardstream.reconcile.run import main

if __name__ == "__main__":
    sys.exit(main())
