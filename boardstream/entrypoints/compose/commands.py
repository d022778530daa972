"""How the run runs a command: every phase's tool (docker, go, debootstrap) through one call,
so a failure ends the run alike everywhere, naming the command and, captured, its output's tail;
a heavy command (a build) at idle CPU and I/O priority, as the machine is shared."""

from __future__ import annotations

import os
import subprocess

NICE = ["nice", "-n", "19", "ionice", "-c3"]


def log(message: str) -> None:
    print(f"compose-run: {message}", flush=True)


def run(
    *command: str,
    heavy: bool = False,
    check: bool = True,
    capture: bool = False,
    timeout: float | None = None,
    env: dict[str, str] | None = None,
) -> subprocess.CompletedProcess[str]:
    full = [*(NICE if heavy else []), *command]
    result = subprocess.run(
        full,
        text=True,
        capture_output=capture,
        timeout=timeout,
        check=False,
        env={**os.environ, **(env or {})},
    )
    if check and result.returncode != 0:
        detail = (result.stdout or "")[-3000:] + (result.stderr or "")[-3000:] if capture else ""
        raise SystemExit(
            f"compose-run: {' '.join(command[:6])} … failed ({result.returncode}) {detail}"
        )
    return result
