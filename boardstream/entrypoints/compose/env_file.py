"""The run's ``.env``: ``.env.example`` with every ``change-me`` replaced by a generated secret
and, on request, the host ports moved, so a run needs no secret in the checkout and can sit
beside another stack's ports."""

from __future__ import annotations

import secrets
from pathlib import Path

from boardstream.settings import PROJECT_ROOT

ENV_EXAMPLE = PROJECT_ROOT / ".env.example"
# The host ports .env maps, at an offset from a base (the compose file's are .env.example's).
PORT_OFFSETS = {"AIRFLOW_PORT": 80, "SPARK_UI_PORT": 81, "HDFS_UI_PORT": 870, "KAFKA_HOST_PORT": 92}
SECRETS = {
    "POSTGRES_PASSWORD": lambda: secrets.token_urlsafe(24),
    "AIRFLOW_ADMIN_PASSWORD": lambda: secrets.token_urlsafe(18),
    "AIRFLOW_FERNET_KEY": lambda: _fernet_key(),
    "AIRFLOW_JWT_SECRET": lambda: secrets.token_urlsafe(32),
}


def _fernet_key() -> str:
    from cryptography.fernet import Fernet

    return Fernet.generate_key().decode()


def read_env(path: Path) -> dict[str, str]:
    lines = path.read_text().splitlines()
    return dict(line.split("=", 1) for line in lines if line and not line.startswith("#"))


def make_env(directory: Path, port_base: int | None) -> Path:
    """``.env.example`` with every change-me replaced by a generated secret and, with a
    ``port_base``, the host ports moved there; written 0600 into ``directory``."""
    lines = []
    for line in ENV_EXAMPLE.read_text().splitlines():
        key, sep, value = line.partition("=")
        if sep and not line.startswith("#"):
            if value == "change-me":
                if key not in SECRETS:
                    raise SystemExit(f"compose-run: no generator for {key}=change-me")
                value = SECRETS[key]()
            if port_base is not None and key in PORT_OFFSETS:
                value = str(port_base + PORT_OFFSETS[key])
            line = f"{key}={value}"
        lines.append(line)
    path = directory / ".env"
    path.touch(mode=0o600)
    path.write_text("\n".join(lines) + "\n")
    return path


def airflow_url(env: dict[str, str]) -> str:
    """The API server and UI as the host reaches them, at the ``.env``'s port."""
    return f"http://localhost:{env['AIRFLOW_PORT']}"
