"""``python -m boardstream.entrypoints.airflow_components``: Airflow's components without
``airflow standalone`` (see :mod:`boardstream.stack.airflow_components`), for an executor it
would replace. The environment is Airflow's configuration (``stack/airflow.py`` sets it)."""

from __future__ import annotations

import logging
import sys

from boardstream.stack.airflow import airflow_executable
from boardstream.stack.airflow_components import run_components


def main() -> int:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s components | %(message)s")
    return run_components(str(airflow_executable()))


if __name__ == "__main__":
    sys.exit(main())
