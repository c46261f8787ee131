"""Every formula of every page fits its column on a phone (390 x 844,
touch, 3 device pixels per CSS pixel), at the reading font size: MathJax 4
breaks a long displayed or inline formula into lines
(_ext/mathjax_local.py); none is cut off or scrolls sideways in its box.

Each page with math is opened once on a phone and left until MathJax has
typeset every formula (it typesets those on the first screen first, the
rest while the browser is idle: _ext/mathjax-first-screen.js; none may
be left a placeholder), every folded block opened (a formula in a folded
cell or solution must fit when the reader opens it), and each
``mjx-container`` measured: every box it draws (an inline
formula broken over two lines draws two) lies inside the content box of
the block that holds it, neither it nor that block scrolls sideways, and
its font is not shrunk to make it fit. Then the page is switched to dark
mode, and every formula must keep AA contrast against its background.
"""

from __future__ import annotations

from urllib.parse import quote

import pytest
from browser import (
    COLOUR_JS,
    MIN_CONTRAST,
    PAGES,
    WAIT_FOR_RENDERING,
    cached_visits,
    phone_page,
    switch_to_dark,
    watch,
)

from conftest import HTML_DIR, ROOT

# Pages with math of their own (the intro's table of contents lists
# chapters with math, but has none).
MATH_PAGES = [
    page
    for page in PAGES
    if (ROOT / f"{page}.ipynb").exists()
    or "$" in (ROOT / f"{page}.md").read_text(encoding="utf-8")
]

# Open what a reader can open: folded cells (<details>) and toggled blocks.
OPEN_EVERYTHING = r"""async () => {
  document.querySelectorAll('#main-content details').forEach(d => { d.open = true; });
  document.querySelectorAll('#main-content .toggle-hidden')
      .forEach(e => e.classList.remove('toggle-hidden'));
  await new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)));
}"""

# Every formula wider than its block's content box, or scrolling sideways,
# or set smaller than the text around it.
MATH_WIDTHS = r"""() => {
  const BLOCK = s => !['inline', 'contents'].includes(s.display);
  const out = [];
  let checked = 0, lazy = 0, empty = 0;
  for (const m of document.querySelectorAll('#main-content mjx-container')) {
    if (!m.checkVisibility({checkVisibilityCSS: true})) continue;
    let block = m.parentElement;
    while (block && !BLOCK(getComputedStyle(block))) block = block.parentElement;
    const s = getComputedStyle(block);
    const b = block.getBoundingClientRect();
    const left = b.left + parseFloat(s.borderLeftWidth) + parseFloat(s.paddingLeft);
    const right = b.right - parseFloat(s.borderRightWidth) - parseFloat(s.paddingRight);
    if (m.querySelector('mjx-lazy')) { lazy++; continue; }
    const boxes = [...m.getClientRects()].filter(r => r.width > 0);
    if (!boxes.length) { empty++; continue; }
    checked++;
    const problems = [];
    const over = Math.max(...boxes.map(r => r.right)) - right;
    const under = left - Math.min(...boxes.map(r => r.left));
    if (over > 1) problems.push(`${Math.round(over)} px past the right edge`);
    if (under > 1) problems.push(`${Math.round(under)} px past the left edge`);
    if (m.clientWidth && m.scrollWidth > m.clientWidth + 1)
      problems.push(`scrolls sideways by ${m.scrollWidth - m.clientWidth} px`);
    if (block.scrollWidth > block.clientWidth + 1)
      problems.push(`its ${block.tagName.toLowerCase()} scrolls sideways by `
                    + `${block.scrollWidth - block.clientWidth} px`);
    const scale = parseFloat(getComputedStyle(m).fontSize) / parseFloat(s.fontSize);
    if (scale < 0.95) problems.push(`set at ${Math.round(scale * 100)}% of the text`);
    if (problems.length) {
      const section = m.closest('section');
      let tex = '';
      try { tex = MathJax.startup.document.getMathItemsWithin(m)[0].math; } catch (e) {}
      out.push(`${m.getAttribute('display') === 'true' ? 'display' : 'inline'}`
               + ` in #${section ? section.id : '?'}: ${problems.join('; ')}`
               + ` (${Math.round(right - left)} px column): `
               + tex.trim().slice(0, 60));
    }
  }
  return {checked, out, lazy, empty};
}"""


# In dark mode: every formula whose ink is below AA contrast against what
# is painted behind it (MathJax draws in the text's colour).
DARK_MATH = (
    "() => {"
    + COLOUR_JS
    + r"""
  const low = [];
  let checked = 0;
  for (const m of document.querySelectorAll('#main-content mjx-container')) {
    if (!m.checkVisibility({checkVisibilityCSS: true})) continue;
    checked++;
    const bg = backdrop(m);
    const ink = over(parse(getComputedStyle(m).color), bg);
    const ratio = contrast(ink, bg);
    if (ratio < %(min)s) low.push(`${hex(ink)} on ${hex(bg)}: ${ratio.toFixed(2)}`);
  }
  return {checked, low};
}"""
    % {"min": MIN_CONTRAST}
)


def math_visit(browser, site: str, page_name: str) -> dict:
    """One page on a phone, everything opened, its formulas measured."""
    from browser import Visit  # noqa: PLC0415

    recorder = Visit(page_name)
    context, tab = phone_page(browser, site, recorder)
    try:
        watch(tab, recorder, site)
        tab.goto(site + quote(f"{page_name}.html"), wait_until="load")
        # Every formula typeset: the first screen first, the rest while the
        # browser is idle (_ext/mathjax-first-screen.js), none left lazy.
        tab.evaluate(WAIT_FOR_RENDERING)
        tab.evaluate(OPEN_EVERYTHING)
        recorder.facts = tab.evaluate(MATH_WIDTHS)
        recorder.dark_theme = switch_to_dark(tab)
        tab.wait_for_timeout(500)  # the theme's colour transition
        recorder.contrast = tab.evaluate(DARK_MATH)
    finally:
        context.close()
    return recorder


@pytest.fixture(scope="session")
def phone_math(site):
    return cached_visits("browser-phone-math", site, math_visit, MATH_PAGES)


def test_pages_with_math_are_found():
    assert "notation" in MATH_PAGES and len(MATH_PAGES) > 19, MATH_PAGES


@pytest.mark.parametrize("page", MATH_PAGES)
def test_every_formula_fits_a_phone(phone_math, page):
    """At 390 px every formula fits its column, at the text's size."""
    visit = phone_math(page)
    assert not visit.external_requests, visit.external_requests
    assert not visit.broken_local, visit.broken_local
    assert not visit.page_errors, visit.page_errors
    assert visit.facts["checked"], f"{page}: no formula found to measure"
    # Each formula is measured: none is still a placeholder of MathJax's
    # lazy typesetting, or draws nothing.
    assert not visit.facts["lazy"], (
        f"{page}: {visit.facts['lazy']} formulas never typeset"
    )
    assert not visit.facts["empty"], (
        f"{page}: {visit.facts['empty']} formulas draw no box"
    )
    wide = visit.facts["out"]
    assert not wide, (
        f"{page}: {len(wide)} of {visit.facts['checked']} formulas do not"
        " fit a 390 px phone:\n" + "\n".join(wide[:15])
    )


@pytest.mark.parametrize("page", MATH_PAGES)
def test_every_formula_reads_in_dark_mode(phone_math, page):
    """MathJax draws in the text's colour: light on the dark page."""
    visit = phone_math(page)
    assert visit.dark_theme == "dark", f"{page}: {visit.dark_theme!r}"
    assert visit.contrast["checked"], f"{page}: no formula found"
    low = visit.contrast["low"]
    assert not low, (
        f"{page}: formulas below {MIN_CONTRAST}:1 in dark mode:\n"
        + ("\n".join(low[:10]))
    )


# Whether the page says it typeset every formula (in 60 s at most), and what
# is left: placeholders of MathJax's lazy typesetting, and the elements
# Sphinx marked as math that hold no typeset formula.
LEFT = r"""async () => {
  await MathJax.startup.promise;
  const count = () => ({
    lazy: document.querySelectorAll('mjx-lazy').length,
    untypeset: [...document.querySelectorAll('.math')].filter(
        m => !m.querySelector('mjx-container')
             || m.querySelector('mjx-lazy')).length,
    formulas: document.querySelectorAll('mjx-container').length,
  });
  const done = await Promise.race([
    window.bookMathTypeset.then(() => true),
    new Promise(r => setTimeout(() => r(false), 60000)),
  ]);
  return {done, ...count()};
}"""


def test_the_rest_is_typeset_without_scrolling(site, browser):
    """MathJax typesets the first screen first; the rest of the page is
    typeset while the browser is idle, though the reader never scrolls
    (a screen reader, the browser's find and print then get every
    formula). Checked on the chapter with the most formulas, on a phone."""
    from browser import Visit  # noqa: PLC0415

    page = max(
        (page for page in MATH_PAGES if page.startswith("chapters/")),
        key=lambda page: (
            (HTML_DIR / f"{page}.html")
            .read_text(encoding="utf-8")
            .count('class="math')
        ),
    )
    recorder = Visit(page)
    context, tab = phone_page(browser, site, recorder)
    try:
        watch(tab, recorder, site)
        tab.goto(site + quote(f"{page}.html"), wait_until="load")
        left = tab.evaluate(LEFT)
    finally:
        context.close()
    assert not recorder.page_errors, recorder.page_errors
    assert not recorder.console_errors, recorder.console_errors
    assert left["done"], f"{page}: not every formula typeset in 60 s: {left}"
    assert left["lazy"] == 0 and left["untypeset"] == 0, (
        f"{page}: formulas left untypeset: {left}"
    )
