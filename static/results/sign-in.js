// The header's "Sign in" comes back to the page it was clicked on (base.html
// puts the address in ?next=), and so does "Sign out" where the page is
// public (its form's "next"). htmx filters and comparisons change the
// address without reloading the header: both follow the address bar, or
// they would land on the page as it was first loaded.
(function () {
  "use strict";

  function follow() {
    const here = location.pathname + location.search;
    const signOut = document.getElementById("sign-out-next");
    if (signOut) signOut.value = here; // absent where the page is not public
    const link = document.getElementById("sign-in");
    if (!link) return;
    const url = new URL(link.href);
    if (!url.searchParams.has("next")) return; // an account form: never back to it
    url.searchParams.set("next", here);
    link.href = url.pathname + url.search;
  }

  document.addEventListener("htmx:pushedIntoHistory", follow);
  document.addEventListener("htmx:replacedInHistory", follow);
  document.addEventListener("htmx:historyRestore", follow);
})();
