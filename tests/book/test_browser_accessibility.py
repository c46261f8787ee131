"""What every reader can read: images described (alt text or a caption),
headings in order, text with enough contrast in dark mode, figures readable
on a dark page, and screenshots that look like a light page and a dark one;
the theme a reader picks survives a reload.

The per-page checks read what each page's visit at 1280 px recorded
(tests/book/browser.py, the fixture `visits`): in light mode, then in dark
mode after the theme button.
"""

from __future__ import annotations

import re
from urllib.parse import quote

import pytest
from browser import (
    CHAPTERS,
    DARK_MEDIAN,
    INTRO,
    MIN_CONTRAST,
    PAGES,
    TEXT_CONTRAST,
    WAIT_FOR_RENDERING,
    Visit,
    capture,
    mostly_dark,
    new_context,
    screenshot_path,
    switch_to_dark,
)

from conftest import ROOT

# alt text that is just a file name (myst-nb's default for an output image) is not alt text.
FILE_NAME_ALT = re.compile(
    r"^\S*\.(?:png|jpe?g|gif|svg|webp)$|^\S*/\S*$", re.IGNORECASE
)


@pytest.mark.parametrize("page", PAGES)
def test_images_load_and_are_described(visits, page):
    problems = []
    for image in visits(page).facts["images"]:
        if not image["complete"] or image["width"] == 0:
            problems.append(f"not loaded: {image['src']}")
        described = image["alt"] and not FILE_NAME_ALT.match(image["alt"])
        if not described and not image["caption"]:
            problems.append(
                f"no alt text (alt={image['alt']!r}) and no figure caption: {image['src']}"
            )
    assert not problems, f"{page}:\n" + "\n".join(problems)


@pytest.mark.parametrize("page", PAGES)
def test_headings_are_in_order(visits, page):
    headings = visits(page).facts["headings"]
    levels = [h["level"] for h in headings]
    assert levels.count(1) == 1, (
        f"{page}: {levels.count(1)} <h1> elements: {headings}"
    )
    assert levels[0] == 1, (
        f"{page}: the first heading is not the <h1>: {headings[0]}"
    )
    skips = [
        (before, after)
        for before, after in zip(headings, headings[1:], strict=False)
        if after["level"] > before["level"] + 1
    ]
    assert not skips, f"{page}: heading levels skipped going down: {skips}"


@pytest.mark.parametrize("page", PAGES)
def test_dark_mode_text_is_readable(visits, page):
    seen = visits(page)
    assert seen.dark_theme == "dark", (
        f"{page}: the theme button never made html[data-theme] dark ({seen.dark_theme!r})"
    )
    assert seen.contrast["checked"] > 0, f"{page}: no text found to check"
    low = seen.contrast["low"]
    assert not low, (
        f"{page}: text below {MIN_CONTRAST}:1 contrast in dark mode:\n"
        + "\n".join(map(str, low[:15]))
    )


@pytest.mark.parametrize("page", PAGES)
def test_dark_mode_figures_are_readable(visits, page):
    """An opaque figure looks as it does on white paper; a transparent one needs a light backdrop."""
    problems = []
    for figure in visits(page).figures:
        if figure["transparentShare"] < 0.01 or figure["ink"] is None:
            continue
        needed = min(MIN_CONTRAST, figure["contrastPaper"])
        if figure["contrastDark"] < needed:
            problems.append(
                f"{figure['src']}: ink {figure['ink']} on {figure['backdrop']} "
                f"has contrast {figure['contrastDark']:.2f} (< {needed:.2f})"
            )
    assert not problems, (
        f"{page}: transparent figures unreadable in dark mode:\n"
        + "\n".join(problems)
    )


# The longest chapter (the hardest page to repaint) and the first page.
LONGEST_CHAPTER = max(
    CHAPTERS, key=lambda page: (ROOT / f"{page}.ipynb").stat().st_size
)


@pytest.mark.parametrize("page_name", [INTRO, LONGEST_CHAPTER])
def test_dark_mode_survives_a_reload(site, browser, page_name):
    """The theme a reader picks is kept: loaded again after the switch, the
    page is dark from the start, and its text and look are checked there,
    as a returning reader sees it (the page visit checks every page right
    after the switch)."""
    recorder = Visit(page_name)
    context = new_context(browser, site, recorder)
    try:
        page = context.new_page()
        page.goto(site + quote(f"{page_name}.html"), wait_until="load")
        switched = switch_to_dark(page)
        page.reload(wait_until="load")
        page.evaluate(WAIT_FOR_RENDERING)
        theme = page.evaluate("document.documentElement.dataset.theme")
        contrast = page.evaluate(TEXT_CONTRAST)
        path = screenshot_path(page_name, "dark-reloaded")
        capture(page, path)
    finally:
        context.close()
    assert switched == "dark", switched
    assert theme == "dark", f"{page_name}: the theme was lost ({theme!r})"
    assert contrast["checked"] > 0 and not contrast["low"], contrast["low"][:5]
    assert mostly_dark(path), f"{page_name}: not dark after a reload"


@pytest.mark.parametrize("page", PAGES)
def test_page_looks_like_a_page_in_both_modes(visits, page):
    """What a reader sees: text on a light page, and on a dark one.

    The full-page screenshots must not be blank (some pixels differ from
    the background), the light one must be mostly light and the dark one
    mostly dark.
    """
    from PIL import Image, ImageStat

    brightness = {}
    for mode in ("light", "dark"):
        path = visits(page).screenshots.get(mode)
        assert path and path.exists(), f"{page}: no {mode} screenshot"
        grey = Image.open(path).convert("L")
        stats = ImageStat.Stat(grey)
        brightness[mode] = stats.median[0]
        assert stats.stddev[0] > 10, f"{page}: the {mode} page is blank"
    assert brightness["light"] > 200, f"{page}: light mode is not light"
    assert brightness["dark"] < DARK_MEDIAN, f"{page}: dark mode is not dark"
