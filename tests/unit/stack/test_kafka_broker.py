"""The local broker's configuration: cluster ids the storage tool accepts, the listeners the
settings ask for, and each node's server.properties, alone or in a cluster of three; a host's
node of a cluster spread over hosts: its configuration, its storage formatted alone with the
shared voters or reused only if its own, and its address this host's."""

from __future__ import annotations

import re

import pytest

from boardstream.errors import BoardstreamError
from boardstream.settings import Settings
from boardstream.stack.kafka_broker import KafkaBroker, broker_policy, new_cluster_id
from boardstream.stack.kafka_cluster import KafkaCluster
from boardstream.stack.kafka_ids import directory_id
from tests.fixtures import isolated_settings


def test_cluster_ids_never_look_like_an_option() -> None:
    ids = [new_cluster_id() for _ in range(5_000)]  # a leading "-" would come ~78 times
    assert not [i for i in ids if i.startswith("-")]
    assert all(re.fullmatch(r"[A-Za-z0-9_-]{22}", i) for i in ids)
    assert len(set(ids)) == len(ids)


def test_sasl_settings_make_the_local_broker_require_scram(tmp_path) -> None:
    settings = isolated_settings(
        tmp_path,
        security_protocol="SASL_PLAINTEXT",
        sasl_username="boardstream",
        sasl_password="pw123",
    )
    lines = KafkaBroker(settings).server_properties().splitlines()
    port = settings.kafka_port
    assert (
        f"listeners=SASL_PLAINTEXT://localhost:{port},CONTROLLER://localhost:{settings.controller_port}"
        in lines
    )
    assert "inter.broker.listener.name=SASL_PLAINTEXT" in lines
    assert "sasl.enabled.mechanisms=SCRAM-SHA-512" in lines
    assert (
        "listener.name.sasl_plaintext.scram-sha-512.sasl.jaas.config="
        "org.apache.kafka.common.security.scram.ScramLoginModule required "
        'username="boardstream" password="pw123";'
    ) in lines


def test_tls_settings_give_the_local_broker_a_certificate_of_its_own(tmp_path) -> None:
    settings = isolated_settings(
        tmp_path, security_protocol="SASL_SSL", sasl_username="u", sasl_password="p"
    )
    broker = KafkaBroker(settings)
    broker.tls.ensure()
    lines = broker.server_properties().splitlines()
    assert f"listeners=SASL_SSL://localhost:{settings.kafka_port}," in lines[3]
    assert "listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config=" in "\n".join(lines)
    assert f"ssl.keystore.location={broker.tls.keystore}" in lines
    assert f"ssl.keystore.password={broker.tls.password()}" in lines
    assert broker.tls.password_file.stat().st_mode & 0o077 == 0
    pem = broker.tls.certificate.read_text()
    assert pem.startswith("-----BEGIN CERTIFICATE-----"), pem[:100]
    broker.tls.ensure()  # made once: a restart keeps the certificate clients already trust
    assert broker.tls.certificate.read_text() == pem


def test_the_local_broker_refuses_what_it_cannot_serve(tmp_path) -> None:
    settings = isolated_settings(
        tmp_path,
        security_protocol="SASL_SSL",
        sasl_mechanism="PLAIN",
        sasl_username="u",
        sasl_password="p",
    )
    with pytest.raises(BoardstreamError, match="SCRAM only, not SASL_SSL with PLAIN"):
        KafkaBroker(settings).server_properties()


def test_a_single_broker_is_a_quorum_of_one_with_unreplicated_internal_topics(tmp_path) -> None:
    settings = isolated_settings(
        tmp_path, bootstrap_servers="localhost:19092", controller_port=19093
    )
    broker = KafkaBroker(settings)
    assert (broker.name, broker.home, broker.address) == (
        "kafka",
        tmp_path / "kafka",
        "localhost:19092",
    )
    assert broker.server_properties().splitlines() == [
        "process.roles=broker,controller",
        "node.id=1",
        "controller.quorum.bootstrap.servers=localhost:19093",
        "listeners=PLAINTEXT://localhost:19092,CONTROLLER://localhost:19093",
        "advertised.listeners=PLAINTEXT://localhost:19092",
        "controller.listener.names=CONTROLLER",
        "inter.broker.listener.name=PLAINTEXT",
        "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
        f"log.dirs={tmp_path / 'kafka' / 'data'}",
        "num.partitions=3",
        "auto.create.topics.enable=false",
        "offsets.topic.replication.factor=1",
        "transaction.state.log.replication.factor=1",
        "transaction.state.log.min.isr=1",
        "share.coordinator.state.topic.replication.factor=1",
        "share.coordinator.state.topic.min.isr=1",
        "group.initial.rebalance.delay.ms=0",
        "log.cleaner.backoff.ms=1000",
        "log.retention.check.interval.ms=10000",
    ]


def test_each_node_of_a_cluster_listens_on_its_ports_and_knows_every_controller(
    tmp_path,
) -> None:
    settings = isolated_settings(
        tmp_path, bootstrap_servers="localhost:19092", controller_port=19093, brokers=3
    )
    nodes = KafkaCluster(settings, 3).brokers
    assert [(b.name, b.home, b.address) for b in nodes] == [
        ("kafka", tmp_path / "kafka", "localhost:19092"),
        ("kafka-2", tmp_path / "kafka-2", "localhost:19094"),
        ("kafka-3", tmp_path / "kafka-3", "localhost:19096"),
    ]
    lines = nodes[1].server_properties().splitlines()
    assert lines == [
        "process.roles=broker,controller",
        "node.id=2",
        "controller.quorum.bootstrap.servers=localhost:19093,localhost:19095,localhost:19097",
        "listeners=PLAINTEXT://localhost:19094,CONTROLLER://localhost:19095",
        "advertised.listeners=PLAINTEXT://localhost:19094",
        "controller.listener.names=CONTROLLER",
        "inter.broker.listener.name=PLAINTEXT",
        "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
        f"log.dirs={tmp_path / 'kafka-2' / 'data'}",
        "num.partitions=3",
        "auto.create.topics.enable=false",
        "offsets.topic.replication.factor=3",
        "transaction.state.log.replication.factor=3",
        "transaction.state.log.min.isr=2",
        "share.coordinator.state.topic.replication.factor=3",
        "share.coordinator.state.topic.min.isr=2",
        "group.initial.rebalance.delay.ms=0",
        "log.cleaner.backoff.ms=1000",
        "log.retention.check.interval.ms=10000",
        "default.replication.factor=3",
        "min.insync.replicas=2",
    ]
    # Each node's process is told apart by its own configuration file, so down stops each.
    assert len({b.process.marker for b in nodes}) == 3
    assert [b.process.pid_file.name for b in nodes] == ["kafka.pid", "kafka-2.pid", "kafka-3.pid"]


def test_the_broker_policy_of_one_and_of_three(tmp_path) -> None:
    one, three = (
        broker_policy(Settings(var_dir=tmp_path)),
        broker_policy(Settings(var_dir=tmp_path), 3),
    )
    assert {k: v for k, v in three.items() if one.get(k) != v} == {
        "offsets.topic.replication.factor": "3",
        "transaction.state.log.replication.factor": "3",
        "transaction.state.log.min.isr": "2",
        "share.coordinator.state.topic.replication.factor": "3",
        "share.coordinator.state.topic.min.isr": "2",
        "default.replication.factor": "3",
        "min.insync.replicas": "2",
    }


CLUSTER_ID = "MkU3OEVBNTcwNTJENDM2Qg"


def spread_node(tmp_path, node: int = 2, **overrides: object) -> KafkaBroker:
    """This host's node ``node`` of a cluster spread over three hosts, on loopback addresses
    (127.0.0.n are all this machine's)."""
    settings = isolated_settings(
        tmp_path,
        **{
            "bootstrap_servers": "127.0.0.2:19092,127.0.0.3:19092,127.0.0.4:19092",
            "controller_port": 19093,
            "kafka_node": node,
            "kafka_cluster_id": CLUSTER_ID,
            **overrides,
        },
    )
    return KafkaBroker(settings)


def test_a_hosts_node_of_a_spread_cluster_is_its_kafka(tmp_path) -> None:
    """One node per host: named, housed and tracked as the single broker, listening at its own
    bootstrap server, replicating as a cluster of three."""
    broker = spread_node(tmp_path, 2)
    assert (broker.name, broker.home, broker.address) == (
        "kafka",
        tmp_path / "kafka",
        "127.0.0.3:19092",
    )
    assert broker.process.pid_file == tmp_path / "run" / "kafka.pid"
    lines = broker.server_properties().splitlines()
    assert lines[:5] == [
        "process.roles=broker,controller",
        "node.id=2",
        "controller.quorum.bootstrap.servers=127.0.0.2:19093,127.0.0.3:19093,127.0.0.4:19093",
        "listeners=PLAINTEXT://127.0.0.3:19092,CONTROLLER://127.0.0.3:19093",
        "advertised.listeners=PLAINTEXT://127.0.0.3:19092",
    ]
    assert {"default.replication.factor=3", "min.insync.replicas=2"} <= set(lines)
    assert [(p.port, p.setting) for p in broker.listen_ports()] == [
        (19092, "BOARDSTREAM_BOOTSTRAP_SERVERS"),
        (19093, "BOARDSTREAM_CONTROLLER_PORT"),
    ]


def test_a_spread_node_formats_itself_with_the_shared_voters(tmp_path, monkeypatch) -> None:
    broker = spread_node(tmp_path, 3)
    formatted = []
    monkeypatch.setattr(broker, "format_storage", lambda *args: formatted.append(args))
    broker._ensure_storage()
    ids = [directory_id(CLUSTER_ID, n) for n in (1, 2, 3)]
    voters = f"1@127.0.0.2:19093:{ids[0]},2@127.0.0.3:19093:{ids[1]},3@127.0.0.4:19093:{ids[2]}"
    assert formatted == [(CLUSTER_ID, ["--initial-controllers", voters])]


def meta(broker: KafkaBroker, cluster_id: str, node: int, directory: str = "d") -> None:
    broker.data_dir.mkdir(parents=True, exist_ok=True)
    (broker.data_dir / "meta.properties").write_text(
        f"#\n#Mon Nov 30\nnode.id={node}\ndirectory.id={directory}\nversion=1\n"
        f"cluster.id={cluster_id}\n"
    )


def test_a_spread_node_reuses_its_own_storage_only(tmp_path, monkeypatch) -> None:
    broker = spread_node(tmp_path, 2)
    monkeypatch.setattr(broker, "format_storage", lambda *args: pytest.fail("formatted"))
    meta(broker, CLUSTER_ID, 2, directory_id(CLUSTER_ID, 2))
    broker._ensure_storage()
    meta(broker, "b3RoZXItY2x1c3Rlci1pZA", 2)
    with pytest.raises(BoardstreamError) as refused:
        broker._ensure_storage()
    assert str(refused.value) == (
        f"{broker.data_dir} holds node 2 of cluster b3RoZXItY2x1c3Rlci1pZA, not node 2 of "
        f"BOARDSTREAM_KAFKA_CLUSTER_ID {CLUSTER_ID}: stop the stack and remove {broker.home} "
        "for a fresh node"
    )
    meta(broker, CLUSTER_ID, 1)
    with pytest.raises(BoardstreamError, match=f"holds node 1 of cluster {CLUSTER_ID}, not "):
        broker._ensure_storage()


def test_a_single_broker_refuses_a_spread_nodes_storage(tmp_path) -> None:
    """It would wait for voters that are other hosts'."""
    single = KafkaBroker(isolated_settings(tmp_path))
    meta(single, CLUSTER_ID, 1, directory_id(CLUSTER_ID, 1))
    with pytest.raises(BoardstreamError) as refused:
        single.check_storage()
    assert str(refused.value) == (
        f"{single.data_dir} holds node 1 of a cluster spread over hosts: start it with "
        f"BOARDSTREAM_KAFKA_NODE=1 and BOARDSTREAM_KAFKA_CLUSTER_ID={CLUSTER_ID}, or stop the "
        f"stack and remove {single.home} for a fresh single broker"
    )
    meta(single, CLUSTER_ID, 1, "a-random-directory-id0")
    single.check_storage()


def test_a_spread_node_must_run_on_the_host_of_its_address(tmp_path) -> None:
    spread_node(tmp_path, 2).check_host()  # 127.0.0.3: this machine's
    elsewhere = spread_node(
        tmp_path, 2, bootstrap_servers="127.0.0.2:19092,203.0.113.7:19092,127.0.0.4:19092"
    )
    with pytest.raises(BoardstreamError) as refused:
        elsewhere.check_host()
    assert str(refused.value) == (
        "BOARDSTREAM_KAFKA_NODE=2 is at 203.0.113.7:19092 (entry 2 of "
        "BOARDSTREAM_BOOTSTRAP_SERVERS), an address this host does not have (Cannot assign "
        "requested address): run node 2 on the host 203.0.113.7, or set "
        "BOARDSTREAM_KAFKA_NODE to this host's entry"
    )
    KafkaBroker(isolated_settings(tmp_path, kafka_host="203.0.113.7")).check_host()  # not spread
    tls = spread_node(tmp_path, 2, security_protocol="SSL")
    with pytest.raises(BoardstreamError, match="a cluster spread over hosts serves no TLS yet"):
        tls.check_host()
