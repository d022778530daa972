"""``--pipeline NAME`` as every command that runs one pipeline takes it (issue #64): the shipped
pipeline on the settings' topics by default, else one declared in the settings' directory of
declarations, on the topics its declaration names; a name not declared, or a directory that
does not load, refused in one line (exit 2)."""

from __future__ import annotations

import argparse

from pydantic import ValidationError

from boardstream import pipelines
from boardstream.errors import BoardstreamError, PipelineDeclarationError
from boardstream.joins.topics import SHIPPED_PIPELINE, Deployed
from boardstream.settings import Settings


def add_pipeline_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--pipeline",
        default=SHIPPED_PIPELINE,
        metavar="NAME",
        help="a pipeline declared in BOARDSTREAM_PIPELINES_DIR, on its declared topics, its "
        f"queries and checkpoints <name>-{{join,sink}}; default {SHIPPED_PIPELINE}, on the "
        "settings' topics",
    )


def chosen(name: str, settings: Settings) -> Deployed:
    """The pipeline ``--pipeline`` names: the shipped one on the settings' topics, else one
    declared in the settings' directory on its declared topics; a refusal
    (:class:`PipelineDeclarationError`) naming the problem or the choices."""
    if name == SHIPPED_PIPELINE:
        return Deployed.shipped(settings)
    try:
        declared = pipelines.load_directory(settings.pipelines_dir)
        return Deployed.declared(pipelines.find(declared, name).pipeline)
    except (BoardstreamError, ValidationError) as error:
        raise PipelineDeclarationError(f"--pipeline {name}: {error}") from error


def deployed(parser: argparse.ArgumentParser, name: str) -> Deployed | None:
    """A job's ``--pipeline``: as :func:`chosen`, None for the shipped one (the job builds it
    from its own settings), and a refusal as the parser's error (exit 2)."""
    if name == SHIPPED_PIPELINE:
        return None
    try:
        return chosen(name, Settings())
    except PipelineDeclarationError as error:
        parser.error(str(error))
