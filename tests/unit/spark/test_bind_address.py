"""The driver's bind address: loopback for a local master, the route's source address for a
cluster's, Spark's own choice otherwise, and a user's SPARK_LOCAL_IP kept."""

from __future__ import annotations

import socket

import psutil
import pytest

from boardstream.spark.bind_address import bind_env, route_to


@pytest.mark.parametrize(
    ("master", "address"),
    [
        ("local", "127.0.0.1"),
        ("local[2]", "127.0.0.1"),
        ("spark://127.0.0.1:7077", "127.0.0.1"),
        ("spark://127.0.0.1:7077,127.0.0.1:7078", "127.0.0.1"),  # standby masters
        ("spark://no-such-host.invalid:7077", None),
        ("yarn", None),
        ("k8s://https://10.0.0.1:443", None),
    ],
)
def test_the_address_a_driver_binds_to(master: str, address: str | None) -> None:
    assert route_to(master) == address


def test_a_spark_local_ip_already_set_is_kept() -> None:
    assert bind_env("local[2]", {"SPARK_LOCAL_IP": "10.1.2.3"}) == {}
    assert bind_env("local[2]", {}) == {"SPARK_LOCAL_IP": "127.0.0.1"}
    assert bind_env("yarn", {}) == {}


def test_a_cluster_master_on_an_address_of_this_host_is_reached_from_that_address() -> None:
    """Every IPv4 address of this host's interfaces (eth0's as well as loopback here): a
    master there is routed to from the address itself, the one executors would reach the
    driver at; the probe sends nothing."""
    addresses = {
        address.address
        for entries in psutil.net_if_addrs().values()
        for address in entries
        if address.family == socket.AF_INET
    }
    assert "127.0.0.1" in addresses
    assert {a: route_to(f"spark://{a}:7077") for a in addresses} == {a: a for a in addresses}
