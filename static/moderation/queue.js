// Keyboard for the moderation queue: j/k move between items, x selects,
// a approves, r/f put the cursor in the item's reason and Enter there
// rejects/flags. Everything also works with the mouse and without script.
(function () {
  "use strict";
  let pending = null; // {item, action} waiting for a reason and Enter

  function items() { return Array.from(document.querySelectorAll(".queue-item")); }
  function current() { return document.activeElement && document.activeElement.closest(".queue-item"); }
  function move(step) {
    const all = items();
    if (!all.length) return;
    const index = all.indexOf(current());
    const next = all[Math.min(all.length - 1, Math.max(0, index + step))] || all[0];
    next.focus();
    next.scrollIntoView({ block: "nearest" });
  }
  function press(item, action) {
    const button = item.querySelector(".act-" + action);
    if (button) button.click();
  }

  document.addEventListener("keydown", function (event) {
    if (event.ctrlKey || event.metaKey || event.altKey) return;
    const target = event.target;
    if (target.classList && target.classList.contains("item-reason")) {
      if (event.key === "Enter") {
        event.preventDefault(); // never let Enter submit the first button (approve)
        const item = target.closest(".queue-item");
        if (pending && pending.item === item) press(item, pending.action);
      } else if (event.key === "Escape") {
        target.closest(".queue-item").focus();
      }
      return;
    }
    if (target.matches && target.matches("input, textarea, select")) return;
    const item = current();
    switch (event.key) {
      case "j": move(1); break;
      case "k": move(-1); break;
      case "x":
        if (item) { const box = item.querySelector("input[type=checkbox]"); box.checked = !box.checked; }
        break;
      case "a": if (item) press(item, "approve"); break;
      case "r":
      case "f":
        if (item) {
          pending = { item: item, action: event.key === "r" ? "reject" : "flag" };
          item.querySelector(".item-reason").focus();
          event.preventDefault();
        }
        break;
      default: return;
    }
  });

  document.addEventListener("change", function (event) {
    if (event.target.id === "select-all") {
      document.querySelectorAll(".queue-item input[name=submission]").forEach(function (box) {
        box.checked = event.target.checked;
      });
    }
  });

  // After an action the list is swapped: keep the keyboard in it.
  document.addEventListener("htmx:afterSwap", function (event) {
    if (event.target.id === "queue-items") {
      const first = document.querySelector(".queue-item");
      if (first) first.focus();
    }
  });
})();
