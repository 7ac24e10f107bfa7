/* Draws the comparison chart from the JSON the page embeds with Django's
 * json_script (#comparison-data: exactly what /api/v1/comparisons/ answers
 * for the same query; #comparison-labels: axis titles written for people).
 * Every string from the data reaches Chart.js as a string and is painted on
 * the canvas: nothing is parsed as markup. Redrawn after each htmx swap. */
(function () {
  "use strict";

  // Tableau 10: distinguishable, and readable when printed in grey.
  const COLOURS = [
    "#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f",
    "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac",
  ];
  const REFERENCE_COLOUR = "#1d2330";

  // The PNG gets a white background rather than a transparent one.
  const whiteBackground = {
    id: "benchhubWhiteBackground",
    beforeDraw(chart) {
      const ctx = chart.ctx;
      ctx.save();
      ctx.globalCompositeOperation = "destination-over";
      ctx.fillStyle = "#ffffff";
      ctx.fillRect(0, 0, chart.width, chart.height);
      ctx.restore();
    },
  };

  // Each point's verdict against the reference series, drawn above it
  // with the same glyphs as the table.
  const VERDICT_MARKS = {
    better: ["▲", "#1b7a3a"],
    worse: ["▼", "#b3261e"],
    higher: ["▲", "#5b6472"],
    lower: ["▼", "#5b6472"],
    "within noise": ["≈", "#5b6472"],
    "insufficient data": ["?", "#9aa1ad"],
  };
  const verdictMarkers = {
    id: "benchhubVerdictMarkers",
    afterDatasetsDraw(chart) {
      const ctx = chart.ctx;
      ctx.save();
      ctx.font = "bold 12px sans-serif";
      ctx.textAlign = "center";
      ctx.textBaseline = "bottom";
      chart.data.datasets.forEach(function (dataset, index) {
        const meta = chart.getDatasetMeta(index);
        if (meta.hidden) {
          return;
        }
        (dataset.benchhubPoints || []).forEach(function (point, position) {
          const element = meta.data[position];
          const mark = point && point.verdict && VERDICT_MARKS[point.verdict.verdict];
          if (!mark || !element || !Number.isFinite(element.y)) {
            return;
          }
          ctx.fillStyle = mark[1];
          ctx.fillText(mark[0], element.x, element.y - 6);
        });
      });
      ctx.restore();
    },
  };

  function verdictLine(verdict) {
    if (!verdict) {
      return null;
    }
    if (verdict.test === null) {
      return "verdict: " + verdict.verdict;
    }
    let line = "verdict: " + verdict.verdict + " (" + verdict.test + ", p = " + verdict.p_value.toPrecision(2);
    line += "; ratio " + number(verdict.ratio);
    if (verdict.ratio_low !== null) {
      line += ", 95 % " + number(verdict.ratio_low) + "–" + number(verdict.ratio_high);
    }
    return line + ")";
  }

  function shown(value) {
    return value === null || value === "" ? "(none)" : String(value);
  }

  function readJson(id) {
    const element = document.getElementById(id);
    return element ? JSON.parse(element.textContent) : null;
  }

  function number(value) {
    return value === null || value === undefined ? "—" : value.toLocaleString("en", { maximumFractionDigits: 4 });
  }

  function datasets(data, relative) {
    const key = (x) => (typeof x === "number" ? "n:" + x : "t:" + x);
    return data.series.map(function (series, index) {
      const isReference = relative && index === 0;
      const colour = isReference ? REFERENCE_COLOUR : COLOURS[index % COLOURS.length];
      const byX = new Map(series.points.map((point) => [key(point.x), point]));
      const y = (point) => (relative ? point.relative : point.value);
      const points = data.x_numeric ? series.points : data.x_values.map((x) => byX.get(key(x)) || null);
      return {
        label: shown(series.label),
        data: data.x_numeric
          ? series.points.map((point) => ({ x: point.x, y: y(point) }))
          : points.map((point) => (point ? y(point) : null)),
        benchhubPoints: points,
        borderColor: colour,
        backgroundColor: data.x_numeric ? colour : colour + "cc",
        borderWidth: data.x_numeric ? 2 : 1,
        borderDash: isReference && data.x_numeric ? [6, 4] : [],
        pointRadius: data.x_numeric ? 4 : 3,
        spanGaps: true,
      };
    });
  }

  function draw() {
    const canvas = document.getElementById("comparison-chart");
    const data = readJson("comparison-data");
    const labels = readJson("comparison-labels");
    if (!canvas || !data || !labels || typeof Chart === "undefined") {
      return;
    }
    const previous = Chart.getChart(canvas);
    if (previous) {
      previous.destroy();
    }
    const relative = data.reference !== null;
    const numeric = data.x_numeric;
    new Chart(canvas, {
      type: numeric ? "line" : "bar",
      data: {
        labels: numeric ? undefined : data.x_values.map(shown),
        datasets: datasets(data, relative),
      },
      plugins: [whiteBackground, verdictMarkers],
      options: {
        animation: false,
        maintainAspectRatio: false,
        // A series without a value at some x takes no slot in that group.
        datasets: { bar: { skipNull: true, maxBarThickness: 90 } },
        interaction: { mode: numeric ? "nearest" : "index", intersect: false },
        scales: {
          x: {
            type: numeric ? "linear" : "category",
            // Clients, sizes, counts: the axis starts at 0 so that
            // distances read as proportions, with room for the end points.
            beginAtZero: numeric,
            grace: numeric ? "5%" : 0,
            // Every category named (sql-bench has 46 operations): a skipped
            // label would leave a bar group nobody can identify.
            ticks: numeric ? {} : { autoSkip: false, maxRotation: 90 },
            title: { display: true, text: labels.x, font: { weight: "bold" } },
          },
          y: {
            beginAtZero: true,
            grace: "5%",
            title: { display: true, text: labels.y, font: { weight: "bold" } },
          },
        },
        plugins: {
          title: { display: true, text: labels.title, font: { size: 15 } },
          subtitle: { display: Boolean(labels.subtitle), text: labels.subtitle },
          legend: { position: "top" },
          tooltip: {
            callbacks: {
              afterLabel(context) {
                const point = context.dataset.benchhubPoints[context.dataIndex];
                if (!point) {
                  return "";
                }
                const lines = ["median of n = " + point.n];
                if (point.n > 1) {
                  lines.push("min " + number(point.min) + ", max " + number(point.max));
                }
                if (relative) {
                  lines.push("value " + number(point.value) + " " + data.metric.unit);
                }
                const verdict = verdictLine(point.verdict);
                if (verdict) {
                  lines.push(verdict);
                }
                return lines;
              },
            },
          },
        },
      },
    });
  }

  function downloadPng(button) {
    const canvas = document.getElementById("comparison-chart");
    const chart = canvas && Chart.getChart(canvas);
    const labels = readJson("comparison-labels");
    if (!chart || !labels) {
      return;
    }
    const link = document.createElement("a");
    link.href = chart.toBase64Image("image/png", 1);
    link.download = labels.filename;
    document.body.appendChild(link);
    link.click();
    link.remove();
    button.blur();
  }

  document.addEventListener("DOMContentLoaded", draw);
  document.addEventListener("htmx:afterSettle", draw);
  document.addEventListener("htmx:historyRestore", draw);
  document.addEventListener("click", function (event) {
    const button = event.target.closest("#download-png");
    if (button) {
      downloadPng(button);
    }
  });
})();
