"""What a page loads: one viewport tag, an icon that is served, MathJax only
where there is math, every icon glyph in the (cut) icon font, and figures
that are the notebooks' own pixels.

The head checks read what each page's visit at 1280 px recorded
(tests/book/browser.py, the fixture `visits`).
"""

from __future__ import annotations

import re
from urllib.parse import quote

import pytest
from browser import CHAPTERS, INTRO, PAGES, RUN_PAGE, Visit, new_context

from conftest import BUILD_DIR, HTML_DIR


@pytest.mark.parametrize("page", PAGES)
def test_one_viewport_tag(visits, page):
    """Sphinx, docutils and the theme each wrote one; a phone needs one."""
    count = visits(page).head["viewports"]
    assert count == 1, f"{page}: {count} <meta name='viewport'> tags"


@pytest.mark.parametrize("page", PAGES)
def test_page_has_an_icon(visits, page):
    """Without an icon link a browser asks for /favicon.ico, which is a 404."""
    icons = visits(page).head["icons"]
    assert icons, f"{page}: no <link rel='icon'>"
    for icon in icons:
        assert icon["status"] == 200 and icon["type"].startswith("image/"), (
            f"{page}: its icon {icon}"
        )


@pytest.mark.parametrize("page", PAGES)
def test_mathjax_only_where_there_is_math(visits, page):
    """A page loads MathJax if and only if it has math of its own."""
    seen = visits(page)
    if seen.facts["math"]:
        assert seen.head["mathjax"], f"{page} has math but loads no MathJax"
    else:
        assert not seen.head["mathjax"], (
            f"{page} has no math but loads {seen.head['mathjax'][:3]}"
        )


def test_mathjax_only_where_there_is_math_has_both_kinds(visits):
    """The intro has no math (its table of contents does: that is not its own)."""
    assert (
        not visits(INTRO).facts["math"] and not visits(INTRO).head["mathjax"]
    )
    assert visits(CHAPTERS[0]).facts["math"]
    assert visits(CHAPTERS[0]).head["mathjax"]


# Every icon the page draws with the Font Awesome font, and the font it asks.
ICON_GLYPHS = r"""() => {
  const out = [];
  for (const el of document.querySelectorAll('body *')) {
    for (const pseudo of ['::before', '::after']) {
      const s = getComputedStyle(el, pseudo);
      if (!s.fontFamily.includes('Font Awesome')) continue;
      const content = s.content.replace(/^"|"$/g, '');
      if (!content || content === 'none' || content === 'normal') continue;
      out.push({family: s.fontFamily, weight: s.fontWeight,
                point: content.codePointAt(0), where: el.className.toString().slice(0, 50)});
    }
  }
  return out;
}"""


def _icon_font_points() -> dict[str, set[int]]:
    """{'solid' | 'regular' | 'brands': code points} of the fonts the site serves."""
    from fontTools.ttLib import TTFont

    css = (HTML_DIR / "_static/styles/pydata-sphinx-theme.css").read_text()
    fonts = {}
    for kind, name in [
        ("solid", "fa-solid-900"),
        ("regular", "fa-regular-400"),
        ("brands", "fa-brands-400"),
    ]:
        served = re.search(rf"webfonts/({name}\.woff2?)\)", css)
        assert served, f"the theme's stylesheet names no {name} font"
        font = TTFont(
            HTML_DIR / "_static/vendor/fontawesome/webfonts" / served[1]
        )
        fonts[kind] = set(font.getBestCmap() or {})
    return fonts


@pytest.mark.parametrize("width", [1280, 390])
def test_every_icon_is_in_the_served_font(site, browser, width):
    """The icon font is cut to the icons used: none the pages draw is missing."""
    fonts = _icon_font_points()
    missing = []
    for page_name in [INTRO, CHAPTERS[0], RUN_PAGE, "search"]:
        recorder = Visit(page_name)
        context = new_context(browser, site, recorder)
        try:
            tab = context.new_page()
            tab.set_viewport_size({"width": width, "height": 900})
            tab.goto(site + quote(f"{page_name}.html"), wait_until="load")
            icons = tab.evaluate(ICON_GLYPHS)
        finally:
            context.close()
        assert icons, f"{page_name}: no Font Awesome icon found to check"
        for icon in icons:
            kind = (
                "brands"
                if "Brands" in icon["family"]
                else ("solid" if int(icon["weight"]) >= 900 else "regular")
            )
            if icon["point"] not in fonts[kind]:
                missing.append(
                    f"{page_name}: U+{icon['point']:04X} ({kind}) for {icon['where']!r}"
                )
    assert not missing, "icons missing from the served font:\n" + "\n".join(
        sorted(set(missing))[:20]
    )


def test_figures_are_the_notebooks_pixel_for_pixel(site):
    """Figures are stored smaller (palette PNG or lossless WebP), never changed."""
    import numpy as np
    from PIL import Image

    source = BUILD_DIR / "jupyter_execute"
    shown = sorted(
        {
            match
            for page in HTML_DIR.rglob("*.html")
            for match in re.findall(
                r"_images/([0-9a-f]{64}\.(?:png|webp))", page.read_text()
            )
        }
    )
    assert shown, "no figure found in the pages"
    changed, compared = [], 0
    for name in shown:
        original = next(source.rglob(name.rsplit(".", 1)[0] + ".png"), None)
        if original is None:
            continue  # a figure that is not a notebook output
        compared += 1
        served = np.asarray(
            Image.open(HTML_DIR / "_images" / name).convert("RGBA")
        )
        if not np.array_equal(
            served, np.asarray(Image.open(original).convert("RGBA"))
        ):
            changed.append(name)
    assert not changed, (
        f"figures whose pixels differ from the notebook's: {changed}"
    )
