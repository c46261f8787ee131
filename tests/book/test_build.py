"""The HTML book builds with warnings as errors and has a page per _toc.yml entry."""

import shutil

from conftest import HTML_DIR, ROOT, build_book, toc_files


def test_html_build_has_no_warnings(html_build):
    log = html_build.stdout + html_build.stderr
    assert html_build.returncode == 0, log[-4000:]
    assert "WARNING" not in log, log[-4000:]


def test_every_toc_entry_has_a_page(html_build):
    assert html_build.returncode == 0
    missing = [
        name
        for name in toc_files()
        if not (HTML_DIR / f"{name}.html").exists()
    ]
    assert not missing, f"no HTML page for {missing}"


def test_data_set_is_offered_as_a_download(html_build):
    assert html_build.returncode == 0
    downloads = list((HTML_DIR / "_downloads").glob("*/adult_with_pii.csv"))
    assert (
        downloads
        and downloads[0].read_bytes()
        == (ROOT / "data" / "adult_with_pii.csv").read_bytes()
    )


def test_glued_numbers_are_rendered(html_build):
    assert html_build.returncode == 0
    page = (HTML_DIR / "chapters" / "deidentification.html").read_text()
    assert '<span class="pasted-text">32,561</span>' in page


def test_warnings_do_fail_the_build(tmp_path):
    """The -W build this suite relies on really rejects a broken reference."""
    for name in ("_config.yml", "references.bib", "bibliography.md"):
        shutil.copy(ROOT / name, tmp_path / name)
    (tmp_path / "_toc.yml").write_text(
        "format: jb-book\nroot: intro\nchapters:\n  - file: bibliography\n"
    )
    (tmp_path / "intro.md").write_text(
        "# Intro\n\nA citation that does not exist {cite:p}`no_such_key`.\n"
    )
    result = build_book(tmp_path)
    assert result.returncode != 0
