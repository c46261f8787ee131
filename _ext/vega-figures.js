// Draws the book's interactive figures (see _ext/vega_figures.py): each
// <figure class="vega-figure"> holds a compiled Vega specification; the Vega
// runtime (through vega-embed), served from this site's _static beside this
// file, draws it as SVG and binds its sliders. The runtime is large (about
// 300 KB gzipped), so it is fetched only when a figure comes near the
// screen: a reader who never scrolls to a figure does not pay for it.
// window.bookVegaViews maps a figure's id to its Vega view.
(function () {
  "use strict";
  var here = document.currentScript && document.currentScript.src;
  var runtime = here
    ? here.replace(/draw\.js(\?.*)?$/, "vega.min.js")
    : "_static/vega-figures/vega.min.js";
  var requested = false;

  // Vega writes a slider's value beside it as the input gives it, which
  // can carry float noise (0.8999999999999999): show it to the step's
  // number of decimals instead.
  function tidyLabel(input) {
    var shown = input.nextElementSibling;
    if (!shown || shown.tagName !== "SPAN") return;
    var step = String(input.getAttribute("step") || "1");
    var places = step.indexOf(".") < 0 ? 0 : step.length - step.indexOf(".") - 1;
    var tidy = function () {
      shown.textContent = Number(input.value).toFixed(places);
    };
    input.addEventListener("input", tidy);
    input.addEventListener("change", tidy);
    tidy();
  }

  // What a screen reader gets: each slider is described by the caption
  // (what the figure shows and how the sliders change it), and a polite
  // live region says, after each move, the sliders' values and what the
  // chart writes at them (its text marks named readout_*).
  function describe(figure, view) {
    var caption = figure.querySelector("figcaption");
    var inputs = figure.querySelectorAll("input[type='range']");
    if (!caption || !inputs.length) return;
    caption.id = caption.id || figure.id + "-caption";
    var status = document.createElement("p");
    status.className = "vega-figure-status";
    status.setAttribute("aria-live", "polite");
    var say = function () {
      var parts = [];
      inputs.forEach(function (input) {
        var name = input.previousElementSibling;
        var shown = input.nextElementSibling;
        parts.push(
          (name ? name.textContent.trim() : input.name) + " " +
            (shown ? shown.textContent : input.value)
        );
      });
      figure
        .querySelectorAll("svg .role-mark[class*='readout'] text")
        .forEach(function (text) { parts.push(text.textContent); });
      status.textContent = parts.join("; ");
    };
    inputs.forEach(function (input) {
      input.setAttribute("aria-describedby", caption.id);
      input.addEventListener("input", function () {
        view.runAsync().then(say);
      });
    });
    say();
    figure.insertBefore(status, caption); // the caption stays last
  }

  function draw() {
    window.bookVegaViews = window.bookVegaViews || {};
    document.querySelectorAll("figure.vega-figure").forEach(function (figure) {
      if (window.bookVegaViews[figure.id]) return;
      var spec = JSON.parse(
        figure.querySelector("script.vega-figure-spec").textContent
      );
      window.bookVegaViews[figure.id] = "drawing";
      vegaEmbed(figure.querySelector(".vega-figure-view"), spec, {
        mode: "vega",
        renderer: "svg",
        actions: false,
      }).then(function (result) {
        window.bookVegaViews[figure.id] = result.view;
        figure.querySelectorAll("input[type='range']").forEach(tidyLabel);
        describe(figure, result.view);
        figure.classList.add("vega-figure-ready");
      });
    });
  }

  function loadRuntime() {
    if (requested) return;
    requested = true;
    var script = document.createElement("script");
    script.src = runtime;
    script.onload = draw;
    document.head.appendChild(script);
  }

  function start() {
    var figures = document.querySelectorAll("figure.vega-figure");
    if (!figures.length) return;
    if (!("IntersectionObserver" in window)) {
      loadRuntime();
      return;
    }
    var observer = new IntersectionObserver(
      function (entries) {
        if (entries.some(function (entry) { return entry.isIntersecting; })) {
          observer.disconnect();
          loadRuntime();
        }
      },
      { rootMargin: "800px 0px" }
    );
    figures.forEach(function (figure) { observer.observe(figure); });
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", start);
  } else {
    start();
  }
})();
