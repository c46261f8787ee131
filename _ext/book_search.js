/*
 * The book's search (_ext/book_search.py puts this file into the search
 * page's language_data.js, after Sphinx's searchtools.js).
 *
 * Ranking: Sphinx scores a page 15 when a word is in one of its titles and
 * 5 when it is in its text, and breaks ties alphabetically, so "Laplace"
 * listed five chapters that merely use the word before the chapter about
 * it. Here a page comes first when its title holds every word of the
 * query; next when one of its section headings does (the closer the
 * heading is to the query, the higher); then the rest in Sphinx's order.
 * A word of four letters or more matches the words it begins
 * ("mechanism" finds "mechanisms"); a shorter one only itself. Nothing
 * is tuned per chapter: a new chapter is found by its title and headings.
 *
 * Snippets: taken from the article's prose, without the page's title, its
 * contents, code or navigation; math is shown as text (epsilon, not
 * \varepsilon), so no TeX reaches a reader.
 *
 * Highlighting: whole words only (the "k" of k-anonymity is not marked
 * inside "risk"), in the snippet; a page opened from the results marks only
 * the query's words of three letters or more.
 */
;(() => {
  "use strict";

  let queryWords = [];
  let headingsByFile = null;

  const wordsOf = (text) =>
    text
      .toLowerCase()
      .split(/[^\p{L}\p{N}]+/u)
      .filter((word) => word);

  const matches = (word, textWord) =>
    word.length >= 4 ? textWord.startsWith(word) : textWord === word;

  const coversQuery = (text) => {
    const textWords = wordsOf(text);
    return (
      queryWords.length > 0 &&
      queryWords.every((word) => textWords.some((t) => matches(word, t)))
    );
  };

  // How much of a title the query is: 1 when they are the same words.
  const closeness = (text) => {
    const letters = wordsOf(text).join("").length;
    return letters ? Math.min(1, queryWords.join("").length / letters) : 0;
  };

  const headingsOf = (file) => {
    if (headingsByFile === null) {
      headingsByFile = new Map();
      const all = Search._index.alltitles || {};
      for (const [heading, places] of Object.entries(all)) {
        for (const [where] of places) {
          if (!headingsByFile.has(where)) headingsByFile.set(where, []);
          headingsByFile.get(where).push(heading);
        }
      }
    }
    return headingsByFile.get(file) || [];
  };

  // 3xxx: the page's title holds the query; 2xxx: a heading does; 1000.
  const pageRank = (file) => {
    const title = Search._index.titles[file] || "";
    if (coversQuery(title)) return 3000 + Math.round(100 * closeness(title));
    let best = -1;
    let count = 0;
    for (const heading of headingsOf(file)) {
      if (coversQuery(heading)) {
        count += 1;
        best = Math.max(best, closeness(heading));
      }
    }
    if (count) return 2000 + Math.round(100 * best) + Math.min(count, 9);
    return 1000;
  };

  // Sphinx calls this with [docname, title, anchor, descr, score, filename].
  Scorer.score = (result) => {
    const [docname, , anchor, , score] = result;
    const file = Search._index.docnames.indexOf(docname);
    if (file < 0) return score;
    // A page's own entry before the entries of its sections.
    return 100 * pageRank(file) + (anchor ? 0 : 50) + Math.min(score, 49);
  };

  // The query's words; Sphinx's own highlighting (any substring, in every
  // result) is replaced by whole-word marks in the snippets.
  const parseQuery = Search._parseQuery;
  Search._parseQuery = (query) => {
    const parsed = parseQuery(query);
    queryWords = wordsOf(query).filter(
      (word) => !stopwords.includes(word) && !/^\d+$/.test(word)
    );
    const onPage = queryWords.filter((word) => word.length >= 3);
    if (SPHINX_HIGHLIGHT_ENABLED) {
      localStorage.setItem("sphinx_highlight_terms", onPage.join(" "));
    }
    parsed[3] = new Set();
    return parsed;
  };

  // TeX as a reader reads it.
  const SYMBOLS = {
    varepsilon: "ε", epsilon: "ε", delta: "δ", Delta: "Δ", alpha: "α",
    beta: "β", gamma: "γ", Gamma: "Γ", lambda: "λ", mu: "μ", sigma: "σ",
    Sigma: "Σ", rho: "ρ", tau: "τ", theta: "θ", pi: "π", phi: "φ",
    varphi: "φ", psi: "ψ", omega: "ω", Omega: "Ω", eta: "η", kappa: "κ",
    nu: "ν", xi: "ξ", chi: "χ", zeta: "ζ", ell: "ℓ", le: "≤", leq: "≤",
    ge: "≥", geq: "≥", ne: "≠", neq: "≠", approx: "≈", sim: "~",
    cdot: "·", times: "×", pm: "±", in: "∈", notin: "∉", subset: "⊂",
    subseteq: "⊆", cup: "∪", cap: "∩", setminus: "∖", infty: "∞",
    to: "→", rightarrow: "→", mapsto: "↦", sum: "Σ", prod: "Π",
    sqrt: "√", log: "log", ln: "ln", exp: "exp", Pr: "Pr", max: "max",
    min: "min", arg: "arg", ldots: "…", dots: "…", cdots: "…",
    lfloor: "⌊", rfloor: "⌋", lceil: "⌈", rceil: "⌉", mid: "|",
    lvert: "|", rvert: "|", vert: "|", Vert: "‖", langle: "⟨",
    rangle: "⟩", partial: "∂", nabla: "∇", forall: "∀", exists: "∃",
  };

  const SUBSCRIPT = "₀₁₂₃₄₅₆₇₈₉";

  const texAsText = (tex) => {
    let text = tex.trim().replace(/^\\[([]/, "").replace(/\\[)\]]$/, "");
    text = text.replace(/\\frac\s*\{([^{}]*)\}\s*\{([^{}]*)\}/g, "($1)/($2)");
    text = text.replace(/\\([A-Za-z]+)/g, (all, name) =>
      name in SYMBOLS ? SYMBOLS[name] : ""
    );
    text = text.replace(/\\[,;:! ]/g, " ").replace(/\\./g, "");
    // Digits as subscripts: L_1 reads L₁.
    text = text.replace(/_\{?(\d+)\}?/g, (all, digits) =>
      [...digits].map((digit) => SUBSCRIPT[digit]).join("")
    );
    text = text.replace(/[{}]/g, "").replace(/&/g, " ");
    return text.replace(/\s+/g, " ").trim();
  };

  const SKIP = [
    ".headerlink", "script", "style", "nav", "h1", ".toctree-wrapper",
    ".bd-toc", ".page-toc", "#print-main-content", ".cell_input", "pre",
    "noscript", "button", ".prev-next-area", "footer", "mjx-container",
  ].join(", ");
  const SNIPPET = 240;

  const proseOf = (htmlText, anchor) => {
    const page = new DOMParser().parseFromString(htmlText, "text/html");
    const main =
      page.querySelector("article.bd-article") ||
      page.querySelector('[role="main"]');
    if (!main) return "";
    const root = (anchor && main.querySelector(anchor)) || main;
    root.querySelectorAll(SKIP).forEach((element) => element.remove());
    root.querySelectorAll(".math").forEach((element) => {
      const text = texAsText(element.textContent);
      const block = element.tagName === "DIV";
      element.replaceWith(
        page.createTextNode(block ? ` ${text.length > 60 ? "…" : text} ` : text)
      );
    });
    return root.textContent.replace(/\s+/g, " ").trim();
  };

  const wordPattern = (word) =>
    word.length >= 4
      ? `${word.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}[\\p{L}\\p{N}]*`
      : word.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");

  // Whole words of the query, in the text: not inside a longer word or
  // name (the "k" of "risk", the "laplace" of laplace_mechanism).
  const queryPattern = () =>
    new RegExp(
      `(^|[^\\p{L}\\p{N}_])(${queryWords.map(wordPattern).join("|")})` +
        "(?![\\p{L}\\p{N}_])",
      "giu"
    );

  // The query's words in a row, as a phrase.
  const phrasePattern = () =>
    new RegExp(
      `(^|[^\\p{L}\\p{N}_])(${queryWords.map(wordPattern).join("[^\\p{L}\\p{N}_]+")})`,
      "iu"
    );

  Search.makeSearchSummary = (htmlText, keywords, anchor) => {
    const summary = document.createElement("p");
    summary.classList.add("context");
    const text = proseOf(htmlText, anchor);
    if (text === "" || queryWords.length === 0) return summary;
    const found = phrasePattern().exec(text) || queryPattern().exec(text);
    const at = found ? found.index + found[1].length : 0;
    let start = Math.max(0, at - SNIPPET / 2);
    // Begin at a word.
    if (start > 0) start = text.indexOf(" ", start) + 1 || start;
    const body = text.substr(start, SNIPPET).trim();
    const parts = [start > 0 ? "..." : ""];
    let last = 0;
    for (const match of body.matchAll(queryPattern())) {
      const begin = match.index + match[1].length;
      parts.push(body.slice(last, begin));
      const mark = document.createElement("span");
      mark.classList.add("highlighted");
      mark.textContent = match[2];
      parts.push(mark);
      last = begin + match[2].length;
    }
    parts.push(body.slice(last));
    if (start + SNIPPET < text.length) parts.push("...");
    summary.append(...parts);
    return summary;
  };
})();
