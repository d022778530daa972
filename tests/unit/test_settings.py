from __future__ import annotations

import os

import pytest
from pydantic import SecretStr, ValidationError

from boardstream.settings import Settings


def test_env_vars_are_read_at_construction(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BOARDSTREAM_BOOTSTRAP_SERVERS", "kafka:29092")
    monkeypatch.setenv("BOARDSTREAM_BOARD_PARTITIONS", "6")
    settings = Settings()
    assert settings.to_confluent() == {
        "bootstrap.servers": "kafka:29092",
        "security.protocol": "PLAINTEXT",
    }
    assert settings.to_spark_kafka_options() == {
        "kafka.bootstrap.servers": "kafka:29092",
        "kafka.security.protocol": "PLAINTEXT",
    }
    assert settings.topic_partitions("board") == 6
    assert settings.topic_partitions("member") == 3
    assert settings.kafka_port == 29092


def test_defaults_live_under_var_dir(tmp_path) -> None:
    settings = Settings(var_dir=tmp_path)
    assert settings.database == f"sqlite:///{tmp_path / 'boardstream.db'}"
    assert settings.checkpoints == (tmp_path / "checkpoints").as_uri()
    assert settings.checkpoint("board-detail-join") == f"{settings.checkpoints}/board-detail-join"
    assert settings.jars_dir == tmp_path / "jars"


@pytest.mark.parametrize(
    ("root", "uri"),
    [
        ("hdfs://nn:8020/c/", "hdfs://nn:8020/c"),
        ("s3a://bucket/c", "s3a://bucket/c"),
        ("file:///srv/c", "file:///srv/c"),
        ("/srv/c", "file:///srv/c"),
        ("", None),
    ],
)
def test_a_checkpoint_root_is_a_uri_on_any_filesystem(root: str, uri: str | None) -> None:
    """ "hdfs://nn/c" was once read as the local directory "hdfs:/nn/c"."""
    assert Settings(checkpoint_root=root).checkpoint_root == uri


def test_a_relative_checkpoint_root_is_made_absolute(tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    settings = Settings(checkpoint_root="ckpt")
    assert settings.checkpoint("join") == f"{(tmp_path / 'ckpt').as_uri()}/join"


@pytest.mark.parametrize("servers", ["localhost", "localhost:abc", ":9092"])
def test_bootstrap_servers_must_have_ports(servers: str) -> None:
    with pytest.raises(ValidationError, match="host:port"):
        Settings(bootstrap_servers=servers)


def test_sasl_needs_credentials_and_keeps_the_password_secret(tmp_path) -> None:
    with pytest.raises(ValidationError, match="needs BOARDSTREAM_SASL_USERNAME"):
        Settings(var_dir=tmp_path, security_protocol="SASL_PLAINTEXT")
    settings = Settings(
        var_dir=tmp_path,
        security_protocol="SASL_PLAINTEXT",
        sasl_username="boardstream",
        sasl_password="s3cret-value",
    )
    assert "s3cret-value" not in repr(settings) and "s3cret-value" not in str(settings)
    assert settings.to_confluent() == {
        "bootstrap.servers": "localhost:9092",
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": "SCRAM-SHA-512",
        "sasl.username": "boardstream",
        "sasl.password": "s3cret-value",
    }
    spark = settings.to_spark_kafka_options()
    assert spark["kafka.security.protocol"] == "SASL_PLAINTEXT"
    assert spark["kafka.sasl.jaas.config"] == (
        "org.apache.kafka.common.security.scram.ScramLoginModule required "
        'username="boardstream" password="s3cret-value";'
    )
    # A child process given kafka_env() builds the same connection.
    env = {k.removeprefix("BOARDSTREAM_").lower(): v for k, v in settings.kafka_env().items()}
    assert Settings(var_dir=tmp_path, **env) == settings


def test_to_env_reads_back_to_the_same_settings(tmp_path, monkeypatch) -> None:
    """A detached driver gets its settings through its environment: secrets in clear, unset
    fields left unset (their defaults derive from the others in the child too)."""
    settings = Settings(
        var_dir=tmp_path,
        board_topic="b",
        sasl_username="u",
        sasl_password=SecretStr("s3cret"),
        security_protocol="SASL_PLAINTEXT",
        stream_max_lag=7,
    )
    env = settings.to_env()
    assert env["BOARDSTREAM_SASL_PASSWORD"] == "s3cret"
    assert "BOARDSTREAM_DATABASE_URL" not in env
    for name in [n for n in os.environ if n.startswith("BOARDSTREAM_")]:
        monkeypatch.delenv(name)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    assert Settings() == settings


def test_three_brokers_replicate_new_topics_three_times_two_in_sync(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    single = Settings(_env_file=None)
    assert (single.brokers, single.replication_factor, single.min_insync_replicas) == (1, 1, None)
    monkeypatch.setenv("BOARDSTREAM_BROKERS", "3")
    cluster = Settings(_env_file=None)
    assert (cluster.replication_factor, cluster.min_insync_replicas) == (3, 2)
    # Kept through the copies jobs and tests make.
    assert cluster.with_topic_prefix("t").replication_factor == 3
    # Either may still be chosen.
    monkeypatch.setenv("BOARDSTREAM_MIN_INSYNC_REPLICAS", "3")
    assert Settings(_env_file=None).min_insync_replicas == 3
    assert (
        Settings(_env_file=None, replication_factor=2, min_insync_replicas=1).replication_factor
        == 2
    )


def test_replication_that_could_never_acknowledge_a_write_is_refused() -> None:
    with pytest.raises(
        ValidationError, match="min_insync_replicas 2 is more than the replication factor 1"
    ):
        Settings(_env_file=None, min_insync_replicas=2)


@pytest.mark.parametrize("brokers", [0, 2, 4])
def test_the_local_stack_runs_one_or_three_brokers(brokers: int) -> None:
    with pytest.raises(ValidationError, match=f"runs 1 or 3, not {brokers}"):
        Settings(_env_file=None, brokers=brokers)


@pytest.mark.parametrize(
    ("options", "own"),
    [
        # The source's fetches return after 10 ms when empty; the sink writes acks=all in
        # batches of up to 256 KiB.
        ("to_spark_kafka_source_options", {"kafka.fetch.max.wait.ms": "10"}),
        (
            "to_spark_kafka_sink_options",
            {"kafka.acks": "all", "kafka.batch.size": "262144", "kafka.linger.ms": "5"},
        ),
    ],
)
def test_spark_kafka_source_and_sink_options(options: str, own: dict[str, str]) -> None:
    settings = Settings(_env_file=None, bootstrap_servers="k:1")
    connection = {"kafka.bootstrap.servers": "k:1", "kafka.security.protocol": "PLAINTEXT"}
    assert getattr(settings, options)() == {**connection, **own}


def test_the_worker_offers_the_streams_cores_unless_told_otherwise() -> None:
    machine = os.cpu_count() or 2
    assert Settings(stream_join_cores=machine + 4).spark_worker_cores == machine + 5
    assert Settings(spark_worker_cores=1).spark_worker_cores == 1


@pytest.mark.parametrize(
    "cluster_id",
    [
        "MkU3OEVBNTcwNTJENDM2Q",  # 21 characters
        "MkU3OEVBNTcwNTJENDM2Qh",  # its last 2 bits are not 0: not Kafka's own form
        "MkU3OEVBNTcwNTJENDM2Q!",
        "MkU3OEVBNTcwNTJENDM2Q+",  # base64, not URL-safe
        "-kU3OEVBNTcwNTJENDM2Qg",  # the storage tool would take it for an option
        "AAAAAAAAAAAAAAAAAAAAAA",  # Kafka's zero Uuid
        "2e78ea57-052d-436b-9f6d-4c2b3a1e9f00",  # a UUID, but not in Kafka's form
    ],
)
def test_the_kafka_cluster_id_is_a_kafka_uuid(cluster_id: str) -> None:
    with pytest.raises(ValidationError, match="expected a Kafka cluster id"):
        Settings(kafka_cluster_id=cluster_id)


def test_a_kafka_uuid_is_accepted_as_it_is() -> None:
    assert Settings(kafka_cluster_id="MkU3OEVBNTcwNTJENDM2Qg").kafka_cluster_id == (
        "MkU3OEVBNTcwNTJENDM2Qg"
    )
    assert Settings().kafka_cluster_id is None
