// Starts Redoc with the settings the page carries as a JSON data block
// (no inline script: the Content-Security-Policy allows the site's own files only).
(function () {
  "use strict";
  const container = document.getElementById("redoc-container");
  const settings = JSON.parse(document.getElementById("redoc-settings").textContent);
  Redoc.init(container.dataset.schemaUrl, settings, container);
})();
