// What every chart page shares (the comparison, runs side by side, the history):
// its data read from a json_script element, numbers as the tables print them, a
// white background for the PNG, and the PNG download.
window.BenchHubCharts = (function () {
  "use strict";

  function readJson(id) {
    const element = document.getElementById(id);
    return element ? JSON.parse(element.textContent) : null;
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

  return Object.freeze({ readJson, number, whiteBackground, downloadPng });
})();
