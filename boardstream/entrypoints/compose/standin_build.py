"""Building the stand-ins (:mod:`.standins`) an engine lacks: an image
present is used and a pullable one pulled; otherwise its directory is built on a Debian base
made with ``debootstrap``, which carries this machine's CAs so the builds can reach PyPI and
Maven Central through its TLS-inspecting egress."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from boardstream.entrypoints.compose.commands import log, run
from boardstream.entrypoints.compose.images import image_exists
from boardstream.entrypoints.compose.standins import STANDINS, StandIn, standins


def ensure_base_image(suite: str) -> None:
    """``boardstream-standin/debian:<suite>``, the stand-ins' FROM, made if absent."""
    tag = f"boardstream-standin/debian:{suite}"
    if image_exists(tag):
        return
    # Removed whatever debootstrap or the import does: a failed one left its rootfs behind.
    with tempfile.TemporaryDirectory(
        prefix=f"bs-rootfs-{suite}-", dir="/var/tmp", ignore_cleanup_errors=True
    ) as tmp:
        rootfs = Path(tmp) / "rootfs"
        log(f"debootstrap {suite} into {rootfs}")
        run(
            "debootstrap",
            "--variant=minbase",
            suite,
            str(rootfs),
            "http://deb.debian.org/debian",
            heavy=True,
            capture=True,
        )
        # This machine reaches the registries through a TLS-inspecting egress: its CAs go into
        # the base so builds can fetch from PyPI and Maven Central (not in the official images).
        (rootfs / "etc/apt/sources.list").write_text(
            f"deb http://deb.debian.org/debian {suite} main\n"
            f"deb http://deb.debian.org/debian {suite}-updates main\n"
            f"deb http://deb.debian.org/debian-security {suite}-security main\n"
        )
        certs = rootfs / "usr/local/share/ca-certificates"
        certs.mkdir(parents=True, exist_ok=True)
        for ca in Path("/usr/local/share/ca-certificates").glob("*.crt"):
            shutil.copy(ca, certs / ca.name)
        for cache in ("var/cache/apt/archives", "var/lib/apt/lists"):
            for item in (rootfs / cache).glob("*"):
                if item.is_file():
                    item.unlink()
        tar = subprocess.Popen(["tar", "-C", str(rootfs), "-c", "."], stdout=subprocess.PIPE)
        subprocess.run(
            [
                "docker",
                "import",
                "--change",
                "ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
                # UTF-8, as every official image's base sets (python's, eclipse-temurin's).
                "--change",
                "ENV LANG=C.UTF-8",
                "--change",
                'CMD ["bash"]',
                "-",
                tag,
            ],
            stdin=tar.stdout,
            check=True,
            capture_output=True,
        )
        tar.wait()


def pull(image: str) -> bool:
    try:
        pulled = run("docker", "pull", image, check=False, capture=True, timeout=60)
    except subprocess.TimeoutExpired:
        return False
    return pulled.returncode == 0


def fill_context(standin: StandIn, context: Path) -> None:
    """``context``, the build's: the stand-in's directory and the files put beside its
    Dockerfile. Nothing outside ``context``: removing it after the build leaves nothing."""
    shutil.copytree(STANDINS / standin.directory, context, dirs_exist_ok=True)
    for name, source in standin.extras().items():
        _link_or_copy(source, context / name)
    for name, text in standin.generated().items():
        (context / name).write_text(text)


def build_standins(no_pull: bool) -> Iterator[dict[str, Any]]:
    """Each stand-in built, as it is built: its image and how long the build took. With
    ``no_pull``, no registry is tried."""
    for standin in standins():
        if image_exists(standin.image):
            log(f"{standin.image}: present")
            continue
        if not no_pull and pull(standin.image):
            log(f"{standin.image}: pulled")
            continue
        log(f"{standin.image}: not pullable; building the stand-in {standin.directory}/")
        suite = "trixie" if standin.directory == "postgres" else "bookworm"
        ensure_base_image(suite)
        build_args = [a for k, v in standin.build_args.items() for a in ("--build-arg", f"{k}={v}")]
        # Removed whatever the build does: a failed one left its context behind.
        with tempfile.TemporaryDirectory(
            prefix=f"bs-standin-{standin.directory}-", dir="/var/tmp", ignore_cleanup_errors=True
        ) as context:
            fill_context(standin, Path(context))
            start = time.monotonic()
            run(
                "docker",
                "build",
                "-q",
                "-t",
                standin.image,
                *build_args,
                context,
                heavy=True,
                env={"DOCKER_BUILDKIT": "0"},
                capture=True,
            )
        yield {"image": standin.image, "build_s": round(time.monotonic() - start, 1)}


def _link_or_copy(source: Path, target: Path) -> None:
    """Hard links where the file system allows (pyspark's jars are 460 MB), copies otherwise."""
    if source.is_dir():
        shutil.copytree(source, target, copy_function=_link_file, dirs_exist_ok=True)
    else:
        _link_file(str(source), str(target))


def _link_file(source: str, target: str) -> None:
    try:
        os.link(source, target)
    except OSError:
        shutil.copy2(source, target)
