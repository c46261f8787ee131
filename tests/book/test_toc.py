"""The table of contents and the chapters folder agree."""

from conftest import CHAPTERS_DIR, ROOT, chapter_notebooks, toc_files


def test_every_chapter_is_in_the_toc():
    listed = set(toc_files())
    missing = [
        p.name
        for p in chapter_notebooks()
        if f"chapters/{p.stem}" not in listed
    ]
    assert not missing, f"chapters not listed in _toc.yml: {missing}"


def test_every_toc_entry_exists():
    absent = [
        name
        for name in toc_files()
        if not any(
            (ROOT / f"{name}{suffix}").exists() for suffix in (".md", ".ipynb")
        )
    ]
    assert not absent, f"_toc.yml names files that do not exist: {absent}"


def test_chapters_are_notebooks_named_by_topic():
    for path in CHAPTERS_DIR.iterdir():
        if path.name.startswith("."):
            continue
        assert path.suffix == ".ipynb", (
            f"unexpected file in chapters/: {path.name}"
        )
        assert not path.stem[:1].isdigit() and not path.stem.startswith(
            "ch"
        ), path.name
