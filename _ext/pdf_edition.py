"""Make the PDF read like the book on the web, and build its student edition.

- Numbers: definitions and theorems are numbered chapter.n on the web.
  sphinx-jupyterbook-latex sets ``numfig_secnum_depth = 2`` for a book with
  parts, which gives chapter.section.n in the PDF; this sets it back to 1
  for the LaTeX builder, so "Definition 3.2" is the same on both.
- Back matter: the pages after the last part are appendices ("Appendix A"),
  not chapters 7, 8, ... of Part III.
- One bibliography: the bibliography page's own chapter heading is dropped;
  the bibliography environment prints its heading once, and its entries carry
  no numbers (the text cites author and year; the list is sorted by author).
- Boxes: a definition's or theorem's title bar never sits alone at the foot
  of a page (``\\needspace`` before each box, no page break right after a
  title bar); a proof is a "Proof." paragraph ending in a square, not a box
  with an empty title bar.
- Links to exercises from another page (the instructors' table) land on the
  exercise: sphinx-exercise labels its boxes ``exercise:<label>`` only, so
  each also gets the label a cross-page reference points to. In a table that
  lists exercises, each carries its number and has a line of its own, and the
  table is a longtable (it breaks across pages) with set column widths. A
  reference by number ("Exercise 1.1") prints the exercise's number, not
  the number of its section that LaTeX's \\ref would give.
- The student edition: ``book-student.tex`` is ``book.tex`` without the
  solutions, without the instructors' appendix and with the student
  edition's wording of the introduction (``% reader-only-start`` ...
  ``% reader-only-end`` and ``% student-only:`` comments of the sources, as in
  scripts/make_student_edition.py). The LaTeX Makefile compiles every .tex
  file it finds, so one Sphinx build gives both PDFs.
- Sliders: the web's instructions for a dial ("move the slider (drag it,
  or focus it and use the arrow keys)") would tell a reader of paper to
  move a picture; in print they describe the slider instead ("on the web
  the slider moves ..."), and the figure's caption says the dial is
  printed at its starting values (_ext/vega_figures.py).
- Metadata and page anchors: the PDF's Title and Author are the book's
  (Sphinx's own title page sets them; the book's, in _config.yml, replaces
  it), and the title page has no page anchor, so that it and the first
  page of chapter 1 are not both "page.1" (xdvipdfmx: "Object @page.1
  already defined").
- Lines: narrow table columns, the bibliography (long URLs), the
  "Run this chapter yourself" boxes (file names), the list of what each
  chapter needs (run-it-yourself.md) and the steps of grading
  (instructors.md) are set ragged right, not justified into lines of
  stretched spaces (underfull boxes).
- Code names in the text (inline literals) are not hyphenated: a hyphen
  the name does not have would be misread as part of it.
- Split code blocks: framed.sty's trial piece of a code block it splits at
  a page foot is never printed, and TeX no longer reports it as an
  underfull box (see the preamble); the pages are the same.
- Compiling: latexmk runs xelatex in its xelatex mode (``-xelatex``, as
  Sphinx's LaTeX Makefile recommends): each pass writes an XDV file and the
  PDF is made once at the end, instead of writing the whole PDF, images and
  all, on every pass. The same pages and text; 15% less CPU.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from docutils import nodes
from sphinx import addnodes
from sphinx.transforms.post_transforms import SphinxPostTransform

BACK_MATTER = "Back matter"
INSTRUCTORS_DOC = "instructors"
STUDENT_TEX = "book-student.tex"
BOX = re.compile(
    r"^(\\begin\{sphinxadmonition\}\{note\}\{(?:Definition|Theorem|Lemma|"
    r"Corollary|Proof|Proposition|Example|Algorithm|Exercise|Solution))",
    re.MULTILINE,
)
# A sphinx-proof proof: a note box without a title whose text starts "Proof."
PROOF = re.compile(
    r"\\begin\{sphinxadmonition\}\{note\}\n\\sphinxAtStartPar\nProof\. "
)
SOLUTION = re.compile(
    r"\\phantomsection \\label\{[^}\n]*\}\n+(?:\\needspace\{[^}]*\}\n)?"
    r"\\begin\{sphinxadmonition\}\{note\}\{Solution to "
)
ADMONITION = re.compile(r"\\(begin|end)\{sphinxadmonition\}")
MARKER = "%BOOK-EDITION "
# Each chapter's box of what to install: file names, set ragged right.
RUN_BOX = "\\begin{sphinxadmonition}{note}{Run this chapter yourself}\n"
# Widths (in per cent) of the columns of a table that lists exercises:
# chapter, prerequisites, time, exercises.
EXERCISE_TABLE_WIDTHS = [20, 22, 9, 49]
# The instructors' table of graded and written exercises: chapter, count,
# exercises, count, exercises.
GRADED_TABLE_WIDTHS = [22, 10, 29, 10, 29]

PREAMBLE = r"""
% --- pdf_edition (_ext/pdf_edition.py) ---
\usepackage{etoolbox}
% The math font set in the preamble, not at \begin{document}: set there, it
% changes how a Greek letter in a section title reads back from the .aux
% file, and LaTeX then always says "Label(s) may have changed".
\setmathfont{latinmodern-math.otf}
% unicode-math maps \setminus to U+29F5, which Latin Modern Math lacks;
% U+2216 (SET MINUS, what MathJax shows on the web) is in the font.
\AddToHook{begindocument/end}{\let\setminus\smallsetminus}
% Sphinx splits framed boxes (code, admonitions) across pages up to about
% 3pt beyond the text height; TeX need not report those.
\vfuzz=4pt
% A framed box (a code block) that runs past the foot of a page is split by
% framed.sty with \vsplit to the room left on the page. Code lines do not
% stretch, so that trial piece is all but always short of the room, and TeX
% reported it as an underfull \vbox (badness 10000) at each split, but the
% piece is unboxed on the next line of framed.sty and boxed again at its
% natural height (or, on a page that it fills from the top, at the height of
% the text, a box TeX still checks): the trial box never reaches the page.
% Its report alone is silenced (\vbadness, around the \vsplit only); the
% split point and the pages are the same.
\makeatletter
\patchcmd{\fb@put@frame}{\setbox\tw@\vsplit\@tempboxa to\dimen@}
  {\edef\book@vbadness{\the\vbadness}\vbadness\@M
   \setbox\tw@\vsplit\@tempboxa to\dimen@
   \vbadness\book@vbadness\relax}
  {}{\PackageWarning{pdf_edition}{framed.sty's split not patched}}
\makeatother
% No page break between a box's title bar and its first line.
\patchcmd{\sphinxdotitlerowwithicon}{\par\endgroup}{\par\nobreak\endgroup}
  {}{\PackageWarning{pdf_edition}{title row not patched}}
% Solutions (instructors' PDF): a titled section between two rules, not a
% framed box, so that their code blocks can break across pages (a code
% block inside a framed box cannot, and ran into the footer).
\newenvironment{booksolution}[1]
  {\par\medskip\noindent\rule{\linewidth}{0.4pt}\par\nobreak
   \noindent\textbf{#1}\par\nobreak\smallskip}
  {\par\nobreak\noindent\rule{\linewidth}{0.4pt}\par\medskip}
% Proofs: a paragraph headed "Proof." and ended with a square.
\newenvironment{bookproof}
  {\par\smallskip\noindent\textit{Proof.}\enspace\ignorespaces}
  {\unskip\nobreak\hfill\ensuremath{\square}\par\smallskip}
% The bibliography: author-year citations, entries without numbers, each
% with a hanging indent.
\makeatletter
\renewcommand\@biblabel[1]{}
\patchcmd{\thebibliography}{\leftmargin\labelwidth}
  {\labelwidth\z@\leftmargin1.5em\itemindent-1.5em}
  {}{\PackageWarning{pdf_edition}{bibliography not patched}}
\makeatother
\pgfplotsset{compat=1.18}
% The title page has no page anchor: the contents are numbered i, ii, ...
% and chapter 1 starts again at page 1, and two anchors "page.1" made
% xdvipdfmx warn "Object @page.1 already defined" (Sphinx's own title
% page does the same).
\AddToHook{env/titlepage/before}{\hypersetup{pageanchor=false}}
\AddToHook{env/titlepage/after}{\hypersetup{pageanchor=true}}
% Narrow columns of a table (tabulary, Sphinx's T) ragged right: justified,
% their lines were stretched into gaps (underfull boxes). What
% \newcolumntype{T}{L} would do, without its "already defined" warning.
\makeatletter
\@namedef{NC@rewrite@T}{\NC@find L}
\makeatother
% Code names in the text are never hyphenated: "exponen-tial_probabilities"
% printed a hyphen that is not in the name. fontspec gives the typewriter
% font no hyphen character (HyphenChar=None, its fontspec.cfg), but the
% \defaultfontfeatures[\ttfamily]{} of Sphinx's font set-up clears that.
% Sphinx already stops breaks at the dashes of an inline literal.
\protected\def\sphinxcode#1{\texttt{\hyphenchar\font=-1\relax #1}}
% The bibliography ragged right too: its long URLs left gaps between words.
\apptocmd{\thebibliography}{\raggedright}
  {}{\PackageWarning{pdf_edition}{bibliography not made ragged}}
% --- end pdf_edition ---
"""


def chapter_numbers_like_the_web(app):
    if app.builder.format == "latex":
        app.config.numfig_secnum_depth = 1


def pdf_metadata(title: str, author: str) -> str:
    """The hyperref settings that give the PDF its Title and Author."""

    def plain(text: str) -> str:
        return re.sub(r"[\\{}%#&$^_~]", "", text)

    return (
        f"\\hypersetup{{pdftitle={{{plain(title)}}}, "
        f"pdfauthor={{{plain(author)}}}}}\n"
    )


def latex_preamble(app, config):
    """After sphinx-jupyterbook-latex's preamble, which loads unicode-math."""
    elements = config.latex_elements
    # Jupyter Book gives the book's title to html_title, not to project.
    title = config.html_title or config.project
    preamble = PREAMBLE + pdf_metadata(title, config.author)
    if preamble not in elements.get("preamble", ""):
        elements["preamble"] = elements.get("preamble", "") + preamble
    # cmap is for pdfTeX; under xelatex it only warns.
    elements["cmappkg"] = ""


def exercise_number(env, label: str) -> str:
    entry = env.sphinx_exercise_registry[label]
    numbers = env.toc_fignumbers.get(entry["docname"], {}).get("exercise", {})
    return ".".join(str(n) for n in numbers.get(label, ()))


class NumberExerciseLists(SphinxPostTransform):
    """In a table cell that lists exercises of other pages, number each
    exercise, put each on its own line, and make the table a longtable."""

    default_priority = 30
    formats = ("latex",)

    def exercise_label(self, node) -> str | None:
        uri = node.get("refuri", "")
        if not uri.startswith("%") or "#" not in uri:
            return None
        label = uri.split("#", 1)[1]
        registry = getattr(self.env, "sphinx_exercise_registry", {})
        entry = registry.get(label)
        if entry is None or entry.get("type") != "exercise":
            return None
        return label

    def numbered(self, reference) -> nodes.reference:
        """A reference by number ("Exercise \\ref{label}" in LaTeX, where
        \\ref gives the number of the exercise's section) with the
        exercise's own number in its text instead."""
        number = exercise_number(self.env, self.exercise_label(reference))
        title = reference.get("title", "Exercise %s")
        text = title.replace("%s", number).replace("{number}", number)
        return nodes.reference(
            "", text, refuri=reference["refuri"], internal=True
        )

    def run(self, **kwargs):
        for table in list(self.document.findall(nodes.table)):
            listed = False
            for paragraph in list(table.findall(nodes.paragraph)):
                numbered = []
                for child in list(paragraph.children):
                    if isinstance(
                        child, addnodes.number_reference
                    ) and self.exercise_label(child):
                        numbered.append(self.numbered(child))
                        paragraph.replace(child, numbered[-1])
                children = list(paragraph.children)
                labels = [
                    self.exercise_label(child)
                    for child in children
                    if isinstance(child, nodes.reference)
                ]
                if len(labels) < 2 or not all(labels):
                    continue
                listed = True
                for child in children:
                    if isinstance(child, nodes.reference):
                        if not any(child is new for new in numbered):
                            label = self.exercise_label(child)
                            number = exercise_number(self.env, label)
                            child.insert(0, nodes.Text(f"{number} "))
                    elif child.astext().strip() == ",":
                        paragraph.replace(
                            child, nodes.raw("", "\\newline ", format="latex")
                        )
            specs = list(table.findall(nodes.colspec))
            widths = {
                len(EXERCISE_TABLE_WIDTHS): EXERCISE_TABLE_WIDTHS,
                len(GRADED_TABLE_WIDTHS): GRADED_TABLE_WIDTHS,
            }.get(len(specs))
            if listed and widths:
                table["classes"] += ["longtable"]
                # Narrow columns read better ragged right than justified.
                spec = "".join(
                    r">{\raggedright\arraybackslash}\X{%d}{100}" % width
                    for width in widths
                )
                table.parent.insert(
                    table.parent.index(table),
                    addnodes.tabular_col_spec(spec=spec),
                )


# The web's words for working a dial, and what print says instead: a
# reader of paper cannot move the slider, but reads what it sets. Rules,
# not sentences: a chapter that follows the book's phrasing ("move the
# slider (drag it, or focus it and use the arrow keys) from ...") is
# reworded without an entry here; tests/book/test_pdf.py checks that no
# such instruction reaches either PDF.
SLIDER_WORDS = [
    # "(drag it, or focus it and use the arrow keys)"
    (re.compile(r"\s*\((?:drag\s+(?:it|them)|focus)\b[^()]*?keys\)"), ""),
    # "...; drag them, or focus one and use the arrow keys"
    (re.compile(r";\s*drag\s+(?:it|them)\b[^.;()]*?arrow\s+keys"), ""),
    (re.compile(r"\blets\s+you\s+turn\s+the\s+dial\b"), "is a dial"),
    # "In the one below you choose: one slider sets ..."
    (re.compile(r",?\s+you\s+choose:\s+"), ", on the web, "),
    # "you choose $\varepsilon$ with the slider (from ...)"
    (re.compile(r"\byou\s+choose\s+$"), "a slider sets "),
    (re.compile(r"^\s+with\s+the\s+slider\s+\("), " on the web ("),
]
MOVE_SLIDER = re.compile(
    r"\b([Mm])ove\s+(the|its)\s+(slider)(s?)(\s+to\s+see)?(?:\s+for)?:?"
    r"(?=[\s,]|$)"
)


def slider_words_for_print(text: str) -> str:
    """A sentence of the web's instructions for a dial, as print says it."""
    for pattern, replacement in SLIDER_WORDS:
        text = pattern.sub(replacement, text)

    def described(match):
        on = "On" if match.group(1) == "M" else "on"
        verb = "show" if match.group(5) else "move"
        ending = "" if match.group(4) else "s"
        subject = f"{match.group(2)} {match.group(3)}{match.group(4)}"
        return f"{on} the web {subject} {verb}{ending}"

    return MOVE_SLIDER.sub(described, text)


class SlidersInPrint(SphinxPostTransform):
    """The text of the web's dial instructions, reworded for print."""

    default_priority = 30
    formats = ("latex",)

    def run(self, **kwargs):
        for paragraph in list(self.document.findall(nodes.paragraph)):
            for element in list(paragraph.findall(nodes.TextElement)):
                if isinstance(element, (nodes.literal, nodes.math)):
                    continue
                # The parser leaves a paragraph's lines in Text nodes side
                # by side: each run of them is reworded as one. (By
                # position: Text nodes are strings, and list.remove or
                # index would take the first equal one, e.g. another "\n".)
                children, run, changed = [], [], False
                for child in [*element.children, None]:
                    if isinstance(child, nodes.Text):
                        run.append(child)
                        continue
                    if run:
                        old = "".join(str(text) for text in run)
                        new = slider_words_for_print(old)
                        if new != old:
                            changed = True
                            run = [nodes.Text(new)]
                        children += run
                        run = []
                    if child is not None:
                        children.append(child)
                if changed:
                    for child in children:
                        child.parent = element
                    element.children = children


class EditionMarkers(SphinxPostTransform):
    """The sources' edition comments become LaTeX comments the student
    edition is cut along (MyST keeps them as comment nodes)."""

    default_priority = 30
    formats = ("latex",)

    def run(self, **kwargs):
        for comment in list(self.document.findall(nodes.comment)):
            lines = [
                line.strip()
                for line in comment.astext().splitlines()
                if line.strip().startswith(("reader-only-", "student-only:"))
            ]
            if lines:
                text = "".join(f"\n{MARKER}{line}" for line in lines) + "\n"
                comment.replace_self(nodes.raw("", text, format="latex"))


# Lists of file names and commands, set ragged right in print between
# these HTML comments of the sources: run-it-yourself.md's list of what each
# chapter needs (pip commands, like the "Run this chapter yourself" boxes;
# scripts/make_requirements.py writes its comments), and any text between
# "ragged right in print" comments (the steps of grading, instructors.md).
RAGGED_START = "\n\\begingroup\\raggedright\n"
RAGGED_END = "\n\\par\\endgroup\n"
RAGGED_LISTS = {
    "<!-- chapter requirements: start": RAGGED_START,
    "<!-- chapter requirements: end": RAGGED_END,
    "<!-- ragged right in print: start": RAGGED_START,
    "<!-- ragged right in print: end": RAGGED_END,
}


class RaggedLists(SphinxPostTransform):
    """The lists of file names and commands between RAGGED_LISTS' comments
    are set ragged right in print: justified, their lines were stretched
    into gaps around the names, which cannot be broken (underfull boxes)."""

    default_priority = 30
    formats = ("latex",)

    def run(self, **kwargs):
        for raw in list(self.document.findall(nodes.raw)):
            if "html" not in raw.get("format", "").split():
                continue
            for comment, latex in RAGGED_LISTS.items():
                if raw.astext().strip().startswith(comment):
                    raw.replace_self(nodes.raw("", latex, format="latex"))
                    break


def latex_text(markdown: str) -> str:
    """A student-only line of Markdown as LaTeX (bold, code, no HTML)."""
    text = re.sub(r"<[^>]+>", "", markdown)
    text = re.sub(r"([&%$#_{}])", r"\\\1", text)
    text = re.sub(r"\*\*(.+?)\*\*", r"\\textbf{\1}", text)
    return re.sub(r"`(.+?)`", r"\\texttt{\1}", text)


def matching_end(text: str, start: int) -> int:
    """The index just past the \\end{sphinxadmonition} closing the box that
    opens at ``start``."""
    depth = 0
    for match in ADMONITION.finditer(text, start):
        depth += 1 if match.group(1) == "begin" else -1
        if depth == 0:
            return match.end()
    raise ValueError(f"unclosed sphinxadmonition at {start}")


def proofs_as_paragraphs(text: str) -> str:
    while match := PROOF.search(text):
        end = matching_end(text, match.start())
        body = text[match.end() : end - len("\\end{sphinxadmonition}")]
        text = (
            text[: match.start()]
            + "\\begin{bookproof}\n"
            + body
            + "\\end{bookproof}"
            + text[end:]
        )
    return text


SOLUTION_BOX = re.compile(
    r"(?:\\needspace\{[^}]*\}\n)?"
    r"\\begin\{sphinxadmonition\}\{note\}\{(Solution to [^\n]*)\}\n"
)


def solutions_as_sections(text: str) -> str:
    """Each solution box becomes a `booksolution` (see the preamble)."""
    # Each search starts where the last box began: the text before it has
    # no box left (searching from the top each time took 4 s a build).
    position = 0
    while match := SOLUTION_BOX.search(text, position):
        position = match.start()
        begin = text.index("\\begin{sphinxadmonition}", match.start())
        end = matching_end(text, begin)
        body = text[match.end() : end - len("\\end{sphinxadmonition}")]
        # A solution that opens with code: its title bar would be left
        # alone at a page's foot when the first lines of the code do not
        # fit below it, so ask for room for them too.
        opens_with_code = body.lstrip().startswith(
            "\\begin{sphinxuseclass}{cell}"
        )
        needed = 12 if opens_with_code else 6
        text = (
            text[: match.start()]
            + f"\\needspace{{{needed}\\baselineskip}}\n"
            + "\\begin{booksolution}{"
            + match.group(1)
            + "}\n"
            + body
            + "\\end{booksolution}"
            + text[end:]
        )
    return text


def without_solutions(text: str) -> str:
    kept, position = [], 0
    for match in SOLUTION.finditer(text):
        if match.start() < position:
            continue
        begin = text.index("\\begin{sphinxadmonition}", match.start())
        kept.append(text[position : match.start()])
        position = matching_end(text, begin)
    kept.append(text[position:])
    return "".join(kept)


def student_edition(text: str, env) -> str:
    """The LaTeX of the student edition, from the instructors' one."""
    text = without_solutions(text)
    # The instructors' appendix: from its chapter heading to the next one.
    label = r"\label{\detokenize{" + INSTRUCTORS_DOC + "::doc}}"
    if label in text:
        at = text.index(label)
        start = text.rindex("\\sphinxstepscope", 0, at)
        end = text.index("\\sphinxstepscope", at)
        text = text[:start] + text[end:]
    # The introduction in the student edition's words.
    lines, out, skipping = text.split("\n"), [], False
    for line in lines:
        if line.startswith(MARKER + "reader-only-start"):
            skipping = True
        elif line.startswith(MARKER + "reader-only-end"):
            skipping = False
        elif line.startswith(MARKER + "student-only:"):
            student = line.split(":", 1)[1].strip()
            # A line that links a file of the website has no place on paper.
            if not skipping and student and "<a " not in student:
                out += ["", "\\sphinxAtStartPar", latex_text(student), ""]
        elif not skipping:
            out.append(line)
    text = "\n".join(out)
    text = re.sub(
        r"pdftitle=\{([^{}]*)\}",
        r"pdftitle={\1, student edition}",
        text,
        count=1,
    )
    subtitle = "An interactive textbook for programmers\\par}"
    return text.replace(
        subtitle,
        subtitle + "\n\\vspace{1.2em}\n"
        "{\\Large\\itshape Student edition, without the solutions\\par}",
        1,
    )


def exercise_labels(text: str, env) -> str:
    """Give each exercise box the label cross-page references point to."""
    registry = getattr(env, "sphinx_exercise_registry", {})

    def both(match):
        label = match.group(1)
        entry = registry.get(label)
        if entry is None:
            return match.group(0)
        return (
            match.group(0)
            + r"\label{\detokenize{"
            + f"{entry['docname']}:{label}"
            + "}}"
        )

    return re.sub(r"\\label\{exercise:([^}]+)\}", both, text)


# A box that holds a code block cannot be split inside that block (a framed
# block nested in a framed box): near a page's foot the code then runs into
# the footer. Such a box, if it is short enough to fit on a page, starts on
# a new page when what is left of the page cannot hold it; any other box
# asks for room for its title and first lines.
BOX_LINES_MAX = 30


MARKUP_LINE = re.compile(r"^(?:\\(?:begin|end)\{|\\sphinxAtStartPar$|$)")


def box_lines(text: str, start: int) -> tuple[int, bool]:
    """Printed lines (about) of the box opening at `start`: the lines of the
    .tex between its begin and end that are not bare markup; and whether it
    holds a code block."""
    depth = 0
    for match in ADMONITION.finditer(text, start):
        depth += 1 if match.group(1) == "begin" else -1
        if depth == 0:
            body = text[start : match.end()]
            lines = [
                line
                for line in body.splitlines()
                if not MARKUP_LINE.match(line.strip())
            ]
            # a displayed formula takes about three lines of the page
            displays = body.count("\\begin{equation") + body.count("\\[")
            return len(lines) + 2 * displays, "\\begin{sphinxVerbatim}" in body
    return BOX_LINES_MAX + 1, False


def keep_boxes_together(text: str) -> str:
    def room(match):
        lines, has_code = box_lines(text, match.start())
        # A box without code: room for its title and its first lines, or
        # for the whole box when it is short (a title bar alone at the
        # foot of a page reads as a box with nothing in it).
        needed = max(6, min(int(lines * 1.1) + 3, 10))
        if has_code and lines <= BOX_LINES_MAX:
            # code lines are set a little taller than text, and the box
            # adds its title bar and padding
            needed = int(lines * 1.2) + 5
        return f"\\needspace{{{needed}\\baselineskip}}\n" + match.group(1)

    return BOX.sub(room, text)


def polish_tex(app, exception):
    if exception is not None or app.builder.format != "latex":
        return
    for tex in Path(app.outdir).glob("*.tex"):
        if tex.name == STUDENT_TEX:
            continue
        text = tex.read_text(encoding="utf-8")
        text = text.replace(f"\\part{{{BACK_MATTER}}}", "\\appendix", 1)
        text = re.sub(
            r"\\chapter\{Bibliography\}\n(\\label\{[^\n]*bibliography::doc\}\})\n"
            r"\\sphinxAtStartPar\n[^\n]*\n",
            r"\1\n",
            text,
        )
        text = keep_boxes_together(text)
        text = text.replace(RUN_BOX, RUN_BOX + "\\raggedright\n")
        text = proofs_as_paragraphs(text)
        text = exercise_labels(text, app.env)
        # jupyterBook.cls loads inputenc, which xelatex ignores with a
        # warning; it is marked as loaded before the class asks for it.
        text = (
            "\\expandafter\\def\\csname ver@inputenc.sty\\endcsname{}\n"
            "\\expandafter\\def\\csname opt@inputenc.sty\\endcsname{utf8}\n"
            + text
        )
        if tex.name == "book.tex":
            (tex.parent / STUDENT_TEX).write_text(
                student_edition(text, app.env), encoding="utf-8"
            )
        tex.write_text(solutions_as_sections(text), encoding="utf-8")


def latexmk_in_xelatex_mode(app):
    """Ask latexmk for its xelatex mode, for a LaTeX build only.

    LATEXMKOPTS is read by the LaTeX Makefile that jupyter-book's pdflatex
    builder runs in a child process, which inherits this environment; a
    caller's own options are kept (the last mode flag wins in latexmk).
    """
    if app.builder.format != "latex":
        return
    options = os.environ.get("LATEXMKOPTS", "").split()
    if "-xelatex" not in options:
        os.environ["LATEXMKOPTS"] = " ".join([*options, "-xelatex"])


def setup(app):
    app.connect("builder-inited", latexmk_in_xelatex_mode)
    # After sphinx-jupyterbook-latex's own builder-inited handler.
    app.connect("builder-inited", chapter_numbers_like_the_web, priority=900)
    app.connect("config-inited", latex_preamble, priority=900)
    app.connect("build-finished", polish_tex)
    app.add_post_transform(NumberExerciseLists)
    app.add_post_transform(EditionMarkers)
    app.add_post_transform(RaggedLists)
    app.add_post_transform(SlidersInPrint)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
