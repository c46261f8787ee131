// Draws the book's interactive figures (see _ext/vega_figures.py): each
// <figure class="vega-figure"> holds a compiled Vega specification; the Vega
// runtime (through vega-embed), served from this site's _static, draws it
// as SVG and binds its sliders. window.bookVegaViews maps a figure's id
// to its Vega view.
(function () {
  "use strict";
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
        figure.classList.add("vega-figure-ready");
      });
    });
  }
  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", draw);
  } else {
    draw();
  }
})();
