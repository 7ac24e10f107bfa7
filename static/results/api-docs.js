// Redoc draws its attribution logo from the Redocly servers: on a closed
// network that is a request to nowhere. An image from another origin gets no
// source here; Redoc then leaves the logo out. Loaded before Redoc itself.
(function () {
  const outside = (value) => /^https?:/i.test(value) && new URL(value).origin !== location.origin;
  const setAttribute = Element.prototype.setAttribute;
  Element.prototype.setAttribute = function (name, value) {
    const refused = this.tagName === "IMG" && String(name).toLowerCase() === "src" && outside(String(value));
    return setAttribute.call(this, name, refused ? "" : value);
  };
  const src = Object.getOwnPropertyDescriptor(HTMLImageElement.prototype, "src");
  Object.defineProperty(HTMLImageElement.prototype, "src", {
    get() { return src.get.call(this); },
    set(value) { src.set.call(this, outside(String(value)) ? "" : value); },
    configurable: true,
  });
})();
