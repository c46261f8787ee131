"""The notebooks a reader downloads: plain Markdown, no Sphinx machinery.

The book's pages are built from notebooks whose Markdown uses MyST roles
and directives: glued numbers (``{glue:text}``), citations, cross-references,
definitions, theorems, exercises and admonitions. Plain Jupyter and Colab
show those as raw text. After an HTML build, this extension rewrites every
downloadable chapter (``_sources/chapters/*.ipynb``) so its Markdown reads
as the page does:

- a glued number becomes the number, formatted as on the page;
- a citation becomes "(Author Year)", a cross-reference its text or title;
- a definition, theorem, proof, exercise, solution or admonition becomes a
  bold heading followed by its body in a quotation block;
- the invisible outputs that carry glued values are dropped.

Code cells and their visible outputs are untouched.
"""

from __future__ import annotations

import ast
import copy
import re
from pathlib import Path

import nbformat

ROLE = re.compile(r"\{([a-z:-]+)\}`([^`]*)`")
FENCE_OPEN = re.compile(r"^(`{3,}|:{3,})\{([a-z:-]+)\}[ \t]*(.*)$")
OPTION = re.compile(r"^:([a-z-]+):[ \t]*(.*)$")
LABEL_LINE = re.compile(r"^\(([\w-]+)\)=\s*$")
HEADING = re.compile(r"^(#{1,6})\s+(.*)$")
PRF_KINDS = {
    "definition": "Definition",
    "theorem": "Theorem",
    "lemma": "Lemma",
    "corollary": "Corollary",
    "proposition": "Proposition",
    "proof": "Proof",
    "example": "Example",
    "remark": "Remark",
    "algorithm": "Algorithm",
}


# --- what a notebook knows about itself ---


def glued_values(notebook) -> dict[str, str]:
    """name -> text/plain of every value the notebook glues."""
    values = {}
    for cell in notebook.cells:
        for output in cell.get("outputs", []):
            record = output.get("metadata", {}).get("scrapbook")
            if record:
                prefix = record.get("mime_prefix", "")
                text = output.get("data", {}).get(prefix + "text/plain")
                if text is not None:
                    values[record["name"]] = text
    return values


def format_glued(text: str, spec: str) -> str:
    """Format a glued value as myst-nb's glue:text role does."""
    try:
        value = ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return text
    try:
        return format(value, spec) if spec else str(value)
    except (ValueError, TypeError):
        return str(value)


def labelled_things(notebooks: dict[str, object]) -> dict[str, str]:
    """label -> readable name, for prf directives, exercises and sections."""
    names = {}
    for notebook in notebooks.values():
        pending = None
        for cell in notebook.cells:
            if cell.cell_type != "markdown":
                continue
            lines = cell.source.splitlines()
            for number, line in enumerate(lines):
                target = LABEL_LINE.match(line)
                if target:
                    pending = target.group(1)
                    continue
                heading = HEADING.match(line)
                if heading and pending:
                    names[pending] = heading.group(2).strip()
                    pending = None
                fence = FENCE_OPEN.match(line)
                if not fence:
                    continue
                kind, title = fence.group(2), fence.group(3).strip()
                for option in lines[number + 1 : number + 6]:
                    found = OPTION.match(option)
                    if found and found.group(1) == "label":
                        names[found.group(2).strip()] = describe(kind, title)
    return names


def describe(kind: str, title: str) -> str:
    word = PRF_KINDS.get(kind.removeprefix("prf:"), kind.capitalize())
    if kind in ("exercise", "solution", "solution-start"):
        word = "Exercise" if kind == "exercise" else "Solution"
    return f"{word} ({title})" if title else word


def chapter_titles(root: Path) -> dict[str, str]:
    """document name (chapters/x, x, intro) -> its title."""
    titles = {}
    for path in (root / "chapters").glob("*.ipynb"):
        for cell in nbformat.read(path, as_version=4).cells:
            heading = re.search(r"^# (.+)$", cell.source, re.MULTILINE)
            if cell.cell_type == "markdown" and heading:
                titles[f"chapters/{path.stem}"] = heading.group(1).strip()
                titles[path.stem] = heading.group(1).strip()
                break
    for path in root.glob("*.md"):
        heading = re.search(r"^# (.+)$", path.read_text(), re.MULTILINE)
        if heading:
            titles[path.stem] = heading.group(1).strip()
    return titles


def citations(bib_file: Path) -> dict[str, tuple[str, str]]:
    """bibtex key -> (authors as cited, year)."""
    from pybtex.database import parse_file

    cited = {}
    for key, entry in parse_file(str(bib_file)).entries.items():
        people = (
            entry.persons.get("author") or entry.persons.get("editor") or []
        )
        names = [
            " ".join(person.last_names).replace("{", "").replace("}", "")
            for person in people
        ]
        if not names:
            names = [entry.fields.get("organization", key)]
        if len(names) == 1:
            authors = names[0]
        elif len(names) == 2:
            authors = f"{names[0]} and {names[1]}"
        else:
            authors = f"{names[0]} et al."
        cited[key] = (authors, entry.fields.get("year", "n.d."))
    return cited


# --- rewriting Markdown ---


class Context:
    def __init__(self, glue, labels, titles, bib):
        self.glue, self.labels, self.titles, self.bib = (
            glue,
            labels,
            titles,
            bib,
        )


def explicit_text(content: str) -> tuple[str | None, str]:
    """'text <target>' -> ('text', 'target'); 'target' -> (None, 'target')."""
    match = re.match(r"^(.*?)\s*<([^>]+)>$", content.strip())
    if match and match.group(1):
        return match.group(1), match.group(2)
    return None, content.strip()


def render_role(role: str, content: str, context: Context) -> str:
    if role == "glue:text" or role == "glue":
        name, _, spec = content.partition(":")
        if name not in context.glue:
            raise KeyError(f"no glued value named {name!r}")
        return format_glued(context.glue[name], spec)
    if role in ("cite:p", "cite:t", "cite"):
        keys = [key.strip() for key in content.split(",")]
        found = [context.bib.get(key, (key, "")) for key in keys]
        if role == "cite:t":
            return "; ".join(f"{authors} ({year})" for authors, year in found)
        return (
            "("
            + "; ".join(f"{authors} {year}" for authors, year in found)
            + ")"
        )
    if role in ("prf:ref", "ref", "numref"):
        text, target = explicit_text(content)
        return text or context.labels.get(target, target)
    if role == "doc":
        text, target = explicit_text(content)
        name = target.removeprefix("../").removesuffix(".ipynb")
        return text or f"*{context.titles.get(name, name)}*"
    if role == "download":
        text, target = explicit_text(content)
        return f"`{Path(target).name}`"
    if role == "math":
        return f"${content}$"
    return content


def render_roles(text: str, context: Context) -> str:
    return ROLE.sub(
        lambda m: render_role(m.group(1), m.group(2), context), text
    )


def render_markdown(source: str, context: Context) -> str:
    """A cell's Markdown with roles rendered and directives made plain."""
    out: list[str] = []
    lines = source.splitlines()
    index = 0
    quote_depth = 0
    fences: list[str] = []
    while index < len(lines):
        line = lines[index]
        fence = FENCE_OPEN.match(line.strip())
        if LABEL_LINE.match(line):
            index += 1
            continue
        if fence:
            marker, kind, title = fence.groups()
            index += 1
            while index < len(lines) and OPTION.match(lines[index].strip()):
                index += 1
            if kind in ("solution-end",):
                while index < len(lines) and lines[index].strip() != marker:
                    index += 1
                index += 1
                continue
            heading = describe(kind, render_roles(title, context))
            if kind in ("solution", "solution-start"):
                exercise = context.labels.get(title.strip(), "the exercise")
                heading = f"Solution to {exercise}"
            elif kind == "admonition":
                heading = render_roles(title, context) or "Note"
            elif kind in ("bibliography",):
                continue
            out.append("> " * quote_depth + f"**{heading}.**")
            out.append("> " * quote_depth + ">")
            fences.append(marker)
            quote_depth += 1
            continue
        if fences and line.strip() == fences[-1]:
            fences.pop()
            quote_depth -= 1
            out.append("")
            index += 1
            continue
        prefix = "> " * quote_depth
        out.append((prefix + render_roles(line, context)).rstrip())
        index += 1
    text = "\n".join(out).strip("\n")
    return re.sub(r"(^>[ >]*\n)(?:>[ >]*\n)+", r"\1", text, flags=re.MULTILINE)


def export_notebook(notebook, context: Context):
    """A reader's copy of the notebook: plain Markdown, no glue outputs,
    no grading metadata."""
    exported = copy.deepcopy(notebook)
    for cell in exported.cells:
        # The graded exercises' checks and inputs are the grader's: the
        # site never serves them (scripts/make_assignments.py).
        cell.metadata.pop("assignment", None)
        if cell.cell_type == "markdown":
            cell.source = render_markdown(cell.source, context)
        elif cell.cell_type == "code":
            cell.outputs = [
                output
                for output in cell.get("outputs", [])
                if not output.get("metadata", {}).get("scrapbook")
            ]
    return exported


def export_folder(source_root: Path, chapters: list[Path]) -> None:
    """Rewrite each notebook of `chapters` in place as its reader's copy."""
    notebooks = {path: nbformat.read(path, as_version=4) for path in chapters}
    labels = labelled_things(notebooks)
    titles = chapter_titles(source_root)
    bib = citations(source_root / "references.bib")
    for path, notebook in notebooks.items():
        context = Context(glued_values(notebook), labels, titles, bib)
        nbformat.write(export_notebook(notebook, context), path)


def rewrite_downloads(app, exception):
    if exception is not None or app.builder.format != "html":
        return
    downloads = sorted(
        (Path(app.outdir) / "_sources" / "chapters").glob("*.ipynb")
    )
    if downloads:
        export_folder(Path(app.srcdir), downloads)


def setup(app):
    app.connect("build-finished", rewrite_downloads)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
