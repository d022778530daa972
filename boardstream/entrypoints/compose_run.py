"""``bin/compose-run``: docker-compose.yml run for real, as docs/DOCKER_COMPOSE.md tells a user.

Starts the Docker engine if none answers (its networks on the project's address pool), builds a
stand-in for each official image that is neither present nor pullable (docker/standins/), makes
the ``.env`` from ``.env.example`` with generated secrets (in a temporary directory, never in the
checkout), ``docker compose up -d --wait``, then the demo's path through the containers: the
topics ``airflow-init`` created, ``demo_data``, ``board_detail_pipeline`` and the
``reconciliation`` it triggers, read back through the Airflow API server; the "Pipeline health"
page in headless Chromium (a screenshot); ``spark-worker`` scaled to 2 and the second worker seen
registered with the master; then ``docker compose down -v`` and nothing of the project left.
Each phase's time and each image's size go to ``test-artifacts/compose-run.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import secrets
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from boardstream.settings import PROJECT_ROOT

COMPOSE_FILE = PROJECT_ROOT / "docker-compose.yml"
ENV_EXAMPLE = PROJECT_ROOT / ".env.example"
STANDINS = PROJECT_ROOT / "docker" / "standins"
ARTIFACTS = PROJECT_ROOT / "test-artifacts"
PROJECT = "boardstream"
# Docker's networks on the project's own test range (the namespace hosts use 10.231.0.0/24).
ADDRESS_POOL = "10.232.0.0/17"
DEFAULT_BRIDGE = "10.232.255.1/24"
# Compose v2, built from its Go module (Debian's docker-compose package is Compose v1).
COMPOSE_VERSION = "v2.40.3"
COMPOSE_MODULE = "github.com/docker/compose/v2"
PLUGIN_DIR = Path("/usr/local/lib/docker/cli-plugins")
# The host ports .env maps, at an offset from a base (the compose file's are .env.example's).
PORT_OFFSETS = {"AIRFLOW_PORT": 80, "SPARK_UI_PORT": 81, "HDFS_UI_PORT": 870, "KAFKA_HOST_PORT": 92}
SECRETS = {
    "POSTGRES_PASSWORD": lambda: secrets.token_urlsafe(24),
    "AIRFLOW_ADMIN_PASSWORD": lambda: secrets.token_urlsafe(18),
    "AIRFLOW_FERNET_KEY": lambda: _fernet_key(),
    "AIRFLOW_JWT_SECRET": lambda: secrets.token_urlsafe(32),
}
NICE = ["nice", "-n", "19", "ionice", "-c3"]


def _fernet_key() -> str:
    from cryptography.fernet import Fernet

    return Fernet.generate_key().decode()


@dataclass(frozen=True)
class StandIn:
    """An official image's stand-in: built from ``docker/standins/<directory>`` when ``image`` is
    absent; ``extras`` are files put beside its Dockerfile (name in the context: source)."""

    image: str
    directory: str
    build_args: dict[str, str] = field(default_factory=dict)
    extras: Callable[[], dict[str, Path]] = dict


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


def _pyspark_dir() -> dict[str, Path]:
    import pyspark

    return {"pyspark": Path(pyspark.__file__).parent}


def _constraints() -> dict[str, Path]:
    """The lock's pins without their hashes, as a pip constraints file."""
    pins = re.findall(
        r"^([A-Za-z0-9_.\-\[\]]+==[^ \\\n]+)", (PROJECT_ROOT / "requirements.txt").read_text(), re.M
    )
    path = Path(tempfile.mkdtemp(prefix="bs-constraints-")) / "constraints.txt"
    path.write_text("\n".join(re.sub(r"\[.*\]", "", pin) for pin in pins) + "\n")
    return {"constraints.txt": path}


def standins() -> list[StandIn]:
    """In build order (kafka and hadoop resolve their jars in the maven stand-in); versions from
    the image tags the compose file and the Dockerfile name."""
    images = compose_images()

    def tag(prefix: str) -> str:
        return next(i for i in images.values() if i.startswith(prefix + ":"))

    kafka = tag("apache/kafka")
    airflow = tag("apache/airflow")
    return [
        StandIn(tag("maven"), "maven", {"MAVEN_VERSION": tag("maven").split(":")[1].split("-")[0]}),
        StandIn(kafka, "kafka", {"KAFKA_VERSION": kafka.split(":")[1]}),
        StandIn(
            tag("apache/hadoop"),
            "hadoop",
            extras=lambda: {"hadoop-hdfs-pom.xml": PROJECT_ROOT / "deps/hadoop-hdfs/pom.xml"},
        ),
        StandIn(tag("apache/spark"), "spark", extras=_pyspark_dir),
        StandIn(
            airflow,
            "airflow",
            {"AIRFLOW_VERSION": airflow.split(":")[1].split("-")[0]},
            extras=_constraints,
        ),
        StandIn(tag("postgres"), "postgres"),  # on trixie: bookworm has no PostgreSQL 17
    ]


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


class Run:
    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.var = Path(os.environ.get("BOARDSTREAM_VAR_DIR", PROJECT_ROOT / "var")) / "compose-run"
        self.var.mkdir(parents=True, exist_ok=True)
        self.report: dict[str, Any] = {"phases": {}, "images": {}, "standins": []}
        self.started_daemon: subprocess.Popen[bytes] | None = None
        self.env_dir = Path(tempfile.mkdtemp(prefix="bs-compose-env-"))
        self.env_file: Path | None = None
        self.before: dict[str, set[str]] = {}
        self.up = False

    # --- plumbing ------------------------------------------------------------------------------
    def log(self, message: str) -> None:
        print(f"compose-run: {message}", flush=True)

    @contextmanager
    def phase(self, name: str) -> Iterator[None]:
        self.log(f"--- {name}")
        start = time.monotonic()
        try:
            yield
        finally:
            self.report["phases"][name] = round(time.monotonic() - start, 1)
            self.log(f"{name}: {self.report['phases'][name]} s")

    def run(
        self,
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
            detail = (
                (result.stdout or "")[-3000:] + (result.stderr or "")[-3000:] if capture else ""
            )
            raise SystemExit(
                f"compose-run: {' '.join(command[:6])} … failed ({result.returncode}) {detail}"
            )
        return result

    def compose(self, *args: str, **kwargs: Any) -> subprocess.CompletedProcess[str]:
        assert self.env_file is not None
        return self.run(
            "docker",
            "compose",
            "-f",
            str(COMPOSE_FILE),
            "--env-file",
            str(self.env_file),
            "-p",
            PROJECT,
            *args,
            **kwargs,
        )

    # --- the engine and Compose ----------------------------------------------------------------
    def ensure_compose(self) -> None:
        found = self.run("docker", "compose", "version", check=False, capture=True)
        if found.returncode == 0:
            self.log(found.stdout.strip())
            return
        go = shutil.which("go") or "/usr/local/go/bin/go"
        self.log(f"building Compose {COMPOSE_VERSION} from its Go module")
        download = self.run(
            go, "mod", "download", "-json", f"{COMPOSE_MODULE}@{COMPOSE_VERSION}", capture=True
        )
        source = Path(json.loads(download.stdout)["Dir"])
        work = Path(tempfile.mkdtemp(prefix="bs-compose-src-"))
        # Built as the main module: its go.mod has exclude directives, which `go install
        # module@version` refuses.
        shutil.copytree(source, work / "src")
        for path in (work / "src").rglob("*"):
            path.chmod(path.stat().st_mode | 0o200)
        PLUGIN_DIR.mkdir(parents=True, exist_ok=True)
        ldflags = f"-s -w -X {COMPOSE_MODULE}/internal.Version={COMPOSE_VERSION}"
        subprocess.run(
            [
                *NICE,
                go,
                "build",
                "-trimpath",
                "-ldflags",
                ldflags,
                "-o",
                str(PLUGIN_DIR / "docker-compose"),
                "./cmd",
            ],
            cwd=work / "src",
            check=True,
            env={**os.environ, "GOFLAGS": "-mod=readonly -buildvcs=false"},
        )
        shutil.rmtree(work, ignore_errors=True)
        self.log(self.run("docker", "compose", "version", capture=True).stdout.strip())

    def ensure_daemon(self) -> None:
        if self.run("docker", "info", check=False, capture=True).returncode == 0:
            self.log("a Docker engine answers; using it")
            return
        dockerd = shutil.which("dockerd")
        if dockerd is None:
            raise SystemExit("compose-run: no dockerd: `bin/setup --docker` installs docker.io")
        directory = self.var / "dockerd"
        directory.mkdir(exist_ok=True)
        config = directory / "daemon.json"
        config.write_text(json.dumps(daemon_config(Path("/var/lib/docker")), indent=2))
        self.log(f"starting dockerd (networks from {ADDRESS_POOL}), log in {directory}/dockerd.log")
        with open(directory / "dockerd.log", "ab") as log:
            self.started_daemon = subprocess.Popen(
                [
                    dockerd,
                    "--config-file",
                    str(config),
                    "--pidfile",
                    str(directory / "dockerd.pid"),
                ],
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )
        (directory / "started-pid").write_text(str(self.started_daemon.pid))
        deadline = time.monotonic() + 60
        while self.run("docker", "info", check=False, capture=True).returncode != 0:
            if self.started_daemon.poll() is not None or time.monotonic() > deadline:
                raise SystemExit(f"compose-run: dockerd did not start; see {directory}/dockerd.log")
            time.sleep(1)

    def lower_priority(self) -> None:
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
            self.log(f"containers' CPU: {directory / name} = {value}")
        except OSError as error:
            self.log(f"could not lower the containers' CPU weight: {error}")

    def stop_daemon(self) -> None:
        if self.started_daemon is None or self.args.keep_daemon:
            return
        self.log(f"stopping the dockerd this run started (pid {self.started_daemon.pid})")
        self.started_daemon.terminate()
        try:
            self.started_daemon.wait(60)
        except subprocess.TimeoutExpired:
            self.started_daemon.kill()

    # --- images --------------------------------------------------------------------------------
    def image_exists(self, image: str) -> bool:
        return (
            self.run("docker", "image", "inspect", image, check=False, capture=True).returncode == 0
        )

    def base_image(self, suite: str) -> str:
        tag = f"boardstream-standin/debian:{suite}"
        if self.image_exists(tag):
            return tag
        rootfs = Path(tempfile.mkdtemp(prefix=f"bs-rootfs-{suite}-", dir="/var/tmp")) / "rootfs"
        self.log(f"debootstrap {suite} into {rootfs}")
        self.run(
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
        shutil.rmtree(rootfs.parent, ignore_errors=True)
        return tag

    def pull(self, image: str) -> bool:
        if self.args.no_pull:
            return False
        try:
            pulled = self.run("docker", "pull", image, check=False, capture=True, timeout=60)
        except subprocess.TimeoutExpired:
            return False
        return pulled.returncode == 0

    def build_standins(self) -> None:
        for standin in standins():
            if self.image_exists(standin.image):
                self.log(f"{standin.image}: present")
                continue
            if self.pull(standin.image):
                self.log(f"{standin.image}: pulled")
                continue
            self.log(f"{standin.image}: not pullable; building the stand-in {standin.directory}/")
            suite = "trixie" if standin.directory == "postgres" else "bookworm"
            self.base_image(suite)
            context = Path(
                tempfile.mkdtemp(prefix=f"bs-standin-{standin.directory}-", dir="/var/tmp")
            )
            shutil.copytree(STANDINS / standin.directory, context, dirs_exist_ok=True)
            for name, source in standin.extras().items():
                _link_or_copy(source, context / name)
            start = time.monotonic()
            build_args = [
                a for k, v in standin.build_args.items() for a in ("--build-arg", f"{k}={v}")
            ]
            self.run(
                "docker",
                "build",
                "-q",
                "-t",
                standin.image,
                *build_args,
                str(context),
                heavy=True,
                env={"DOCKER_BUILDKIT": "0"},
                capture=True,
            )
            shutil.rmtree(context, ignore_errors=True)
            self.report["standins"].append(
                {"image": standin.image, "build_s": round(time.monotonic() - start, 1)}
            )

    def image_sizes(self) -> None:
        for image in sorted({*compose_images().values(), "boardstream-airflow:0.1.0"}):
            found = self.run(
                "docker", "image", "inspect", "-f", "{{.Size}}", image, capture=True, check=False
            )
            if found.returncode == 0:
                self.report["images"][image] = f"{int(found.stdout) / 1e6:.0f} MB"

    # --- the stack -----------------------------------------------------------------------------
    def present(self) -> dict[str, set[str]]:
        """Every container, network and volume of the engine, by id: what `down -v` must
        leave as it was before `up` (anonymous volumes carry no project label)."""
        return {
            kind: set(
                self.run(
                    "docker",
                    kind,
                    "ls",
                    *(["-a"] if kind == "container" else []),
                    "-q",
                    capture=True,
                ).stdout.split()
            )
            for kind in ("container", "network", "volume")
        }

    def compose_up(self) -> None:
        self.before = self.present()
        self.env_file = make_env(self.env_dir, self.args.port_base)
        env = {"DOCKER_BUILDKIT": "0", "COMPOSE_BAKE": "false"}
        if not self.args.no_build:
            self.compose("build", heavy=True, env=env)
        self.up = True
        result = self.compose("up", "-d", "--wait", "--wait-timeout", "900", check=False, env=env)
        if result.returncode != 0:
            self.compose("ps", "-a", check=False)
            raise SystemExit(
                "compose-run: a service did not become healthy (docker compose ps above)"
            )
        self.compose("ps", "-a")

    def settings_env(self) -> dict[str, str]:
        assert self.env_file is not None
        return read_env(self.env_file)

    def airflow_url(self) -> str:
        return f"http://localhost:{self.settings_env()['AIRFLOW_PORT']}"

    def check_topics(self) -> None:
        from boardstream.settings import Settings

        listed = self.compose(
            "exec",
            "-T",
            "kafka",
            "/opt/kafka/bin/kafka-topics.sh",
            "--bootstrap-server",
            "kafka:29092",
            "--list",
            capture=True,
        ).stdout.split()
        settings = Settings()
        wanted = {
            getattr(settings, f"{t}_topic")
            for t in ("member", "board", "board_detail", "unmatched", "dlq")
        }
        missing = wanted - set(listed)
        if missing:
            raise SystemExit(f"compose-run: topics missing after airflow-init: {sorted(missing)}")
        self.log(f"topics: {' '.join(sorted(listed))}")

    def demo(self) -> None:
        from boardstream.entrypoints.airflow_api import AirflowApi
        from boardstream.entrypoints.demo import DAGS, PIPELINE, RECONCILIATION

        env = self.settings_env()
        api = AirflowApi(
            self.airflow_url(), env["AIRFLOW_ADMIN_USER"], env["AIRFLOW_ADMIN_PASSWORD"]
        )
        for dag_id in DAGS:
            api.wait_for_dag(dag_id, timeout_s=600)
        pipeline_paused = api.is_paused(PIPELINE)
        for dag_id in ("demo_data", RECONCILIATION):
            if api.is_paused(dag_id):
                api.unpause(dag_id)
        loaded = api._call("GET", "/api/v2/dags/demo_data/dagRuns?state=success&limit=1")
        if self.args.attach and loaded["dag_runs"]:
            self.log("demo_data has run in this stack already")
        else:
            self.expect_success(api, "demo_data", api.trigger("demo_data", self.args.generator))
        # As bin/demo: the pipeline unpaused only with the data loaded, so the run the scheduler
        # queues then does the work; a run already queued or running is waited for, not doubled.
        ahead = api.active_runs(PIPELINE)
        pipeline_run = ahead[0] if ahead else None
        if pipeline_run is None and pipeline_paused:
            pipeline_run = api.run_started_by_unpausing(PIPELINE)
        pipeline_run = pipeline_run or api.trigger(PIPELINE)
        self.expect_success(api, PIPELINE, pipeline_run)
        reconciliation = api.asset_triggered_run(RECONCILIATION, PIPELINE, pipeline_run)
        if reconciliation is None:
            # As bin/demo: a reconciliation still running (its schedule's) holds the Asset's run
            # back (one at a time); one triggered now runs after it, on the loaded data.
            reconciliation = api.trigger(RECONCILIATION)
            self.log(f"no Asset-triggered reconciliation yet; triggered {reconciliation}")
        self.expect_success(api, RECONCILIATION, reconciliation)
        xcom = api._call(
            "GET",
            f"/api/v2/dags/{RECONCILIATION}/dagRuns/{urllib.request.quote(reconciliation)}"
            "/taskInstances/reconcile/xcomEntries/return_value",
        )
        value = xcom.get("value")
        value = json.loads(value) if isinstance(value, str) else value
        self.log(f"reconciliation {reconciliation}: {value}")
        if not (isinstance(value, dict) and value.get("passed") is True):
            raise SystemExit(f"compose-run: the reconciliation did not pass: {value}")
        self.report["reconciliation"] = {"run": reconciliation, "verdict": "PASSED", **value}

    def expect_success(self, api: Any, dag_id: str, run_id: str) -> None:
        self.log(f"waiting for {dag_id} {run_id}")
        state = api.wait(dag_id, run_id, timeout_s=1800)
        if state != "success":
            for task in api.task_instances(dag_id, run_id):
                self.log(f"  {task.get('task_id')}: {task.get('state')}")
            raise SystemExit(f"compose-run: {dag_id} {run_id} ended {state}")
        self.log(f"{dag_id} {run_id}: success")

    def screenshot(self) -> None:
        from selenium import webdriver
        from selenium.webdriver.common.by import By
        from selenium.webdriver.support import expected_conditions as ec
        from selenium.webdriver.support.ui import WebDriverWait

        env = self.settings_env()
        options = webdriver.ChromeOptions()
        options.binary_location = shutil.which("chromium") or "/usr/bin/chromium"
        for argument in (
            "--headless=new",
            "--no-sandbox",
            "--disable-dev-shm-usage",
            "--window-size=1280,1000",
        ):
            options.add_argument(argument)
        driver = webdriver.Chrome(
            options=options, service=webdriver.ChromeService(shutil.which("chromedriver"))
        )
        try:
            base = self.airflow_url()
            driver.get(
                f"{base}/auth/login?next={urllib.request.quote('/plugin/pipeline-health', safe='')}"
            )
            field_ = WebDriverWait(driver, 60).until(
                ec.presence_of_element_located((By.NAME, "username"))
            )
            field_.send_keys(env["AIRFLOW_ADMIN_USER"])
            driver.find_element(By.NAME, "password").send_keys(env["AIRFLOW_ADMIN_PASSWORD"])
            driver.find_element(By.CSS_SELECTOR, "button[type=submit]").click()
            WebDriverWait(driver, 60).until(lambda d: "pipeline-health" in d.current_url)
            WebDriverWait(driver, 60).until(lambda d: "Pipeline health" in d.page_source)
            time.sleep(5)  # the page's data and its iframe
            ARTIFACTS.mkdir(exist_ok=True)
            path = ARTIFACTS / "compose-pipeline-health.png"
            driver.save_screenshot(str(path))
            self.log(f"screenshot: {path}")
            self.report["screenshot"] = str(path.relative_to(PROJECT_ROOT))
        finally:
            driver.quit()

    def alive_workers(self) -> int:
        port = self.settings_env()["SPARK_UI_PORT"]
        with urllib.request.urlopen(f"http://localhost:{port}/json/", timeout=10) as response:
            state = json.loads(response.read())
        return sum(1 for worker in state.get("workers", []) if worker.get("state") == "ALIVE")

    def scale(self) -> None:
        before = self.alive_workers()
        self.compose(
            "up",
            "-d",
            "--no-recreate",
            "--wait",
            "--scale",
            "spark-worker=2",
            "spark-worker",
            env={"DOCKER_BUILDKIT": "0"},
        )
        deadline = time.monotonic() + 180
        while (alive := self.alive_workers()) < 2:
            if time.monotonic() > deadline:
                raise SystemExit(f"compose-run: {alive} Spark worker(s) alive after scaling to 2")
            time.sleep(3)
        self.log(f"Spark workers alive: {before} before scaling, {alive} after")
        self.report["spark_workers"] = {"before": before, "after": alive}

    def down(self) -> None:
        if not self.up:
            return
        self.compose("down", "-v", "--remove-orphans", check=False)
        self.up = False
        after = self.present()
        left = {kind: sorted(after[kind] - self.before[kind]) for kind in after}
        self.report["left_after_down"] = left
        if any(left.values()):
            raise SystemExit(f"compose-run: left after `down -v`: {left}")
        self.log("down -v: no container, network or volume of the project left")

    def logs_on_failure(self) -> None:
        if self.up:
            path = self.var / "compose-logs.txt"
            with open(path, "w") as out:
                subprocess.run(
                    [
                        "docker",
                        "compose",
                        "-f",
                        str(COMPOSE_FILE),
                        "--env-file",
                        str(self.env_file),
                        "-p",
                        PROJECT,
                        "logs",
                        "--no-color",
                        "--tail",
                        "400",
                    ],
                    stdout=out,
                    stderr=subprocess.STDOUT,
                    check=False,
                )
            self.log(f"the services' logs: {path}")

    # --- the whole run -------------------------------------------------------------------------
    def main(self) -> int:
        start = time.monotonic()
        ok = False
        try:
            if self.args.attach:  # a stack this command brought up and left (--keep-up)
                self.env_file = self.args.attach
                # What the engine holds but the project's labelled things (its anonymous
                # volumes carry no label, so only a run that brought the stack up checks them).
                label = ["--filter", f"label=com.docker.compose.project={PROJECT}"]
                self.before = {
                    kind: ids
                    - set(
                        self.run(
                            "docker",
                            kind,
                            "ls",
                            *(["-a"] if kind == "container" else []),
                            "-q",
                            *label,
                            capture=True,
                        ).stdout.split()
                    )
                    for kind, ids in self.present().items()
                }
                self.up = True
            else:
                with self.phase("engine"):
                    self.ensure_daemon()
                    if not self.args.full_priority:
                        self.lower_priority()
                    self.ensure_compose()
                with self.phase("stand-in images"):
                    self.build_standins()
                with self.phase("build and up (every healthcheck passing)"):
                    self.compose_up()
            with self.phase("topics"):
                self.check_topics()
            if not self.args.skip_demo:
                with self.phase("demo: demo_data, pipeline, reconciliation"):
                    self.demo()
            with self.phase("Pipeline health screenshot"):
                self.screenshot()
            with self.phase("scale spark-worker to 2"):
                self.scale()
            self.image_sizes()
            ok = True
        finally:
            if not ok:
                self.logs_on_failure()
            if not self.args.keep_up:
                with self.phase("down -v"):
                    self.down()
            shutil.rmtree(self.env_dir, ignore_errors=True)
            self.stop_daemon()
            self.report["total_s"] = round(time.monotonic() - start, 1)
            self.report["passed"] = ok
            ARTIFACTS.mkdir(exist_ok=True)
            (ARTIFACTS / "compose-run.json").write_text(json.dumps(self.report, indent=2) + "\n")
        self.log(f"passed in {self.report['total_s']} s; report in test-artifacts/compose-run.json")
        return 0


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


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="bin/compose-run", description=__doc__.splitlines()[0])
    p.add_argument(
        "--port-base",
        type=int,
        default=None,
        help="map the host ports at this base (+80 Airflow, +81 Spark UI, +870 HDFS UI, "
        "+92 Kafka) instead of .env.example's",
    )
    p.add_argument(
        "--no-pull", action="store_true", help="build stand-ins without trying a registry"
    )
    p.add_argument(
        "--keep-up",
        action="store_true",
        help="leave the stack up after the run (passed or not), for a look",
    )
    p.add_argument(
        "--keep-daemon", action="store_true", help="leave a dockerd this run started running"
    )
    p.add_argument(
        "--full-priority",
        action="store_true",
        help="leave the containers' CPU weight as Docker sets it (the run lowers it to a quarter)",
    )
    p.add_argument(
        "--attach",
        type=Path,
        metavar="ENV_FILE",
        help="go on with a stack left up (--keep-up) from the demo on, with its .env",
    )
    p.add_argument(
        "--no-build",
        action="store_true",
        help="use the project image as built before (Compose still builds it when absent)",
    )
    p.add_argument("--skip-demo", action="store_true", help="up, screenshot, scale and down only")
    p.add_argument(
        "--generator",
        type=json.loads,
        default={"members": 500, "boards": 800},
        help="demo_data's conf (JSON)",
    )
    return p


def main(argv: list[str] | None = None) -> int:
    return Run(parser().parse_args(argv)).main()


if __name__ == "__main__":
    sys.exit(main())
