"""bin/compose-run's pieces that need no Docker engine: the .env it makes, the engine's address
pool, and a stand-in for every official image the compose file and the Dockerfile name. The run
itself is tests/integration/test_compose_run.py (long)."""

from __future__ import annotations

import ipaddress
import stat
import subprocess
import tempfile
from pathlib import Path

import pytest
from cryptography.fernet import Fernet

from boardstream.entrypoints.compose import engine, env_file, images, standin_build, standins


def test_env_has_no_change_me_and_moves_the_ports(tmp_path: Path) -> None:
    path = env_file.make_env(tmp_path, port_base=18000)
    env = env_file.read_env(path)
    example = env_file.read_env(env_file.ENV_EXAMPLE)
    assert set(env) == set(example)
    assert "change-me" not in env.values()
    assert {k: env[k] for k in env_file.PORT_OFFSETS} == {
        "AIRFLOW_PORT": "18080",
        "SPARK_UI_PORT": "18081",
        "HDFS_UI_PORT": "18870",
        "KAFKA_HOST_PORT": "18092",
    }
    Fernet(env["AIRFLOW_FERNET_KEY"].encode())  # a valid key, or this raises
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_env_keeps_the_example_ports_without_a_base(tmp_path: Path) -> None:
    env = env_file.read_env(env_file.make_env(tmp_path, port_base=None))
    example = env_file.read_env(env_file.ENV_EXAMPLE)
    assert {k: env[k] for k in env_file.PORT_OFFSETS} == {
        k: example[k] for k in env_file.PORT_OFFSETS
    }


def test_the_engines_networks_are_on_the_projects_test_range() -> None:
    config = engine.daemon_config(Path("/var/lib/docker"))
    project = ipaddress.ip_network("10.232.0.0/16")
    namespace_hosts = ipaddress.ip_network("10.231.0.0/24")
    bridge = ipaddress.ip_interface(config["bip"]).network
    pools = [ipaddress.ip_network(p["base"]) for p in config["default-address-pools"]]
    for network in (bridge, *pools):
        assert network.subnet_of(project) and not network.overlaps(namespace_hosts)
    assert not any(bridge.overlaps(pool) for pool in pools)


def test_every_official_image_has_a_stand_in() -> None:
    official = {
        image for image in images.compose_images().values() if not image.startswith("boardstream-")
    }
    built = {standin.image: standin for standin in standins.standins()}
    assert set(built) == official
    for standin in built.values():
        dockerfile = standins.STANDINS / standin.directory / "Dockerfile"
        assert dockerfile.exists(), standin.directory
        for source in standin.extras().values():
            assert source.exists(), source
    # Kafka and Hadoop resolve their jars in the maven stand-in: it is built first.
    order = [s.directory for s in standins.standins()]
    assert order.index("maven") < min(order.index("kafka"), order.index("hadoop"))


def standin(directory: str) -> standins.StandIn:
    return next(s for s in standins.standins() if s.directory == directory)


def test_the_airflow_stand_in_pins_the_lock() -> None:
    constraints = standin("airflow").generated()["constraints.txt"].split()
    assert "apache-airflow==3.3.2" in constraints
    assert all("==" in line and "--hash" not in line for line in constraints)


def test_the_hadoop_stand_in_writes_the_compose_files_variables(tmp_path: Path) -> None:
    """envtoconf as the compose file's x-hdfs-env needs it: FILE.XML_name=value into file.xml,
    on python3-minimal (no xml package: the first build's daemons died importing it)."""
    import subprocess
    import sys

    env = {"CORE-SITE.XML_fs.defaultFS": "hdfs://namenode:8020", "HDFS-SITE.XML_a.b": "<1&2>"}
    script = standins.STANDINS / "hadoop" / "envtoconf.py"
    assert "import xml" not in script.read_text() and "from xml" not in script.read_text()
    subprocess.run(
        [sys.executable, "-I", str(script), "--destination", str(tmp_path)],
        env={"PATH": "/usr/bin:/bin", **env},
        check=True,
    )
    assert (
        "<name>fs.defaultFS</name><value>hdfs://namenode:8020</value>"
        in (tmp_path / "core-site.xml").read_text()
    )
    assert "<value>&lt;1&amp;2&gt;</value>" in (tmp_path / "hdfs-site.xml").read_text()


def test_the_postgres_stand_in_initialises_utf8_databases() -> None:
    """initdb takes the encoding from the locale: under the debootstrap base's POSIX one the
    stand-in made SQL_ASCII databases, and Airflow's DAG processor failed storing a DAG's text
    ('ascii' codec can't encode '→'). The official image runs initdb under en_US.utf8."""
    dockerfile = (standins.STANDINS / "postgres" / "Dockerfile").read_text()
    assert "localedef -i en_US -c -f UTF-8" in dockerfile
    assert "ENV LANG=en_US.utf8" in dockerfile
    source = Path(standin_build.__file__).read_text()
    assert '"ENV LANG=C.UTF-8"' in source  # every stand-in's base


def test_making_the_airflow_stand_ins_context_leaves_no_temporary_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The constraints file is written into the build context, which the build removes; it was
    written into a temporary directory of its own that nothing removed, one more each run."""
    temp = tmp_path / "tmp"
    temp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(temp))
    context = tmp_path / "context"
    standin_build.fill_context(standin("airflow"), context)
    pins = (context / "constraints.txt").read_text().split()
    assert "apache-airflow==3.3.2" in pins
    assert list(temp.iterdir()) == []


def _ours(prefix: str) -> set[Path]:
    return set(Path("/var/tmp").glob(f"{prefix}*"))


@pytest.mark.parametrize(
    ("failing", "prefix"), [("debootstrap", "bs-rootfs-"), ("docker", "bs-standin-")]
)
def test_a_failed_build_leaves_no_temporary_directory(
    monkeypatch: pytest.MonkeyPatch, failing: str, prefix: str
) -> None:
    """debootstrap or `docker build` failing left its rootfs or its build context in
    /var/tmp, one more each failed run."""

    def run(*args: str, **kwargs: object) -> None:
        if args[0] == failing:
            raise subprocess.CalledProcessError(1, list(args))

    monkeypatch.setattr(standin_build, "run", run)
    monkeypatch.setattr(
        standin_build, "image_exists", lambda image: failing == "docker" and "debian" in image
    )
    monkeypatch.setattr(standin_build, "pull", lambda image: False)
    before = _ours(prefix)
    with pytest.raises(subprocess.CalledProcessError):
        next(standin_build.build_standins(no_pull=True))
    assert _ours(prefix) == before
