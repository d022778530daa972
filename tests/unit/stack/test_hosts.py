"""Test hosts, without creating any: their names, addresses and var directories, the commands
that run in them, the environment their processes get, and the one error for no root or no
``ip``."""

from __future__ import annotations

from pathlib import Path

import pytest

from boardstream.stack import hosts as hosts_module
from boardstream.stack.hosts import Hosts, HostsError, Network


def test_each_host_has_a_namespace_an_address_a_port_and_a_var_dir_of_its_own() -> None:
    hosts = Hosts(["kafka-1", "spark-worker-2"], Path("/tmp/cluster"))
    first, second = hosts.host("kafka-1"), hosts.host("spark-worker-2")
    assert (first.namespace, first.address, first.port) == ("bsh-kafka-1", "10.231.0.2", "bsh-v2")
    assert (second.namespace, second.address, second.port) == (
        "bsh-spark-worker-2",
        "10.231.0.3",
        "bsh-v3",
    )
    assert hosts.var_dir("spark-worker-2") == Path("/tmp/cluster/spark-worker-2/var")
    assert hosts.settings("kafka-1").var_dir == Path("/tmp/cluster/kafka-1/var")


def test_a_command_runs_in_the_hosts_namespace_under_its_hostname() -> None:
    hosts = Hosts(["a"], Path("/tmp/cluster"))
    assert hosts.command("a", ["python", "-m", "http.server"]) == [
        "ip", "netns", "exec", "bsh-a",
        "unshare", "--uts", "--", "sh", "-c", 'hostname "$0" && exec "$@"', "bsh-a",
        "python", "-m", "http.server",
    ]  # fmt: skip
    process = hosts.process("a", "http", marker="/tmp/cluster/a/var")
    assert process.pid_file == Path("/tmp/cluster/a/var/run/http.pid")
    assert hosts.log_file("a", "http") == Path("/tmp/cluster/a/var/log/http.log")


def test_a_hosts_process_gets_its_var_dir_and_none_of_our_settings(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("BOARDSTREAM_VAR_DIR", "/ours")
    monkeypatch.setenv("BOARDSTREAM_CHECKPOINT_ROOT", "/ours/checkpoints")
    monkeypatch.setenv("PATH", "/usr/bin")
    env = Hosts(["a"], Path("/tmp/cluster")).environment("a", {"BOARDSTREAM_BROKERS": "3"})
    assert {k: v for k, v in env.items() if k.startswith("BOARDSTREAM_")} == {
        "BOARDSTREAM_VAR_DIR": "/tmp/cluster/a/var",
        "BOARDSTREAM_BROKERS": "3",
    }
    assert env["PATH"] == "/usr/bin"
    assert env["SPARK_LOCAL_IP"] == "10.231.0.2"  # Spark advertises the host's own address


def test_hosts_on_another_network_share_no_name_or_address_with_the_default() -> None:
    hosts = Hosts(["a"], Path("/tmp/cluster"), Network("bsk", "10.232.7.0/24"))
    host = hosts.host("a")
    assert (host.namespace, host.address, host.port) == ("bsk-a", "10.232.7.2", "bsk-v2")
    assert (hosts.network.bridge, hosts.network.bridge_address) == ("bsk-br0", "10.232.7.1")
    with pytest.raises(HostsError, match="network prefix 'bs-k'"):
        Network("bs-k")


@pytest.mark.parametrize(
    ("names", "error"),
    [
        (["A"], "host name 'A'"),
        (["bsh a"], "host name 'bsh a'"),
        (["x" * 33], "at most 32"),
        (["a", "a"], "repeat"),
        ([f"h{n}" for n in range(253)], "do not fit in 10.231.0.0/24"),
    ],
)
def test_names_that_would_not_make_hosts_are_refused(names: list[str], error: str) -> None:
    with pytest.raises(HostsError, match=error):
        Hosts(names, Path("/tmp/cluster"))


def test_an_unknown_host_is_named_with_the_known_ones() -> None:
    with pytest.raises(HostsError, match="no host 'd'; the hosts are a, b"):
        Hosts(["a", "b"], Path("/tmp/cluster")).address("d")


def test_without_root_or_ip_nothing_is_tried(monkeypatch: pytest.MonkeyPatch) -> None:
    hosts = Hosts(["a"], Path("/tmp/cluster"))
    ran: list[tuple[str, ...]] = []
    monkeypatch.setattr(hosts_module, "_ip", lambda *args: ran.append(args) or "")
    monkeypatch.setattr(hosts_module.os, "geteuid", lambda: 1000)
    with pytest.raises(HostsError, match="network namespaces, which need root"):
        hosts.up()
    monkeypatch.setattr(hosts_module.shutil, "which", lambda name: None)
    with pytest.raises(HostsError, match="need iproute2's `ip`, which is not installed"):
        hosts.down()
    assert ran == []
