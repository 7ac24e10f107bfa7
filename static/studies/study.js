// A study's chart: the first varied factor along the axis, one bar per series,
// relative to the reference = 100 when the study has one. The numbers come from
// the page's own JSON (json_script), the same the table beside it shows.
(function () {
  "use strict";
  const data = document.getElementById("study-chart-data");
  const canvas = document.getElementById("study-chart");
  if (!data || !canvas || typeof Chart === "undefined") return;
  const chart = JSON.parse(data.textContent);
  const palette = ["#1f5fae", "#d1495b", "#2a9d8f", "#e9a03b", "#6d597a", "#577590"];
  function bars(target, drawn) {
    new Chart(target, {
      type: "bar",
      data: {
        labels: drawn.labels,
        datasets: drawn.series.map((series, i) => ({
          label: series.label,
          data: series.values,
          backgroundColor: palette[i % palette.length],
        })),
      },
      options: {
        responsive: true,
        maintainAspectRatio: false,
        animation: false,
        scales: { y: { beginAtZero: true, title: { display: true, text: drawn.axis } } },
        plugins: { legend: { display: drawn.series.length > 1 } },
      },
    });
  }
  bars(canvas, chart);
  // The machines that repeated the study, one series each, each relative to its own 100.
  const machines = document.getElementById("study-machines-chart");
  if (machines && chart.machines) bars(machines, chart.machines);
})();
