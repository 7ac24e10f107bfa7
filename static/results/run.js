/* The run page's chart: one metric of the run at a time, against the
 * parameter its sweep varies (clients, operation …), drawn from the JSON
 * the page embeds (#run-chart-data). Lines for numbers, bars for names
 * (horizontal when there are many, so that every label stays readable on
 * a phone). Error bars are the repetitions' min and max. The "Copy"
 * buttons copy the text of the element they name. */
(function () {
  // navigator.clipboard exists only on https:// and localhost; a site on a
  // closed network is often plain http://, where the older copy command
  // still works from a click.
  function copyText(text, button) {
    if (navigator.clipboard && window.isSecureContext) {
      return navigator.clipboard.writeText(text);
    }
    return new Promise(function (resolve, reject) {
      const area = document.createElement("textarea");
      area.value = text;
      area.setAttribute("readonly", "");
      area.style.position = "fixed";
      area.style.top = "0";
      area.style.opacity = "0";
      document.body.appendChild(area);
      area.select();
      let copied = false;
      try {
        copied = document.execCommand("copy");
      } catch (error) {
        copied = false;
      }
      area.remove();
      button.focus();
      if (copied) {
        resolve();
      } else {
        reject(new Error("copy refused"));
      }
    });
  }

  "use strict";

  const LINE = "#2456a6";

  function shown(value) {
    return value === null || value === "" ? "(none)" : String(value);
  }

  // Whiskers from each point's min to max, drawn after the datasets.
  const errorBars = {
    id: "benchhubErrorBars",
    afterDatasetsDraw(chart) {
      const meta = chart.getDatasetMeta(0);
      const points = chart.data.datasets[0].benchhubPoints;
      const horizontal = chart.options.indexAxis === "y";
      const scale = horizontal ? chart.scales.x : chart.scales.y;
      const ctx = chart.ctx;
      ctx.save();
      ctx.strokeStyle = "#1d2330";
      ctx.lineWidth = 1.5;
      meta.data.forEach(function (element, index) {
        const point = points[index];
        if (!point || point.min === null || point.max === null) {
          return;
        }
        const low = scale.getPixelForValue(point.min);
        const high = scale.getPixelForValue(point.max);
        ctx.beginPath();
        if (horizontal) {
          ctx.moveTo(low, element.y); ctx.lineTo(high, element.y);
          ctx.moveTo(low, element.y - 4); ctx.lineTo(low, element.y + 4);
          ctx.moveTo(high, element.y - 4); ctx.lineTo(high, element.y + 4);
        } else {
          ctx.moveTo(element.x, low); ctx.lineTo(element.x, high);
          ctx.moveTo(element.x - 4, low); ctx.lineTo(element.x + 4, low);
          ctx.moveTo(element.x - 4, high); ctx.lineTo(element.x + 4, high);
        }
        ctx.stroke();
      });
      ctx.restore();
    },
  };

  function draw(data, index) {
    const canvas = document.getElementById("run-chart");
    const metric = data.metrics[index];
    if (!canvas || !metric || typeof Chart === "undefined") {
      return;
    }
    const previous = Chart.getChart(canvas);
    if (previous) {
      previous.destroy();
    }
    const numeric = metric.x_numeric;
    const many = !numeric && metric.points.length > 8;
    const box = canvas.parentElement;
    box.style.height = many ? Math.max(24, metric.points.length * 1.6 + 6) + "rem" : "";
    const better = { higher: ", higher is better", lower: ", lower is better" }[metric.direction] || "";
    const valueTitle = metric.metric + " (" + metric.unit + ")" + better;
    // The axis reaches the whiskers' ends: one past it was painted over the title.
    const whiskers = metric.points.filter((p) => p.min !== null && p.max !== null);
    const valueAxis = {
      beginAtZero: true,
      grace: "5%",
      suggestedMin: whiskers.length ? Math.min(...whiskers.map((p) => p.min)) : undefined,
      suggestedMax: whiskers.length ? Math.max(...whiskers.map((p) => p.max)) : undefined,
      title: { display: true, text: valueTitle, font: { weight: "bold" } },
    };
    const categoryAxis = numeric
      ? {
          type: "linear",
          beginAtZero: true,
          grace: "5%", // room for the last point, not half of it cut by the edge
          // Whole clients, rows, threads: no tick at 0.5 of one.
          ticks: { precision: metric.points.every((p) => Number.isInteger(p.x)) ? 0 : undefined },
          title: { display: true, text: metric.x, font: { weight: "bold" } },
        }
      : { type: "category", ticks: { autoSkip: !many }, title: { display: true, text: metric.x, font: { weight: "bold" } } };
    new Chart(canvas, {
      type: numeric ? "line" : "bar",
      data: {
        labels: numeric ? undefined : metric.points.map((p) => shown(p.x)),
        datasets: [
          {
            label: metric.metric,
            data: numeric ? metric.points.map((p) => ({ x: p.x, y: p.y })) : metric.points.map((p) => p.y),
            benchhubPoints: metric.points,
            borderColor: LINE,
            backgroundColor: numeric ? LINE : "#2456a6cc",
            pointStyle: "circle",
            pointRadius: 4,
            borderWidth: numeric ? 2 : 1,
          },
        ],
      },
      plugins: [errorBars],
      options: {
        animation: false,
        maintainAspectRatio: false,
        indexAxis: many ? "y" : "x",
        scales: many ? { x: valueAxis, y: categoryAxis } : { x: categoryAxis, y: valueAxis },
        plugins: {
          legend: { display: false },
          title: { display: true, text: data.benchmark + ": " + metric.metric + " by " + metric.x },
          tooltip: {
            callbacks: {
              afterLabel(context) {
                const point = metric.points[context.dataIndex];
                return point && point.min !== null ? "repetitions " + point.min + " – " + point.max : "";
              },
            },
          },
        },
      },
    });
  }

  document.addEventListener("DOMContentLoaded", function () {
    const element = document.getElementById("run-chart-data");
    const select = document.getElementById("run-chart-metric");
    if (element) {
      const data = JSON.parse(element.textContent);
      draw(data, 0);
      if (select) {
        select.addEventListener("change", () => draw(data, Number(select.value)));
      }
    }
    document.addEventListener("click", function (event) {
      const button = event.target.closest("button[data-copy]");
      if (!button) {
        return;
      }
      const source = document.getElementById(button.dataset.copy);
      const status = document.getElementById(button.dataset.copy + "-status");
      if (!source) {
        return;
      }
      const say = function (text) {
        if (status) {
          status.textContent = text;
        }
      };
      copyText(source.textContent.trim(), button).then(
        function () {
          button.textContent = "Copied";
          say("Copied to the clipboard.");
        },
        function () {
          // No clipboard here: select the text for Ctrl+C instead.
          const range = document.createRange();
          range.selectNodeContents(source);
          const selection = window.getSelection();
          selection.removeAllRanges();
          selection.addRange(range);
          say("The browser refused to copy: the command is selected, press Ctrl+C.");
        }
      );
    });
  });
})();
