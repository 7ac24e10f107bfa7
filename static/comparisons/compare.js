/* Draws the comparison chart from the JSON the page embeds with Django's
 * json_script (#comparison-data: exactly what /api/v1/comparisons/ answers
 * for the same query; #comparison-labels: axis titles written for people).
 * Every string from the data reaches Chart.js as a string and is painted on
 * the canvas: nothing is parsed as markup. Redrawn after each htmx swap. */
(function () {
  "use strict";
  const { readJson, chartInputs, number, whiteBackground, logScaleDrawable, logScaleButton } = window.BenchHubCharts;

  // Every colour at least 3:1 against the white background (WCAG 1.4.11);
  // series also differ by point style, line dash and bar hatching, so that
  // colour is never the only difference.
  const COLOURS = [
    "#1f5fa8", "#b35900", "#1a7f37", "#c62828", "#6a3d9a",
    "#8c564b", "#ad1457", "#00796b", "#5b6475", "#7a6a00",
  ];
  const REFERENCE_COLOUR = "#1d2330";
  const POINT_STYLES = ["circle", "rect", "triangle", "rectRot", "star", "crossRot", "rectRounded", "cross"];
  const DASHES = [[], [8, 4], [2, 3], [10, 3, 2, 3], [4, 4], [12, 6]];
  const HATCHES = ["solid", "diagonal", "dots", "horizontal", "cross", "vertical"];
  // An article's own TOTALS row: a table row, never a bar that sets the scale.
  const isTotals = (x) => typeof x === "string" && x.trim().toLowerCase() === "totals";

  function hatch(colour, kind) {
    if (kind === "solid") {
      return colour + "cc";
    }
    const tile = document.createElement("canvas");
    tile.width = tile.height = 8;
    const ctx = tile.getContext("2d");
    ctx.fillStyle = "#ffffff";
    ctx.fillRect(0, 0, 8, 8);
    ctx.fillStyle = colour;
    ctx.strokeStyle = colour;
    ctx.lineWidth = 2;
    ctx.beginPath();
    if (kind === "diagonal") {
      ctx.moveTo(0, 8); ctx.lineTo(8, 0); ctx.moveTo(-2, 2); ctx.lineTo(2, -2); ctx.moveTo(6, 10); ctx.lineTo(10, 6);
    } else if (kind === "dots") {
      ctx.arc(4, 4, 2, 0, 2 * Math.PI);
      ctx.fill();
    } else if (kind === "horizontal") {
      ctx.moveTo(0, 4); ctx.lineTo(8, 4);
    } else if (kind === "vertical") {
      ctx.moveTo(4, 0); ctx.lineTo(4, 8);
    } else {
      ctx.moveTo(0, 0); ctx.lineTo(8, 8); ctx.moveTo(8, 0); ctx.lineTo(0, 8);
    }
    ctx.stroke();
    return ctx.createPattern(tile, "repeat");
  }

  // A point's error bar in the chart's unit: relative ones scale like the point.
  function barOf(bars, point, relative) {
    const bar = point && bars[JSON.stringify(point.x)];
    if (!bar) {
      return null;
    }
    if (!relative) {
      return bar;
    }
    if (point.relative === null || !point.value) {
      return null;
    }
    return [(bar[0] * point.relative) / point.value, (bar[1] * point.relative) / point.value];
  }

  // The lowest and highest error bar ends drawn, so that the value axis
  // reaches them: a bar past the axis was painted over the title and legend.
  function barExtent(chartData, relative, xValues) {
    const drawn = new Set(xValues.map((x) => JSON.stringify(x)));
    let low = Infinity;
    let high = -Infinity;
    ["comparison-errorbars", "comparison-intervals"].forEach(function (id) {
      const bars = readJson(id) || {};
      chartData.series.forEach(function (series) {
        const ofSeries = bars[series.label] || {};
        series.points.forEach(function (point) {
          const bar = drawn.has(JSON.stringify(point.x)) && barOf(ofSeries, point, relative);
          if (bar) {
            low = Math.min(low, bar[0]);
            high = Math.max(high, bar[1]);
          }
        });
      });
    });
    return Number.isFinite(high) ? { low, high } : null;
  }

  // The interval each verdict reads (#comparison-intervals: the 95 % interval
  // of the ratio to the reference, times the reference's median), as a
  // shaded bar in the series' colour across the point, under the min-max
  // whisker: the chart then shows what the verdict's number is.
  const verdictIntervals = {
    id: "benchhubVerdictIntervals",
    afterDatasetsDraw(chart) {
      const intervals = readJson("comparison-intervals") || {};
      const horizontal = chart.options.indexAxis === "y";
      const scale = horizontal ? chart.scales.x : chart.scales.y;
      const ctx = chart.ctx;
      ctx.save();
      chart.data.datasets.forEach(function (dataset, index) {
        const meta = chart.getDatasetMeta(index);
        const ofSeries = intervals[dataset.benchhubLabel] || {};
        if (meta.hidden) {
          return;
        }
        ctx.fillStyle = dataset.borderColor + "66";
        ctx.strokeStyle = dataset.borderColor;
        ctx.lineWidth = 1;
        (dataset.benchhubPoints || []).forEach(function (point, position) {
          const element = meta.data[position];
          const bar = barOf(ofSeries, point, dataset.benchhubRelative);
          if (!bar || !element) {
            return;
          }
          const a = scale.getPixelForValue(bar[0]);
          const b = scale.getPixelForValue(bar[1]);
          const centre = horizontal ? element.y : element.x;
          const from = Math.min(a, b);
          const length = Math.max(1, Math.abs(b - a));
          if (horizontal) {
            ctx.fillRect(from, centre - 5, length, 10);
            ctx.strokeRect(from, centre - 5, length, 10);
          } else {
            ctx.fillRect(centre - 5, from, 10, length);
            ctx.strokeRect(centre - 5, from, 10, length);
          }
        });
      });
      ctx.restore();
    },
  };

  // Error bars: the min and max of a cell's measurements, the range the
  // table, the tooltip and the caption name (#comparison-errorbars).
  const errorBars = {
    id: "benchhubErrorBars",
    afterDatasetsDraw(chart) {
      const bars = readJson("comparison-errorbars") || {};
      const horizontal = chart.options.indexAxis === "y";
      const scale = horizontal ? chart.scales.x : chart.scales.y;
      const ctx = chart.ctx;
      ctx.save();
      ctx.strokeStyle = "#1d2330";
      ctx.lineWidth = 1.5;
      chart.data.datasets.forEach(function (dataset, index) {
        const meta = chart.getDatasetMeta(index);
        const ofSeries = bars[dataset.benchhubLabel] || {};
        if (meta.hidden) {
          return;
        }
        (dataset.benchhubPoints || []).forEach(function (point, position) {
          const element = meta.data[position];
          const bar = barOf(ofSeries, point, dataset.benchhubRelative);
          if (!bar || !element) {
            return;
          }
          const [low, high] = bar;
          const a = scale.getPixelForValue(low);
          const b = scale.getPixelForValue(high);
          const centre = horizontal ? element.y : element.x;
          ctx.beginPath();
          if (horizontal) {
            ctx.moveTo(a, centre); ctx.lineTo(b, centre);
            ctx.moveTo(a, centre - 4); ctx.lineTo(a, centre + 4);
            ctx.moveTo(b, centre - 4); ctx.lineTo(b, centre + 4);
          } else {
            ctx.moveTo(centre, a); ctx.lineTo(centre, b);
            ctx.moveTo(centre - 4, a); ctx.lineTo(centre + 4, a);
            ctx.moveTo(centre - 4, b); ctx.lineTo(centre + 4, b);
          }
          ctx.stroke();
        });
      });
      ctx.restore();
    },
  };

  // Each point's verdict against the reference series, drawn above it
  // with the same glyphs as the table (templatetags/comparisons.py, _MARKS).
  const VERDICT_MARKS = {
    better: ["▲", "#1b7a3a"],
    worse: ["▼", "#b3261e"],
    higher: ["▲", "#5b6472"],
    lower: ["▼", "#5b6472"],
    equivalent: ["=", "#5b6472"],
    inconclusive: ["?", "#5b6472"],
    "insufficient data": ["…", "#9aa1ad"],
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

  // The verdict's word as the table labels it (verdict_label): inconclusive
  // with the interval that makes it so.
  function verdictLabel(verdict) {
    if (verdict.verdict !== "inconclusive") {
      return verdict.verdict;
    }
    if (verdict.ratio_low === null || verdict.ratio_high === null) {
      return "inconclusive: no 95 % interval";
    }
    const short = (value) => String(Number(value.toPrecision(3)));
    return "inconclusive: " + short(verdict.ratio_low) + "–" + short(verdict.ratio_high) + " ×";
  }

  function verdictLine(verdict) {
    if (!verdict) {
      return null;
    }
    if (verdict.test === null) {
      return "verdict: " + verdict.verdict;
    }
    let line = "verdict: " + verdictLabel(verdict) + " (" + verdict.test + ", p = " + verdict.p_value.toPrecision(2);
    line += "; ratio " + number(verdict.ratio);
    if (verdict.ratio_low !== null && verdict.verdict !== "inconclusive") {
      line += ", 95 % " + number(verdict.ratio_low) + "–" + number(verdict.ratio_high);
    }
    return line + ")";
  }

  function shown(value) {
    return value === null || value === "" ? "(none)" : String(value);
  }

  // A long category name on lines of at most `width` characters, broken
  // after "_", "+" or a space (sql-bench's count_distinct_group_on_key_parts
  // was cut at a phone's left edge); a word longer than that is cut into pieces.
  function wrapLabel(label, width) {
    if (label.length <= width) {
      return label;
    }
    const lines = [];
    let line = "";
    label.split(/(?<=[_+ ])/).forEach(function (word) {
      for (let piece = word; piece; piece = piece.slice(width)) {
        if (line && (line + piece.slice(0, width)).length > width) {
          lines.push(line);
          line = "";
        }
        line += piece.slice(0, width);
      }
    });
    return line ? lines.concat(line) : lines;
  }

  function datasets(data, relative, xValues, horizontal) {
    const key = (x) => (typeof x === "number" ? "n:" + x : "t:" + x);
    return data.series.map(function (series, index) {
      const isReference = relative && index === 0;
      const colour = isReference ? REFERENCE_COLOUR : COLOURS[index % COLOURS.length];
      const byX = new Map(series.points.map((point) => [key(point.x), point]));
      const y = (point) => (relative ? point.relative : point.value);
      const points = data.x_numeric ? series.points : xValues.map((x) => byX.get(key(x)) || null);
      const value = (point) => (point ? y(point) : null);
      return {
        label: shown(series.label),
        benchhubLabel: series.label,
        benchhubRelative: relative,
        data: data.x_numeric
          ? series.points.map((point) => ({ x: point.x, y: y(point) }))
          : points.map(value),
        benchhubPoints: points,
        borderColor: colour,
        backgroundColor: data.x_numeric ? colour : hatch(colour, HATCHES[index % HATCHES.length]),
        borderWidth: data.x_numeric ? 2 : 1.5,
        borderDash: data.x_numeric ? DASHES[index % DASHES.length] : [],
        pointStyle: POINT_STYLES[index % POINT_STYLES.length],
        pointRadius: data.x_numeric ? 5 : 3,
        pointBackgroundColor: colour,
        spanGaps: true,
        indexAxis: horizontal ? "y" : "x",
      };
    });
  }

  // A logarithmic value axis, for values spread over orders of magnitude
  // (sql-bench's operations, latencies from one to a thousand clients):
  // ?scale=log, as the history page keeps it. The toggle writes it into the
  // address and into the form's hidden field, so that a shared link, a
  // reload and the form's next answer (whose pushed address carries the
  // field) all draw what the reader chose.
  // The form's field, drawn from the address by the server, is read rather
  // than the address: an answer may be drawn before htmx pushes its address.
  function logScaleWanted() {
    const field = document.getElementById("comparison-scale");
    return field ? !field.disabled : new URLSearchParams(window.location.search).get("scale") === "log";
  }

  function rememberLogScale(wanted) {
    const url = new URL(window.location.href);
    if (wanted) {
      url.searchParams.set("scale", "log");
    } else {
      url.searchParams.delete("scale");
    }
    window.history.replaceState(window.history.state, "", url);
    const field = document.getElementById("comparison-scale");
    if (field) {
      field.disabled = !wanted;
    }
  }

  function draw() {
    const inputs = chartInputs("comparison-chart", "comparison-data", "comparison-labels");
    if (!inputs) {
      return;
    }
    const { canvas, data, labels } = inputs;
    const relative = data.reference !== null;
    const numeric = data.x_numeric;
    const xValues = numeric || data.x_values.length < 2 ? data.x_values : data.x_values.filter((x) => !isTotals(x));
    // Many names, or a phone's width: bars lie down, one label per line,
    // and the chart grows downwards instead of sideways.
    const narrow = canvas.parentElement.clientWidth < 600;
    const horizontal = !numeric && (xValues.length > 16 || (narrow && xValues.length * data.series.length > 6));
    const box = canvas.parentElement;
    const wrapWidth = narrow ? 16 : 32;
    const lines = horizontal ? Math.max(...xValues.map((x) => [].concat(wrapLabel(shown(x), wrapWidth)).length)) : 1;
    const row = Math.max(1.4, data.series.length * 0.9, lines * 0.95);
    box.style.height = horizontal ? Math.max(28, 4 + xValues.length * row) + "rem" : "";
    const categoryAxis = {
      type: numeric ? "linear" : "category",
      // Clients, sizes, counts: the axis starts at 0 so that
      // distances read as proportions, with room for the end points.
      beginAtZero: numeric,
      grace: numeric ? "5%" : 0,
      // Every category named (sql-bench has 46 operations): a skipped
      // label would leave a bar group nobody can identify.
      // Whole clients, rows, threads: no tick at 0.5 of one.
      // Standing bars keep Chart.js's own labels: a callback given as
      // undefined replaces them, and the categories read 0, 1, 2 …
      ticks: numeric
        ? { precision: xValues.every(Number.isInteger) ? 0 : undefined }
        : Object.assign(
            { autoSkip: false, maxRotation: horizontal ? 0 : 90 },
            horizontal
              ? {
                  callback: function (value) {
                    return wrapLabel(this.getLabelForValue(value), wrapWidth);
                  },
                }
              : {},
          ),
      title: { display: true, text: labels.x, font: { weight: "bold" } },
    };
    const extent = barExtent(data, relative, xValues);
    const drawable = logScaleDrawable(
      data.series
        .flatMap((series) => series.points.map((point) => (relative ? point.relative : point.value)))
        .concat(extent ? [extent.low] : []),
    );
    const logarithmic = logScaleWanted() && drawable;
    logScaleButton("log-scale", drawable, logarithmic);
    const low = extent ? extent.low : undefined;
    const high = extent ? extent.high : undefined;
    const linear = { beginAtZero: true, grace: "5%", suggestedMin: low, suggestedMax: high };
    const valueAxis = BenchHubCharts.valueAxis(logarithmic, linear, labels.y, low, high);
    new Chart(canvas, {
      type: numeric ? "line" : "bar",
      data: {
        labels: numeric ? undefined : xValues.map(shown),
        datasets: datasets(data, relative, xValues, horizontal),
      },
      plugins: [whiteBackground, verdictIntervals, errorBars, verdictMarkers],
      options: {
        animation: false,
        maintainAspectRatio: false,
        indexAxis: horizontal ? "y" : "x",
        // A series without a value at some x takes no slot in that group.
        datasets: { bar: { skipNull: true, maxBarThickness: 90 } },
        interaction: { mode: numeric ? "nearest" : "index", intersect: false, axis: horizontal ? "y" : "x" },
        scales: horizontal ? { x: valueAxis, y: categoryAxis } : { x: categoryAxis, y: valueAxis },
        plugins: {
          title: { display: true, text: labels.title, font: { size: 15 } },
          subtitle: { display: Boolean(labels.subtitle), text: labels.subtitle },
          legend: { position: "top", labels: { usePointStyle: true } },
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
                const ofSeries = (readJson("comparison-intervals") || {})[context.dataset.benchhubLabel] || {};
                const interval = barOf(ofSeries, point, relative);
                if (interval) {
                  const unit = relative ? " %" : " " + data.metric.unit;
                  lines.push("shaded: 95 % " + number(interval[0]) + "–" + number(interval[1]) + unit);
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
    const labels = readJson("comparison-labels");
    BenchHubCharts.downloadPng("comparison-chart", labels && labels.filename, button);
  }

  // The form is never replaced while in use: an answer's out-of-band part
  // (the metric, axis or reference select) is not swapped into a control
  // that holds the focus, so no keystroke or choice is lost.
  document.addEventListener("htmx:oobBeforeSwap", function (event) {
    const target = event.detail.target;
    if (target && target.contains(document.activeElement) && target.closest("#comparison-form")) {
      event.detail.shouldSwap = false;
    }
  });

  // "Add a filter": the name and value become a field of their own before
  // the form is sent, so that it stays in the form like the others.
  let added = 0;
  function addFilter() {
    const nameInput = document.getElementById("cmp-add-filter");
    const valueInput = document.getElementById("cmp-add-value");
    const grid = document.getElementById("cmp-fixed-fields");
    if (!nameInput || !valueInput || !grid) {
      return false;
    }
    const name = nameInput.value.trim();
    const value = valueInput.value.trim();
    if (!name || !value) {
      return false;
    }
    added += 1;
    const field = document.createElement("div");
    field.className = "field";
    const label = document.createElement("label");
    const input = document.createElement("input");
    input.type = "text";
    input.id = "cmp-added-" + added;
    input.name = name;
    input.value = value;
    input.placeholder = "any";
    input.autocomplete = "off";
    input.setAttribute("hx-get", document.getElementById("comparison-form").getAttribute("hx-get"));
    input.setAttribute("hx-trigger", "input changed delay:300ms");
    label.htmlFor = input.id;
    label.textContent = name;
    field.append(label, input);
    grid.appendChild(field);
    if (typeof htmx !== "undefined") {
      htmx.process(field);
    }
    nameInput.value = "";
    valueInput.value = "";
    return true;
  }
  // In the capture phase, before htmx sends the form on the same submit.
  document.addEventListener(
    "submit",
    function (event) {
      if (event.target.id === "comparison-form") {
        addFilter();
      }
    },
    true,
  );

  // One request per query: typing in a filter sends the form after a pause,
  // and Show (or Enter) sends it again; whichever comes second asks for the
  // comparison already shown or on its way, and is not sent. A request that
  // failed is forgotten, so that Show retries it; so is the last one when
  // the history brings back another comparison.
  let lastAsked = null;
  function fromForm(event) {
    return event.target instanceof Element && event.target.closest("#comparison-form") !== null;
  }
  document.addEventListener("htmx:beforeRequest", function (event) {
    if (!fromForm(event)) {
      return;
    }
    const asked = event.detail.pathInfo.finalRequestPath;
    if (asked === lastAsked) {
      event.preventDefault();
      return;
    }
    lastAsked = asked;
  });
  function forget(event) {
    if (fromForm(event) && !event.detail.successful) {
      lastAsked = null;
    }
  }
  document.addEventListener("htmx:afterRequest", forget);
  document.addEventListener("htmx:sendError", forget);
  document.addEventListener("htmx:timeout", forget);
  document.addEventListener("htmx:historyRestore", function () {
    lastAsked = null;
  });

  document.addEventListener("DOMContentLoaded", draw);
  document.addEventListener("htmx:afterSettle", draw);
  document.addEventListener("htmx:historyRestore", draw);
  document.addEventListener("click", function (event) {
    const button = event.target.closest("#download-png");
    if (button) {
      downloadPng(button);
    }
    const logButton = event.target.closest("#log-scale");
    if (logButton && !logButton.disabled) {
      rememberLogScale(logButton.getAttribute("aria-pressed") !== "true");
      draw();
    }
  });
})();
