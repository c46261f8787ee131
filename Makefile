# Hands-On Data Privacy: build, test and maintain the book.
#   make book     build the HTML book into _build/html (creates .venv first)
#   make test     run every test the book promises (what CI runs)
#   make check    the fast loop while writing: lint, the tests of the
#                 chapters you changed, nbval on the notebooks you changed
#                 (ALL=1: every chapter's tests)
#   make refresh-reader-lock  let the newest library versions into the
#                 reader lock, if the chapters still print the book's numbers
#   make slides   the lecture slides (reveal.js) of every chapter that has
#                 an outline in slides/, and their PDFs, into _build/slides
#   make assignments  every chapter's graded assignment (nbgrader) into
#                 _build/assignments; `make grade CHAPTER=... SUBMISSIONS=...`
#                 grades a folder of submitted notebooks into a CSV
# See README.md and CONTRIBUTING.md for the rest.

SHELL := /bin/bash
.DEFAULT_GOAL := book

PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
HOST ?= 127.0.0.1
PORT ?= 8000
UCI_SOURCE ?= ../shared/data/uci-adult/adult.data

# Debian packages for the PDF (TeX Live), the browser tests (chromium) and
# Spark in the DP-at-scale chapter (a Java 17 runtime) and the sandbox a
# student's notebook is graded in (bubblewrap).
APT_PACKAGES := texlive-xetex texlive-latex-extra texlive-fonts-recommended \
	latexmk fonts-freefont-otf poppler-utils chromium \
	openjdk-17-jre-headless bubblewrap

# Notebooks changed since the last commit (edited or new): what `make check`
# runs under nbval.
CHANGED_NOTEBOOKS = $(shell { git diff --name-only HEAD -- 'chapters/*.ipynb'; \
	git ls-files --others --exclude-standard -- 'chapters/*.ipynb'; } 2>/dev/null | sort -u)

.PHONY: book slides serve test check lint format execute data pdf publish-pdfs student assignments grade bench memorization-runs system-deps clean refresh-reader-lock

# The toolchain needs Python 3.11 or newer (pandas 3); say so before pip does.
# uv (pinned in constraints.txt) installs it, pip included (pinned too: the
# tests ask pip whether the readers' requirements resolve): the same pins
# pip would install, in 41 s instead of 59 s here. --compile-bytecode: a
# machine that sets PYTHONDONTWRITEBYTECODE (CI's does) would otherwise
# compile the toolchain from source in every process of every run.
$(STAMP): requirements-dev.txt constraints.txt
	@$(PYTHON) -c 'import sys; sys.exit(sys.version_info < (3, 11))' || { \
		echo "Python 3.11 or newer is needed; '$(PYTHON)' is $$($(PYTHON) --version 2>&1)."; \
		echo "Run e.g. 'make PYTHON=python3.11 book'."; exit 1; }
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check \
		"$$(grep '^uv==' constraints.txt)"
	$(BIN)/uv pip install --quiet --python $(BIN)/python --compile-bytecode \
		-r requirements-dev.txt -c constraints.txt
	touch $@

# MathJax 4 and its font for the site, from npm as package-lock.json pins
# them (the HTML build installs them too if node_modules/ lacks them:
# _ext/mathjax_local.py). Node.js 20 or newer with npm.
NODE_STAMP := node_modules/.package-lock.json
$(NODE_STAMP): package.json package-lock.json
	@command -v npm >/dev/null || { echo "The site serves MathJax from npm: install Node.js 20 or newer with npm."; exit 1; }
	npm ci --ignore-scripts --no-audit --no-fund
	touch $@

# The PDFs under the names the site links (instructors.md, intro.md), if
# `make pdf` has built them; the student PDF also inside the student edition.
# Where `make pdf` writes the PDFs (the tests build theirs elsewhere).
LATEX_OUT ?= _build/latex
define publish_pdfs
	@if [ -f $(LATEX_OUT)/book.pdf ] && [ -f $(LATEX_OUT)/book-student.pdf ] && [ -d _build/html ]; then \
		cp $(LATEX_OUT)/book.pdf _build/html/hands-on-data-privacy.pdf; \
		cp $(LATEX_OUT)/book-student.pdf _build/html/hands-on-data-privacy-student.pdf; \
		if [ -d _build/html/student ]; then cp $(LATEX_OUT)/book-student.pdf _build/html/student/hands-on-data-privacy-student.pdf; fi; \
		echo "The PDFs are published in _build/html."; \
	elif [ -d _build/html ]; then \
		echo "No PDFs yet: the site's links to them lead nowhere until 'make pdf' (TeX Live) builds them."; \
	fi
endef

# The reader's site, with the student edition published inside it at student/
# (and the PDFs, if `make pdf` has built them).
book: $(STAMP) $(NODE_STAMP)
	$(BIN)/jupyter-book build . -W -n --keep-going
	$(BIN)/python scripts/make_student_edition.py _build/student
	rm -rf _build/html/student && cp -r _build/student/_build/html _build/html/student
	$(publish_pdfs)
	$(BIN)/python scripts/make_slides.py --pdf _build/slides
	rm -rf _build/html/slides && cp -r _build/slides _build/html/slides
	$(BIN)/python scripts/make_assignments.py $(ASSIGNMENTS)
	rm -rf _build/html/assignments && mkdir -p _build/html/assignments
	cp $(ASSIGNMENTS)/student/*/*.ipynb _build/html/assignments/
	@echo
	@echo "The book is built. Open $(CURDIR)/_build/html/index.html in a browser,"
	@echo "or run 'make serve' and visit http://$(HOST):$(PORT)/"

# The lecture slides: one reveal.js deck per outline slides/<chapter>.yml
# (slides/README.md), built from the chapter's stored outputs in seconds,
# served offline (reveal.js, MathJax and the Vega runtime beside the
# decks), and a PDF of each (Chromium prints reveal.js's print view).
# `make book` publishes them in the site at slides/.
slides: $(STAMP) $(NODE_STAMP)
	$(BIN)/python scripts/make_slides.py --pdf _build/slides

serve: book
	$(BIN)/python -m http.server $(PORT) --bind $(HOST) --directory _build/html

# Installs the Debian packages the PDF and browser tests need (as root), or
# stops with the exact command to run.
system-deps:
	@missing=""; \
	for pkg in $(APT_PACKAGES); do \
		dpkg-query -W -f='$${Status}' $$pkg 2>/dev/null | grep -q "install ok installed" || missing="$$missing $$pkg"; \
	done; \
	if [ -z "$$missing" ]; then exit 0; fi; \
	if [ "$$(id -u)" = 0 ]; then \
		echo "Installing Debian packages:$$missing"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$missing; \
	else \
		echo "Missing Debian packages. Run:"; \
		echo "  sudo apt-get update && sudo apt-get install -y --no-install-recommends$$missing"; \
		exit 1; \
	fi

# Every layer in one pytest run, two files at a time (pytest-xdist): the
# chapters' functions, nbval over every notebook, and the book as a whole
# (builds, browser, standalone and reader runs). The long files are handed
# out first (conftest.py), the HTML build is made once and shared by the
# workers (tests/conftest.py), the PDF is built in a tree of its own beside
# it. The run ends with where its time went, per layer.
# A run starts by pruning uv's cache: a registry that sends no caching
# headers makes uv fetch and unpack a source distribution anew each time
# it is asked for, and keep every copy (pyspark's, 0.5-1.4 GB each: 6.3 GB
# more per run, until CI's disk was full). Pruning keeps what the cache's
# entries point at, so nothing needs downloading again. It waits for uv
# processes that hold the cache (a `uv run jupyter lab`, say) at most a
# minute, then lets the run go on unpruned.
test: $(STAMP) $(NODE_STAMP) system-deps lint
	@timeout 60 $(BIN)/uv cache prune --quiet || \
		echo "uv's cache is in use by another uv process: not pruned."
	$(BIN)/python -m pytest -n 2 --dist loadfile --no-loadscope-reorder \
		--durations=25

# Lint and format check over scripts/, tests/ and the notebooks' code.
lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

# Apply ruff's formatting (then run `make execute` if a notebook changed).
format: $(STAMP)
	$(BIN)/ruff format .

# The chapter test files `make check` runs: those of the chapters changed
# since the last commit, and the static conventions; every chapter's with
# ALL=1 or when code the tests share changed (scripts/check_selection.py).
CHECK_TESTS = $(shell $(BIN)/python scripts/check_selection.py $(if $(ALL),--all))

check: lint
	$(BIN)/python -m pytest -q -m chapters $(if $(filter-out 1,$(words $(CHECK_TESTS))),-n 2 --dist loadfile) $(CHECK_TESTS)
	@if [ -n "$(CHANGED_NOTEBOOKS)" ]; then \
		echo "nbval on changed notebooks: $(CHANGED_NOTEBOOKS)"; \
		$(BIN)/python -m pytest -q -m notebooks $(CHANGED_NOTEBOOKS); \
	else echo "No notebook changed since the last commit: nbval skipped."; fi

# Re-execute every chapter in place; an unchanged notebook comes out byte-identical.
execute: $(STAMP)
	$(BIN)/python scripts/execute_notebooks.py chapters/*.ipynb

# Regenerate data/adult_with_pii.csv from the UCI source.
data: $(STAMP)
	$(BIN)/python scripts/make_adult_with_pii.py $(UCI_SOURCE) data/adult_with_pii.csv
	$(BIN)/python scripts/make_visits.py data/adult_with_pii.csv data/visits.csv
	sha256sum data/adult_with_pii.csv data/visits.csv

bench: $(STAMP) $(NODE_STAMP)
	$(BIN)/python scripts/bench.py

# Resolves requirements.txt afresh on Python 3.13 (the newest versions the
# readers' requirements allow today), prints what moved against
# requirements/reader-lock-3.13.txt, runs every chapter with the new
# versions and compares what it prints with the book; writes the lock only
# if every chapter still prints the book's numbers, else names the cells
# that changed (CHAPTERS="a b" runs only those).
refresh-reader-lock: $(STAMP)
	$(BIN)/python scripts/refresh_reader_lock.py $(if $(CHAPTERS),--chapters $(CHAPTERS))

# The stored training runs of the chapter "Models that memorize" (seeded:
# on the same BLAS kernel a second run writes the same file).
memorization-runs: $(STAMP)
	$(BIN)/python scripts/memorization_runs.py

clean:
	rm -rf _build .pytest_cache

# Graded assignments (nbgrader): for every chapter, the student notebook
# (student/<chapter>/, with its data), the instructor's nbgrader course
# (course/: solutions, gradebook; course/grading/: what the grader judges
# with) and the list of graded and written exercises with rubrics
# (instructor/<chapter>.md). Seconds: nothing is executed. An existing
# gradebook and submissions are kept.
ASSIGNMENTS ?= _build/assignments
assignments: $(STAMP)
	$(BIN)/python scripts/make_assignments.py $(ASSIGNMENTS)

# Grades a folder of submitted notebooks (one per student: NAME.ipynb or
# NAME/<chapter>.ipynb), each run in a sandbox (bubblewrap) and judged
# outside it, into _build/grades/<chapter>-scores.csv (a column per
# exercise), a feedback file per student and a log (scripts/grade_assignment.py).
# It needs only the chapter's reader requirements and nbgrader, in a venv
# of its own (.venv-grade), not the maintainers' toolchain.
GRADE_VENV := .venv-grade
GRADES ?= _build/grades
grade:
	@if [ -z "$(CHAPTER)" ] || [ -z "$(SUBMISSIONS)" ]; then \
		echo "Usage: make grade CHAPTER=differential-privacy SUBMISSIONS=folder"; exit 2; fi
	@command -v bwrap >/dev/null || { echo "The grader runs students' code only in a sandbox: install bubblewrap (apt-get install bubblewrap)."; exit 1; }
	@test -x $(GRADE_VENV)/bin/python || $(PYTHON) -m venv $(GRADE_VENV)
	@test -f $(GRADE_VENV)/.installed-$(CHAPTER) || { \
		$(GRADE_VENV)/bin/python -m pip install --quiet --disable-pip-version-check \
			-r requirements/$(CHAPTER).txt "$$(grep '^nbgrader==' requirements-dev.txt)" \
			"$$(grep '^pyyaml==' requirements-dev.txt)" && touch $(GRADE_VENV)/.installed-$(CHAPTER); }
	@test -d $(ASSIGNMENTS)/course/grading || \
		$(GRADE_VENV)/bin/python scripts/make_assignments.py $(ASSIGNMENTS)
	ASSIGNMENTS_COURSE=$(ASSIGNMENTS)/course $(GRADE_VENV)/bin/python \
		scripts/grade_assignment.py $(CHAPTER) $(SUBMISSIONS) $(GRADES)/$(CHAPTER)-scores.csv

# The PDFs: LaTeX builder with xelatex; needs the TeX Live packages of
# system-deps. One Sphinx build writes book.tex (every solution, the
# instructors' appendix) and book-student.tex (neither); both are compiled
# side by side, and published in the site if it is built.
pdf: $(STAMP) system-deps
	MAKEFLAGS=-j2 $(BIN)/jupyter-book build . --builder pdflatex -W -n --keep-going
	@echo "PDF: $(CURDIR)/_build/latex/book.pdf"
	@echo "Student PDF: $(CURDIR)/_build/latex/book-student.pdf"
	$(publish_pdfs)

# Copies the PDFs `make pdf` built into the site `make book` built.
publish-pdfs:
	$(publish_pdfs)

# The student edition alone: solutions removed from the HTML and the
# downloadable notebooks (`make book` also publishes it at _build/html/student).
student: $(STAMP)
	$(BIN)/python scripts/make_student_edition.py _build/student
