// Runs side by side: one metric at a time, each run as % of the first run at
// each common point (the table's ratios), chosen in #runs-chart-metric; the
// chart downloads as a PNG on a white background.
(function () {
  "use strict";
  const palette = ["#1f5fae", "#d1495b", "#2a9d8f", "#e9a03b", "#6d597a", "#577590"];
  const { whiteBackground } = window.BenchHubCharts;

  // Each bar's verdict interval (the 95 % interval of its ratio to the
  // first run, in %), as a whisker over the bar: what the verdict reads.
  const verdictIntervals = {
    id: "runsVerdictIntervals",
    afterDatasetsDraw(chart) {
      const ctx = chart.ctx;
      const scale = chart.scales.y;
      ctx.save();
      ctx.strokeStyle = "#1d2330";
      ctx.lineWidth = 1.5;
      chart.data.datasets.forEach(function (dataset, index) {
        const meta = chart.getDatasetMeta(index);
        if (meta.hidden) return;
        (dataset.runsIntervals || []).forEach(function (interval, position) {
          const element = meta.data[position];
          if (!interval || !element) return;
          const low = scale.getPixelForValue(interval[0]);
          const high = scale.getPixelForValue(interval[1]);
          ctx.beginPath();
          ctx.moveTo(element.x, low); ctx.lineTo(element.x, high);
          ctx.moveTo(element.x - 4, low); ctx.lineTo(element.x + 4, low);
          ctx.moveTo(element.x - 4, high); ctx.lineTo(element.x + 4, high);
          ctx.stroke();
        });
      });
      ctx.restore();
    },
  };

  function draw() {
    const canvas = document.getElementById("runs-chart");
    const data = document.getElementById("runs-chart-data");
    const select = document.getElementById("runs-chart-metric");
    if (!canvas || !data || !select || typeof Chart === "undefined") return;
    const chart = JSON.parse(data.textContent);
    const metric = chart.metrics[select.value];
    const previous = Chart.getChart(canvas);
    if (previous) previous.destroy();
    new Chart(canvas, {
      type: "bar",
      data: {
        labels: metric.points,
        datasets: metric.series.map((series, i) => ({
          label: series.label,
          data: series.values,
          runsIntervals: series.intervals,
          backgroundColor: palette[i % palette.length],
        })),
      },
      plugins: [whiteBackground, verdictIntervals],
      options: {
        responsive: true,
        maintainAspectRatio: false,
        animation: false,
        scales: {
          y: {
            beginAtZero: true,
            // the axis reaches the intervals' ends
            suggestedMax: Math.max(0, ...metric.series.flatMap((series) => (series.intervals || []).map((i) => (i ? i[1] : 0)))),
            title: { display: true, text: `${select.value}, % of ${chart.reference}` },
          },
        },
        plugins: {
          title: {
            display: true,
            text: `${select.value} (${metric.unit}${
              metric.direction === "higher" ? ", higher is better" : metric.direction === "lower" ? ", lower is better" : ""
            })`,
          },
        },
      },
    });
  }

  function downloadPng() {
    const data = window.BenchHubCharts.readJson("runs-chart-data");
    window.BenchHubCharts.downloadPng("runs-chart", data && data.filename);
  }

  document.addEventListener("DOMContentLoaded", function () {
    draw();
    const select = document.getElementById("runs-chart-metric");
    if (select) select.addEventListener("change", draw);
    const button = document.getElementById("runs-download-png");
    if (button) button.addEventListener("click", downloadPng);
  });
})();
