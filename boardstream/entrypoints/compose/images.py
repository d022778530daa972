"""The images the stack starts from: every one the compose file and the Dockerfile name, whether
the engine holds each, and how big each is (for the report)."""

from __future__ import annotations

import re

from boardstream.entrypoints.compose.commands import run
from boardstream.entrypoints.compose.env_file import ENV_EXAMPLE, read_env
from boardstream.entrypoints.compose.project import COMPOSE_FILE
from boardstream.settings import PROJECT_ROOT

# Built by Compose from the Dockerfile (the compose file's services that have a `build`).
PROJECT_IMAGE = "boardstream-airflow:0.1.0"


def compose_images() -> dict[str, str]:
    """Every image the compose file's services and the Dockerfile's stages start FROM, by
    where each is named (the compose file read with .env.example's values)."""
    import yaml

    values = read_env(ENV_EXAMPLE)
    text = re.sub(
        r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}", lambda m: values[m.group(1)], COMPOSE_FILE.read_text()
    )
    services = yaml.safe_load(text)["services"]
    found = {name: s["image"] for name, s in services.items() if "build" not in s}
    for line in (PROJECT_ROOT / "Dockerfile").read_text().splitlines():
        if line.upper().startswith("FROM "):
            found[f"Dockerfile {line.split()[1]}"] = line.split()[1]
    return found


def image_exists(image: str) -> bool:
    return run("docker", "image", "inspect", image, check=False, capture=True).returncode == 0


def image_sizes() -> dict[str, str]:
    """Each image the stack ran on, the project's own too, in MB as the engine stores it."""
    sizes = {}
    for image in sorted({*compose_images().values(), PROJECT_IMAGE}):
        found = run(
            "docker", "image", "inspect", "-f", "{{.Size}}", image, capture=True, check=False
        )
        if found.returncode == 0:
            sizes[image] = f"{int(found.stdout) / 1e6:.0f} MB"
    return sizes
