// Sliders whose figure your browser computes: the front end of attnlib.explorables.sliders' three
// explorers (an anywidget ES module; one module, three views, chosen by the model's `view`):
//
//   "step"        (chapters/attention_step) a step slider t over a trained model's weights α_ti:
//                 the heatmap row t is framed and drawn as bars (the data is precomputed);
//   "softmax"     (chapters/softmax) one slider per score e_ti: bars of e_ti and of
//                 α_ti = softmax_i(e_ti);
//   "temperature" (chapters/entropy) a sharpness slider β: bars of α_ti = softmax_i(β e_ti) and
//                 the entropy H = −Σ_i α_ti log α_ti against its ceiling log T_x.
//
// No kernel is needed: on the static site the saved widget state draws the figure and this code
// moves it; in Jupyter, on Binder and on Colab the controls also sync with the kernel.
// attnlib.core is the reference: tests/explorables/test_front_ends.py holds this math to it in a
// browser.

const SVG = "http://www.w3.org/2000/svg";
const W = 320; // a panel's SVG user units (it scales with its box)
const H = 230;
let instances = 0;

// ------------------------------------------------------------------ the math (one source: attnlib.core)

/** α_i = exp(e_i) / Σ_j exp(e_j), shifted by the largest score so nothing overflows. */
export function softmax(e) {
  const top = Math.max(...e);
  const z = e.map((x) => Math.exp(x - top));
  const total = z.reduce((a, b) => a + b, 0);
  return z.map((x) => x / total);
}

/** α_i(β) = softmax_i(β e_i): β = 0 gives uniform weights, large β nearly one-hot. */
export function sharpened(e, beta) {
  return softmax(e.map((x) => beta * x));
}

/** H = −Σ_i α_i log α_i in nats, with 0 log 0 = 0. */
export function entropy(alpha) {
  let h = 0;
  for (const a of alpha) if (a > 0) h -= a * Math.log(a);
  return h;
}

/** The first position of the largest value. */
export function argmax(x) {
  let k = 0;
  for (let i = 1; i < x.length; i++) if (x[i] > x[k]) k = i;
  return k;
}

// ------------------------------------------------------------------ drawing helpers

function el(tag, attrs = {}, parent = null, ns = SVG) {
  const node = ns ? document.createElementNS(ns, tag) : document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, String(v));
  if (parent) parent.appendChild(node);
  return node;
}
const html = (tag, attrs, parent) => el(tag, attrs, parent, null);
const fmt = (x, digits = 2) => (Math.abs(x) < 0.5 * 10 ** -digits ? 0 : x).toFixed(digits).replace("-", "−");

/** A panel: an SVG figure (role img, named by a live <title>) in a flexible box. */
function panel(parent, uid, name) {
  const box = html("div", { class: "xp-sl__panel" }, parent);
  const svg = el("svg", { viewBox: `0 0 ${W} ${H}`, role: "img", "aria-labelledby": `${uid}-${name}`, class: "xp-sl__svg", "data-panel": name }, box);
  const title = el("title", { id: `${uid}-${name}` }, svg);
  return { box, svg, title };
}

/** A bar chart over `labels`, values in [lo, hi], with y ticks (class xp-sl__tick, data-value). */
function barChart(svg, { labels, lo, hi, ticks, ylabel, left = 44, bottom = 40, top = 28, className = "" }) {
  const right = 8;
  const x0 = left, x1 = W - right, y0 = top, y1 = H - bottom;
  const ys = (v) => y0 + ((hi - Math.min(hi, Math.max(lo, v))) / (hi - lo)) * (y1 - y0);
  const slot = (x1 - x0) / labels.length;
  for (const t of ticks) {
    el("line", { x1: x0 - 4, x2: x1, y1: ys(t), y2: ys(t), class: "xp-sl__tick", "data-value": t }, svg);
    el("text", { x: x0 - 6, y: ys(t) + 4, class: "xp-sl__ticklabel", "text-anchor": "end" }, svg).textContent = fmt(t, Number.isInteger(t) ? 0 : 1);
  }
  el("line", { x1: x0, x2: x0, y1: y0, y2: y1, class: "xp-sl__axis" }, svg);
  const lx = left - 33;
  const yl = el("text", { x: lx, y: (y0 + y1) / 2, class: "xp-sl__axislabel", transform: `rotate(-90 ${lx} ${(y0 + y1) / 2})`, "text-anchor": "middle" }, svg);
  yl.textContent = ylabel;
  const rotate = labels.length > 5 || labels.some((s) => s.length > 6);
  const bars = labels.map((name, i) => {
    const cx = x0 + slot * (i + 0.5);
    const rect = el("rect", { x: cx - 0.35 * slot, width: 0.7 * slot, class: `xp-sl__bar ${className}`, "data-i": i }, svg);
    const value = el("text", { x: cx, class: `xp-sl__barvalue${labels.length > 6 ? " xp-sl__barvalue--small" : ""}`, "text-anchor": "middle" }, svg);
    const lab = el("text", { x: cx, y: y1 + 14, class: "xp-sl__xlabel", "text-anchor": rotate ? "end" : "middle" }, svg);
    if (rotate) lab.setAttribute("transform", `rotate(-35 ${cx} ${y1 + 10})`);
    lab.textContent = name;
    return { rect, value };
  });
  const base = el("line", { x1: x0, x2: x1, y1: ys(Math.max(lo, 0)), y2: ys(Math.max(lo, 0)), class: "xp-sl__axis" }, svg);
  return {
    ys,
    base,
    set(values, highlight = -1) {
      const zero = ys(Math.max(lo, 0));
      values.forEach((v, i) => {
        const y = ys(v);
        const { rect, value } = bars[i];
        rect.setAttribute("y", Math.min(y, zero));
        rect.setAttribute("height", Math.abs(zero - y));
        rect.setAttribute("data-value", v);
        rect.classList.toggle("xp-sl__bar--top", i === highlight);
        value.setAttribute("y", v >= 0 ? y - 4 : y + 12);
        value.textContent = fmt(v);
      });
    },
  };
}

// ------------------------------------------------------------------ the three views

function slider(parent, uid, key, labelHtml, min, max, step) {
  const row = html("div", { class: "xp-sl__slider" }, parent);
  html("label", { for: `${uid}-${key}` }, row).innerHTML = labelHtml;
  const input = html("input", { type: "range", id: `${uid}-${key}`, min, max, step, "data-key": key }, row);
  const out = html("output", { for: `${uid}-${key}`, class: "xp-sl__value" }, row);
  return { input, out };
}

function softmaxView(model, root, uid) {
  const labels = model.get("labels");
  const range = model.get("score_range");
  const step = model.get("step_size");
  const controls = html("div", { class: "xp-sl__controls" }, root);
  const sliders = labels.map((name, i) => slider(controls, uid, `e${i}`, `score eₜᵢ (${name})`, -range, range, step));
  const figure = html("div", { class: "xp-sl__figure" }, root);
  const left = panel(figure, uid, "scores");
  const right = panel(figure, uid, "weights");
  const tickE = [-range, -range / 2, 0, range / 2, range];
  const chartE = barChart(left.svg, { labels, lo: -range, hi: range, ticks: tickE, ylabel: "raw score eₜᵢ" });
  const chartA = barChart(right.svg, { labels, lo: 0, hi: 1.12, ticks: [0, 0.5, 1], ylabel: "weight αₜᵢ", className: "xp-sl__bar--weight" });
  el("line", { x1: 44, x2: W - 8, y1: chartA.ys(1), y2: chartA.ys(1), class: "xp-sl__ceiling" }, right.svg);
  const total = el("text", { x: 50, y: 16, class: "xp-sl__note" }, right.svg);
  return {
    sliders: sliders.map((s, i) => ({ ...s, read: () => model.get("e")[i] })),
    onInput(key, value) {
      const e = model.get("e").slice();
      e[Number(key.slice(1))] = value;
      return ["e", e];
    },
    events: ["change:e"],
    draw() {
      const e = model.get("e");
      const alpha = softmax(e);
      const sum = alpha.reduce((a, b) => a + b, 0);
      chartE.set(e);
      chartA.set(alpha, argmax(alpha));
      total.textContent = `Σᵢ αₜᵢ = ${sum.toFixed(3)}`;
      const pairs = labels.map((n, i) => `${n}: e = ${fmt(e[i])}, α = ${fmt(alpha[i])}`).join("; ");
      left.title.textContent = `Bar chart of the raw scores eₜᵢ: ${labels.map((n, i) => `${n} ${fmt(e[i])}`).join(", ")}.`;
      right.title.textContent = `Bar chart of the softmax weights αₜᵢ, summing to ${sum.toFixed(3)}: ${labels.map((n, i) => `${n} ${fmt(alpha[i])}`).join(", ")}.`;
      return { data: { e, alpha, sum }, summary: `${pairs}. The weights add up to ${sum.toFixed(3)}.` };
    },
  };
}

function temperatureView(model, root, uid) {
  const labels = model.get("labels");
  const e = model.get("e");
  const logT = Math.log(e.length);
  const controls = html("div", { class: "xp-sl__controls" }, root);
  const beta = slider(controls, uid, "beta", "sharpness β", 0, model.get("beta_max"), model.get("step_size"));
  const figure = html("div", { class: "xp-sl__figure" }, root);
  const left = panel(figure, uid, "weights");
  const right = panel(figure, uid, "entropy");
  const chartA = barChart(left.svg, { labels, lo: 0, hi: 1.12, ticks: [0, 0.5, 1], ylabel: "αₜᵢ = softmax(β eₜᵢ)", className: "xp-sl__bar--weight" });
  const hi = 1.15 * logT;
  const chartH = barChart(right.svg, { labels: ["H"], lo: 0, hi, ticks: [0, 0.5, 1, 1.5].filter((t) => t <= hi), ylabel: "entropy H (nats)", left: 120, className: "xp-sl__bar--entropy" });
  el("line", { x1: 116, x2: W - 8, y1: chartH.ys(logT), y2: chartH.ys(logT), class: "xp-sl__ceiling", "data-value": logT }, right.svg);
  el("text", { x: W - 10, y: chartH.ys(logT) - 16, class: "xp-sl__note", "text-anchor": "end" }, right.svg).textContent = `log Tₓ = ${logT.toFixed(3)}`;
  const note = el("text", { x: 50, y: 16, class: "xp-sl__note" }, left.svg);
  return {
    sliders: [{ ...beta, read: () => model.get("beta") }],
    onInput: (key, value) => ["beta", value],
    events: ["change:beta"],
    draw() {
      const b = model.get("beta");
      const alpha = sharpened(e, b);
      const h = entropy(alpha);
      const top = argmax(alpha);
      chartA.set(alpha, top);
      chartH.set([h]);
      note.textContent = `β = ${fmt(b)} · H = ${h.toFixed(3)} nats`;
      left.title.textContent = `Bar chart of the weights αₜᵢ = softmax(β eₜᵢ) at β = ${fmt(b)}: ${labels.map((n, i) => `${n} ${fmt(alpha[i])}`).join(", ")}.`;
      right.title.textContent = `The entropy H = ${h.toFixed(3)} nats against its ceiling log Tₓ = ${logT.toFixed(3)}.`;
      return {
        data: { beta: b, alpha, H: h },
        summary: `β = ${fmt(b)}: largest weight ${fmt(alpha[top])} on “${labels[top]}”, H = ${h.toFixed(3)} nats (ceiling log Tₓ = ${logT.toFixed(3)}).`,
      };
    },
  };
}

function stepView(model, root, uid) {
  const alphaAll = model.get("alpha");
  const src = model.get("src_tokens");
  const tgt = model.get("tgt_tokens");
  const colors = model.get("colors");
  const T_y = alphaAll.length, T_x = src.length;
  const controls = html("div", { class: "xp-sl__controls" }, root);
  const t = slider(controls, uid, "t", "output step t", 1, T_y, 1);
  const figure = html("div", { class: "xp-sl__figure" }, root);
  const left = panel(figure, uid, "heatmap");
  const right = panel(figure, uid, "row");
  // the heatmap: one cell per (t, i), coloured in Python (cividis), rows t top to bottom
  const longest = Math.max(...tgt.map((s) => s.length));
  const x0 = Math.min(110, 14 + 6.5 * longest), x1 = W - 6, y0 = 8, y1 = H - 54;
  const cw = (x1 - x0) / T_x, ch = (y1 - y0) / T_y;
  for (let r = 0; r < T_y; r++) {
    for (let i = 0; i < T_x; i++) {
      el("rect", { x: x0 + i * cw, y: y0 + r * ch, width: cw + 0.3, height: ch + 0.3, fill: colors[r][i], class: "xp-sl__cell" }, left.svg);
    }
    el("text", { x: x0 - 4, y: y0 + (r + 0.5) * ch + 4, class: "xp-sl__xlabel", "text-anchor": "end" }, left.svg).textContent = tgt[r];
  }
  src.forEach((name, i) => {
    const cx = x0 + (i + 0.5) * cw;
    const lab = el("text", { x: cx, y: y1 + 12, class: "xp-sl__xlabel", "text-anchor": "end", transform: `rotate(-40 ${cx} ${y1 + 8})` }, left.svg);
    lab.textContent = name;
  });
  const frame = el("rect", { x: x0, width: x1 - x0, height: ch, class: "xp-sl__frame" }, left.svg);
  const chart = barChart(right.svg, { labels: src, lo: 0, hi: 1.1, ticks: [0, 0.5, 1], ylabel: "αₜᵢ at this step t", className: "xp-sl__bar--weight" });
  const note = el("text", { x: 50, y: 16, class: "xp-sl__note" }, right.svg);
  return {
    sliders: [{ ...t, read: () => model.get("t") }],
    onInput: (key, value) => ["t", Math.round(value)],
    events: ["change:t"],
    valueText: (v) => `step ${v} of ${T_y}: “${tgt[v - 1]}”`,
    draw() {
      const step = model.get("t");
      const row = alphaAll[step - 1];
      const top = argmax(row);
      frame.setAttribute("y", y0 + (step - 1) * ch);
      frame.setAttribute("data-t", step);
      chart.set(row, top);
      note.textContent = `t = ${step} (“${tgt[step - 1]}”)`;
      left.title.textContent = `Heatmap of the weights αₜᵢ of a trained model, output words down, source words across; the row of step t = ${step} (“${tgt[step - 1]}”) is framed.`;
      right.title.textContent = `Bar chart of step ${step}'s weights: ${src.map((n, i) => `${n} ${fmt(row[i])}`).join(", ")}.`;
      return {
        data: { t: step, alpha: row, top },
        summary: `Step t = ${step} emits “${tgt[step - 1]}” and puts its largest weight, ${fmt(row[top])}, on “${src[top]}”.`,
      };
    },
  };
}

const VIEWS = { softmax: softmaxView, temperature: temperatureView, step: stepView };

// ------------------------------------------------------------------ wiring

function render({ model, el: host }) {
  const kind = model.get("view");
  if (!(kind in VIEWS)) throw new Error(`unknown explorer view ${kind}`);
  const uid = `xp-sl-${++instances}`;
  const root = html("div", { class: `xp-sl xp-sl--${kind}`, "data-view": kind }, null);
  const view = VIEWS[kind](model, root, uid);
  const summary = html("p", { class: "xp-sl__summary", "aria-live": "polite" }, root);
  let current = null;

  function draw() {
    const { data, summary: text } = view.draw();
    for (const s of view.sliders) {
      const v = s.read();
      if (s.input.valueAsNumber !== v) s.input.value = v;
      s.out.textContent = kind === "step" ? String(v) : fmt(v);
      if (view.valueText) s.input.setAttribute("aria-valuetext", view.valueText(v));
    }
    summary.textContent = text;
    current = { ...data, controls: view.sliders.map((s) => s.read()) };
    root.dataset.current = JSON.stringify(current);
  }

  // every move is timed (performance.now) from the input event to the redrawn figure
  const costs = [];
  for (const s of view.sliders) {
    s.input.addEventListener("input", () => {
      const t0 = performance.now();
      const [key, value] = view.onInput(s.input.dataset.key, s.input.valueAsNumber);
      model.set(key, value); // draws, through the change listener below
      model.save_changes(); // to the kernel, where there is one (a no-op on the static site)
      const ms = performance.now() - t0;
      costs.push(ms);
      if (costs.length > 5000) costs.shift();
      root.dataset.lastUpdateMs = ms.toFixed(4);
    });
  }
  const onChange = () => draw();
  for (const ev of view.events) model.on(ev, onChange);

  // For tests and curious readers: the math on any input, what is drawn, and the timings.
  root.xpSliders = { softmax, sharpened, entropy, argmax, current: () => current, costs };
  draw();
  host.appendChild(root);
  return () => {
    for (const ev of view.events) model.off(ev, onChange);
    root.remove();
  };
}

export default { render };
