"""Background services tracked by pid files, so ``down`` stops only what ``up`` started, whole.

A pid file alone can outlive its process and the pid be reused; a process counts as ours only
while its command line still contains the marker it was started with (its own data directory).
Each service starts in a session of its own, so the processes it starts in turn (Airflow's
scheduler, api-server and workers; a Spark worker's executors) are found by their session id
and stopped with it: stopping the leader alone left them running, Airflow's api-server still
on its port.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from boardstream.errors import BoardstreamError
from boardstream.settings import Settings
from boardstream.stack.ports import ListenPort


@dataclass(frozen=True)
class ManagedProcess:
    name: str
    pid_file: Path
    marker: str
    stop_signal: signal.Signals = signal.SIGTERM

    def pid(self) -> int | None:
        """The pid of our live process, or None (a stale pid file is removed)."""
        try:
            pid = int(self.pid_file.read_text().strip())
        except (FileNotFoundError, ValueError):
            return None
        cmdline = _cmdline(pid)
        if cmdline and self.marker in cmdline:
            return pid
        if cmdline == "" and _alive(pid):
            return None  # being exec'd (see start): not known yet, but not stale either
        self.pid_file.unlink(missing_ok=True)
        return None

    def start(
        self,
        command: list[str],
        log_file: Path,
        env: Mapping[str, str] | None = None,
        inherit: bool = True,
    ) -> subprocess.Popen[bytes]:
        """Start ``command`` in its own session, output appended to ``log_file``, with ``env``
        over this process's environment (or, not ``inherit``-ing it, ``env`` alone: a test
        host's process, see hosts.py).

        Callers waiting for readiness watch the returned handle, not ``pid()``: right after
        the exec the kernel can show an empty command line for a moment (seen about once in a
        hundred java starts), which ``pid()`` would take for a process that is not ours.
        """
        log_file.parent.mkdir(parents=True, exist_ok=True)
        self.pid_file.parent.mkdir(parents=True, exist_ok=True)
        with log_file.open("ab") as log:
            process = subprocess.Popen(
                command,
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
                env={**(os.environ if inherit else {}), **(env or {})},
            )
        self.pid_file.write_text(str(process.pid))
        return process

    def signal(self) -> None:
        """Send ``stop_signal`` and return: processes that stop together (a Kafka cluster's
        nodes) are all told before any is waited for with ``stop``."""
        pid = self.pid()
        if pid is not None:
            os.kill(pid, self.stop_signal)

    def stop(self, timeout_s: float = 30.0) -> bool:
        """Stop the process and its session (see ``_terminate``); False if it was not running."""
        pid = self.pid()
        if pid is None:
            return False
        self._terminate(pid, timeout_s)
        return True

    def stop_started(self, process: subprocess.Popen[bytes], timeout_s: float = 30.0) -> None:
        """Stop a process ``start`` returned, and its session, by its handle: just after the
        exec, ``pid()`` may not recognise it yet (see ``start``), and would leave it running.
        A leader that exited may have left processes of its session behind: they are stopped."""
        if process.poll() is None or session_members(process.pid):
            self._terminate(process.pid, timeout_s)
        self.pid_file.unlink(missing_ok=True)

    def _terminate(self, leader: int, timeout_s: float) -> None:
        """``stop_signal`` to the session's leader, which stops its own processes (Airflow
        standalone its components, on SIGINT); within ``timeout_s``, wait for the leader, then
        for the rest of its session; SIGKILL whatever of the session is left, until it is gone.
        ``start`` made the leader's pid its session's id."""
        if _alive(leader):
            with contextlib.suppress(ProcessLookupError):
                os.kill(leader, self.stop_signal)
        deadline = time.monotonic() + timeout_s
        while _alive(leader) and time.monotonic() < deadline:
            time.sleep(0.2)
        while session_members(leader) and time.monotonic() < deadline:
            time.sleep(0.2)
        while left := session_members(leader):
            for pid in left:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            time.sleep(0.1)
        self.pid_file.unlink(missing_ok=True)


class LocalService:
    """A service of the local stack: its home ``var/<name>``, its log ``var/log/<name>.log``
    and its process, recognised by ``marker`` in its command line."""

    # The class's; an instance may set its own before this __init__ (a Kafka cluster's nodes).
    name: str
    stop_signal: ClassVar[signal.Signals] = signal.SIGTERM

    def __init__(self, settings: Settings, marker: str) -> None:
        self.settings = settings
        self.home = settings.var_dir / self.name
        self.log_file = settings.var_dir / "log" / f"{self.name}.log"
        self.process = ManagedProcess(
            self.name, settings.var_dir / "run" / f"{self.name}.pid", marker, self.stop_signal
        )

    def listen_ports(self) -> list[ListenPort]:
        """The TCP ports the service will listen on, which ``up`` checks are free first."""
        raise NotImplementedError(f"{type(self).__name__} names no ports")

    def await_ready(
        self,
        process: subprocess.Popen[bytes],
        ready: Callable[[], bool],
        what: str,
        timeout_s: float,
    ) -> None:
        """Return once ``ready()``; if ``process`` exits first or the time runs out (then it is
        stopped), say so with the end of the service's log. ``what`` names it in the error."""
        await_started([Starting(self, process, what)], ready, timeout_s)


@dataclass(frozen=True)
class Starting:
    """A service's process just started; ``what`` names it in errors."""

    service: LocalService
    process: subprocess.Popen[bytes]
    what: str


def await_started(starting: list[Starting], ready: Callable[[], bool], timeout_s: float) -> None:
    """Return once ``ready()``. If one of the processes exits first, or the time runs out, stop
    all of them (a cluster is started whole or not at all) and say why, with the end of the
    log of the one that exited (or of the first)."""
    deadline = time.monotonic() + timeout_s
    while True:
        exited = [s for s in starting if s.process.poll() is not None]
        if exited:
            _stop_all(starting)
            failed = exited[0]
            raise BoardstreamError(
                f"{failed.what} exited (code {failed.process.returncode}) while starting; last "
                f"lines of {failed.service.log_file}:\n" + log_tail(failed.service.log_file)
            )
        if ready():
            return
        if time.monotonic() > deadline:
            _stop_all(starting)
            log_file = starting[0].service.log_file
            names = " and ".join(s.what for s in starting)
            raise BoardstreamError(
                f"{names} {'was' if len(starting) == 1 else 'were'} not ready within "
                f"{timeout_s:g}s; see {log_file}:\n" + log_tail(log_file)
            )
        time.sleep(0.5)


def _stop_all(starting: list[Starting]) -> None:
    """All are signalled before any is waited for (a cluster's last node alone would have no
    quorum to shut down with)."""
    for each in starting:
        each.process.send_signal(each.service.process.stop_signal)
    for each in starting:
        each.service.process.stop_started(each.process)


def log_tail(path: Path, lines: int = 20) -> str:
    """The end of a service's log, for the error that says why it did not start."""
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except FileNotFoundError:
        return "(no log)"


def session_members(session: int) -> list[int]:
    """The live processes (zombies are gone) of ``session``, from /proc. A session's id stays
    its leader's pid while any member lives, and that pid is not reused meanwhile."""
    members = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        pid = int(entry.name)
        try:
            if os.getsid(pid) != session:
                continue
        except OSError:  # exited since the listing
            continue
        if _alive(pid):
            members.append(pid)
    return sorted(members)


def _cmdline(pid: int) -> str | None:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return None


def _alive(pid: int) -> bool:
    """True while ``pid`` exists and is not a zombie (we may be its parent and not reap it)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    if state == "Z":
        with contextlib.suppress(ChildProcessError):
            os.waitpid(pid, os.WNOHANG)
        return False
    return True
