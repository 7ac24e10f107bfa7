// What a page's htmx request could not do, said on the page. htmx swaps no
// 5xx answer and nothing when the server cannot be reached, so a button or
// a filter would otherwise do nothing at all: a 503 for a concurrent change
// or a database away, a 500, a timeout. The server's own sentence is shown
// (the error page's heading and text, or an API error's message).
(function () {
  "use strict";

  function serverSentence(xhr) {
    const type = xhr.getResponseHeader("Content-Type") || "";
    const body = xhr.responseText || "";
    if (type.includes("json")) {
      try {
        const error = JSON.parse(body).error;
        if (error && error.message) return error.message;
      } catch (ignored) {
        // not JSON after all: the status below
      }
    } else if (type.includes("html") && body) {
      const page = new DOMParser().parseFromString(body, "text/html");
      const main = page.querySelector("main") || page.body;
      const parts = Array.from(main.querySelectorAll("h1, p"), (node) =>
        node.textContent.replace(/\s+/g, " ").trim(),
      ).filter(Boolean);
      if (parts.length) return parts.join(" — ");
    }
    return `BenchHub answered ${xhr.status}${xhr.statusText ? " " + xhr.statusText : ""}; try again.`;
  }

  function show(message) {
    let notice = document.getElementById("request-error");
    if (!notice) {
      notice = document.createElement("div");
      notice.id = "request-error";
      notice.className = "request-error";
      notice.setAttribute("role", "alert");
      const text = document.createElement("p");
      const close = document.createElement("button");
      close.type = "button";
      close.textContent = "Dismiss";
      close.addEventListener("click", () => notice.remove());
      notice.append(text, close);
      const main = document.querySelector("main") || document.body;
      main.prepend(notice);
    }
    notice.querySelector("p").textContent = message;
    notice.scrollIntoView({ block: "nearest" });
  }

  document.addEventListener("htmx:responseError", (event) => {
    show(serverSentence(event.detail.xhr));
  });
  document.addEventListener("htmx:sendError", () => {
    show("BenchHub could not be reached: check your connection, then try again.");
  });
  document.addEventListener("htmx:timeout", () => {
    show("BenchHub took too long to answer; try again.");
  });
  // A request that then succeeds takes the notice away.
  document.addEventListener("htmx:afterRequest", (event) => {
    if (event.detail.successful) document.getElementById("request-error")?.remove();
  });
})();
