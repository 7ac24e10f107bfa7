// What every chart page shares (the comparison, runs side by side, the history):
// its data read from a json_script element, the opening of each draw, numbers as
// the tables print them, a white background for the PNG, the PNG download and
// the logarithmic value axis with its toggle.
window.BenchHubCharts = (function () {
  "use strict";

  function readJson(id) {
    const element = document.getElementById(id);
    return element ? JSON.parse(element.textContent) : null;
  }

  // The opening of a draw: the canvas and its page's data, the chart drawn on it
  // before destroyed; null when the page has nothing to draw (or no Chart.js).
  function chartInputs(canvasId, dataId, labelsId) {
    const canvas = document.getElementById(canvasId);
    const data = readJson(dataId);
    const labels = readJson(labelsId);
    if (!canvas || !data || !labels || typeof Chart === "undefined") {
      return null;
    }
    const previous = Chart.getChart(canvas);
    if (previous) {
      previous.destroy();
    }
    return { canvas, data, labels };
  }

  // A logarithmic value axis, for values spread over orders of magnitude.
  // Only positive values have a logarithm: a chart holding a zero or a
  // negative value (or a bar or interval reaching one) keeps its linear axis,
  // and its toggle (a button with aria-pressed) says why it is off.
  function logScaleDrawable(values) {
    return values.every((value) => value > 0);
  }

  function logScaleButton(buttonId, drawable, logarithmic) {
    const button = document.getElementById(buttonId);
    if (!button) {
      return;
    }
    button.disabled = !drawable;
    button.title = drawable ? "" : "A logarithmic axis cannot show zero or negative values.";
    button.setAttribute("aria-pressed", logarithmic ? "true" : "false");
  }

  // The value axis: ``linear`` as the page draws it, or logarithmic over the
  // same values (from ``low`` to ``high``), its title saying so.
  function valueAxis(logarithmic, linear, title, low, high) {
    if (!logarithmic) {
      return Object.assign({ title: { display: true, text: title, font: { weight: "bold" } } }, linear);
    }
    return {
      type: "logarithmic",
      suggestedMin: low,
      suggestedMax: high,
      title: { display: true, text: title + " (logarithmic)", font: { weight: "bold" } },
    };
  }

  function number(value) {
    return value === null || value === undefined ? "—" : value.toLocaleString("en", { maximumFractionDigits: 4 });
  }

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

  // The chart on canvas #canvasId as a PNG file of that name.
  function downloadPng(canvasId, filename, button) {
    const canvas = document.getElementById(canvasId);
    const chart = canvas && Chart.getChart(canvas);
    if (!chart || !filename) {
      return;
    }
    const link = document.createElement("a");
    link.href = chart.toBase64Image("image/png", 1);
    link.download = filename;
    document.body.appendChild(link);
    link.click();
    link.remove();
    if (button) {
      button.blur();
    }
  }

  return Object.freeze({
    readJson,
    chartInputs,
    number,
    whiteBackground,
    downloadPng,
    logScaleDrawable,
    logScaleButton,
    valueAxis,
  });
})();
