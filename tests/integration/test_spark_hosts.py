"""A Spark standalone cluster and PostgreSQL on hosts of their own (needs root): the master, two
workers and PostgreSQL each started by `boardstream stack up --only ...` in its host, and a
PySpark application in client mode on a fifth host whose tasks run on both workers and write to
that PostgreSQL. One worker killed (kill -9, every process of its host) under the application's
second job: the job completes on the other, and the database holds exactly the rows expected.

A worker started before its master is refused at once, naming the master's address.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import psycopg2
import pytest

from boardstream.settings import PROJECT_ROOT, Settings
from boardstream.stack.hosts import Hosts, Network
from boardstream.stack.spark_cluster import master_state
from tests.fixtures import cli_command, hosts_up

# About a minute each; CI runs tests/faults/cluster's scenario, whose hosts start the same.
pytestmark = pytest.mark.long

NETWORK = Network("bss", "10.232.2.0/24")
# Each host is a network namespace of its own: the default ports do not meet anyone else's.
MASTER_PORT, MASTER_UI_PORT, WORKER_UI_PORT, POSTGRES_PORT = 7077, 8090, 8091, 5432
ROWS, PARTITIONS = 40, 4
# A second job's task sleeps this long before it writes: w1 is killed in the meantime.
PAUSE_S = 3

# The application, in the driver host: argv master URL, database DSN. Each task records its
# attempt, sleeps, then writes its partition's rows in one transaction; PostgreSQL records the
# writer's address (inet_client_addr), so the hosts the tasks ran on are the server's word.
APP = """
import os
import sys
import time

import psycopg2
from pyspark.sql import SparkSession

from boardstream.settings import Settings
from boardstream.spark import standalone


master, dsn = sys.argv[1], sys.argv[2]
# The executors' Python workers run this venv's interpreter (as spark/session.py's drivers).
os.environ["PYSPARK_PYTHON"] = sys.executable
ROWS, PARTITIONS, PAUSE_S = {rows}, {partitions}, {pause_s}

with psycopg2.connect(dsn) as connection, connection.cursor() as cursor:
    cursor.execute("CREATE TABLE attempt (job int, part int, host inet)")
    cursor.execute("CREATE TABLE written (job int, id int, host inet, PRIMARY KEY (job, id))")


def write(job, pause_s):
    def task(part, ids):
        connection = psycopg2.connect(dsn)
        connection.autocommit = True
        with connection.cursor() as cursor:
            cursor.execute(
                "INSERT INTO attempt VALUES (%s, %s, inet_client_addr())", (job, part)
            )
        time.sleep(pause_s)
        connection.autocommit = False
        with connection, connection.cursor() as cursor:
            cursor.executemany(
                "INSERT INTO written VALUES (%s, %s, inet_client_addr()) "
                "ON CONFLICT DO NOTHING",
                [(job, id) for id in ids],
            )
        connection.close()
        yield part

    return task


spark = (
    SparkSession.builder.master(master)
    .appName("spark-hosts")
    .config("spark.cores.max", "2")
    .config("spark.executor.cores", "1")
    .config("spark.executor.memory", "512m")
    # Both executors (one per worker) before the first job, so that its tasks use both.
    .config("spark.scheduler.minRegisteredResourcesRatio", "1.0")
    .config("spark.scheduler.maxRegisteredResourcesWaitingTime", "120s")
    .getOrCreate()
)
context = spark.sparkContext
# The driver's host reads the master's state where BOARDSTREAM_SPARK_MASTER says it is.
print("cores", standalone.free_cores(Settings()).describe(), flush=True)
for job, pause_s in ((1, 1), (2, PAUSE_S)):
    parts = context.parallelize(range(ROWS), PARTITIONS).mapPartitionsWithIndex(write(job, pause_s))
    print("job", job, sorted(parts.collect()), flush=True)
spark.stop()
"""


@pytest.fixture
def hosts() -> Iterator[Hosts]:
    with hosts_up(["master", "w1", "w2", "pg", "driver"], "bss-spark-hosts-", NETWORK) as hosts:
        yield hosts


def settings_env(hosts: Hosts) -> dict[str, str]:
    """The settings every host is given (over its own, ``Hosts.environment``): the other
    hosts' addresses, the ports, one core per worker."""
    master, pg = hosts.address("master"), hosts.address("pg")
    return {
        "BOARDSTREAM_JAR_CACHE": str(PROJECT_ROOT / "var" / "jars"),
        "BOARDSTREAM_SPARK_MASTER_HOST": master,
        "BOARDSTREAM_SPARK_MASTER": f"spark://{master}:{MASTER_PORT}",
        "BOARDSTREAM_SPARK_MASTER_PORT": str(MASTER_PORT),
        "BOARDSTREAM_SPARK_MASTER_UI_PORT": str(MASTER_UI_PORT),
        "BOARDSTREAM_SPARK_WORKER_UI_PORT": str(WORKER_UI_PORT),
        "BOARDSTREAM_SPARK_WORKER_CORES": "1",
        "BOARDSTREAM_SPARK_WORKER_MEMORY": "1g",
        "BOARDSTREAM_POSTGRES_HOST": pg,
        "BOARDSTREAM_POSTGRES_PORT": str(POSTGRES_PORT),
    }


def stack(hosts: Hosts, *commands: tuple[str, ...]) -> list[tuple[int, str, str]]:
    """(exit code, stdout, stderr) of each `boardstream stack ARGS` of ``commands`` (host name
    first, then ARGS), run in its host, all at once."""
    running = [
        subprocess.Popen(
            hosts.command(name, cli_command("stack", *args)),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=hosts.environment(name, settings_env(hosts)),
        )
        for name, *args in commands
    ]
    results = []
    for process in running:
        stdout, stderr = process.communicate(timeout=180)
        results.append((process.returncode, stdout, stderr))
    return results


def up_only(hosts: Hosts, *services: tuple[str, str, str]) -> None:
    """Start each (host, service, the address it reports) with `stack up --only`, together."""
    ups = stack(hosts, *((name, "up", "--only", service) for name, service, _ in services))
    for (_, service, address), (code, stdout, stderr) in zip(services, ups, strict=True):
        assert code == 0, stdout + stderr
        assert stdout.startswith(f"{service} started (pid "), stdout
        assert stdout.endswith(f") on {address}\n"), stdout


def query(hosts: Hosts, sql: str) -> list[tuple]:
    """Rows of ``sql`` on the pg host's database, asked from the tests' own namespace."""
    with (
        contextlib.closing(psycopg2.connect(dsn(hosts))) as connection,
        connection.cursor() as cursor,
    ):
        cursor.execute(sql)
        return cursor.fetchall()


def dsn(hosts: Hosts) -> str:
    return f"host={hosts.address('pg')} port={POSTGRES_PORT} user=boardstream dbname=boardstream"


def attempts(hosts: Hosts, job: int) -> list[tuple[int, str]]:
    """(partition, host) of each of job ``job``'s task attempts so far ([] before the table)."""
    try:
        return query(hosts, f"SELECT part, host FROM attempt WHERE job = {job} ORDER BY part, host")
    except psycopg2.errors.UndefinedTable:
        return []


def test_a_job_outlives_a_worker_host_killed_under_it(hosts: Hosts) -> None:
    master, w1, w2 = (hosts.address(n) for n in ("master", "w1", "w2"))

    [(code, stdout, stderr)] = stack(hosts, ("w1", "up", "--only", "spark-worker"))
    assert (code, stdout) == (1, ""), stderr
    # (after a warning that one worker of 1 core is short of the live streams)
    assert stderr.splitlines()[-1] == (
        f"boardstream: error: the Spark worker needs the master at spark://{master}:"
        f"{MASTER_PORT} (UI http://{master}:{MASTER_UI_PORT}), which does not answer from here: "
        f"stack up --only spark-master starts it on that host, with "
        f"BOARDSTREAM_SPARK_MASTER_HOST={master}"
    )

    up_only(
        hosts,
        ("pg", "postgres", f"{hosts.address('pg')}:{POSTGRES_PORT}"),
        ("master", "spark-master", f"spark://{master}:{MASTER_PORT}"),
    )
    up_only(hosts, ("w1", "spark-worker", _worker_ui(w1)), ("w2", "spark-worker", _worker_ui(w2)))

    script = hosts.var_dir("driver") / "app.py"
    script.write_text(APP.format(rows=ROWS, partitions=PARTITIONS, pause_s=PAUSE_S))
    _, app = hosts.start(
        "driver",
        "app",
        [sys.executable, str(script), f"spark://{master}:{MASTER_PORT}", dsn(hosts)],
        marker=str(script),
        env=settings_env(hosts),
    )
    log = hosts.log_file("driver", "app")

    # Kill w1 while the second job runs a task there: every process of its host.
    deadline = time.monotonic() + 150
    while not _on(attempts(hosts, 2), w1):
        assert app.poll() is None, _tail(log)
        assert time.monotonic() < deadline, "no task of the second job ran on w1\n" + _tail(log)
        time.sleep(0.1)
    killed = [int(pid) for pid in _ip("netns", "pids", NETWORK.prefix + "-w1").split()]
    worker = int((hosts.var_dir("w1") / "run" / "spark-worker.pid").read_text())
    assert worker in killed and len(killed) > 1  # the worker, its executor, Python workers
    for pid in killed:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    on_w1 = _on(attempts(hosts, 2), w1)

    assert app.wait(timeout=150) == 0, _tail(log)
    assert _ip("netns", "pids", NETWORK.prefix + "-w1").split() == []
    out = [line for line in log.read_text().splitlines() if line.startswith(("cores ", "job "))]
    assert out == [
        "cores 0 free of 2 (2 live workers)",  # both executors hold their worker's core
        f"job 1 {list(range(PARTITIONS))}",
        f"job 2 {list(range(PARTITIONS))}",
    ]

    # The first job's tasks ran on both workers, each once; each row once, written by one.
    first = query(hosts, "SELECT id, host FROM written WHERE job = 1 ORDER BY id")
    assert [row[0] for row in first] == list(range(ROWS))
    assert {row[1] for row in first} == {w1, w2}
    assert [part for part, _ in attempts(hosts, 1)] == list(range(PARTITIONS))
    # The second job's one task on w1 died with it before writing; it and every other task ran
    # on w2, once each, and wrote every row of the job there, once.
    assert len(on_w1) == 1
    assert attempts(hosts, 2) == sorted([*on_w1, *((part, w2) for part in range(PARTITIONS))])
    second = query(hosts, "SELECT id, host FROM written WHERE job = 2 ORDER BY id")
    assert second == [(n, w2) for n in range(ROWS)]

    # The master saw w1 go: w2 alone is alive.
    state = master_state(Settings(spark_master_host=master, spark_master_ui_port=MASTER_UI_PORT))
    assert state is not None
    alive = [w["webuiaddress"] for w in state["workers"] if w["state"] == "ALIVE"]
    assert alive == [_worker_ui(w2)]

    downs = stack(hosts, ("w2", "down"), ("master", "down"), ("pg", "down"))
    assert [down[:2] for down in downs] == [
        (0, "spark-worker stopped\n"),
        (0, "spark-master stopped\n"),
        (0, "postgres stopped\n"),
    ], [down[2] for down in downs]


def _worker_ui(address: str) -> str:
    return f"http://{address}:{WORKER_UI_PORT}"


def _on(rows: list[tuple[int, str]], host: str) -> list[tuple[int, str]]:
    return [row for row in rows if row[1] == host]


def _tail(log: Path) -> str:
    return log.read_text()[-5000:] if log.exists() else "(no log)"


def _ip(*args: str) -> str:
    return subprocess.run(["ip", *args], capture_output=True, text=True, check=True).stdout
