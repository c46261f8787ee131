"""Drop <script> entries that Sphinx 7.4 lists twice on every page.

With jupyter-book 1.0.4 on Sphinx 7.4, the inline scripts of sphinx-thebe and
sphinx-togglebutton are written into each page twice, and the second copy of
sphinx-thebe's `const THEBE_JS_URL` throws "Identifier has already been
declared" in the browser. This keeps the first copy of each script.
"""


def _unique_scripts(app, pagename, templatename, context, doctree):
    seen, unique = set(), []
    for script in context.get("script_files", []):
        key = (
            script.filename or "",
            script.priority,
            tuple(sorted(script.attributes.items())),
        )
        if key not in seen:
            seen.add(key)
            unique.append(script)
    context["script_files"] = unique


def setup(app):
    app.connect("html-page-context", _unique_scripts)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
