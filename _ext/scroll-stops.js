// A displayed formula wider than its column scrolls sideways in its box
// (MathJax breaks a long formula where it can; one with nowhere to break
// scrolls). Such a box gets a tab stop, so a keyboard reaches and scrolls
// it, and a name, so a screen reader says what it is (WCAG 2.1.1;
// axe-core: scrollable-region-focusable); a box that fits has neither.
// Checked as MathJax adds formulas and when the window changes size.
(function () {
  var MARK = "data-scroll-stop";
  var NAME = "Formula, scrolls sideways";
  function update() {
    var boxes = document.querySelectorAll("div.math > mjx-container");
    boxes.forEach(function (box) {
      var scrolls = box.scrollWidth > box.clientWidth;
      if (scrolls && !box.hasAttribute(MARK)) {
        box.setAttribute(MARK, "");
        box.setAttribute("tabindex", "0");
        box.setAttribute("role", "group");
        box.setAttribute("aria-label", NAME);
      } else if (!scrolls && box.hasAttribute(MARK)) {
        ["tabindex", "role", "aria-label", MARK].forEach(function (name) {
          box.removeAttribute(name);
        });
      }
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
    new MutationObserver(soon).observe(main, {childList: true, subtree: true});
    soon();
  });
})();
