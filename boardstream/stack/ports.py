"""A port a local service will listen on must be free before it starts, or ``up`` says who holds it.

Started on a held port, a service fails late and unclearly (a Kafka node binds its client port
some 15 s in, amid a stack trace), or seems to succeed: ``up --airflow`` reported Airflow ready
while another api-server answered on its port. Any listener on the port counts, whatever its
address; a port left in TIME_WAIT by a service's last run is free.
"""

from __future__ import annotations

import socket
from collections.abc import Iterable
from dataclasses import dataclass

import psutil

from boardstream.errors import BoardstreamError
from boardstream.settings import Settings

# A holder's command line is cut here: enough to recognise it, short enough for one line.
COMMAND_CHARS = 80


@dataclass(frozen=True)
class ListenPort:
    """A TCP port a service listens on: ``what`` it is (``airflow's api``) and the setting that
    moves it (``BOARDSTREAM_AIRFLOW_PORT``)."""

    port: int
    what: str
    setting: str


def env_var(field: str) -> str:
    """The environment variable that sets ``field`` of the settings (``BOARDSTREAM_<FIELD>``)."""
    if field not in Settings.model_fields:
        raise ValueError(f"no setting {field!r}")
    return f"{Settings.model_config['env_prefix']}{field.upper()}"


def refuse_held(ports: Iterable[ListenPort]) -> None:
    """Raise naming the first of ``ports`` held by another process, and that process."""
    wanted = list(ports)
    if not wanted:
        return
    listening = listeners()
    for each in wanted:
        held = not _bindable(each.port) if listening is None else each.port in listening
        if held:
            holder = _holder(listening.get(each.port) if listening else None)
            raise BoardstreamError(
                f"port {each.port} ({each.what}) is held by {holder}; stop it or set {each.setting}"
            )


def listeners() -> dict[int, int | None] | None:
    """Every listening TCP port of this machine and the pid holding it (None when that process
    is another user's), or None where the system does not let us list them."""
    try:
        connections = psutil.net_connections(kind="tcp")
    except psutil.AccessDenied:
        return None
    held: dict[int, int | None] = {}
    for connection in connections:
        if connection.status == psutil.CONN_LISTEN and connection.laddr:
            port = connection.laddr.port
            held[port] = held.get(port) or connection.pid
    return held


def _bindable(port: int) -> bool:
    """Where listeners cannot be listed: whether binding the port would work (reusing
    addresses as the services do, so TIME_WAIT does not count)."""
    with socket.socket() as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(("", port))
        except OSError:
            return False
    return True


def _holder(pid: int | None) -> str:
    """``pid 1234 (its command line)``, or what can be said without permission to see it."""
    if pid is None:
        return "a process this user may not see"
    try:
        # One line: an argument may hold newlines (``python -c`` code).
        command = " ".join(" ".join(psutil.Process(pid).cmdline()).split())
    except psutil.Error:
        return f"pid {pid}"
    if len(command) > COMMAND_CHARS:
        command = command[: COMMAND_CHARS - 3] + "..."
    return f"pid {pid} ({command})" if command else f"pid {pid}"
