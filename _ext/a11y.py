"""Accessibility of the book's HTML.

Roles in the bibliography: docutils (0.21) writes a list of citations as
``<div role="list" class="citation-list">`` around entries with the role
``doc-biblioentry``, which DPUB-ARIA 1.1 deprecates (screen readers are to
get a plain list item instead); a ``role="list"`` whose children are not
list items is then a list with no items (axe-core: aria-deprecated-role,
aria-required-children). Each entry becomes a ``role="listitem"`` of its
list; the page is changed as it is written, nothing else is.

Boxes that scroll: a page with displayed math or code gets
``scroll-stops.js`` inline (about a kilobyte): a displayed formula wider
than its column, which scrolls sideways in its box, gets a tab stop and a
name, and code or output that scrolls once a reader opens the block that
holds it (a folded cell, a solution) gets the tab stop the theme gives
such boxes only when the page loads (see the script).
"""

from __future__ import annotations

import re
from pathlib import Path

from sphinx.builders.html._assets import _JavaScript

DEPRECATED_ENTRY = re.compile(
    r'(<div class="citation"[^>]*?) role="doc-biblioentry"'
)
SCROLL_STOPS = Path(__file__).with_name("scroll-stops.js")


def listitem_roles(body: str) -> str:
    """`body` with every citation entry's deprecated role made a list item."""
    return DEPRECATED_ENTRY.sub(r'\1 role="listitem"', body)


def _fix_roles(app, pagename, templatename, context, doctree):
    body = context.get("body")
    if body and "doc-biblioentry" in body:
        context["body"] = listitem_roles(body)


def _scroll_stops(app, pagename, templatename, context, doctree):
    """The script that gives a box that scrolls its tab stop, on a page
    with displayed math (Sphinx writes ``<div class="math``) or code."""
    if app.builder.format != "html" or "script_files" not in context:
        return
    body = context.get("body") or ""
    if '<div class="math' not in body and "<pre" not in body:
        return
    script = SCROLL_STOPS.read_text(encoding="utf-8")
    context["script_files"].append(_JavaScript("", priority=900, body=script))


def setup(app):
    app.connect("html-page-context", _fix_roles)
    app.connect("html-page-context", _scroll_stops)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
