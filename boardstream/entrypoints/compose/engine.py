"""The Docker engine the run uses: one that answers, else a ``dockerd`` the run starts (and
stops) with its networks on the project's own test range, so its bridges never take an address
the namespace hosts or the machine's other networks use."""

from __future__ import annotations

import json
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

from boardstream.entrypoints.compose.commands import log, run

# Docker's networks on the project's own test range (the namespace hosts use 10.231.0.0/24).
ADDRESS_POOL = "10.232.0.0/17"
DEFAULT_BRIDGE = "10.232.255.1/24"


def daemon_config(data_dir: Path) -> dict[str, Any]:
    return {
        "bip": DEFAULT_BRIDGE,
        "default-address-pools": [{"base": ADDRESS_POOL, "size": 24}],
        "data-root": str(data_dir),
        "storage-driver": "overlay2",
        "exec-opts": ["native.cgroupdriver=cgroupfs"],
        "log-driver": "json-file",
        "log-opts": {"max-size": "20m", "max-file": "2"},
    }


class Engine:
    """``directory`` holds a started dockerd's config, pid file and log."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        # Kept as soon as started: a dockerd that never answers is stopped all the same.
        self.started: subprocess.Popen[bytes] | None = None

    def ensure(self) -> None:
        if run("docker", "info", check=False, capture=True).returncode == 0:
            log("a Docker engine answers; using it")
            return
        dockerd = shutil.which("dockerd")
        if dockerd is None:
            raise SystemExit("compose-run: no dockerd: `bin/setup --docker` installs docker.io")
        directory = self.directory
        directory.mkdir(exist_ok=True)
        config = directory / "daemon.json"
        config.write_text(json.dumps(daemon_config(Path("/var/lib/docker")), indent=2))
        log(f"starting dockerd (networks from {ADDRESS_POOL}), log in {directory}/dockerd.log")
        with open(directory / "dockerd.log", "ab") as out:
            self.started = subprocess.Popen(
                [
                    dockerd,
                    "--config-file",
                    str(config),
                    "--pidfile",
                    str(directory / "dockerd.pid"),
                ],
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )
        (directory / "started-pid").write_text(str(self.started.pid))
        deadline = time.monotonic() + 60
        while run("docker", "info", check=False, capture=True).returncode != 0:
            if self.started.poll() is not None or time.monotonic() > deadline:
                raise SystemExit(f"compose-run: dockerd did not start; see {directory}/dockerd.log")
            time.sleep(1)

    def stop(self) -> None:
        """The dockerd this run started, if it did; an engine that answered is left alone."""
        if self.started is None:
            return
        log(f"stopping the dockerd this run started (pid {self.started.pid})")
        self.started.terminate()
        try:
            self.started.wait(60)
        except subprocess.TimeoutExpired:
            self.started.kill()


def lower_priority() -> None:
    """The containers' CPU weight a quarter of the host's processes' (cgroup v1 shares or
    v2 weight of Docker's parent cgroup), so the stack yields to other work on a shared
    machine. Not idle scheduling: a starved container cannot even exit when stopped."""
    root = Path("/sys/fs/cgroup")
    if (root / "cpu" / "cpu.shares").exists():  # v1
        directory, name, value = root / "cpu" / "docker", "cpu.shares", "256"
    elif (root / "cgroup.controllers").exists():  # v2
        directory, name, value = root / "docker", "cpu.weight", "25"
    else:
        return
    try:
        directory.mkdir(exist_ok=True)
        (directory / name).write_text(value)
        log(f"containers' CPU: {directory / name} = {value}")
    except OSError as error:
        log(f"could not lower the containers' CPU weight: {error}")
