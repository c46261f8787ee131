"""The lecture slides (scripts/make_slides.py, slides/*.yml): every deck
builds from its chapter, shows no number the chapter does not, no
solution, and in Chromium at 1280 x 720 loads offline without an error,
fits every slide with text of 18 px or more, moves through every slide
with the keyboard, has dials that move, and no axe violation.

The decks are built once (seconds: only the notebooks' stored outputs
are read) into _build/slides-test and visited once each; the tests read
what the visits recorded.
"""

from __future__ import annotations

import json
import re
import shutil
import sys
from contextlib import contextmanager
from dataclasses import dataclass, field

import pytest
from browser import Visit, _stay_local, visit_all, watch
from playwright.sync_api import TimeoutError as PlaywrightTimeout

from conftest import BUILD_DIR, ROOT

sys.path.insert(0, str(ROOT / "scripts"))
import make_slides  # noqa: E402

OUT = BUILD_DIR / "slides-test"
NAMES = make_slides.outlines()
MIN_PX = make_slides.MIN_TEXT_PX


@pytest.fixture(scope="module")
def decks() -> dict:
    if OUT.exists():
        shutil.rmtree(OUT)
    return make_slides.build(OUT)


# --------------------------------------------------------------------------
# Without a browser
# --------------------------------------------------------------------------


def test_an_outline_for_no_chapter_is_refused(tmp_path):
    (tmp_path / "_toc.yml").symlink_to(ROOT / "_toc.yml")
    (tmp_path / "slides").mkdir()
    (tmp_path / "slides" / "differential-privacy.yml").write_text("{}")
    assert make_slides.outlines(tmp_path) == ["differential-privacy"]
    (tmp_path / "slides" / "differential-privacy-2.yml").write_text("{}")
    with pytest.raises(make_slides.OutlineError, match="for no chapter"):
        make_slides.outlines(tmp_path)


def test_every_deck_has_12_to_25_slides(decks):
    counts = {name: deck.slides for name, deck in decks.items()}
    assert set(counts) == set(NAMES)
    bad = {name: n for name, n in counts.items() if not 12 <= n <= 25}
    assert not bad, bad
    for name, deck in decks.items():
        assert deck.html.count("<section") == deck.slides, name


def test_each_deck_opens_with_the_chapters_learning_objectives(decks):
    for name, deck in decks.items():
        sections = deck.html.split("<section")
        assert "slide-objectives" in sections[2], name
        assert deck.chapter.objectives, name


def test_each_deck_has_what_a_lecture_needs(decks):
    """Definitions or theorems, figures, a worked example with glued
    numbers, one or two questions, exercises to assign, speaker notes."""
    for name, deck in decks.items():
        html = deck.html
        proofs = sum(
            d.name.startswith("prf:") for d in deck.chapter.directives.values()
        )
        assert html.count("slide-proof") >= min(2, proofs), name
        assert "slide-figure" in html or "slide-dial" in html, name
        assert 1 <= html.count("slide-question") <= 2, name
        assert "slide-exercises" in html, name
        assert html.count('class="glued"') >= 5, name
        assert html.count('<aside class="notes">') >= deck.slides // 2, name
        if deck.chapter.dials:
            assert "slide-dial" in html, f"{name}: its dial is not on a slide"


def test_no_number_on_a_slide_is_typed_by_hand(decks):
    problems = {
        name: make_slides.stray_numbers(deck) for name, deck in decks.items()
    }
    assert not any(problems.values()), problems


def _outline(name: str) -> dict:
    import yaml

    return yaml.safe_load((ROOT / "slides" / f"{name}.yml").read_text())


def _build_changed(tmp_path, name: str, change) -> make_slides.Deck:
    """The deck of `name` from a copy of its outline changed by `change`."""
    for part in ("chapters", "references.bib", "_toc.yml"):
        (tmp_path / part).symlink_to(ROOT / part)
    (tmp_path / "slides").mkdir()
    outline = _outline(name)
    change(outline["slides"])
    (tmp_path / "slides" / f"{name}.yml").write_text(json.dumps(outline))
    return make_slides.build_deck(name, tmp_path)


def _first(slides, key):
    return next(slide for slide in slides if key in slide)


def test_a_number_typed_in_an_outline_is_caught(tmp_path, decks):
    """A retyped number that the chapter does not print, and a glued
    number shown in another format than the glue gives, are both found
    (and stop `make slides`)."""
    name = NAMES[0]
    glued = re.search(r'class="glued" data-glue="([^"]+)"', decks[name].html)[
        1
    ]
    value = float(decks[name].chapter.glue[glued])

    def retype(slides):
        slide = _first(slides, "text")
        slide["text"] += f"\n\nThe answer was {value + 1.5:,.1f} last year."

    deck = _build_changed(tmp_path, name, retype)
    strays = make_slides.stray_numbers(deck)
    assert any("neither glued nor in the chapter" in s for s in strays)
    deck.html = deck.html.replace(
        f'data-glue="{glued}"', f'data-glue="{glued}x"', 1
    )
    assert any(
        f"not the glued {glued}x" in s for s in make_slides.stray_numbers(deck)
    )


@pytest.mark.parametrize(
    ("kind", "message"),
    [
        ("proof", "no prf: labelled"),
        ("figure", "no figure named"),
        ("exercises", "no exercise labelled"),
        ("glue", "no glued value"),
        ("solution-glue", "computed in an exercise's solution"),
        ("solution-label", "no exercise labelled"),
        ("too-few", "12 to 25"),
        ("unknown-key", "unknown keys"),
    ],
)
def test_an_item_that_does_not_resolve_stops_the_build(
    tmp_path, kind, message
):
    name = "differential-privacy"

    def change(slides):
        if kind in ("proof", "figure"):
            slide = _first(slides, kind)
            slide[kind] += "-renamed"
        elif kind == "exercises":
            _first(slides, kind)[kind].append("dp-ex-renamed")
        elif kind == "glue":
            _first(slides, "text")["text"] += "{glue:text}`dp_renamed`"
        elif kind == "solution-glue":
            _first(slides, "text")["text"] += "{glue:text}`dp_freya_success`"
        elif kind == "solution-label":
            _first(slides, "exercise")["exercise"] = "dp-sol-clipping"
        elif kind == "too-few":
            del slides[10:]
        elif kind == "unknown-key":
            slides[0]["note"] = "a typo for notes"

    with pytest.raises(make_slides.OutlineError, match=message) as error:
        _build_changed(tmp_path, name, change)
    assert f"slides/{name}.yml" in str(error.value)


def test_a_theorem_of_another_chapter_is_named_by_its_title(tmp_path):
    """{prf:ref} to another chapter's directive shows that directive's
    title (it showed the label with its dashes as spaces); a label no
    chapter has stops the build."""
    name = "differential-privacy"

    def cross(slides):
        _first(slides, "text")["text"] += (
            "\n\nSee {prf:ref}`gauss-def-approx-dp`."
        )

    deck = _build_changed(tmp_path, name, cross)
    assert "gauss def approx dp" not in deck.html
    assert "-differential privacy" in deck.html

    def unknown(slides):
        _first(slides, "text")["text"] += "{prf:ref}`gauss-def-renamed`"

    (tmp_path / "unknown").mkdir()
    with pytest.raises(make_slides.OutlineError, match="no chapter has"):
        _build_changed(tmp_path / "unknown", name, unknown)


def test_a_figure_without_a_name_is_taken_by_its_place(tmp_path):
    """`figure: 1` is the chapter's second stored image; a number past
    the last image stops the build."""
    name = "differential-privacy"
    chapter = make_slides.Chapter.load(name)

    def by_number(slides):
        _first(slides, "figure")["figure"] = 1

    deck = _build_changed(tmp_path, name, by_number)
    image = deck.assets[f"figures/{name}-1.png"]
    assert image == make_slides.base64.b64decode(
        chapter.figures["fig-dp-ratio"]["png"]
    )
    assert f'src="figures/{name}-1.png"' in deck.html

    def past_the_end(slides):
        _first(slides, "figure")["figure"] = 99

    (tmp_path / "past").mkdir()
    with pytest.raises(make_slides.OutlineError, match="no figure named"):
        _build_changed(tmp_path / "past", name, past_the_end)


def test_no_solution_is_on_a_slide(decks):
    """The decks may go to students: no solution's text is on them."""
    for name, deck in decks.items():
        for label, directive in deck.chapter.directives.items():
            if not directive.name.startswith("solution"):
                continue
            for line in directive.body.splitlines():
                if len(line) > 40 and "{" not in line and "$" not in line:
                    assert line.strip() not in deck.html, (name, label)


def test_decks_are_linked_from_the_instructors_page():
    text = (ROOT / "instructors.md").read_text()
    linked = set(re.findall(r'href="slides/([\w-]+)\.html"', text))
    assert linked == set(NAMES)
    for name in NAMES:
        assert f'href="slides/{name}.pdf"' in text, name


def test_reveal_is_pinned_and_served_beside_the_decks(decks):
    manifest = json.loads((ROOT / "package.json").read_text())
    version = manifest["dependencies"]["reveal.js"]
    assert re.fullmatch(r"5\.\d+\.\d+", version), version
    lock = json.loads((ROOT / "package-lock.json").read_text())
    assert lock["packages"]["node_modules/reveal.js"]["version"] == version
    for name in NAMES:
        page = (OUT / f"{name}.html").read_text()
        for link in re.findall(r'(?:src|href)="([^"]+)"', page):
            if link.startswith("data:"):
                continue
            assert "//" not in link, (name, link)
            assert (OUT / link.split("?")[0]).exists(), (name, link)


# --------------------------------------------------------------------------
# In Chromium, at 1280 x 720
# --------------------------------------------------------------------------

# What a slide shows that does not fit: elements past the screen's edges,
# and text smaller than MIN_PX as drawn. `measure(slide)` is defined once
# per page; MEASURE_ALL shows every slide in turn (Reveal.slide: no key
# press, no transition, one round trip for the whole deck) and measures it.
MEASURE_FUNCTION = r"""minPx => { window.measureSlide = () => {
  const slide = Reveal.getCurrentSlide();
  const scale = Reveal.getScale();
  const width = innerWidth, height = innerHeight;
  const outside = [], small = [];
  for (const el of slide.querySelectorAll('*')) {
    if (el.closest('aside.notes, mjx-assistive-mml, script, style')) continue;
    // Math is measured by its container: sub- and superscripts take TeX's
    // script sizes of it.
    if (el.parentElement.closest('mjx-container')) continue;
    const r = el.getBoundingClientRect();
    if (r.width < 2 || r.height < 2) continue;
    if (!el.checkVisibility({checkVisibilityCSS: true})) continue;
    const what = (el.tagName + ' ' + (el.textContent || '').trim()).slice(0, 60);
    if (r.right > width + 1 || r.bottom > height + 1 || r.left < -1 || r.top < -1) {
      outside.push(what + ' at ' + [r.left, r.top, r.right, r.bottom].map(Math.round));
    }
    const own = el.tagName === 'MJX-CONTAINER'
      || [...el.childNodes].some(n => n.nodeType === 3 && n.textContent.trim());
    if (!own) continue;
    const px = parseFloat(getComputedStyle(el).fontSize) * scale;
    if (px < minPx - 0.05) small.push(what + ': ' + px.toFixed(1) + ' px');
  }
  // Taller than the screen (the print view would split it over pages).
  for (const el of [slide, slide.querySelector('.frame')]) {
    if (el && el.scrollHeight > height + 1) {
      outside.push('the slide is ' + el.scrollHeight + ' px tall');
    }
  }
  return {index: Reveal.getIndices().h,
          dial: !!slide.querySelector('figure.vega-figure'),
          outside: outside.slice(0, 5),
          small: small.slice(0, 5)};
}; }"""
MEASURE_ALL = """() => {
  const measures = [];
  for (let i = 0; i < Reveal.getTotalSlides(); i++) {
    Reveal.slide(i);
    measures.push(measureSlide());
  }
  return measures;
}"""

# reveal.js announces every move: the keyboard walk records where each key
# press landed and reads the list once at the end.
RECORD_MOVES = """() => { window.slidesReached = [Reveal.getIndices().h];
  Reveal.on('slidechanged', e => window.slidesReached.push(e.indexh)); }"""

# The current slide's dial: its first slider's value, the signal the Vega
# view holds, and the drawn chart (the test moves the slider with the
# arrow keys and reads this before and after).
DIAL_STATE = r"""() => {
  const figure = Reveal.getCurrentSlide().querySelector('figure.vega-figure');
  const view = window.bookVegaViews[figure.id];
  const input = figure.querySelector("input[type='range']");
  return {value: input.value, signal: view.signal(input.name),
          svg: figure.querySelector('svg').innerHTML.length
               + figure.querySelector('svg').innerHTML.slice(0, 20000)};
}"""
# The chart was drawn again after the slider moved.
DIAL_REDRAWN = r"""before => {
  const figure = Reveal.getCurrentSlide().querySelector('figure.vega-figure');
  const svg = figure.querySelector('svg').innerHTML;
  return svg.length + svg.slice(0, 20000) !== before;
}"""


# reveal.js hides the slides that are not shown from assistive technology,
# in the print view too: axe is shown them all.
AXE_ALL_SLIDES = """() => document.querySelectorAll('section').forEach(s => {
  s.removeAttribute('aria-hidden'); s.removeAttribute('hidden'); })"""


@dataclass
class DeckVisit:
    visit: Visit
    slides: int = 0
    reached: list = field(default_factory=list)
    measures: list = field(default_factory=list)
    dials: list = field(default_factory=list)
    axe: list = field(default_factory=list)
    axe_skipped: str = ""


def _move_dial(tab, seen: DeckVisit) -> None:
    """The current slide's dial: three arrow keys on its slider move the
    value, the view's signal and the drawn chart."""
    tab.wait_for_function(make_slides.DIALS_DRAWN)
    before = tab.evaluate(DIAL_STATE)
    slider = tab.locator(
        "section.present figure.vega-figure input[type='range']"
    ).first
    slider.focus()
    for _ in range(3):
        slider.press("ArrowRight")
    try:
        tab.wait_for_function(DIAL_REDRAWN, arg=before["svg"], timeout=5000)
    except PlaywrightTimeout:
        pass  # test_dials_on_slides_move says what did not change
    seen.dials.append((before, tab.evaluate(DIAL_STATE)))
    tab.evaluate("document.activeElement.blur()")


# One browser context per browser (visit_all runs one browser per worker
# thread); each deck gets its own tab in it.
_CONTEXTS: dict = {}


def _context(browser):
    if id(browser) not in _CONTEXTS:
        context = browser.new_context(
            viewport={
                "width": make_slides.WIDTH,
                "height": make_slides.HEIGHT,
            },
            service_workers="block",
        )
        context.set_default_timeout(20_000)
        _CONTEXTS[id(browser)] = context
    return _CONTEXTS[id(browser)]


@contextmanager
def _leaving(seen: DeckVisit):
    """The tab leaves its page (to another, or closed): requests still
    under way are cancelled (net::ERR_ABORTED; MathJax fetches font parts
    as it needs them), which is not a broken file (a missing one answers
    404, recorded by browser.watch): those are not recorded."""
    broken = seen.visit.broken_local
    before = len(broken)
    yield
    broken[before:] = [
        failure
        for failure in broken[before:]
        if not failure.startswith("net::ERR_ABORTED")
    ]


def _visit_deck(browser, url: str, name: str, axe_script) -> DeckVisit:
    """One tab: the slides (keyboard walk, every slide measured, dials
    moved), then reveal.js's print view (axe)."""
    context = _context(browser)
    seen = DeckVisit(Visit(name))
    tab = context.new_page()
    tab.add_init_script(make_slides.PDF_READY_LISTENER)
    _stay_local(tab, url, seen.visit)  # a page routes like a context
    watch(tab, seen.visit, url)
    tab.goto(f"{url}{name}.html")
    tab.evaluate(make_slides.WAIT_FOR_DECK)
    seen.slides = tab.evaluate("Reveal.getTotalSlides()")
    tab.evaluate(RECORD_MOVES)
    tab.locator("body").focus()
    for _ in range(seen.slides - 1):
        tab.keyboard.press("ArrowRight")
    seen.reached = tab.evaluate("window.slidesReached")
    tab.evaluate(MEASURE_FUNCTION, MIN_PX)
    seen.measures = tab.evaluate(MEASURE_ALL)
    for measure in list(seen.measures):
        if measure["dial"]:
            tab.evaluate(f"Reveal.slide({measure['index']})")
            _move_dial(tab, seen)
            # The slide again, with its dial drawn and moved.
            seen.measures.append(tab.evaluate("measureSlide()"))
    if axe_script:
        # Once per deck, on reveal.js's print view (what the PDF prints):
        # every slide laid out at once, none hidden from axe.
        with _leaving(seen):
            tab.goto(f"{url}{name}.html?print-pdf")
        tab.evaluate(make_slides.WAIT_FOR_DECK)
        tab.wait_for_function(make_slides.PRINT_READY)
        tab.wait_for_function(make_slides.DIALS_DRAWN)
        tab.evaluate(AXE_ALL_SLIDES)
        tab.evaluate(axe_script)
        result = tab.evaluate(
            "() => axe.run(document,"
            " {resultTypes: ['violations'], preload: false})"
        )
        seen.axe = [
            f"{v['id']}: {v['help']}: {node['html'][:120]}"
            for v in result["violations"]
            for node in v["nodes"][:3]
        ]
    with _leaving(seen):
        tab.close()
    return seen


@pytest.fixture(scope="module")
def deck_visits(decks) -> dict:
    try:
        from axe_playwright_python.sync_playwright import Axe

        axe_script, skipped = Axe().axe_script, ""
    except ImportError:
        axe_script = None
        skipped = (
            "axe-playwright-python is not installed (requirements-dev.txt"
            " does not pin it yet)"
        )
    with make_slides.served(OUT) as url:
        # Two browsers side by side (one per core, as for the book's pages).
        visits = visit_all(
            url,
            NAMES,
            lambda browser, url, name: _visit_deck(
                browser, url, name, axe_script
            ),
        )
    _CONTEXTS.clear()
    for seen in visits.values():
        if isinstance(seen, DeckVisit):
            seen.axe_skipped = skipped
    return visits


def _seen(deck_visits: dict, name: str) -> DeckVisit:
    """The deck's visit; if the visit raised, its exception."""
    seen = deck_visits[name]
    if isinstance(seen, BaseException):
        raise seen
    return seen


@pytest.mark.parametrize("name", NAMES)
def test_deck_loads_offline_without_errors(deck_visits, name):
    visit = _seen(deck_visits, name).visit
    problems = (
        [f"console: {text}" for text in visit.console_errors]
        + [f"page error: {text}" for text in visit.page_errors]
        + [f"broken: {text}" for text in visit.broken_local]
        + [f"off host: {text}" for text in visit.external_requests]
    )
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("name", NAMES)
def test_keyboard_reaches_every_slide(deck_visits, decks, name):
    seen = _seen(deck_visits, name)
    assert seen.slides == decks[name].slides
    assert seen.reached == list(range(seen.slides))


@pytest.mark.parametrize("name", NAMES)
def test_every_slide_fits_with_text_of_18_px_or_more(deck_visits, name):
    problems = [
        f"slide {m['index'] + 1}: {kind}: {item}"
        for m in _seen(deck_visits, name).measures
        for kind in ("outside", "small")
        for item in m[kind]
    ]
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("name", NAMES)
def test_dials_on_slides_move(deck_visits, decks, name):
    seen = _seen(deck_visits, name)
    expected = decks[name].html.count('<figure class="vega-figure"')
    assert len(seen.dials) == expected
    for before, after in seen.dials:
        assert float(after["value"]) > float(before["value"]), after
        assert float(after["signal"]) == pytest.approx(float(after["value"]))
        assert after["svg"] != before["svg"], "the chart did not change"


@pytest.mark.parametrize("name", NAMES)
def test_axe_finds_no_violation_on_any_slide(deck_visits, name):
    """axe-core on the print view, where every slide is laid out."""
    seen = _seen(deck_visits, name)
    if seen.axe_skipped:
        pytest.skip(seen.axe_skipped)
    assert not seen.axe, "\n".join(seen.axe)


def test_make_slides_prints_a_pdf_page_per_slide(decks):
    """The PDF instructors present from: reveal.js's print view printed by
    Chromium, one page per slide (one deck, the others are printed the
    same way by `make slides`)."""
    import subprocess

    name = min(NAMES, key=lambda name: decks[name].slides)
    pdf = OUT / f"{name}.pdf"
    pdf.unlink(missing_ok=True)
    make_slides.print_pdfs(OUT, [name])
    info = subprocess.run(
        ["pdfinfo", str(pdf)], capture_output=True, text=True, check=True
    ).stdout
    assert re.search(rf"^Pages:\s+{decks[name].slides}$", info, re.M), info
    assert re.search(r"^Page size:\s+960 x 540 pts", info, re.M), info
