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
        own = f"test_{notebook.stem.replace('-', '_')}.py"
        assert own in names(chosen), f"{notebook.stem}: {names(chosen)}"
        assert CONVENTIONS in chosen


def test_a_test_that_reads_another_chapter_is_selected_with_it():
    # test_k_anonymity.py reads deidentification.ipynb.
    chosen = names(selection(["chapters/deidentification.ipynb"]))
    assert "test_k_anonymity.py" in chosen, chosen


def test_a_changed_chapter_selects_its_tests_and_the_conventions():
    chosen = selection(
        ["chapters/many-queries.ipynb", "tests/chapters/test_composition.py"]
    )
    # test_deploying_dp.py reads what deploying-dp says of many-queries.
    assert names(chosen) == [
        "test_composition.py",
        "test_conventions.py",
        "test_deploying_dp.py",
        "test_many_queries.py",
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
        ["scripts/make_assignments.py"],
        ["tests/chapters/helpers.py"],
    ):
        assert selection(changed) == everything, changed
    assert selection([], everything=True) == everything
