"""The book's search: the chapter about a subject first, readable snippets.

Sphinx's own search ranks a page by whether a word is in a title (15) or in
the text (5) and breaks ties alphabetically, so a query listed chapters
that use a word before the chapter about it. ``book_search.js`` scores a
page by its title first, then its section headings, and writes snippets
from the prose with math as text and whole-word highlights (see its head).
It goes in as Sphinx's ``html_search_scorer``: one file, read into the
search page's language_data.js, loaded after searchtools.js and only on
the search page. The field's style is in _static/book-search.css.
"""

from __future__ import annotations

from pathlib import Path

SCORER = Path(__file__).with_name("book_search.js")


def use_book_search(app, config):
    config.html_search_scorer = str(SCORER)


def render_language_data_anew(app, env, added, changed, removed):
    """Sphinx 7.4 writes _static/language_data.js only when it is missing
    from the output, and copies static files only when a page is rebuilt:
    a scorer changed since the last build would never reach the site. Such
    a file is removed and the root page rebuilt, which writes it anew."""
    if app.builder.format != "html":
        return []
    path = Path(app.outdir, "_static", "language_data.js")
    scorer = SCORER.read_text(encoding="utf-8")
    if path.exists() and scorer in path.read_text(encoding="utf-8"):
        return []
    path.unlink(missing_ok=True)
    return [app.config.root_doc]


def setup(app):
    app.connect("config-inited", use_book_search)
    app.connect("env-get-outdated", render_language_data_anew)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
