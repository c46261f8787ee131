"""A reader on a phone (390 x 844, touch): the menu and the page contents
open and lead on, every chapter's inline math can be read to its end (the
chapter's visit on a phone, the fixture `phone_visits`), and a tap leaves
no tooltip behind.
"""

from __future__ import annotations

from urllib.parse import quote

import pytest
from browser import CHAPTERS, SCREENSHOT_DIR, Visit, phone_page, watch


def visible_count(page, selector: str) -> int:
    return page.locator(selector).evaluate_all(
        "els => els.filter(e => { const r = e.getBoundingClientRect();"
        " const s = getComputedStyle(e); return r.width > 0 && r.height > 0"
        " && s.visibility !== 'hidden' && s.display !== 'none'; }).length"
    )


def test_phone_reader_can_navigate(site, browser):
    """Open the menu, follow a link to another chapter, open its contents."""
    first, second = CHAPTERS[0], CHAPTERS[1]
    recorder = Visit("phone")
    context, page = phone_page(browser, site, recorder)
    try:
        watch(page, recorder, site)
        page.goto(site + quote(f"{first}.html"), wait_until="load")
        # The theme moves the menu into a modal dialog when it opens.
        target = second.split("/")[-1]
        link = page.locator(f"dialog[open] a[href$='{target}.html']")
        assert not link.count(), "the menu is open before it is asked for"
        toggles = page.locator("button.primary-toggle, label.primary-toggle")
        visible = [
            i for i in range(toggles.count()) if toggles.nth(i).is_visible()
        ]
        assert visible, "no visible menu button at phone width"
        toggles.nth(visible[0]).tap()
        link.first.wait_for(state="visible")
        link.first.tap()
        page.wait_for_url(f"**/{second}.html")
        contents = page.locator(
            "button.secondary-toggle, label.secondary-toggle"
        )
        shown = [
            i for i in range(contents.count()) if contents.nth(i).is_visible()
        ]
        assert shown, "no visible page-contents button at phone width"
        contents.nth(shown[0]).tap()
        toc_link = page.locator("dialog[open] nav a").first
        toc_link.wait_for(state="visible")
        search_boxes = visible_count(
            page, "input[type='search'], .search-button-field"
        )
        page.screenshot(path=str(SCREENSHOT_DIR / "phone-contents.png"))
    finally:
        context.close()
    assert search_boxes <= 1, (
        f"{search_boxes} search boxes show at phone width"
    )
    assert not recorder.page_errors, recorder.page_errors
    assert not recorder.external_requests, recorder.external_requests


@pytest.mark.parametrize("page", CHAPTERS)
def test_inline_math_is_not_clipped_on_a_phone(phone_visits, page):
    """At 390 px, every inline formula fits its line or scrolls sideways."""
    visit = phone_visits(page)
    assert not visit.external_requests, visit.external_requests
    assert not visit.page_errors, visit.page_errors
    assert not visit.console_errors, visit.console_errors
    assert visit.inline_math, f"{page}: no inline math found to check"
    assert not visit.clipped_math, (
        f"{page}: {len(visit.clipped_math)} inline formulas clipped at 390 px:\n"
        + "\n".join(visit.clipped_math[:10])
    )


def test_no_tooltip_stays_after_a_tap(site, browser):
    """Tapping the colour-mode button switches the mode and leaves no tooltip."""
    recorder = Visit("phone tooltip")
    context, page = phone_page(browser, site, recorder)
    try:
        page.goto(site + quote(f"{CHAPTERS[0]}.html"), wait_until="load")
        button = page.locator(".theme-switch-button:visible")
        assert button.count(), "no visible colour-mode button at phone width"
        before = page.evaluate("document.documentElement.dataset.mode")
        button.first.tap()
        page.wait_for_timeout(800)
        after = page.evaluate("document.documentElement.dataset.mode")
        tooltips = page.evaluate(
            "[...document.querySelectorAll('.tooltip')]"
            ".filter(t => t.checkVisibility({checkOpacity: true,"
            " checkVisibilityCSS: true})).map(t => t.textContent)"
        )
    finally:
        context.close()
    assert before != after, f"the tap did not switch the mode ({before!r})"
    assert not tooltips, f"tooltips left on screen after a tap: {tooltips}"
