// _ext/readable.py: search snippets are plain text (textContent); a glossary symbol drawn as
// h<sub>i</sub> would read "hi" there, inline math "\(s_{t-1}\)". Give both the Unicode form
// ("hᵢ", "sₜ₋₁") instead, or keep the source where Unicode has no subscript letter ("T_y").
(function () {
  "use strict";
  const SUB = {};
  const from = "0123456789+-−=()aehijklmnoprstuvx";
  const to = "₀₁₂₃₄₅₆₇₈₉₊₋₋₌₍₎ₐₑₕᵢⱼₖₗₘₙₒₚᵣₛₜᵤᵥₓ";
  Array.from(from).forEach(function (ch, k) { SUB[ch] = Array.from(to)[k]; });

  function plain(sym) {
    const sub = sym.querySelector("sub");
    const subText = sub ? sub.textContent : "";
    const base = sym.textContent.slice(0, sym.textContent.length - subText.length);
    if (!subText) return base;
    const chars = Array.from(subText);
    if (chars.every(function (ch) { return ch in SUB; })) {
      return base + chars.map(function (ch) { return SUB[ch]; }).join("");
    }
    return base + "_" + (chars.length > 1 ? "{" + subText.replace(/−/g, "-") + "}" : subText);
  }

  // Inline math (\(s_{t-1}\)) in the same plain form; a formula with anything it cannot
  // write (a fraction, a matrix) keeps its TeX; a subscript Unicode lacks stays as "T_y".
  const MACROS = {
    alpha: "α", beta: "β", gamma: "γ", delta: "δ", epsilon: "ε", theta: "θ", lambda: "λ",
    mu: "μ", pi: "π", sigma: "σ", tau: "τ", phi: "φ", Sigma: "Σ", sum: "Σ", prod: "Π",
    top: "ᵀ", cdot: "·", times: "×", to: "→", rightarrow: "→", leftarrow: "←", infty: "∞",
    le: "≤", leq: "≤", ge: "≥", geq: "≥", ne: "≠", neq: "≠", approx: "≈", in: "∈",
    lVert: "‖", rVert: "‖", Vert: "‖", lvert: "|", rvert: "|", ldots: "…", dots: "…",
    log: "log", exp: "exp", tanh: "tanh", max: "max", min: "min", arg: "arg",
    ",": " ", ";": " ", quad: " ", " ": " ", "{": "{", "}": "}",
  };
  const SUP = {"0": "⁰", "1": "¹", "2": "²", "3": "³", "4": "⁴", "-": "⁻", "+": "⁺",
               "T": "ᵀ", "ᵀ": "ᵀ", "n": "ⁿ", "i": "ⁱ"};
  function mathText(tex) {
    let t = tex.trim().replace(/^\\\(|\\\)$/g, "").trim();
    t = t.replace(/\\(?:mathrm|operatorname|mathbf|text|mathit)\{([^{}]*)\}/g, "$1");
    t = t.replace(/\\tilde\{?\s*([a-zA-Z])\}?/g, "$1\u0303");
    t = t.replace(/\\overrightarrow\{([^{}]*)\}/g, "$1→").replace(/\\overleftarrow\{([^{}]*)\}/g, "$1←");
    t = t.replace(/\\(left|right|big|Big|bigl|bigr|Bigl|Bigr)\b/g, "");
    t = t.replace(/\\([a-zA-Z]+|[,; {}])/g, function (m, name) {
      return name in MACROS ? MACROS[name] : m;
    });
    const script = function (map) {
      return function (m, braced, single) {
        const body = (braced !== undefined ? braced : single).replace(/\s+/g, "");
        const chars = Array.from(body);
        return chars.every(function (ch) { return ch in map; })
          ? chars.map(function (ch) { return map[ch]; }).join("") : m;
      };
    };
    t = t.replace(/_(?:\{([^{}]*)\}|([^\s{}\\]))/g, script(SUB));
    t = t.replace(/\^(?:\{([^{}]*)\}|([^\s{}\\]))/g, script(SUP));
    return /[\\{}]/.test(t) ? tex : t.replace(/\s+/g, " ");
  }

  function plainSymbols(htmlString) {
    const doc = new DOMParser().parseFromString(htmlString, "text/html");
    const syms = doc.querySelectorAll(".readable-sym");
    const maths = doc.querySelectorAll("span.math");
    if (!syms.length && !maths.length) return htmlString;
    syms.forEach(function (sym) { sym.replaceWith(doc.createTextNode(plain(sym))); });
    maths.forEach(function (m) { m.replaceWith(doc.createTextNode(mathText(m.textContent))); });
    return doc.documentElement.outerHTML;
  }

  window.addEventListener("DOMContentLoaded", function () {
    /* global Search */
    if (typeof Search === "undefined" || !Search.htmlToText || Search.htmlToText.readable) return;
    const htmlToText = Search.htmlToText;
    Search.htmlToText = function (htmlString, anchor) {
      return htmlToText(plainSymbols(htmlString), anchor);
    };
    Search.htmlToText.readable = true;
  });
})();
