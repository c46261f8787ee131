"""`make check` runs the tests of the chapters you changed (see
scripts/check_selection.py); `make test` runs everything."""

import sys

from conftest import ROOT, chapter_notebooks

sys.path.insert(0, str(ROOT / "scripts"))

from check_selection import CONVENTIONS, TESTS, selection  # noqa: E402


def names(paths):
    return sorted(path.name for path in paths)


def test_every_chapter_has_the_test_file_make_check_selects():
    for notebook in chapter_notebooks():
        chosen = selection([f"chapters/{notebook.name}"])
        assert len(chosen) == 2, f"{notebook.stem}: {names(chosen)}"
        assert CONVENTIONS in chosen


def test_a_changed_chapter_selects_its_tests_and_the_conventions():
    chosen = selection(
        ["chapters/local-dp.ipynb", "tests/chapters/test_composition.py"]
    )
    assert names(chosen) == [
        "test_composition.py",
        "test_conventions.py",
        "test_local_dp.py",
    ]


def test_prose_and_book_changes_select_only_the_static_conventions():
    chosen = selection(["intro.md", "_ext/vega_figures.py", "tests/book/x.py"])
    assert chosen == [CONVENTIONS]


def test_shared_test_code_data_or_all_select_every_chapter():
    everything = sorted(TESTS.glob("test_*.py"))
    assert len(everything) == len(chapter_notebooks()) + 1
    for changed in (
        ["tests/conftest.py"],
        ["conftest.py"],
        ["data/adult_with_pii.csv"],
        ["constraints.txt"],
    ):
        assert selection(changed) == everything, changed
    assert selection([], everything=True) == everything
