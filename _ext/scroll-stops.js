// Boxes that scroll sideways get a tab stop, so a keyboard reaches and
// scrolls them (WCAG 2.1.1; axe-core: scrollable-region-focusable).
// - A displayed formula wider than its column (MathJax breaks a long
//   formula where it can; one with nowhere to break scrolls) gets a tab
//   stop and a name, so a screen reader says what it is; one that fits has
//   neither. Checked as MathJax adds formulas and when the window resizes.
// - Code and outputs: the theme gives those that scroll a tab stop when the
//   page loads or changes size, but not those a reader reveals later (a
//   folded cell, a solution opened): the same rule is applied again when a
//   block of the article opens.
(function () {
  var MARK = "data-scroll-stop";
  var NAME = "Formula, scrolls sideways";
  // The boxes pydata-sphinx-theme gives tab stops (its
  // addTabStopsToScrollableElements).
  var THEME_BOXES = "pre, .nboutput > .output_area, .cell_output > .output, "
      + ".jp-RenderedHTMLCommon, .pst-scrollable-table-container";
  function scrolls(box) {
    return box.scrollWidth > box.clientWidth;
  }
  function update() {
    var main = document.getElementById("main-content") || document.body;
    main.querySelectorAll("div.math > mjx-container").forEach(function (box) {
      if (scrolls(box) && !box.hasAttribute(MARK)) {
        box.setAttribute(MARK, "");
        box.setAttribute("tabindex", "0");
        box.setAttribute("role", "group");
        box.setAttribute("aria-label", NAME);
      } else if (!scrolls(box) && box.hasAttribute(MARK)) {
        ["tabindex", "role", "aria-label", MARK].forEach(function (name) {
          box.removeAttribute(name);
        });
      }
    });
    main.querySelectorAll(THEME_BOXES).forEach(function (box) {
      var stop = scrolls(box) || box.scrollHeight > box.clientHeight;
      box.tabIndex = stop ? 0 : -1;
    });
  }
  var pending = false;
  function soon() {
    if (pending) return;
    pending = true;
    requestAnimationFrame(function () {
      pending = false;
      update();
    });
  }
  window.addEventListener("resize", soon);
  document.addEventListener("DOMContentLoaded", function () {
    var main = document.getElementById("main-content") || document.body;
    // New content (MathJax's formulas), and blocks opened or closed: a
    // folded cell (<details>) or a toggled solution (its class changes).
    new MutationObserver(soon).observe(main, {
      childList: true, subtree: true,
      attributes: true, attributeFilter: ["class", "open"]
    });
    main.addEventListener("toggle", soon, true);
    soon();
  });
})();
