"""Test hosts as network namespaces on a bridge (needs root): a service bound to a host's
address is reached from the other hosts and the tests; one on a host's loopback only from that
host; a host cut off from nobody until reconnected; and ``down`` leaves nothing behind."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from boardstream.settings import PROJECT_ROOT
from boardstream.stack.hosts import Hosts
from tests.fixtures import cli_command, hosts_up

PORT = 18080
# Connects to argv[1]:argv[2] and says how it went: connected, refused (nothing listens there),
# or unreachable (no answer within a second, or no route: the host is cut off).
PROBE = """
import socket, sys
try:
    socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=1).close()
    print("connected")
except ConnectionRefusedError:
    print("refused")
except OSError:
    print("unreachable")
"""


@pytest.fixture
def hosts() -> Iterator[Hosts]:
    with hosts_up(["a", "b", "c"], "bsh-hosts-") as hosts:
        yield hosts


def probe(hosts: Hosts, where: str | None, address: str, port: int = PORT) -> str:
    """How a connection to ``address:port`` from host ``where`` (None: the tests' own root
    namespace) goes."""
    argv = [sys.executable, "-c", PROBE, address, str(port)]
    command = hosts.command(where, argv) if where else argv
    result = subprocess.run(command, capture_output=True, text=True, timeout=20, check=False)
    assert result.returncode == 0, result.stderr
    return result.stdout.strip()


def serve(hosts: Hosts, name: str, bind: str) -> None:
    """An HTTP server in host ``name`` on ``bind:PORT``, awaited from within that host."""
    directory = str(hosts.var_dir(name))
    _, handle = hosts.start(
        name,
        "http",
        [sys.executable, "-m", "http.server", "--bind", bind, "--directory", directory, str(PORT)],
        marker=directory,
    )
    deadline = time.monotonic() + 10
    while probe(hosts, name, bind) != "connected":
        assert handle.poll() is None, hosts.log_file(name, "http").read_text()
        assert time.monotonic() < deadline, "the server did not listen within 10 s"
        time.sleep(0.1)


def test_a_service_on_a_hosts_address_is_reached_from_the_others_and_the_tests(hosts) -> None:
    a = hosts.address("a")
    assert [hosts.address(n) for n in ("a", "b", "c")] == ["10.231.0.2", "10.231.0.3", "10.231.0.4"]
    serve(hosts, "a", a)
    assert probe(hosts, "b", a) == "connected"
    assert probe(hosts, "c", a) == "connected"
    assert probe(hosts, None, a) == "connected"
    with socket.create_connection((a, PORT), timeout=2) as connection:
        connection.sendall(b"GET / HTTP/1.0\r\n\r\n")
        assert connection.recv(64).startswith(b"HTTP/1.0 200")
    # Nothing listens on B: its own address refuses.
    assert probe(hosts, "c", hosts.address("b")) == "refused"


def test_a_service_on_a_hosts_loopback_is_reached_from_that_host_only(hosts) -> None:
    serve(hosts, "a", "127.0.0.1")  # awaited from within A: its loopback answers
    assert probe(hosts, "b", "127.0.0.1") == "refused"  # B's loopback is B's own
    assert probe(hosts, "b", hosts.address("a")) == "refused"  # A's address is not its loopback
    assert probe(hosts, None, hosts.address("a")) == "refused"


def test_a_host_cut_off_is_reached_by_nobody_until_reconnected(hosts) -> None:
    a = hosts.address("a")
    serve(hosts, "a", a)
    assert probe(hosts, "b", a) == "connected"
    hosts.cut("a")
    try:
        assert probe(hosts, "b", a) == "unreachable"
        assert probe(hosts, None, a) == "unreachable"
        assert probe(hosts, "a", a) == "connected"  # within itself, A still runs
        assert probe(hosts, "c", hosts.address("b")) == "refused"  # the others still talk
    finally:
        hosts.reconnect("a")
    assert probe(hosts, "b", a) == "connected"
    assert probe(hosts, None, a) == "connected"


def _forward_policy() -> str:
    """The root namespace's FORWARD policy (``ACCEPT`` or ``DROP``)."""
    rules = subprocess.run(
        ["iptables", "-S", "FORWARD"], capture_output=True, text=True, check=False
    )
    assert rules.returncode == 0, "the test needs iptables (bin/setup installs it)"
    return rules.stdout.splitlines()[0].split()[-1]


def test_the_hosts_reach_each_other_where_forwarding_drops_by_default(hosts) -> None:
    """Docker's engine, once run, leaves FORWARD dropping by default while bridged frames pass
    iptables: the hosts' bridge still forwards between its own ports."""
    before = _forward_policy()
    subprocess.run(["iptables", "-P", "FORWARD", "DROP"], check=True)
    try:
        a = hosts.address("a")
        serve(hosts, "a", a)
        assert probe(hosts, "b", a) == "connected"
        assert probe(hosts, None, a) == "connected"
    finally:
        subprocess.run(["iptables", "-P", "FORWARD", before], check=True)


NAMES = """
import socket
print(socket.gethostname(), socket.gethostbyname("bsh-b"))
"""


def test_each_host_has_its_own_name_which_every_host_resolves(hosts) -> None:
    for name in ("a", "c"):
        ran = subprocess.run(
            hosts.command(name, [sys.executable, "-c", NAMES]),
            capture_output=True, text=True, timeout=20, check=True,
        )  # fmt: skip
        assert ran.stdout.split() == [f"bsh-{name}", "10.231.0.3"]
    assert socket.gethostname() not in {"bsh-a", "bsh-b", "bsh-c"}  # the machine's is its own


def test_a_killed_host_loses_every_process_and_keeps_its_address(hosts) -> None:
    a = hosts.address("a")
    serve(hosts, "a", a)
    pid = hosts.process("a", "http", str(hosts.var_dir("a"))).pid()
    stray = subprocess.Popen(hosts.command("a", ["sleep", "300"]))
    assert sorted(hosts.kill("a")) == sorted([pid, stray.pid])
    assert stray.wait(timeout=10) == -9
    assert probe(hosts, "b", a) == "refused"  # the machine answers; nothing listens on it
    assert hosts.kill("a") == []
    serve(hosts, "a", a)  # and it starts again
    assert probe(hosts, "b", a) == "connected"


def test_down_leaves_nothing_behind_and_up_and_down_repeat(hosts) -> None:
    hosts.up()  # a second up keeps what is there
    assert probe(hosts, "b", hosts.address("c"), 1) == "refused"
    serve(hosts, "a", hosts.address("a"))
    process = hosts.process("a", "http", str(hosts.var_dir("a")))
    pid = process.pid()
    assert pid is not None
    # A process started outside ``start``, which down must not leave running in a namespace.
    stray = subprocess.Popen(hosts.command("c", ["sleep", "300"]))
    try:
        hosts.down()
        assert stray.wait(timeout=10) == -9
        assert process.pid() is None
        assert not Path(f"/proc/{pid}").exists() or _zombie(pid)
        assert "bsh-" not in _ip("netns", "list")
        assert "bsh-" not in _ip("link", "show")
        assert "10.231.0." not in _ip("-4", "addr", "show")
        assert not any(Path("/etc/netns").glob("bsh-*"))
        assert (
            "bsh-"
            not in subprocess.run(
                ["iptables", "-S", "FORWARD"], capture_output=True, text=True, check=True
            ).stdout
        )
        hosts.down()  # nothing left to remove
        hosts.up()
        assert probe(hosts, None, hosts.address("c"), 1) == "refused"
    finally:
        if stray.poll() is None:
            stray.kill()


# In host B: create a topic on the broker at argv[1], produce a record, consume it back.
KAFKA_CLIENT = """
import sys
from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient, NewTopic

servers = {"bootstrap.servers": sys.argv[1]}
admin = AdminClient(servers)
admin.create_topics([NewTopic("across", 1, 1)])["across"].result(timeout=30)
producer = Producer(servers)
producer.produce("across", key=b"k", value=b"from b")
assert producer.flush(30) == 0
consumer = Consumer({**servers, "group.id": "b", "auto.offset.reset": "earliest"})
consumer.subscribe(["across"])
for _ in range(60):
    message = consumer.poll(1)
    if message is not None and message.error() is None:
        print(message.value().decode())
        break
consumer.close()
"""


def test_a_kafka_broker_on_one_host_serves_another(hosts) -> None:
    """`stack up` run in host A binds A's address (BOARDSTREAM_KAFKA_HOST), and a client in
    host B produces and consumes through it; B's own localhost has no broker."""
    a = hosts.address("a")
    servers = f"{a}:9092"
    env = hosts.environment(
        "a",
        {
            "BOARDSTREAM_KAFKA_HOST": a,
            "BOARDSTREAM_BOOTSTRAP_SERVERS": servers,
            "BOARDSTREAM_JAR_CACHE": str(PROJECT_ROOT / "var" / "jars"),
        },
    )

    def in_a(*args: str) -> subprocess.CompletedProcess[str]:
        command = hosts.command("a", cli_command(*args))
        return subprocess.run(command, capture_output=True, text=True, env=env, timeout=120)

    try:
        up = in_a("stack", "up")
        assert up.returncode == 0, up.stdout + up.stderr
        assert "kafka started (pid" in up.stdout and f"on {servers}" in up.stdout
        assert probe(hosts, None, a, 9092) == "connected"
        client = subprocess.run(
            hosts.command("b", [sys.executable, "-c", KAFKA_CLIENT, servers]),
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert (client.returncode, client.stdout) == (0, "from b\n"), client.stderr
        assert probe(hosts, "b", "127.0.0.1", 9092) == "refused"
        assert (hosts.var_dir("a") / "kafka" / "data" / "meta.properties").exists()
    finally:
        down = in_a("stack", "down")
    assert down.returncode == 0, down.stdout + down.stderr
    assert "kafka stopped" in down.stdout
    assert probe(hosts, None, a, 9092) == "refused"


def _ip(*args: str) -> str:
    return subprocess.run(["ip", *args], capture_output=True, text=True, check=True).stdout


def _zombie(pid: int) -> bool:
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
