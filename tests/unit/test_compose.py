"""docker-compose.yml and the Dockerfile, checked as far as possible without a Docker engine:
the Compose Specification schema, pinned images, every variable defined in .env.example,
healthchecks, and the same topics, connections and broker settings as the local stack, read
from the project's own modules rather than copied here."""

from __future__ import annotations

import json
import re
import shlex
import tomllib
from pathlib import Path
from typing import Any

import jsonschema
import pyspark
import pytest
import yaml

from boardstream.settings import PROJECT_ROOT, Settings
from boardstream.spark.submit import JOBS
from boardstream.stack import jars
from boardstream.stack.airflow import airflow_connections
from boardstream.stack.kafka_broker import broker_policy

SCHEMA = Path(__file__).parent / "data" / "compose-spec.json"  # vendored: see data/README.md
VARIABLE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?:[:?-][^}]*)?\}")


def env_example() -> dict[str, str]:
    lines = (PROJECT_ROOT / ".env.example").read_text().splitlines()
    return dict(line.split("=", 1) for line in lines if line and not line.startswith("#"))


def raw_compose() -> str:
    return (PROJECT_ROOT / "docker-compose.yml").read_text()


def compose() -> dict[str, Any]:
    """The file as `docker compose config` would see it with .env = .env.example."""
    values = env_example()
    return yaml.safe_load(VARIABLE.sub(lambda m: values[m.group(1)], raw_compose()))


def services() -> dict[str, dict[str, Any]]:
    return compose()["services"]


def long_running() -> dict[str, dict[str, Any]]:
    return {name: s for name, s in services().items() if s.get("restart") != "no"}


def dockerfile() -> list[tuple[str, str]]:
    """(instruction, arguments) per Dockerfile line, continuation lines joined."""
    text = (PROJECT_ROOT / "Dockerfile").read_text().replace("\\\n", " ")
    lines = [line.strip() for line in text.splitlines()]
    return [
        (line.split(None, 1)[0].upper(), line.split(None, 1)[1])
        for line in lines
        if line and not line.startswith("#")
    ]


def test_validates_against_the_compose_specification() -> None:
    schema = json.loads(SCHEMA.read_text())
    validator = jsonschema.Draft7Validator(schema)  # its $schema: draft-07
    errors = [f"{list(e.path)}: {e.message}" for e in validator.iter_errors(compose())]
    assert errors == []


def test_every_variable_is_defined_in_env_example() -> None:
    used = set(VARIABLE.findall(raw_compose()))
    assert used, "the compose file takes no settings from .env?"
    assert sorted(used - set(env_example())) == []


def test_every_image_is_pinned() -> None:
    images = {name: s["image"] for name, s in services().items()}
    images.update({f"Dockerfile FROM {a}": a.split()[0] for i, a in dockerfile() if i == "FROM"})
    for where, image in images.items():
        name, _, tag = image.rpartition(":")
        assert name and tag and tag != "latest", f"{where}: {image} is not pinned"


def test_long_running_services_have_healthchecks_and_wait_for_health() -> None:
    for name, service in long_running().items():
        assert service.get("healthcheck", {}).get("test"), f"{name} has no healthcheck"
        assert service["deploy"]["resources"]["limits"]["memory"], f"{name} has no memory limit"
    for name, service in services().items():
        for dependency, condition in service.get("depends_on", {}).items():
            expected = "service_healthy" if dependency in long_running() else None
            expected = expected or "service_completed_successfully"
            assert condition == {"condition": expected}, f"{name} → {dependency}"


def test_memory_limits_fit_a_16_gib_laptop() -> None:
    units = {"M": 1 / 1024, "G": 1}
    total = sum(
        float(s["deploy"]["resources"]["limits"]["memory"][:-1])
        * units[s["deploy"]["resources"]["limits"]["memory"][-1]]
        for s in long_running().values()
    )
    assert total <= 12, f"{total:.1f} GiB of limits leaves too little of 16 GiB for the host"


def compose_settings(service: str) -> Settings:
    environment = services()[service]["environment"]
    fields = {
        k.removeprefix("BOARDSTREAM_").lower(): v
        for k, v in environment.items()
        if k.startswith("BOARDSTREAM_")
    }
    assert set(fields) <= set(Settings.model_fields), "a BOARDSTREAM_ variable the code ignores"
    return Settings(**fields)


@pytest.mark.parametrize(
    "service", ["airflow-scheduler", "airflow-api-server", "airflow-init", "spark-worker"]
)
def test_services_share_the_local_stacks_settings(service: str) -> None:
    settings = compose_settings(service)
    defaults = Settings()
    for topic in ("member", "board", "board_detail", "unmatched", "dlq"):
        assert getattr(settings, f"{topic}_topic") == getattr(defaults, f"{topic}_topic")
    assert settings.bootstrap_servers == "kafka:29092"  # the internal listener
    assert settings.spark_master == "spark://spark-master:7077"
    assert settings.jars_dir / jars.SPARK_KAFKA.name == Path("/opt/boardstream/jars/spark-kafka")


def test_airflow_connections_are_the_local_stacks() -> None:
    for service in ("airflow-scheduler", "airflow-api-server", "airflow-init"):
        environment = services()[service]["environment"]
        expected = airflow_connections(compose_settings(service))
        shown = {k: json.loads(environment[k]) for k in expected}
        assert shown == {k: json.loads(v) for k, v in expected.items()}, service


def test_kafka_is_configured_as_the_local_broker() -> None:
    kafka = services()["kafka"]
    environment = {k: str(v) for k, v in kafka["environment"].items()}
    policy = broker_policy(Settings(partitions=int(env_example()["BOARDSTREAM_PARTITIONS"])))
    for name, value in policy.items():
        assert environment.get("KAFKA_" + name.upper().replace(".", "_")) == value, name
    pom = (jars.KAFKA_BROKER.pom_dir / "pom.xml").read_text()
    version = re.search(r"<kafka.version>([^<]+)</kafka.version>", pom).group(1)
    assert kafka["image"] == f"apache/kafka:{version}"
    assert "kafka-topics.sh" in " ".join(kafka["healthcheck"]["test"])


def test_hdfs_is_configured_as_the_local_one() -> None:
    """Both daemons read the same file system and the local HDFS's policy; the NameNode keeps its
    metadata, formatted once, on its volume, the DataNode its blocks on its own."""
    from boardstream.stack.hdfs import HDFS_POLICY

    namenode, datanode = (services()[name] for name in ("namenode", "datanode"))
    for service in (namenode, datanode):
        environment = {k: str(v) for k, v in service["environment"].items()}
        assert service["image"].startswith("apache/hadoop:3")
        for name, value in HDFS_POLICY.items():
            assert environment.get(f"HDFS-SITE.XML_{name}") == value, name
        assert environment["CORE-SITE.XML_fs.defaultFS"] == "hdfs://namenode:8020"
    name_dir = namenode["environment"]["HDFS-SITE.XML_dfs.namenode.name.dir"]
    assert namenode["environment"]["ENSURE_NAMENODE_DIR"] == name_dir
    assert namenode["volumes"] == ["hdfs-namenode:/data"] and name_dir.startswith("/data/")
    assert datanode["volumes"] == ["hdfs-datanode:/data"]
    assert datanode["depends_on"] == {"namenode": {"condition": "service_healthy"}}


@pytest.mark.parametrize("service", ["airflow-scheduler", "airflow-api-server", "spark-worker"])
def test_checkpoints_and_event_logs_are_on_the_hdfs_service(service: str) -> None:
    """Every driver, wherever it starts, finds its checkpoint and writes its event log on HDFS,
    and a worker's executors need no volume shared with the driver's container."""
    filesystem = services()["namenode"]["environment"]["CORE-SITE.XML_fs.defaultFS"]
    settings = compose_settings(service)
    assert str(settings.checkpoint_root).startswith(f"{filesystem}/")
    assert str(settings.spark_event_log_dir).startswith(f"{filesystem}/")
    assert services()[service]["depends_on"]["datanode"] == {"condition": "service_healthy"}
    assert "volumes" not in services()["spark-worker"]


def test_spark_and_airflow_versions_match_the_lock() -> None:
    assert services()["spark-master"]["image"].split(":")[1].startswith(pyspark.__version__ + "-")
    python = tomllib.loads((PROJECT_ROOT / "pyproject.toml").read_text())["project"]
    pins = dict(pin.split("==") for pin in python["dependencies"])
    base = next(a for i, a in dockerfile() if i == "FROM" and "airflow" in a)
    assert base == f"apache/airflow:{pins['apache-airflow']}-python3.11"
    assert python["requires-python"] == ">=3.11,<3.12"
    version = python["version"]
    for name in ("airflow-scheduler", "spark-worker"):
        assert services()[name]["image"] == f"boardstream-airflow:{version}"


def test_dockerfile_copies_only_what_exists_and_bakes_the_poms_jars() -> None:
    copies = [shlex.split(a) for i, a in dockerfile() if i == "COPY"]
    local = [[w for w in c if not w.startswith("--")] for c in copies if "--from=jars" not in c]
    for *sources, _ in local:
        for source in sources:
            assert (PROJECT_ROOT / source).exists(), f"COPY {source}: no such file"
    copied = {Path(source).parts[0] for *sources, _ in local for source in sources}
    assert {"boardstream", "jobs", "dags", "plugins", "requirements.txt"} <= copied
    pom = jars.SPARK_KAFKA.pom_dir.relative_to(PROJECT_ROOT) / "pom.xml"
    assert [str(pom), f"/{pom}"] in local, "the jar stage must resolve the pom bin/setup uses"
    runs = " ".join(a for i, a in dockerfile() if i == "RUN")
    assert f"-f /{pom} dependency:copy-dependencies" in runs
    install = "pip install --no-cache-dir --no-deps --require-hashes -r requirements.txt"
    assert install in runs, "the image installs the runtime lock alone"
    assert "python -m boardstream.entrypoints.distribution" in runs, "one Spark version"
    baked = [c for c in copies if "--from=jars" in c]
    assert [c[-2:] for c in baked] == [["/jars/spark-kafka", "/opt/boardstream/jars/spark-kafka"]]
    assert all((PROJECT_ROOT / "jobs" / job).exists() for job in JOBS.values())


def test_the_compose_master_keeps_applications_as_the_local_one_does() -> None:
    from boardstream.stack.spark_cluster import KEEP_APPS

    options = services()["spark-master"]["environment"]["SPARK_MASTER_OPTS"].split()
    assert sorted(options) == sorted(f"-D{key}={value}" for key, value in KEEP_APPS.items())


def airflows_directories() -> set[str]:
    """The directories a RUN makes (mkdir -p) and gives the airflow user (chown -R airflow:)."""
    made: set[str] = set()
    for instruction, arguments in dockerfile():
        if instruction == "RUN" and "mkdir -p" in arguments and "chown -R airflow:" in arguments:
            mkdir = arguments.split("mkdir -p", 1)[1].split("&&")[0].split()
            chown = arguments.split("chown -R airflow:", 1)[1].split("&&")[0].split()
            made |= set(chown) | {p for p in mkdir if any(p.startswith(root) for root in chown)}
    return made


def test_every_volume_of_the_project_image_is_a_directory_the_image_gives_airflow() -> None:
    """A new named volume takes its owner from the image's directory at the mount point; one the
    image lacks is created root's, and the airflow user then cannot write into it (airflow-init
    could not write the passwords file into airflow-auth)."""
    made = airflows_directories()
    for name, service in services().items():
        if service["image"].startswith("boardstream-airflow:"):
            for volume in service.get("volumes", []):
                source, target = volume.split(":")[:2]
                if not source.startswith(("/", ".")):
                    assert target in made, f"{name}: {target} is not made airflow's in the image"


def test_every_copy_chown_names_its_group() -> None:
    """`COPY --chown=airflow:` (no group) fails in Docker's classic builder, the one
    `docker compose build` uses without BuildKit ("can't find gid for group"): a build
    under it stops there. The official image's airflow user is in group root (gid 0)."""
    for instruction, arguments in dockerfile():
        for flag in re.findall(r"--chown=(\S+)", arguments) if instruction == "COPY" else []:
            user, _, group = flag.partition(":")
            assert user and group, f"COPY --chown={flag}: name the group (airflow:root)"


def test_the_project_image_is_built_once_at_a_time() -> None:
    """Compose builds every service with a `build:` (in dependency order, independent ones at
    once, with no deduplication of the same image outside BuildKit's bake): the first run built
    the project image twice side by side, for airflow-init and spark-worker. One builder comes
    first; every other waits for it and finds its layers cached."""
    builders = {name: s for name, s in services().items() if "build" in s}
    images = {s["image"] for s in builders.values()}
    assert len(images) == 1
    first = [n for n, s in builders.items() if not set(s.get("depends_on", {})) & set(builders)]
    assert first == ["airflow-init"]
    users = [n for n, s in services().items() if s["image"] in images and n not in builders]
    assert users == ["spark-worker"] and "spark-worker" not in builders


def test_what_the_image_copies_as_airflow_lands_in_airflows_directories() -> None:
    """A COPY makes the missing parents of its destination root's in the classic builder (its
    --chown covers what it copies): the first build's `boardstream setup` could not write the
    join's operator into /opt/boardstream/jars, which `COPY --from=jars` had made root's."""
    made = airflows_directories()
    copies = [shlex.split(a) for i, a in dockerfile() if i == "COPY" and "--chown=airflow" in a]
    for copy in copies:
        destination = copy[-1].rstrip("/")
        if destination.startswith("/opt/boardstream/"):
            assert str(Path(destination).parent) in made, f"COPY to {destination}"


def test_the_kafka_healthcheck_asks_a_listener_advertised_inside_the_network() -> None:
    """The client follows the advertised address of the listener it bootstraps from. The host
    listener advertises localhost:${KAFKA_HOST_PORT}: inside the container that answers only
    when the port is 9092, so with any other (the run's 18092) the check timed out forever."""
    raw = yaml.safe_load(raw_compose())["services"]["kafka"]
    advertised = dict(
        (entry.split("://")[0], entry.split("://")[1])
        for entry in raw["environment"]["KAFKA_ADVERTISED_LISTENERS"].split(",")
    )
    command = " ".join(raw["healthcheck"]["test"])
    server = re.search(r"--bootstrap-server (\S+)", command).group(1)
    internal = [address for address in advertised.values() if "${" not in address]
    assert server in internal, f"{server}: not an address advertised inside the network"


def test_airflow_healthchecks_do_not_leave_their_cli_running() -> None:
    """A CMD-SHELL check that exceeds its timeout has its shell killed, not the `airflow jobs
    check` under it: on the run's loaded two cores those CLIs (each imports all of Airflow)
    outlived their 30 s and piled up, a load of 100+, until nothing became healthy. Exec form
    for the CLI checks, and the scheduler's own health server (as Airflow's reference compose
    file checks it) instead of a CLI."""
    for name, service in services().items():
        test = service.get("healthcheck", {}).get("test", [])
        if test and test[0] == "CMD-SHELL":
            assert "airflow " not in test[1], f"{name}: the Airflow CLI under a shell"
    scheduler = services()["airflow-scheduler"]
    assert scheduler["environment"]["AIRFLOW__SCHEDULER__ENABLE_HEALTH_CHECK"] == "true"
    assert scheduler["healthcheck"]["test"] == [
        "CMD", "curl", "-fs", "http://localhost:8974/health"
    ]  # fmt: skip
    # The scheduler's environment is still the other Airflow services' (the anchor merged).
    for key, value in services()["airflow-api-server"]["environment"].items():
        assert scheduler["environment"][key] == value, key


# What a CMD-SHELL healthcheck may run: commands that end by themselves within the check's
# timeout (curl only with --max-time), or a JVM under `timeout`.
BOUNDED = {"grep", "pgrep", "pg_isready", "timeout", "exit"}


def test_no_healthcheck_outlives_its_timeout() -> None:
    """Docker kills a check that exceeds its timeout, and under CMD-SHELL only the shell: the
    JVM (kafka-topics.sh, hdfs dfsadmin) or CLI below it goes on. On the run's loaded cores the
    broker's checks piled up ten JVMs while the broker itself had had 2 s of CPU in 5 minutes."""
    for name, service in services().items():
        test = service.get("healthcheck", {}).get("test", [])
        if test[:1] != ["CMD-SHELL"]:
            continue
        for segment in re.split(r"\|\||\||&&", test[1]):
            words = shlex.split(segment)
            if words[0] == "curl":
                assert "--max-time" in words, f"{name}: curl without --max-time"
            else:
                assert words[0] in BOUNDED, f"{name}: {words[0]} unbounded under a shell"


def test_jvm_heaps_leave_room_in_their_memory_limits() -> None:
    """The apache/kafka image's kafka-server-start.sh defaults to -Xms1G -Xmx1G, the whole of the
    service's 1G limit before metaspace, threads and buffers."""
    kafka = services()["kafka"]
    heap = re.search(r"-Xmx(\d+)([mMgG])", kafka["environment"]["KAFKA_HEAP_OPTS"])
    mib = int(heap.group(1)) * (1024 if heap.group(2) in "gG" else 1)
    limit = kafka["deploy"]["resources"]["limits"]["memory"]
    limit_mib = float(limit[:-1]) * (1024 if limit[-1] == "G" else 1)
    assert mib <= limit_mib * 0.6


def test_hdfs_clients_act_as_the_daemons_user() -> None:
    """The apache/hadoop image runs the NameNode as `hadoop`, HDFS's superuser, with "/" 755:
    the drivers and executors, as the airflow user, could not create /boardstream ("Permission
    denied: user=airflow, access=WRITE, inode=/"). They identify as hadoop (simple
    authentication), as the local stack's drivers are the local HDFS's own user."""
    for name, service in services().items():
        if str(service.get("environment", {}).get("BOARDSTREAM_CHECKPOINT_ROOT", "")).startswith(
            "hdfs://"
        ):
            assert service["environment"].get("HADOOP_USER_NAME") == "hadoop", name


def test_slow_starters_have_minutes_before_a_failed_check_counts() -> None:
    """Compose gives up on a dependency the moment it turns unhealthy: on the run's loaded two
    cores the NameNode took over two minutes to listen, past its 20 s start period and 12 tries,
    and `up` failed with "dependency failed to start". Checks still run during the start period,
    the first success counts at once, so a long one costs a fast machine nothing."""
    for name, service in services().items():
        check = service.get("healthcheck", {})
        if check and check["test"][1].split()[0] not in {"pg_isready", "pgrep"}:
            period = check.get("start_period", "0s")
            assert period.endswith("s") and int(period[:-1]) >= 300, f"{name}: {period}"


@pytest.mark.parametrize("service", ["airflow-scheduler", "airflow-api-server", "spark-worker"])
def test_hdfs_clients_write_as_many_copies_as_there_are_datanodes(service: str) -> None:
    """The writing client picks a file's replication: the run's checkpoints were written with
    Hadoop's default 3 on the one DataNode, under-replicated for good."""
    datanodes = 1  # the datanode service, unscaled
    assert compose_settings(service).hdfs_replication == datanodes
