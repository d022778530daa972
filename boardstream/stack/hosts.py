"""Hosts of a test cluster on one machine: Linux network namespaces on a bridge.

Each host is a namespace ``bsh-<name>`` with a loopback of its own and one interface, ``eth0``,
the end of a veth pair whose other end (``bsh-v<n>``) is a port of the bridge ``bsh-br0`` in
the root namespace. Host n (from 0) is 10.231.0.<n + 2>; the bridge is 10.231.0.1, so the
tests, in the root namespace, reach every host directly. A service bound to a host's address is
reached from the other hosts at that address; one bound to 127.0.0.1 only from its own host;
and a host cut off (``cut``: its bridge port down) is reached by nobody, as a machine whose
cable was pulled. Nothing routes out of the subnet: the hosts have no default route.

Each host also has a var directory of its own, which every process started in it gets as
``BOARDSTREAM_VAR_DIR`` (and no other ``BOARDSTREAM_*`` variable of ours): no host reads another's
local files (pid files, SQLite, checkpoints) through the settings.

Everything created is named ``bsh-``, and ``down`` removes only what these hosts named.
Network namespaces need root and iproute2's ``ip``.
"""

from __future__ import annotations

import contextlib
import ipaddress
import logging
import os
import re
import shutil
import signal
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from boardstream.errors import BoardstreamError
from boardstream.settings import Settings
from boardstream.stack.processes import ManagedProcess

logger = logging.getLogger(__name__)

PREFIX = "bsh"
BRIDGE = f"{PREFIX}-br0"
SUBNET = ipaddress.IPv4Network("10.231.0.0/24")
BRIDGE_ADDRESS = SUBNET[1]
FIRST_HOST = 2  # host n's address: SUBNET[FIRST_HOST + n]
HOST_INTERFACE = "eth0"  # a host's end of its veth, inside its namespace
# A name fits a namespace file and the settings' host names; it appears only in the namespace's
# name (interface names, at most 15 characters, use the host's number instead).
NAME = re.compile(r"[a-z][a-z0-9-]{0,31}")


class HostsError(BoardstreamError):
    """The hosts could not be set up or torn down: no root, no ``ip``, or ``ip`` failed."""


@dataclass(frozen=True)
class Host:
    name: str
    number: int  # from 0, in the order the hosts were named
    root: Path

    @property
    def namespace(self) -> str:
        return f"{PREFIX}-{self.name}"

    @property
    def address(self) -> str:
        return str(SUBNET[FIRST_HOST + self.number])

    @property
    def port(self) -> str:
        """Its veth's end on the bridge, in the root namespace: down, the host is cut off."""
        return f"{PREFIX}-v{FIRST_HOST + self.number}"

    @property
    def var_dir(self) -> Path:
        return self.root / self.name / "var"


class Hosts:
    """The hosts ``names``, their var directories under ``root``."""

    def __init__(self, names: list[str], root: Path) -> None:
        for name in names:
            if not NAME.fullmatch(name):
                raise HostsError(
                    f"host name {name!r}: lower-case letters, digits and '-', starting with a "
                    "letter, at most 32 characters"
                )
        if len(set(names)) != len(names):
            raise HostsError(f"host names repeat: {names}")
        if FIRST_HOST + len(names) >= SUBNET.num_addresses - 1:
            raise HostsError(f"{len(names)} hosts do not fit in {SUBNET}")
        self.root = root
        self.hosts = {name: Host(name, n, root) for n, name in enumerate(names)}
        self._processes: dict[str, list[ManagedProcess]] = {name: [] for name in names}

    def host(self, name: str) -> Host:
        try:
            return self.hosts[name]
        except KeyError:
            raise HostsError(f"no host {name!r}; the hosts are {', '.join(self.hosts)}") from None

    def address(self, name: str) -> str:
        return self.host(name).address

    def var_dir(self, name: str) -> Path:
        return self.host(name).var_dir

    def command(self, name: str, argv: list[str]) -> list[str]:
        """``argv`` run in host ``name``'s network namespace. ``ip netns exec`` execs it in
        place: the process keeps the pid it was started with, and its command line ends as
        ``argv``'s (a ``ManagedProcess`` recognises it by its marker)."""
        return ["ip", "netns", "exec", self.host(name).namespace, *argv]

    def environment(self, name: str, env: Mapping[str, str] | None = None) -> dict[str, str]:
        """This process's environment for a process of host ``name``: without our own
        ``BOARDSTREAM_*`` variables (which could name another host's files), with the host's
        var directory, and ``env`` last."""
        inherited = {k: v for k, v in os.environ.items() if not k.startswith("BOARDSTREAM_")}
        return {**inherited, "BOARDSTREAM_VAR_DIR": str(self.var_dir(name)), **(env or {})}

    def settings(self, name: str, **overrides: object) -> Settings:
        """Settings as a process of host ``name`` reads them (its var directory)."""
        return Settings(**{"var_dir": self.var_dir(name), **overrides})

    def up(self) -> None:
        """Create what is missing of the bridge and the hosts, addressed and up (a host cut
        off is reconnected); what exists is kept."""
        _require()
        links, namespaces = _links(), _namespaces()
        if BRIDGE not in links:
            # Without STP a port forwards as soon as it is up (no forward delay): a reconnected
            # host is reached at once.
            _ip("link", "add", BRIDGE, "type", "bridge", "stp_state", "0", "forward_delay", "0")
        _ip("addr", "replace", f"{BRIDGE_ADDRESS}/{SUBNET.prefixlen}", "dev", BRIDGE)
        _ip("link", "set", BRIDGE, "up")
        for host in self.hosts.values():
            if host.namespace not in namespaces:
                _ip("netns", "add", host.namespace)
            _ip("-n", host.namespace, "link", "set", "lo", "up")
            if host.port not in links:
                _ip(
                    "link", "add", host.port, "type", "veth",
                    "peer", "name", HOST_INTERFACE, "netns", host.namespace,
                )  # fmt: skip
            _ip("link", "set", host.port, "master", BRIDGE, "up")
            _ip(
                "-n", host.namespace, "addr", "replace",
                f"{host.address}/{SUBNET.prefixlen}", "dev", HOST_INTERFACE,
            )  # fmt: skip
            _ip("-n", host.namespace, "link", "set", HOST_INTERFACE, "up")
            host.var_dir.mkdir(parents=True, exist_ok=True)
        logger.info(
            "hosts up on %s: %s",
            BRIDGE,
            ", ".join(f"{h.name} {h.address}" for h in self.hosts.values()),
        )

    def down(self, timeout_s: float = 10.0) -> None:
        """Stop the hosts' processes, then remove their veths, namespaces and the bridge;
        what is already gone is skipped. A namespace outlives its deletion while a process
        runs in it, so whatever still runs in one (started with ``command`` rather than
        ``start``) is killed first."""
        _require()
        for processes in self._processes.values():
            for process in processes:
                process.stop(timeout_s)
            processes.clear()
        links, namespaces = _links(), _namespaces()
        for host in self.hosts.values():
            if host.namespace in namespaces:
                _kill_left_in(host.namespace)
            if host.port in links:
                _ip("link", "del", host.port)  # both ends: the namespace's eth0 too
            if host.namespace in namespaces:
                _ip("netns", "del", host.namespace)
        if BRIDGE in links:
            _ip("link", "del", BRIDGE)
        logger.info("hosts down: %s", ", ".join(self.hosts))

    def cut(self, name: str) -> None:
        """Cut host ``name`` off the network (its bridge port down): its packets go nowhere,
        connections to it time out. Its own loopback and address still work within it."""
        _require()
        _ip("link", "set", self.host(name).port, "down")

    def reconnect(self, name: str) -> None:
        _require()
        _ip("link", "set", self.host(name).port, "up")

    def process(self, name: str, service: str, marker: str) -> ManagedProcess:
        """Host ``name``'s process ``service``, its pid file in the host's var directory;
        ``marker``: a string its command line holds (see ``ManagedProcess``)."""
        return ManagedProcess(
            f"{name}/{service}", self.var_dir(name) / "run" / f"{service}.pid", marker
        )

    def log_file(self, name: str, service: str) -> Path:
        return self.var_dir(name) / "log" / f"{service}.log"

    def start(
        self,
        name: str,
        service: str,
        argv: list[str],
        marker: str,
        env: Mapping[str, str] | None = None,
    ) -> tuple[ManagedProcess, subprocess.Popen[bytes]]:
        """Start ``argv`` in host ``name`` in a session of its own, with the host's environment
        (``environment``), output to the host's ``log/<service>.log``; ``down`` stops it."""
        process = self.process(name, service, marker)
        handle = process.start(
            self.command(name, argv),
            self.log_file(name, service),
            env=self.environment(name, env),
            inherit=False,
        )
        self._processes[name].append(process)
        return process, handle


def _require() -> None:
    """One clear error for what every change needs: iproute2's ``ip``, and root."""
    if shutil.which("ip") is None:
        raise HostsError("the test hosts need iproute2's `ip`, which is not installed")
    if os.geteuid() != 0:
        raise HostsError("the test hosts are network namespaces, which need root")


def _ip(*args: str) -> str:
    command = ["ip", *args]
    result = subprocess.run(command, capture_output=True, text=True, check=False)
    if result.returncode != 0:
        raise HostsError(
            f"`{' '.join(command)}` failed (code {result.returncode}): {result.stderr.strip()}"
        )
    return result.stdout


def _links() -> set[str]:
    """The root namespace's interfaces (a veth listed as ``bsh-v2@if2``)."""
    return {
        line.split(":", 2)[1].strip().split("@")[0]
        for line in _ip("-o", "link", "show").splitlines()
        if line.strip()
    }


def _namespaces() -> set[str]:
    """The named network namespaces (lines such as ``bsh-a (id: 0)``)."""
    return {line.split()[0] for line in _ip("netns", "list").splitlines() if line.strip()}


def _kill_left_in(namespace: str) -> None:
    """SIGKILL what still runs in ``namespace`` (ours: only our hosts run in it)."""
    left = [int(pid) for pid in _ip("netns", "pids", namespace).split()]
    if not left:
        return
    logger.warning("killing processes left in %s: %s", namespace, left)
    for pid in left:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
