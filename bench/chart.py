"""Draw bench/compare.py's results as a PNG (runs in the bench venv, which has matplotlib).

var/bench/venv/bin/python bench/chart.py RESULTS_JSON OUT_PNG
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # after choosing the headless backend


def main(results_path: str, out_path: str) -> None:
    results = json.loads(Path(results_path).read_text())
    names = [r["name"] for r in results]
    figure, (throughput, latency) = plt.subplots(1, 2, figsize=(11, 4))
    rates = [r["reads"] / r["drain_s"] if r["drain_s"] else 0 for r in results]
    throughput.bar(names, rates, color="#1f6feb")
    throughput.set_title("drain: input records/s (higher is better)")
    for x, rate in enumerate(rates):
        throughput.annotate(f"{rate:,.0f}", (x, rate), ha="center", va="bottom", fontsize=8)
    width = 0.27
    for offset, (label, key) in enumerate(
        (("p50", "p50_ms"), ("p95", "p95_ms"), ("p99", "p99_ms"))
    ):
        values = [r["steady"][key] or 0 for r in results]
        latency.bar(
            [x + (offset - 1) * width for x in range(len(names))], values, width, label=label
        )
    latency.set_xticks(range(len(names)), names)
    latency.set_yscale("log")
    latency.set_title("steady load: end-to-end latency ms (lower is better)")
    latency.legend()
    for axes in (throughput, latency):
        axes.tick_params(axis="x", labelsize=8, labelrotation=20)  # the long names overlapped
    figure.tight_layout()
    figure.savefig(out_path, dpi=110)


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    main(*sys.argv[1:])
