"""Accessible roles in the bibliography's HTML.

docutils (0.21) writes a list of citations as
``<div role="list" class="citation-list">`` around entries with the role
``doc-biblioentry``, which DPUB-ARIA 1.1 deprecates (screen readers are to
get a plain list item instead); a ``role="list"`` whose children are not
list items is then a list with no items (axe-core: aria-deprecated-role,
aria-required-children). Each entry becomes a ``role="listitem"`` of its
list; the page is changed as it is written, nothing else is.
"""

from __future__ import annotations

import re

DEPRECATED_ENTRY = re.compile(
    r'(<div class="citation"[^>]*?) role="doc-biblioentry"'
)


def listitem_roles(body: str) -> str:
    """`body` with every citation entry's deprecated role made a list item."""
    return DEPRECATED_ENTRY.sub(r'\1 role="listitem"', body)


def _fix_roles(app, pagename, templatename, context, doctree):
    body = context.get("body")
    if body and "doc-biblioentry" in body:
        context["body"] = listitem_roles(body)


def setup(app):
    app.connect("html-page-context", _fix_roles)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
