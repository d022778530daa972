"""A port a service will listen on is refused while another process listens there, naming that
process and the setting that moves the service; a free port passes."""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys

import pytest

from boardstream.errors import BoardstreamError
from boardstream.stack import ports
from boardstream.stack.ports import ListenPort, env_var, refuse_held
from tests.fixtures import free_port


def test_a_held_port_names_its_holder_and_the_setting() -> None:
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        port = held.getsockname()[1]
        with pytest.raises(BoardstreamError) as refused:
            refuse_held([ListenPort(port, "airflow's api", "BOARDSTREAM_AIRFLOW_PORT")])
    message = str(refused.value)
    assert re.fullmatch(
        rf"port {port} \(airflow's api\) is held by pid {os.getpid()} \(.+\); "
        r"stop it or set BOARDSTREAM_AIRFLOW_PORT",
        message,
    ), message
    assert "\n" not in message


def test_the_holders_command_line_is_cut_to_one_line(tmp_path) -> None:
    code = "import socket, sys\ns = socket.socket()\ns.bind(('127.0.0.1', 0))\ns.listen()\n"
    code += "print(s.getsockname()[1], flush=True)\nsys.stdin.read()\n" + "#" * 200
    holder = subprocess.Popen(
        [sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        port = int(holder.stdout.readline())
        with pytest.raises(BoardstreamError) as refused:
            refuse_held([ListenPort(port, "spark-master's RPC", "BOARDSTREAM_SPARK_MASTER_PORT")])
    finally:
        holder.kill()
        holder.wait()
    command = f"{sys.executable} -c {' '.join(code.split())}"[: ports.COMMAND_CHARS - 3]
    assert str(refused.value) == (
        f"port {port} (spark-master's RPC) is held by pid {holder.pid} ({command}...); "
        "stop it or set BOARDSTREAM_SPARK_MASTER_PORT"
    )


def test_a_free_port_passes() -> None:
    refuse_held([ListenPort(free_port(), "airflow's api", "BOARDSTREAM_AIRFLOW_PORT")])
    refuse_held([])


@pytest.mark.parametrize("listed", [True, False], ids=["holder-unseen", "listing-denied"])
def test_a_holder_that_cannot_be_named_still_refuses_the_port(monkeypatch, listed) -> None:
    """Another user's listener shows without its pid; where listing is denied (not on Linux),
    a bind probe finds the port held."""
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        port = held.getsockname()[1]
        monkeypatch.setattr(ports, "listeners", lambda: {port: None} if listed else None)
        with pytest.raises(BoardstreamError) as refused:
            refuse_held([ListenPort(port, "postgres's server", "BOARDSTREAM_POSTGRES_PORT")])
    assert str(refused.value) == (
        f"port {port} (postgres's server) is held by a process this user may not see; "
        "stop it or set BOARDSTREAM_POSTGRES_PORT"
    )


def test_the_settings_env_var() -> None:
    assert env_var("airflow_port") == "BOARDSTREAM_AIRFLOW_PORT"
    with pytest.raises(ValueError, match="no setting 'airflow_prot'"):
        env_var("airflow_prot")
