// "Pipeline health": the balance of each reconciliation run as stacked bars, drawn by Chart.js
// (vendored in chartjs/) from the JSON the page embeds (boardstream.entrypoints.health's
// balance_chart). Hovering a run shows its verdict, finish time and every part's count.
"use strict";

(() => {
  // One colour per part of `source`; the failing parts are the warm ones.
  const COLORS = {
    not_yet_read: "#8c959f",
    joined: "#2da44e",
    unmatched: "#d4a72c",
    dead_lettered: "#8250df",
    pending: "#218bff",
    missing: "#cf222e",
    conflicting: "#e16f24",
  };
  const data = document.getElementById("balance-data");
  const canvas = document.getElementById("balance-chart");
  if (!data || !canvas) return;
  const chart = JSON.parse(data.textContent);
  const runs = chart.runs;
  // As the table shows it: 2026-11-23 08:35:53.
  const when = (iso) => (iso || "").slice(0, 19).replace("T", " ");
  const number = (n) => n.toLocaleString("en-US");
  // A part's count in a run (the chart's data holds null for 0: see below).
  const count = (datasetIndex, runIndex) => chart.series[datasetIndex].counts[runIndex];

  new Chart(canvas, {
    type: "bar",
    data: {
      labels: runs.map((run) => String(run.run_id)),
      datasets: chart.series.map((series) => ({
        label: series.part,
        // A part of 0 is no bar: minBarLength (below) would draw one of 0 too.
        data: series.counts.map((n) => (n === 0 ? null : n)),
        backgroundColor: COLORS[series.part] || "#57606a",
        borderColor: "#ffffff",
        borderWidth: { top: 1 },
        maxBarThickness: 56,
        // A part of a few positions beside thousands would be no bar at all: every part that
        // is not 0 gets a few pixels, and the legend states the newest run's counts.
        minBarLength: 4,
      })),
    },
    options: {
      locale: "en-US",
      animation: false,
      responsive: true,
      maintainAspectRatio: false,
      interaction: { mode: "index", intersect: false },
      scales: {
        x: {
          stacked: true,
          grid: { display: false },
          title: { display: true, text: "reconciliation run" },
        },
        y: {
          stacked: true,
          beginAtZero: true,
          ticks: { precision: 0 },
          title: { display: true, text: "source positions" },
        },
      },
      plugins: {
        legend: {
          position: "bottom",
          labels: {
            boxWidth: 12,
            boxHeight: 12,
            generateLabels: (c) =>
              Chart.defaults.plugins.legend.labels.generateLabels(c).map((label) => {
                const newest = count(label.datasetIndex, runs.length - 1);
                return { ...label, text: `${label.text} ${number(newest)}` };
              }),
          },
        },
        tooltip: {
          callbacks: {
            title: (items) => {
              const run = runs[items[0].dataIndex];
              return [`run ${run.run_id} · ${run.status}`, when(run.finished_at)];
            },
            label: (item) =>
              `${item.dataset.label}: ${number(count(item.datasetIndex, item.dataIndex))}`,
            footer: (items) =>
              `source: ${number(
                items.reduce((sum, item) => sum + count(item.datasetIndex, item.dataIndex), 0),
              )}`,
          },
        },
      },
    },
  });
})();
