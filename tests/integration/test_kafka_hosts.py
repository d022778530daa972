"""A Kafka cluster spread over three hosts (needs root: network namespaces, stack/hosts.py): each
host's `stack up --only kafka` starts and formats its own node alone (BOARDSTREAM_KAFKA_NODE,
one BOARDSTREAM_KAFKA_CLUSTER_ID), the three started at once agree on their voters without
talking, and a fourth host's client creates a topic of 3 replicas with min.insync.replicas=2,
produces with acks=all, loses one node to kill -9, and still produces and consumes, every
acknowledged record kept."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from boardstream.settings import PROJECT_ROOT
from boardstream.stack.hosts import Hosts, Network
from boardstream.stack.kafka_ids import directory_id, new_cluster_id
from tests.fixtures import cli_command, hosts_up

# About a minute each; CI runs tests/faults/cluster's scenario, whose hosts start the same.
pytestmark = pytest.mark.long

NODES = ("k1", "k2", "k3")
NETWORK = Network("bsk", "10.232.1.0/24")
TOPIC = "kept"
PER_PHASE = 300

# In the client host: produce records first..first+count-1 with acks=all (idempotent), then read
# as group ``reader`` (committing) and, assigned, the whole topic from its start; print what was
# acknowledged, read and who leads each partition, as JSON.
CLIENT = """
import json, sys, time
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient


servers, first, count, expected = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
connection = {"bootstrap.servers": servers}
acked = []

def delivered(error, message):
    if error is None:
        acked.append(int(message.value()))

producer = Producer({**connection, "acks": "all", "enable.idempotence": True,
                     "message.timeout.ms": 60000})
for n in range(first, first + count):
    producer.produce("kept", key=str(n).encode(), value=str(n).encode(), on_delivery=delivered)
left = producer.flush(90)

def read(consumer, wanted):
    values, deadline = [], time.monotonic() + 60
    while len(values) < wanted and time.monotonic() < deadline:
        message = consumer.poll(0.5)
        if message is not None and message.error() is None:
            values.append(int(message.value()))
    while (message := consumer.poll(1)) is not None:  # nothing more than wanted
        if message.error() is None:
            values.append(int(message.value()))
    return values

group = Consumer({**connection, "group.id": "reader", "auto.offset.reset": "earliest",
                  "enable.auto.commit": False})
group.subscribe(["kept"])
by_group = read(group, count)
group.commit(asynchronous=False)
group.close()
metadata = AdminClient(connection).list_topics("kept", timeout=30)
partitions = metadata.topics["kept"].partitions
whole = Consumer({**connection, "group.id": "whole", "enable.auto.commit": False})
whole.assign([TopicPartition("kept", p, 0) for p in partitions])
everything = read(whole, expected)
whole.close()
print(json.dumps({
    "left": left, "acked": sorted(acked), "group": sorted(by_group), "all": sorted(everything),
    "leaders": {p: partitions[p].leader for p in sorted(partitions)},
    "replicas": sorted({len(partitions[p].replicas) for p in partitions}),
    "brokers": sorted(metadata.brokers),
}))
"""


@pytest.fixture
def hosts() -> Iterator[Hosts]:
    with hosts_up([*NODES, "client"], "bsk-hosts-", NETWORK) as hosts:
        yield hosts


def node_env(hosts: Hosts, name: str, settings: dict[str, str]) -> dict[str, str]:
    return hosts.environment(
        name, {**settings, "BOARDSTREAM_JAR_CACHE": str(PROJECT_ROOT / "var" / "jars")}
    )


def run_everywhere(
    hosts: Hosts, names: tuple[str, ...], envs: dict[str, dict[str, str]], *args: str
) -> dict[str, subprocess.CompletedProcess[str]]:
    """`boardstream *args` in each host of ``names`` at once; each one's outcome."""
    started = {
        name: subprocess.Popen(
            hosts.command(name, cli_command(*args)),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=envs[name],
        )
        for name in names
    }
    done = {}
    for name, process in started.items():
        out, err = process.communicate(timeout=180)
        done[name] = subprocess.CompletedProcess(process.args, process.returncode, out, err)
    return done


def client(hosts: Hosts, servers: str, first: int, expected: int) -> dict:
    result = subprocess.run(
        hosts.command(
            "client",
            [sys.executable, "-c", CLIENT, servers, str(first), str(PER_PHASE), str(expected)],
        ),
        capture_output=True,
        text=True,
        env=hosts.environment("client"),
        timeout=240,
    )
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def test_three_hosts_each_start_their_node_and_the_cluster_survives_losing_one(hosts) -> None:
    addresses = [hosts.address(name) for name in NODES]
    servers = ",".join(f"{address}:9092" for address in addresses)
    cluster_id = new_cluster_id()
    shared = {
        "BOARDSTREAM_BOOTSTRAP_SERVERS": servers,
        "BOARDSTREAM_CONTROLLER_PORT": "9093",
        "BOARDSTREAM_KAFKA_CLUSTER_ID": cluster_id,
        "BOARDSTREAM_BROKERS": "3",
    }
    envs = {
        name: node_env(hosts, name, {**shared, "BOARDSTREAM_KAFKA_NODE": str(n)})
        for n, name in enumerate(NODES, 1)
    }
    up = run_everywhere(hosts, NODES, envs, "stack", "up", "--only", "kafka")
    pids = {}
    for n, name in enumerate(NODES, 1):
        assert up[name].returncode == 0, up[name].stderr
        lines = up[name].stdout.splitlines()
        pids[name] = int(lines[0].split("pid ")[1].split(")")[0])
        assert lines == [
            f"kafka started (pid {pids[name]}) on {addresses[n - 1]}:9092",
            f"kafka is node {n} of 3 of cluster {cluster_id}; other commands reach the "
            f"cluster, and create topics with 3 replicas, with "
            f"BOARDSTREAM_BOOTSTRAP_SERVERS={servers} BOARDSTREAM_BROKERS=3",
        ]
        meta = (hosts.var_dir(name) / "kafka" / "data" / "meta.properties").read_text()
        assert {
            line.partition("=")[0]: line.partition("=")[2]
            for line in meta.splitlines()
            if line.startswith(("cluster.id=", "node.id=", "directory.id="))
        } == {
            "cluster.id": cluster_id,
            "node.id": str(n),
            "directory.id": directory_id(cluster_id, n),
        }

    created = subprocess.run(
        hosts.command("client", cli_command("topics", "create", "--topic", TOPIC)),
        capture_output=True,
        text=True,
        env=node_env(hosts, "client", shared),
        timeout=120,
    )
    assert (created.returncode, created.stdout) == (
        0,
        f"{TOPIC}: created (3 partitions, 3 replicas, delete, min.insync.replicas=2)\n",
    ), created.stderr

    before = client(hosts, servers, 0, PER_PHASE)
    first = list(range(PER_PHASE))
    assert (before["left"], before["acked"]) == (0, first)
    assert (before["group"], before["all"]) == (first, first)
    assert (before["replicas"], before["brokers"]) == ([3], [1, 2, 3])

    # kill -9 the leader of partition 0: the process its host's `up` started and named.
    victim = NODES[before["leaders"]["0"] - 1]
    pid_file = hosts.var_dir(victim) / "run" / "kafka.pid"
    assert int(pid_file.read_text()) == pids[victim]
    assert str(hosts.var_dir(victim)) in Path(f"/proc/{pids[victim]}/cmdline").read_text()
    os.kill(pids[victim], signal.SIGKILL)

    after = client(hosts, servers, PER_PHASE, 2 * PER_PHASE)
    second = list(range(PER_PHASE, 2 * PER_PHASE))
    assert (after["left"], after["acked"]) == (0, second)
    assert after["group"] == second  # the group's commits outlived the node
    assert after["all"] == first + second  # nothing acknowledged lost, nothing twice
    alive = [name for name in NODES if name != victim]
    assert after["brokers"] == [NODES.index(name) + 1 for name in alive]
    assert before["leaders"]["0"] not in after["leaders"].values()

    status = run_everywhere(hosts, NODES, envs, "stack", "status")
    kafka = {name: status[name].stdout.splitlines()[0].split() for name in NODES}
    assert kafka[victim] == ["kafka", "stopped", f"{hosts.address(victim)}:9092"]
    for name in alive:
        assert kafka[name] == [
            "kafka",
            "running",
            "(pid",
            f"{pids[name]})",
            f"{hosts.address(name)}:9092",
        ]

    # down on the lost node's host finds nothing of its own running; on another, it stops
    # that node, whose controlled shutdown the two nodes left approve. The last node, alone,
    # would lack the quorum to approve its own and wait out the stop timeout (30 s): the
    # hosts' teardown kills it.
    down = run_everywhere(hosts, (victim, alive[0]), envs, "stack", "down")
    assert {name: (result.returncode, result.stdout) for name, result in down.items()} == {
        victim: (0, "nothing was running\n"),
        alive[0]: (0, "kafka stopped\n"),
    }
