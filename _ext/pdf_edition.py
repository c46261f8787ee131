"""Make the PDF read like the book on the web.

- Numbers: definitions and theorems are numbered chapter.n on the web.
  sphinx-jupyterbook-latex sets ``numfig_secnum_depth = 2`` for a book with
  parts, which gives chapter.section.n in the PDF; this sets it back to 1
  for the LaTeX builder, so "Definition 3.2" is the same on both.
- Back matter: the pages after the last part are appendices ("Appendix A"),
  not chapters 7, 8, ... of Part III.
- One bibliography: the bibliography page's own chapter heading is dropped;
  the bibliography environment prints its heading once.
- A definition's or theorem's title bar never sits alone at the foot of a
  page (``\\needspace`` before each box).
"""

import re
from pathlib import Path

BACK_MATTER = "Back matter"
BOX = re.compile(
    r"^(\\begin\{sphinxadmonition\}\{note\}\{(?:Definition|Theorem|Lemma|"
    r"Corollary|Proof|Proposition|Example|Algorithm|Exercise|Solution))",
    re.MULTILINE,
)


def chapter_numbers_like_the_web(app):
    if app.builder.format == "latex":
        app.config.numfig_secnum_depth = 1


def polish_tex(app, exception):
    if exception is not None or app.builder.format != "latex":
        return
    for tex in Path(app.outdir).glob("*.tex"):
        text = tex.read_text(encoding="utf-8")
        text = text.replace(f"\\part{{{BACK_MATTER}}}", "\\appendix", 1)
        text = re.sub(
            r"\\chapter\{Bibliography\}\n(\\label\{[^\n]*bibliography::doc\}\})\n"
            r"\\sphinxAtStartPar\n[^\n]*\n",
            r"\1\n",
            text,
        )
        text = BOX.sub(r"\\needspace{6\\baselineskip}\n\1", text)
        tex.write_text(text, encoding="utf-8")


def setup(app):
    # After sphinx-jupyterbook-latex's own builder-inited handler.
    app.connect("builder-inited", chapter_numbers_like_the_web, priority=900)
    app.connect("build-finished", polish_tex)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
