"""Hosts of a test cluster on one machine: Linux network namespaces on a bridge.

Each host is a namespace ``bsh-<name>`` with a loopback of its own and one interface, ``eth0``,
the end of a veth pair whose other end (``bsh-v<n>``) is a port of the bridge ``bsh-br0`` in
the root namespace. Host n (from 0) is 10.231.0.<n + 2>; the bridge is 10.231.0.1, so the
tests, in the root namespace, reach every host directly. A service bound to a host's address is
reached from the other hosts at that address; one bound to 127.0.0.1 only from its own host;
and a host cut off (``cut``: its bridge port down) is reached by nobody, as a machine whose
cable was pulled. Nothing routes out of the subnet: the hosts have no default route.

Each host also has a name of its own: its processes see the namespace's name as their hostname
(a UTS namespace each), and every host's name resolves to its address in every host (``ip netns
exec`` mounts ``/etc/netns/<namespace>/hosts`` over ``/etc/hosts``), as machines on a network.
A lease's holder, a Spark executor or an HDFS DataNode names its host truly.

Each host also has a var directory of its own, which every process started in it gets as
``BOARDSTREAM_VAR_DIR`` (and no other ``BOARDSTREAM_*`` variable of ours): no host reads another's
local files (pid files, SQLite, checkpoints) through the settings.

Everything created is named ``<prefix>-`` (``bsh`` and 10.231.0.0/24 unless another ``Network``
is given), and ``down`` removes only what these hosts named.
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
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from boardstream.errors import BoardstreamError
from boardstream.settings import Settings
from boardstream.stack.processes import ManagedProcess

logger = logging.getLogger(__name__)

FIRST_HOST = 2  # host n's address: the subnet's address FIRST_HOST + n
# Where ``ip netns exec`` finds a namespace's own /etc files (ip-netns(8)).
NETNS_ETC = Path("/etc/netns")
HOST_INTERFACE = "eth0"  # a host's end of its veth, inside its namespace
# A name fits a namespace file and the settings' host names; it appears only in the namespace's
# name (interface names, at most 15 characters, use the host's number instead).
NAME = re.compile(r"[a-z][a-z0-9-]{0,31}")


@dataclass(frozen=True)
class Network:
    """The bridge and subnet hosts share, its names all starting ``prefix-``. Two sets of hosts
    on one machine (two test sessions) need a network each: ``down`` removes its bridge."""

    prefix: str = "bsh"
    block: str = "10.231.0.0/24"

    def __post_init__(self) -> None:
        if not re.fullmatch(r"[a-z][a-z0-9]{0,5}", self.prefix):
            raise HostsError(
                f"network prefix {self.prefix!r}: 1-6 lower-case letters and digits, starting "
                "with a letter (interface names hold at most 15 characters)"
            )

    @property
    def subnet(self) -> ipaddress.IPv4Network:
        return ipaddress.IPv4Network(self.block)

    @property
    def bridge(self) -> str:
        return f"{self.prefix}-br0"

    @property
    def bridge_address(self) -> str:
        return str(self.subnet[1])

    def cidr(self, address: str) -> str:
        return f"{address}/{self.subnet.prefixlen}"


DEFAULT_NETWORK = Network()


class HostsError(BoardstreamError):
    """The hosts could not be set up or torn down: no root, no ``ip``, or ``ip`` failed."""


@dataclass(frozen=True)
class Host:
    name: str
    number: int  # from 0, in the order the hosts were named
    root: Path
    network: Network = DEFAULT_NETWORK

    @property
    def namespace(self) -> str:
        return f"{self.network.prefix}-{self.name}"

    @property
    def address(self) -> str:
        return str(self.network.subnet[FIRST_HOST + self.number])

    @property
    def hostname(self) -> str:
        return self.namespace

    @property
    def port(self) -> str:
        """Its veth's end on the bridge, in the root namespace: down, the host is cut off."""
        return f"{self.network.prefix}-v{FIRST_HOST + self.number}"

    @property
    def var_dir(self) -> Path:
        return self.root / self.name / "var"


class Hosts:
    """The hosts ``names`` on ``network``, their var directories under ``root``."""

    def __init__(self, names: list[str], root: Path, network: Network = DEFAULT_NETWORK) -> None:
        for name in names:
            if not NAME.fullmatch(name):
                raise HostsError(
                    f"host name {name!r}: lower-case letters, digits and '-', starting with a "
                    "letter, at most 32 characters"
                )
        if len(set(names)) != len(names):
            raise HostsError(f"host names repeat: {names}")
        if FIRST_HOST + len(names) >= network.subnet.num_addresses - 1:
            raise HostsError(f"{len(names)} hosts do not fit in {network.subnet}")
        self.root, self.network = root, network
        self.hosts = {name: Host(name, n, root, network) for n, name in enumerate(names)}
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
        """``argv`` run in host ``name``'s network namespace, under its hostname. ``ip netns
        exec``, ``unshare`` and the shell each exec the next in place: the process keeps the
        pid it was started with, and its command line ends as ``argv``'s (a ``ManagedProcess``
        recognises it by its marker)."""
        host = self.host(name)
        named = ["unshare", "--uts", "--", "sh", "-c", 'hostname "$0" && exec "$@"', host.hostname]
        return ["ip", "netns", "exec", host.namespace, *named, *argv]

    def environment(self, name: str, env: Mapping[str, str] | None = None) -> dict[str, str]:
        """This process's environment for a process of host ``name``: without our own
        ``BOARDSTREAM_*`` variables (which could name another host's files), with the host's
        var directory, its address as Spark's ``SPARK_LOCAL_IP`` (the hosts share the machine's
        hostname, which names none of them: a driver, master or worker would advertise an
        address other hosts cannot reach), and ``env`` last."""
        inherited = {k: v for k, v in os.environ.items() if not k.startswith("BOARDSTREAM_")}
        own = {"BOARDSTREAM_VAR_DIR": str(self.var_dir(name)), "SPARK_LOCAL_IP": self.address(name)}
        return {**inherited, **own, **(env or {})}

    def settings(self, name: str, **overrides: object) -> Settings:
        """Settings as a process of host ``name`` reads them (its var directory)."""
        return Settings(**{"var_dir": self.var_dir(name), **overrides})

    def up(self) -> None:
        """Create what is missing of the bridge and the hosts, addressed and up (a host cut
        off is reconnected); what exists is kept."""
        _require()
        links, namespaces, net = _links(), _namespaces(), self.network
        if net.bridge not in links:
            # Without STP a port forwards as soon as it is up (no forward delay): a reconnected
            # host is reached at once.
            _ip("link", "add", net.bridge, "type", "bridge", "stp_state", "0", "forward_delay", "0")
        _ip("addr", "replace", net.cidr(net.bridge_address), "dev", net.bridge)
        _ip("link", "set", net.bridge, "up")
        _forwarding(net.bridge, "-I")
        for host in self.hosts.values():
            if host.namespace not in namespaces:
                _ip("netns", "add", host.namespace)
            _ip("-n", host.namespace, "link", "set", "lo", "up")
            if host.port not in links:
                _ip(
                    "link", "add", host.port, "type", "veth",
                    "peer", "name", HOST_INTERFACE, "netns", host.namespace,
                )  # fmt: skip
            _ip("link", "set", host.port, "master", net.bridge, "up")
            _ip(
                "-n", host.namespace, "addr", "replace",
                net.cidr(host.address), "dev", HOST_INTERFACE,
            )  # fmt: skip
            _ip("-n", host.namespace, "link", "set", HOST_INTERFACE, "up")
            host.var_dir.mkdir(parents=True, exist_ok=True)
            etc = NETNS_ETC / host.namespace
            etc.mkdir(parents=True, exist_ok=True)
            (etc / "hosts").write_text(self._hosts_file())
        logger.info(
            "hosts up on %s: %s",
            net.bridge,
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
            shutil.rmtree(NETNS_ETC / host.namespace, ignore_errors=True)
        with contextlib.suppress(OSError):  # left when another's files are in it
            NETNS_ETC.rmdir()
        if self.network.bridge in links:
            _ip("link", "del", self.network.bridge)
        _forwarding(self.network.bridge, "-D")
        logger.info("hosts down: %s", ", ".join(self.hosts))

    def _hosts_file(self) -> str:
        """Every host's /etc/hosts: its loopback, and each host's name at its address."""
        lines = ["127.0.0.1 localhost", "::1 localhost"]
        lines += [f"{host.address} {host.hostname}" for host in self.hosts.values()]
        return "\n".join(lines) + "\n"

    def cut(self, name: str) -> None:
        """Cut host ``name`` off the network (its bridge port down): its packets go nowhere,
        connections to it time out. Its own loopback and address still work within it."""
        _require()
        _ip("link", "set", self.host(name).port, "down")

    def reconnect(self, name: str) -> None:
        _require()
        _ip("link", "set", self.host(name).port, "up")

    def kill(self, name: str) -> list[int]:
        """SIGKILL every process of host ``name``, as when its machine dies: the pids killed
        (again until none is left, so that none forked meanwhile survives). Its namespace and
        address stay (the machine can be started again)."""
        _require()
        killed: list[int] = []
        # A pid listed again is one killed already that is not reaped yet (a zombie): done.
        while (left := _kill_left_in(self.host(name).namespace, quiet=True)) and not set(
            left
        ) <= set(killed):
            killed += [pid for pid in left if pid not in killed]
            time.sleep(0.1)
        return killed

    def pids(self, name: str) -> list[int]:
        """What runs in host ``name`` now."""
        return [int(pid) for pid in _ip("netns", "pids", self.host(name).namespace).split()]

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


def _forwarding(bridge: str, action: str) -> None:
    """Insert (``-I``) or delete (``-D``) the firewall rule that forwards between the bridge's
    own ports. Where bridged frames pass iptables (br_netfilter) and FORWARD drops by default,
    as Docker's engine leaves it once it has run, the hosts would not reach each other without
    it. Kept to one copy; nothing to do without iptables (then nothing set such a policy)."""
    if shutil.which("iptables") is None:
        return
    rule = ["FORWARD", "-i", bridge, "-o", bridge, "-j", "ACCEPT"]
    present = subprocess.run(["iptables", "-C", *rule], capture_output=True, check=False)
    if (present.returncode == 0) == (action == "-I"):
        return
    result = subprocess.run(
        ["iptables", action, *rule], capture_output=True, text=True, check=False
    )
    if result.returncode != 0:
        raise HostsError(
            f"`iptables {action} {' '.join(rule)}` failed (code {result.returncode}): "
            f"{result.stderr.strip()}"
        )


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


def _kill_left_in(namespace: str, quiet: bool = False) -> list[int]:
    """SIGKILL what runs in ``namespace`` (ours: only our hosts run in it); said as a warning
    unless ``quiet`` (a host's death asked for)."""
    left = [int(pid) for pid in _ip("netns", "pids", namespace).split()]
    if left and not quiet:
        logger.warning("killing processes left in %s: %s", namespace, left)
    for pid in left:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    return left
