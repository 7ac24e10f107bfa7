// The header's "Sign in" comes back to the page it was clicked on (base.html
// puts the address in ?next=). htmx filters and comparisons change the
// address without reloading the header: the link follows the address bar,
// or signing in would land on the page as it was first loaded.
(function () {
  "use strict";

  function follow() {
    const link = document.getElementById("sign-in");
    if (!link) return;
    const url = new URL(link.href);
    if (!url.searchParams.has("next")) return; // an account form: never back to it
    url.searchParams.set("next", location.pathname + location.search);
    link.href = url.pathname + url.search;
  }

  document.addEventListener("htmx:pushedIntoHistory", follow);
  document.addEventListener("htmx:replacedInHistory", follow);
  document.addEventListener("htmx:historyRestore", follow);
})();
