// The results browser with htmx. Each filter link replaces the whole region
// (filters and list), which would fold the filters again on a phone and
// drop the focus of the link just followed to the page's body. So: filters
// that were open stay open (several can be chosen in a row), and focus that
// was lost goes to the heading that counts the runs (read out, and Tab goes
// on from there). Without JavaScript the links load whole pages instead.
(() => {
  let filtersOpen = null;
  document.addEventListener("htmx:beforeSwap", (event) => {
    const target = event.detail.target;
    if (!target || target.id !== "results-region") return;
    const filters = document.getElementById("results-filters");
    filtersOpen = filters ? filters.open : null;
  });
  document.addEventListener("htmx:afterSettle", () => {
    const filters = document.getElementById("results-filters");
    if (filters && filtersOpen !== null) filters.open = filtersOpen;
    filtersOpen = null;
    const heading = document.getElementById("results-count");
    if (heading && (!document.activeElement || document.activeElement === document.body)) {
      heading.focus({ preventScroll: true });
    }
  });
})();
