"""The stand-ins: for each official image the stack names, the ``docker/standins/`` directory
that builds an image honouring the part of its contract the project relies on, for where no
registry serves the official one. Only what to build, from what and in which order; building
them is :mod:`boardstream.entrypoints.compose.standin_build`."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from boardstream.entrypoints.compose.images import compose_images
from boardstream.settings import PROJECT_ROOT

STANDINS = PROJECT_ROOT / "docker" / "standins"


@dataclass(frozen=True)
class StandIn:
    """An official image's stand-in: built from ``docker/standins/<directory>`` when ``image`` is
    absent; ``extras`` are files put beside its Dockerfile (name in the context: source), and
    ``generated`` files written there (name in the context: text), so they go with the context."""

    image: str
    directory: str
    build_args: dict[str, str] = field(default_factory=dict)
    extras: Callable[[], dict[str, Path]] = dict
    generated: Callable[[], dict[str, str]] = dict


def _pyspark_dir() -> dict[str, Path]:
    import pyspark

    return {"pyspark": Path(pyspark.__file__).parent}


def _constraints() -> dict[str, str]:
    """The lock's pins without their hashes, as a pip constraints file."""
    pins = re.findall(
        r"^([A-Za-z0-9_.\-\[\]]+==[^ \\\n]+)", (PROJECT_ROOT / "requirements.txt").read_text(), re.M
    )
    return {"constraints.txt": "\n".join(re.sub(r"\[.*\]", "", pin) for pin in pins) + "\n"}


def standins() -> list[StandIn]:
    """In build order (kafka and hadoop resolve their jars in the maven stand-in); versions from
    the image tags the compose file and the Dockerfile name."""
    images = compose_images()

    def tag(prefix: str) -> str:
        return next(i for i in images.values() if i.startswith(prefix + ":"))

    kafka = tag("apache/kafka")
    airflow = tag("apache/airflow")
    return [
        StandIn(tag("maven"), "maven", {"MAVEN_VERSION": tag("maven").split(":")[1].split("-")[0]}),
        StandIn(kafka, "kafka", {"KAFKA_VERSION": kafka.split(":")[1]}),
        StandIn(
            tag("apache/hadoop"),
            "hadoop",
            extras=lambda: {"hadoop-hdfs-pom.xml": PROJECT_ROOT / "deps/hadoop-hdfs/pom.xml"},
        ),
        StandIn(tag("apache/spark"), "spark", extras=_pyspark_dir),
        StandIn(
            airflow,
            "airflow",
            {"AIRFLOW_VERSION": airflow.split(":")[1].split("-")[0]},
            generated=_constraints,
        ),
        StandIn(tag("postgres"), "postgres"),  # on trixie: bookworm has no PostgreSQL 17
    ]
