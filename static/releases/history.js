/* Draws a history over server versions from the JSON the page embeds with
 * json_script (#history-data: exactly what /api/v1/history/<benchmark>/
 * answers for the same query; #history-labels: titles written for people).
 * The median per version as a line, the middle half of its runs (q1 to q3)
 * as a band, and over each version after the first the 95 % interval of its
 * change from the version before (the verdict's, in the metric's unit) as a
 * thick bar with the verdict's glyph above. A logarithmic value axis at
 * ?scale=log, toggled by #history-log-scale, which keeps the address (and the
 * form's hidden scale field) in step. Strings reach the canvas as text. */
(function () {
  "use strict";
  const { readJson, chartInputs, number, whiteBackground, logScaleDrawable, logScaleButton } = window.BenchHubCharts;

  const SCALE = "scale";
  const LOG = "log";

  function logScaleWanted() {
    return new URLSearchParams(window.location.search).get(SCALE) === LOG;
  }

  // The choice in the address, as the form's other choices are, and in the
  // form's hidden field, so that Show keeps it.
  function rememberLogScale(wanted) {
    const url = new URL(window.location.href);
    if (wanted) {
      url.searchParams.set(SCALE, LOG);
    } else {
      url.searchParams.delete(SCALE);
    }
    window.history.replaceState(window.history.state, "", url);
    const field = document.getElementById("history-scale");
    if (field) {
      field.disabled = !wanted;
    }
  }

  const MEDIAN = "#1f5fa8";
  const BAND = "rgba(31, 95, 168, 0.16)";
  const INTERVAL = "rgba(179, 89, 0, 0.55)";
  // The same glyphs as the comparison chart and the tables (templatetags/comparisons.py).
  const VERDICT_MARKS = {
    better: ["▲", "#1b7a3a"],
    worse: ["▼", "#b3261e"],
    higher: ["▲", "#5b6472"],
    lower: ["▼", "#5b6472"],
    equivalent: ["=", "#5b6472"],
    inconclusive: ["?", "#5b6472"],
    "insufficient data": ["…", "#9aa1ad"],
  };

  function shown(value) {
    return value === null || value === "" ? "(none)" : String(value);
  }

  // The verdict's interval, and its glyph above the median, per version.
  const intervals = {
    id: "benchhubHistoryIntervals",
    afterDatasetsDraw(chart) {
      const versions = chart.config.options.benchhubVersions;
      const meta = chart.getDatasetMeta(2);
      const scale = chart.scales.y;
      const ctx = chart.ctx;
      ctx.save();
      versions.forEach(function (version, index) {
        const element = meta.data[index];
        if (!element) {
          return;
        }
        if (version.interval) {
          const top = scale.getPixelForValue(version.interval[1]);
          const bottom = scale.getPixelForValue(version.interval[0]);
          ctx.fillStyle = INTERVAL;
          ctx.fillRect(element.x - 4, top, 8, Math.max(1, bottom - top));
        }
        const judged = version.against_previous;
        const mark = judged && VERDICT_MARKS[judged.verdict];
        if (mark) {
          const above = version.interval ? Math.min(element.y, scale.getPixelForValue(version.interval[1])) : element.y;
          ctx.font = "bold 12px sans-serif";
          ctx.textAlign = "center";
          ctx.textBaseline = "bottom";
          ctx.fillStyle = mark[1];
          ctx.fillText(mark[0], element.x, above - 6);
        }
      });
      ctx.restore();
    },
  };

  function verdictLine(judged) {
    if (!judged) {
      return "the first version shown";
    }
    if (judged.test === null) {
      return "against the version before: " + judged.verdict;
    }
    let line = "against the version before: " + judged.verdict + " (" + judged.test + ", p = " + judged.p_value.toPrecision(2);
    line += "; ratio " + number(judged.ratio);
    if (judged.ratio_low !== null && judged.ratio_high !== null) {
      line += ", 95 % " + number(judged.ratio_low) + "–" + number(judged.ratio_high);
    }
    return line + ")";
  }

  function draw() {
    const inputs = chartInputs("history-chart", "history-data", "history-labels");
    if (!inputs) {
      return;
    }
    const { canvas, data, labels } = inputs;
    const versions = data.versions;
    let low = Infinity;
    let high = -Infinity;
    versions.forEach(function (version) {
      const ends = [version.q1, version.q3, version.median].concat(version.interval || []);
      ends.forEach(function (value) {
        low = Math.min(low, value);
        high = Math.max(high, value);
      });
    });
    const drawable = versions.length > 0 && logScaleDrawable([low]);
    const logarithmic = logScaleWanted() && drawable;
    logScaleButton("history-log-scale", drawable, logarithmic);
    const bounds = [Number.isFinite(low) ? low : undefined, Number.isFinite(high) ? high : undefined];
    // A line over versions, not bars: the linear axis spans the values, so
    // that the band and the intervals a reader weighs a step by show.
    const linear = { beginAtZero: false, grace: "8%", suggestedMin: bounds[0], suggestedMax: bounds[1] };
    new Chart(canvas, {
      type: "line",
      data: {
        // ▲: the workload or the agent changed at this version (the table says how).
        labels: versions.map((version) => shown(version.version) + (version.changed ? " ▲" : "")),
        datasets: [
          {
            label: "q3",
            data: versions.map((version) => version.q3),
            borderWidth: 0,
            pointRadius: 0,
            pointHitRadius: 0,
            backgroundColor: BAND,
            fill: false,
          },
          {
            label: labels.band,
            data: versions.map((version) => version.q1),
            borderWidth: 0,
            pointRadius: 0,
            pointHitRadius: 0,
            backgroundColor: BAND,
            fill: "-1",
          },
          {
            label: labels.median,
            data: versions.map((version) => version.median),
            borderColor: MEDIAN,
            backgroundColor: MEDIAN,
            borderWidth: 2,
            pointRadius: 4,
            pointStyle: "circle",
          },
          // Only a legend entry: the intervals are drawn by the plugin.
          { label: "95 % interval of the change from the version before", data: [], backgroundColor: INTERVAL, borderColor: INTERVAL },
        ],
      },
      plugins: [whiteBackground, intervals],
      options: {
        animation: false,
        maintainAspectRatio: false,
        benchhubVersions: versions,
        interaction: { mode: "index", intersect: false },
        scales: {
          // offset: each version in the middle of its slot, one alone included
          x: { offset: true, title: { display: true, text: labels.x, font: { weight: "bold" } }, ticks: { autoSkip: false } },
          y: BenchHubCharts.valueAxis(logarithmic, linear, labels.y, bounds[0], bounds[1]),
        },
        plugins: {
          title: { display: true, text: labels.title, font: { size: 15 } },
          subtitle: { display: Boolean(labels.subtitle), text: labels.subtitle },
          legend: {
            position: "top",
            labels: { filter: (item) => item.datasetIndex !== 0, boxWidth: 18 },
          },
          tooltip: {
            filter: (item) => item.datasetIndex === 2,
            callbacks: {
              afterLabel(context) {
                const version = versions[context.dataIndex];
                const lines = [
                  "median of n = " + version.n + " on " + version.machines + " machine" + (version.machines === 1 ? "" : "s"),
                  "q1 " + number(version.q1) + ", q3 " + number(version.q3),
                  "min " + number(version.min) + ", max " + number(version.max),
                  verdictLine(version.against_previous),
                ];
                if (version.changed) {
                  lines.push("▲ " + version.changed);
                }
                if (version.interval) {
                  lines.push("95 %: " + number(version.interval[0]) + "–" + number(version.interval[1]) + " " + data.metric.unit);
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
    const labels = readJson("history-labels");
    BenchHubCharts.downloadPng("history-chart", labels && labels.filename, button);
  }

  document.addEventListener("DOMContentLoaded", draw);
  document.addEventListener("click", function (event) {
    const button = event.target.closest("#history-png");
    if (button) {
      downloadPng(button);
    }
    const logButton = event.target.closest("#history-log-scale");
    if (logButton && !logButton.disabled) {
      rememberLogScale(logButton.getAttribute("aria-pressed") !== "true");
      draw();
    }
  });
})();
