"""Great Expectations over the reconciled data: the verdict, and Data Docs a person can browse.

The reconciliation itself is plain pandas; this module only states what "nothing lost, nothing
invented" means as a GX suite, runs it through Checkpoints so the results are stored and
rendered, and boils them down to :class:`ExpectationOutcome` rows the caller can log or assert.

The expected row count is an expectation parameter supplied at run time, so the suite (and its
Data Docs page) states the rule rather than one snapshot's number. Each frame gets its own
Checkpoint: a Checkpoint hands the same ``batch_parameters`` (and so the same in-memory
dataframe) to every Validation Definition it holds, so frames that differ cannot share one. All
runs share one run id, so Data Docs show them as one run. The site is built once, after the last
run: updating it per Checkpoint rebuilt the index and recompiled every template each time, most
of the suite's time.

The context is ephemeral with in-memory stores: nothing is written except the Data Docs site
of the run under ``docs_dir`` (no ``gx/`` project folder in the working directory), which
:mod:`boardstream.reconcile.evidence.data_docs` then makes work offline.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import great_expectations as gx
import great_expectations.expectations as gxe
import pandas as pd
from great_expectations.core.expectation_validation_result import ExpectationValidationResult
from great_expectations.core.run_identifier import RunIdentifier
from great_expectations.data_context import EphemeralDataContext
from great_expectations.data_context.types.base import (
    DataContextConfig,
    InMemoryStoreBackendDefaults,
    ProgressBarsConfig,
)
from great_expectations.data_context.types.resource_identifiers import (
    ExpectationSuiteIdentifier,
    ValidationResultIdentifier,
)
from great_expectations.expectations.expectation import Expectation

from boardstream.joins.schema import plural
from boardstream.reconcile.evidence import data_docs
from boardstream.reconcile.layout import ID_ROLE, KEY_ROLE
from boardstream.reconcile.target import ReconcileTarget

_SITE = "reconciliation"
_EXPECTED_ROWS = "expected_rows"


@dataclass(frozen=True)
class Subject:
    """The table a run validates, in its declaration's names: the table (the target name in
    outcomes and Data Docs), the stream record's id column, the table key's column, and what
    its records are called (the stream's plural: ``boards``)."""

    table: str
    id_column: str
    key_column: str
    records: str

    @classmethod
    def of(cls, target: ReconcileTarget) -> Subject:
        layout = target.layout
        return cls(
            target.table.table.name,
            layout.id_column,
            layout.table_key_column,
            plural(target.pipeline.stream.topic),
        )


@dataclass(frozen=True)
class ExpectationOutcome:
    """One expectation's verdict on one frame.

    ``expectation`` is the GX expectation type, with the column appended for column
    expectations (``expect_column_values_to_not_be_null(order_id)``) so that two checks of the
    same type on one frame stay distinguishable.
    """

    expectation: str
    target: str
    success: bool
    observed: str


@dataclass(frozen=True)
class ValidationReport:
    """The overall verdict, every outcome, and the index of the run's Data Docs site."""

    success: bool
    outcomes: list[ExpectationOutcome]
    data_docs_index: Path | None


def _table_expectations(
    subject: Subject, rows: int, expected_rows: int, rechecked_boards: int | None
) -> list[Expectation]:
    """The table's suite: of the whole table (``rechecked_boards`` None), or of the rows of
    the records an incremental run re-checked, which its Data Docs say in each expectation's
    words (GX's own sentence would name the whole table). Column checks of no rows are left
    out: GX renders them as "NaN% not null"."""
    ids, keys = subject.id_column, subject.key_column
    count = gxe.ExpectTableRowCountToEqual(value={"$PARAMETER": _EXPECTED_ROWS})
    columns: list[Expectation] = [
        gxe.ExpectColumnValuesToBeUnique(column=ids),
        gxe.ExpectColumnValuesToNotBeNull(column=ids),
        gxe.ExpectColumnValuesToNotBeNull(column=keys),
    ]
    if rechecked_boards is None:
        return [count, *columns]
    scope = (
        f"the {rows:,} rows of {subject.table} of the {rechecked_boards:,} {subject.records} "
        "this incremental run re-checked (the daily full run validates the whole table)"
    )
    count.description = (
        f"Row count of {scope}: exactly {expected_rows:,}, as their records call for"
    )
    descriptions = (
        f"{ids} unique among {scope}",
        f"{ids} never null in {scope}",
        f"{keys} never null in {scope}",
    )
    for expectation, description in zip(columns, descriptions, strict=True):
        expectation.description = description
    return [count, *columns] if rows else [count]


def _context(site: Path) -> EphemeralDataContext:
    """An in-memory context whose only filesystem output is the Data Docs site in ``site``."""
    config = DataContextConfig(
        store_backend_defaults=InMemoryStoreBackendDefaults(),
        data_docs_sites={
            _SITE: {
                "class_name": "SiteBuilder",
                "show_how_to_buttons": False,
                "store_backend": {
                    "class_name": "TupleFilesystemStoreBackend",
                    "base_directory": str(site),
                },
                "site_index_builder": {"class_name": "DefaultSiteIndexBuilder"},
            }
        },
        analytics_enabled=False,
        progress_bars=ProgressBarsConfig(globally=False),
    )
    return gx.get_context(mode="ephemeral", project_config=config)


def _observed(result: ExpectationValidationResult) -> str:
    """A few words on what was seen: the value for table metrics, a count for column checks."""
    details = result.result or {}
    if "observed_value" in details:
        return str(details["observed_value"])
    if "unexpected_count" in details:
        return f"{details['unexpected_count']} unexpected"
    # GX reports an exception either flat or keyed by the metric that raised it.
    info = result.exception_info or {}
    for item in (info, *info.values()):
        if isinstance(item, Mapping) and item.get("raised_exception"):
            return f"error: {item.get('exception_message')}"
    return "n/a"


def _outcome(target: str, result: ExpectationValidationResult) -> ExpectationOutcome:
    config = result.expectation_config
    column = config.kwargs.get("column")
    name = f"{config.type}({column})" if column else config.type
    return ExpectationOutcome(name, target, bool(result.success), _observed(result))


def validate_reconciliation(
    subject: Subject,
    table: pd.DataFrame,
    expected_rows: int,
    differences: dict[str, pd.DataFrame],
    docs_dir: Path,
    run_name: str,
    keep_runs: int,
    rechecked_boards: int | None = None,
) -> ValidationReport:
    """Validate the snapshot and every difference set, render Data Docs, and summarise.

    The snapshot (the rows' ids and keys under the checks' role names, shown under the
    ``subject``'s) must hold exactly ``expected_rows`` rows with unique, non-null ids and
    non-null keys; every difference set must be empty. An incremental run's snapshot is the rows
    of the ``rechecked_boards`` records it re-checked, and its Data Docs say so. Data Docs go to
    ``docs_dir/run_name/``; the sites of all but the newest ``keep_runs`` runs there are
    deleted.
    """
    name = subject.table
    if name in differences:
        raise ValueError(f"difference set may not be named {name!r}: that is the table")
    table = table.rename(columns={ID_ROLE: subject.id_column, KEY_ROLE: subject.key_column})
    site = docs_dir / run_name
    context = _context(site)
    datasource = context.data_sources.add_pandas("reconciliation")
    run_id = RunIdentifier(run_name=run_name, run_time=dt.datetime.now(dt.UTC))

    table_suite = _table_expectations(subject, len(table), expected_rows, rechecked_boards)
    frames = {name: (table, table_suite)}
    for name, frame in differences.items():
        frames[name] = (frame, [gxe.ExpectTableRowCountToEqual(value=0)])

    outcomes: list[ExpectationOutcome] = []
    rendered: list[ValidationResultIdentifier | ExpectationSuiteIdentifier] = []
    for target, (frame, expectations) in frames.items():
        suite = context.suites.add(
            gx.ExpectationSuite(name=f"reconcile.{target}", expectations=expectations)
        )
        batch = datasource.add_dataframe_asset(target).add_batch_definition_whole_dataframe(target)
        definition = context.validation_definitions.add(
            gx.ValidationDefinition(name=target, data=batch, suite=suite)
        )
        checkpoint = context.checkpoints.add(
            gx.Checkpoint(name=f"reconcile.{target}", validation_definitions=[definition])
        )
        result = checkpoint.run(
            batch_parameters={"dataframe": frame},
            expectation_parameters={_EXPECTED_ROWS: expected_rows},
            run_id=run_id,
        )
        for identifier, suite_result in result.run_results.items():
            outcomes.extend(_outcome(target, r) for r in suite_result.results)
            rendered += [identifier, ExpectationSuiteIdentifier(name=suite.name)]
    context.build_data_docs(site_names=[_SITE], resource_identifiers=rendered)
    return ValidationReport(
        success=all(o.success for o in outcomes),
        outcomes=outcomes,
        data_docs_index=data_docs.publish(site, keep_runs),
    )
