"""Spark entry point of the reconcile job; its flags: boardstream.entrypoints.reconciliation."""

import sys

from boardstream.entrypoints.reconciliation import reconcile_main

if __name__ == "__main__":
    sys.exit(reconcile_main())
