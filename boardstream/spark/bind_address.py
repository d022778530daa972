"""The address a Spark driver binds to, chosen rather than guessed.

Left unset, Spark takes the address the host name resolves to; on a host whose name resolves to
a loopback address (``vm`` -> 127.0.0.1 here, common on laptops and in containers) it warns three
times per command, "resolves to a loopback address ... Set SPARK_LOCAL_IP", and binds to the
first non-loopback interface it finds. boardstream knows better: a local master needs loopback
only, and a cluster's master is reached through the interface the route to it leaves by, which is
the one executors can reach the driver at. A ``SPARK_LOCAL_IP`` already set is kept.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Mapping
from urllib.parse import urlsplit

LOOPBACK = "127.0.0.1"
ENV = "SPARK_LOCAL_IP"


def route_to(master: str) -> str | None:
    """The local address the driver of ``master``'s applications should bind to: loopback for
    ``local``/``local[...]``; for ``spark://host:port`` (the first, if several) the source
    address of the route to it (a UDP socket's connect sends nothing); None (Spark decides)
    for any other master, or one whose host does not resolve."""
    if master == "local" or master.startswith("local["):
        return LOOPBACK
    if not master.startswith("spark://"):
        return None
    first = urlsplit(master.split(",")[0])
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
            probe.connect((first.hostname or "", first.port or 7077))
            return probe.getsockname()[0]
    except OSError:
        return None


def bind_env(master: str, environ: Mapping[str, str] = os.environ) -> dict[str, str]:
    """``SPARK_LOCAL_IP`` for a driver of ``master``, unless ``environ`` sets it already."""
    if ENV in environ:
        return {}
    address = route_to(master)
    return {ENV: address} if address else {}
