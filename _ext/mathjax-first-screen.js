// The first screen first (_ext/mathjax_local.py inlines this in every page
// with math, after MathJax's configuration). With MathJax's lazy
// typesetting (ui/lazy), its first pass only marks where each formula
// goes; a formula is typeset when it comes near the screen. A chapter has
// up to 450 formulas: typesetting them all before the page settled kept a
// reader on slow 4G waiting up to 4 s for the first screen, and more on a
// slower phone. Once the formulas on screen are typeset and their fonts
// have arrived, the rest of the page is typeset as well, a few formulas
// at a time, in page order, each batch when the browser is idle (scrolling
// stays smooth): a screen reader, the browser's find and its print then
// get every formula, as before. window.bookMathTypeset resolves when
// every formula of the page is typeset; window.bookTypesetAllMath()
// typesets all that are left at once (what MathJax does to print), and
// returns that promise.
(function () {
  "use strict";
  var BATCH = 8; // formulas typeset in one idle moment
  var finished;
  var hurried = false;
  window.bookMathTypeset = new Promise(function (resolve) {
    finished = resolve;
  });
  var idle = function (then) {
    if (window.requestIdleCallback) requestIdleCallback(then, { timeout: 1000 });
    else setTimeout(then, 50);
  };
  var frames = function () {
    return new Promise(function (resolve) {
      requestAnimationFrame(function () { requestAnimationFrame(resolve); });
    });
  };

  // The formulas still waiting, in page order.
  function waiting(doc) {
    var items = [];
    for (var item of doc.math) {
      if (item.lazyTypeset && item.lazyMarker) items.push(item);
    }
    return items;
  }

  // A formula on the first screen that is still a placeholder.
  function onScreen(doc) {
    return waiting(doc).some(function (item) {
      var marker = item.lazyMarker;
      if (!marker.getClientRects().length) return false; // folded away
      var box = marker.getBoundingClientRect();
      return box.bottom >= 0 && box.top <= window.innerHeight;
    });
  }

  // Until ui/lazy has typeset the formulas on screen (it sets lazyIdle
  // while a batch of its own waits for an idle moment), then until the
  // fonts they draw with have arrived.
  function firstScreenDone(doc, until) {
    return frames().then(function () {
      if ((doc.lazyIdle || onScreen(doc)) && performance.now() < until) {
        return new Promise(function (resolve) { idle(resolve); })
          .then(function () { return doc.lazyPromise; })
          .then(function () { return firstScreenDone(doc, until); });
      }
      return document.fonts ? document.fonts.ready : null;
    });
  }

  // Batch after batch while the browser is idle (at least one, should the
  // idle moment be overdue), then on in the next idle moment.
  function typesetTheRest(doc, deadline) {
    if (hurried) return; // bookTypesetAllMath took over
    var items = waiting(doc).slice(0, BATCH);
    if (!items.length) {
      // Once a batch of ui/lazy's own, if one is under way, has ended.
      doc.lazyPromise.then(function () {
        if (!hurried) finished();
      });
      return;
    }
    items.forEach(function (item) {
      doc.lazySet.add(doc.adaptor.getAttribute(item.lazyMarker, "data-mjx-lazy"));
    });
    doc.lazyHandleSet();
    doc.lazyPromise.then(
      function () {
        if (deadline && deadline.timeRemaining() > 0) {
          typesetTheRest(doc, deadline);
        } else {
          idle(function (next) { typesetTheRest(doc, next); });
        }
      },
      function (error) { console.error(error); finished(); }
    );
  }

  window.bookTypesetAllMath = function () {
    if (hurried) return window.bookMathTypeset;
    hurried = true;
    MathJax.startup.promise.then(function () {
      var doc = MathJax.startup.document;
      if (typeof doc.lazyTypesetAll !== "function") return finished();
      // After a batch under way, if any; the batches stop.
      doc.lazyPromise = doc.lazyPromise.then(function () {
        return doc.lazyTypesetAll();
      });
      return doc.lazyPromise.then(finished, function (error) {
        console.error(error);
        finished();
      });
    });
    return window.bookMathTypeset;
  };

  var config = (window.MathJax = window.MathJax || {});
  config.startup = config.startup || {};
  config.startup.pageReady = function () {
    return MathJax.startup.defaultPageReady().then(function () {
      var doc = MathJax.startup.document;
      if (typeof doc.lazyHandleSet !== "function") {
        finished(); // no lazy typesetting: all was typeset already
        return;
      }
      // (At most 10 s: should the first screen never settle, the rest
      // starts anyway.)
      firstScreenDone(doc, performance.now() + 10000).then(function () {
        idle(function (deadline) { typesetTheRest(doc, deadline); });
      });
    });
  };
})();
