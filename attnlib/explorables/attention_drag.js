// The attention step you can drag: attnlib.explorables.drag.AttentionDrag's front end (an anywidget).
//
// The reader's browser computes everything here, with no kernel: the scores
//   dot:      e_ti = β s_{t-1}·h_i
//   additive: e_ti = β v_a^T tanh(W_a s_{t-1} + U_a h_i)
// the weights α_ti = softmax_i(e_ti) and the context c_t = Σ_i α_ti h_i, and draws them as SVG.
// attnlib.core is the reference: tests/explorables/test_front_ends.py compares this code with it in a browser.
// In Jupyter the state (s, beta, score) syncs with the kernel; on the static site it stays in the page.

const SVG = "http://www.w3.org/2000/svg";
const SIZE = 320; // the SVG's user units (it scales with its box)
const PAD = 18;
let instances = 0;

// ------------------------------------------------------------------ the math (one source: attnlib.core)

/** Raw scores e_ti for the decoder state `s` (length d_s) and encoder states `h` (T_x × d_h). */
export function scores(s, p) {
  const { h, score, beta } = p;
  const e = new Array(h.length);
  if (score === "dot") {
    for (let i = 0; i < h.length; i++) {
      let dot = 0;
      for (let k = 0; k < s.length; k++) dot += s[k] * h[i][k];
      e[i] = beta * dot;
    }
    return e;
  }
  if (score !== "additive") throw new Error(`score must be "dot" or "additive", got ${score}`);
  const { W_a, U_a, v_a } = p;
  const query = W_a.map((row) => row.reduce((acc, w, k) => acc + w * s[k], 0)); // W_a s_{t-1}
  for (let i = 0; i < h.length; i++) {
    let sum = 0;
    for (let a = 0; a < v_a.length; a++) {
      let key = 0; // (U_a h_i)_a
      for (let k = 0; k < h[i].length; k++) key += U_a[a][k] * h[i][k];
      sum += v_a[a] * Math.tanh(query[a] + key);
    }
    e[i] = beta * sum;
  }
  return e;
}

/** α_ti = exp(e_ti) / Σ_j exp(e_tj), shifted by the largest score so nothing overflows. */
export function softmax(e) {
  const top = Math.max(...e);
  const z = e.map((x) => Math.exp(x - top));
  const total = z.reduce((a, b) => a + b, 0);
  return z.map((x) => x / total);
}

/** c_t = Σ_i α_ti h_i. */
export function context(alpha, h) {
  const c = new Array(h[0].length).fill(0);
  for (let i = 0; i < h.length; i++) for (let k = 0; k < c.length; k++) c[k] += alpha[i] * h[i][k];
  return c;
}

/** One attention step: {e, alpha, c}. */
export function step(s, p) {
  const e = scores(s, p);
  const alpha = softmax(e);
  return { e, alpha, c: context(alpha, p.h) };
}

/** The convex hull of 2-D points (Andrew's monotone chain), counter-clockwise. */
function hull(points) {
  const pts = points.map((q) => [q[0], q[1]]).sort((a, b) => a[0] - b[0] || a[1] - b[1]);
  if (pts.length < 3) return pts;
  const cross = (o, a, b) => (a[0] - o[0]) * (b[1] - o[1]) - (a[1] - o[1]) * (b[0] - o[0]);
  const half = (list) => {
    const out = [];
    for (const q of list) {
      while (out.length >= 2 && cross(out[out.length - 2], out[out.length - 1], q) <= 0) out.pop();
      out.push(q);
    }
    out.pop();
    return out;
  };
  return half(pts).concat(half(pts.slice().reverse()));
}

// ------------------------------------------------------------------ the view

function el(tag, attrs = {}, parent = null, ns = null) {
  const node = ns ? document.createElementNS(ns, tag) : document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, String(v));
  if (parent) parent.appendChild(node);
  return node;
}

/** Write `base` with a subscript into an SVG text element. */
function subscripted(text, base, sub) {
  text.appendChild(document.createTextNode(base));
  el("tspan", { "baseline-shift": "sub", "font-size": "75%" }, text, SVG).textContent = sub;
  return text;
}

const fmt = (x, digits = 2) => (Math.abs(x) < 0.5 * 10 ** -digits ? 0 : x).toFixed(digits).replace("-", "−");

function render({ model, el: host }) {
  const uid = `attn-drag-${++instances}`;
  const lim = model.get("lim");
  const h = model.get("h");
  const tokens = model.get("tokens");
  const params = () => ({
    h,
    score: model.get("score"),
    beta: model.get("beta"),
    W_a: model.get("W_a"),
    U_a: model.get("U_a"),
    v_a: model.get("v_a"),
  });
  // data coordinates -> SVG user units (y up)
  const px = (x) => PAD + ((x + lim) / (2 * lim)) * (SIZE - 2 * PAD);
  const py = (y) => SIZE - PAD - ((y + lim) / (2 * lim)) * (SIZE - 2 * PAD);
  const grid = model.get("step_size"); // the pointer lands on the sliders' grid, so both agree
  const snap = (x) => Math.min(lim, Math.max(-lim, Number((Math.round(x / grid) * grid).toFixed(6))));

  const root = el("div", { class: "attn-drag", "data-uid": uid });

  // --- the figure
  const figure = el("div", { class: "attn-drag__figure" }, root);
  const svg = el(
    "svg",
    { viewBox: `0 0 ${SIZE} ${SIZE}`, role: "img", "aria-labelledby": `${uid}-title`, class: "attn-drag__svg" },
    figure,
    SVG,
  );
  const title = el("title", { id: `${uid}-title` }, svg, SVG);
  el("rect", { x: PAD, y: PAD, width: SIZE - 2 * PAD, height: SIZE - 2 * PAD, class: "attn-drag__frame" }, svg, SVG);
  el("line", { x1: px(-lim), x2: px(lim), y1: py(0), y2: py(0), class: "attn-drag__axis" }, svg, SVG);
  el("line", { x1: px(0), x2: px(0), y1: py(-lim), y2: py(lim), class: "attn-drag__axis" }, svg, SVG);
  const hullPoints = hull(h).map((q) => `${px(q[0])},${py(q[1])}`).join(" ");
  el("polygon", { points: hullPoints, class: "attn-drag__hull" }, svg, SVG);
  const links = h.map(() => el("line", { class: "attn-drag__link" }, svg, SVG));
  const dots = h.map((q, i) =>
    el("circle", { cx: px(q[0]), cy: py(q[1]), class: "attn-drag__h", "data-i": i }, svg, SVG),
  );
  const names = h.map((q, i) => {
    const t = el("text", { x: px(q[0]) + 9, y: py(q[1]) - 8, class: "attn-drag__label" }, svg, SVG);
    t.textContent = tokens[i];
    return t;
  });
  const cMark = el("rect", { width: 12, height: 12, class: "attn-drag__c" }, svg, SVG);
  const cText = subscripted(el("text", { class: "attn-drag__label attn-drag__label--c" }, svg, SVG), "c", "t");
  const sMark = el("circle", { r: 8, class: "attn-drag__s" }, svg, SVG);
  const sText = subscripted(el("text", { class: "attn-drag__label attn-drag__label--s" }, svg, SVG), "s", "t−1");
  const caption = el("p", { class: "attn-drag__caption" }, figure);
  caption.innerHTML =
    "Drag s<sub>t−1</sub> (orange circle) or use the sliders. Dots: the h<sub>i</sub>, area ∝ α<sub>ti</sub>; " +
    "square: c<sub>t</sub>, always inside the shaded hull of the h<sub>i</sub>.";

  // --- the controls
  const panel = el("div", { class: "attn-drag__controls" }, root);
  const fieldset = el("fieldset", { class: "attn-drag__score" }, panel);
  el("legend", {}, fieldset).innerHTML = "Score e<sub>ti</sub>";
  const radios = {};
  for (const [value, text] of [
    ["dot", "dot: β s<sub>t−1</sub>·h<sub>i</sub>"],
    ["additive", "additive: β v<sub>a</sub><sup>⊤</sup>tanh(W<sub>a</sub>s<sub>t−1</sub> + U<sub>a</sub>h<sub>i</sub>)"],
  ]) {
    const label = el("label", { class: "attn-drag__radio" }, fieldset);
    radios[value] = el("input", { type: "radio", name: `${uid}-score`, value }, label);
    el("span", {}, label).innerHTML = text;
  }
  const sliders = {};
  const outputs = {};
  for (const [key, text, min, max] of [
    ["s0", "s<sub>t−1</sub>, component 1", -lim, lim],
    ["s1", "s<sub>t−1</sub>, component 2", -lim, lim],
    ["beta", "sharpness β", 0, model.get("beta_max")],
  ]) {
    const row = el("div", { class: "attn-drag__slider" }, panel);
    el("label", { for: `${uid}-${key}` }, row).innerHTML = text;
    sliders[key] = el(
      "input",
      { type: "range", id: `${uid}-${key}`, min, max, step: model.get("step_size"), class: `attn-drag__${key}` },
      row,
    );
    outputs[key] = el("output", { for: `${uid}-${key}`, class: "attn-drag__value" }, row);
  }
  const table = el("table", { class: "attn-drag__table" }, panel);
  el("caption", {}, table).textContent = "Scores and weights of this step";
  const head = el("tr", {}, el("thead", {}, table));
  for (const text of ["word", "e<sub>ti</sub>", "α<sub>ti</sub>", ""]) {
    el("th", { scope: "col" }, head).innerHTML = text;
  }
  head.lastChild.innerHTML = '<span class="attn-drag__sr">bar</span>';
  const body = el("tbody", {}, table);
  const cells = tokens.map((token, i) => {
    const tr = el("tr", { "data-i": i }, body);
    el("th", { scope: "row" }, tr).textContent = token;
    const e = el("td", { class: "attn-drag__e" }, tr);
    const a = el("td", { class: "attn-drag__alpha" }, tr);
    const barCell = el("td", { class: "attn-drag__barcell", "aria-hidden": "true" }, tr);
    const bar = el("span", { class: "attn-drag__bar" }, barCell);
    return { e, a, bar };
  });
  const summary = el("p", { class: "attn-drag__summary", "aria-live": "polite" }, panel);

  // --- drawing: every artist is updated in place
  let current = null;
  function draw() {
    const s = model.get("s");
    const p = params();
    const { e, alpha, c } = step(s, p);
    current = { s: s.slice(), beta: p.beta, score: p.score, e, alpha, c };
    for (let i = 0; i < h.length; i++) {
      links[i].setAttribute("x1", px(c[0]));
      links[i].setAttribute("y1", py(c[1]));
      links[i].setAttribute("x2", px(h[i][0]));
      links[i].setAttribute("y2", py(h[i][1]));
      links[i].setAttribute("stroke-width", (0.5 + 6 * alpha[i]).toFixed(2));
      dots[i].setAttribute("r", (3 + 11 * Math.sqrt(alpha[i])).toFixed(2));
      dots[i].setAttribute("data-alpha", alpha[i]);
      names[i].textContent = `${tokens[i]} ${fmt(alpha[i])}`;
      cells[i].e.textContent = fmt(e[i]);
      cells[i].a.textContent = fmt(alpha[i]);
      cells[i].bar.style.width = `${(100 * alpha[i]).toFixed(1)}%`;
    }
    cMark.setAttribute("x", px(c[0]) - 6);
    cMark.setAttribute("y", py(c[1]) - 6);
    cText.setAttribute("x", px(c[0]) + 9);
    cText.setAttribute("y", py(c[1]) + 16);
    sMark.setAttribute("cx", px(s[0]));
    sMark.setAttribute("cy", py(s[1]));
    sText.setAttribute("x", px(s[0]) + 11);
    sText.setAttribute("y", py(s[1]) + 4);
    if (sliders.s0.valueAsNumber !== s[0]) sliders.s0.value = s[0];
    if (sliders.s1.valueAsNumber !== s[1]) sliders.s1.value = s[1];
    if (sliders.beta.valueAsNumber !== p.beta) sliders.beta.value = p.beta;
    radios[p.score].checked = true;
    outputs.s0.textContent = fmt(s[0]);
    outputs.s1.textContent = fmt(s[1]);
    outputs.beta.textContent = fmt(p.beta);
    const top = alpha.indexOf(Math.max(...alpha));
    const text =
      `${p.score} score, β = ${fmt(p.beta)}, sₜ₋₁ = (${fmt(s[0])}, ${fmt(s[1])}): ` +
      `largest weight αₜᵢ = ${fmt(alpha[top])} on “${tokens[top]}”; cₜ = (${fmt(c[0])}, ${fmt(c[1])}).`;
    summary.textContent = text;
    title.textContent = `The encoder states hᵢ as points, the decoder state sₜ₋₁ and the context cₜ. ${text}`;
    root.dataset.e = JSON.stringify(e);
    root.dataset.alpha = JSON.stringify(alpha);
    root.dataset.c = JSON.stringify(c);
    root.dataset.s = JSON.stringify(s);
  }

  // --- input: every move is timed (performance.now) from the event to the redrawn figure
  const costs = [];
  function timed(change) {
    const t0 = performance.now();
    change();
    const ms = performance.now() - t0;
    costs.push(ms);
    if (costs.length > 5000) costs.shift();
    root.dataset.lastUpdateMs = ms.toFixed(4);
  }
  function setState(key, value) {
    model.set(key, value); // draws, through the change listener below
    model.save_changes(); // to the kernel, where there is one (a no-op on the static site)
  }
  const onChange = () => draw();
  model.on("change:s", onChange);
  model.on("change:beta", onChange);
  model.on("change:score", onChange);

  const fromSliders = () => timed(() => setState("s", [sliders.s0.valueAsNumber, sliders.s1.valueAsNumber]));
  sliders.s0.addEventListener("input", fromSliders);
  sliders.s1.addEventListener("input", fromSliders);
  sliders.beta.addEventListener("input", () => timed(() => setState("beta", sliders.beta.valueAsNumber)));
  for (const [value, radio] of Object.entries(radios)) {
    radio.addEventListener("change", () => radio.checked && timed(() => setState("score", value)));
  }

  let dragging = null;
  function pointerTo(event) {
    const m = svg.getScreenCTM();
    if (!m) return;
    const q = new DOMPoint(event.clientX, event.clientY).matrixTransform(m.inverse());
    const x = snap(-lim + ((q.x - PAD) / (SIZE - 2 * PAD)) * 2 * lim);
    const y = snap(-lim + ((SIZE - PAD - q.y) / (SIZE - 2 * PAD)) * 2 * lim);
    const s = model.get("s");
    if (x !== s[0] || y !== s[1]) setState("s", [x, y]);
  }
  svg.addEventListener("pointerdown", (event) => {
    if (event.button !== 0) return;
    dragging = event.pointerId;
    svg.setPointerCapture(event.pointerId);
    event.preventDefault();
    timed(() => pointerTo(event));
  });
  svg.addEventListener("pointermove", (event) => {
    if (dragging === event.pointerId) timed(() => pointerTo(event));
  });
  const stop = (event) => {
    if (dragging === event.pointerId) dragging = null;
  };
  svg.addEventListener("pointerup", stop);
  svg.addEventListener("pointercancel", stop);

  // For tests and curious readers: the same math on any input, what is drawn, and the timings.
  root.attnExplorable = {
    step: (s, score, beta) => step(s, { ...params(), score, beta }),
    current: () => current,
    costs,
  };

  draw();
  host.appendChild(root);
  return () => {
    model.off("change:s", onChange);
    model.off("change:beta", onChange);
    model.off("change:score", onChange);
    root.remove();
  };
}

export default { render };
