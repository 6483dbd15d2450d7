// The front end of attnlib.explorables.translate's TranslateWidget (chapters/real_alignments): an
// anywidget ES module.
//
// A form (an English sentence, a beam size k, a Translate button) over an output area: the summary
// (HTML), the figure of α_ti and H_t (a PNG, base64, with its alt text) and a collapsed table, or
// the problem (role=alert) with figure and table hidden. All of them are computed by the kernel.
//
// With a kernel (Jupyter, Binder, Colab): Enter, the button or a new k sends the custom message
// {type: "translate", sentence, k}; the kernel translates, updates the synced traits and answers
// {type: "done"}. Until then the widget is busy (button disabled, aria-busy on the output).
// On the static website (_ext/static/anywidget_static.js sets model.widget_manager.static = true)
// there is no kernel: the saved translation stays, and editing shows a note saying where to run it.

let instances = 0;
const WAIT_MS = 30000; // after this long without an answer, say so (the kernel may have stopped)

function html(tag, attrs, parent, text) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) node.setAttribute(k, String(v));
  if (text !== undefined) node.textContent = text;
  if (parent) parent.appendChild(node);
  return node;
}

function render({ model, el: host }) {
  const isStatic = Boolean(model.widget_manager && model.widget_manager.static);
  const uid = `xp-tr-${++instances}`;
  const root = html("div", { class: "xp-tr", "data-static": isStatic });
  const form = html("form", { class: "xp-tr__form" }, root);
  const row1 = html("div", { class: "xp-tr__row" }, form);
  html("label", { for: `${uid}-s` }, row1, "English sentence");
  const input = html("input", { type: "text", id: `${uid}-s`, class: "xp-tr__sentence", placeholder: model.get("placeholder"), autocomplete: "off", spellcheck: "true" }, row1);
  const button = html("button", { type: "submit", class: "xp-tr__button" }, row1, "Translate");
  const row2 = html("div", { class: "xp-tr__row" }, form);
  html("label", { for: `${uid}-k` }, row2, "beam size k");
  const beam = html("input", { type: "range", id: `${uid}-k`, class: "xp-tr__k", min: 1, max: model.get("max_beam"), step: 1 }, row2);
  const kOut = html("output", { for: `${uid}-k`, class: "xp-tr__kvalue" }, row2);
  const note = html("p", { class: "xp-tr__note", role: "status" }, root);
  const out = html("div", { class: "xp-tr__out", "aria-busy": "false" }, root);
  const summary = html("div", { class: "xp-tr__summary", "aria-live": "polite" }, out);
  const problem = html("p", { class: "xp-tr__problem", role: "alert", hidden: "" }, out);
  const figure = html("img", { class: "xp-tr__figure", alt: "" }, out);
  const table = html("div", { class: "xp-tr__table" }, out);

  let pending = false; // a request is with the kernel
  let again = false; // the learner asked again meanwhile: one more request when it is done
  let timer = null;
  let refocus = false;

  function showK(k) {
    kOut.textContent = String(k);
    beam.setAttribute("aria-valuetext", `k = ${k}${k === 1 ? " (greedy decoding)" : ""}`);
  }

  function draw() {
    showK(beam.valueAsNumber);
    const why = model.get("problem");
    const png = model.get("png");
    problem.replaceChildren();
    if (why) {
      html("b", {}, problem, "Cannot translate:");
      problem.append(` ${why}`);
    }
    summary.innerHTML = why ? "" : model.get("summary"); // HTML escaped by the kernel (render)
    table.innerHTML = why ? "" : model.get("table");
    if (png && !why) figure.src = `data:image/png;base64,${png}`;
    else figure.removeAttribute("src");
    figure.alt = model.get("alt");
    problem.hidden = !why;
    summary.hidden = table.hidden = Boolean(why);
    figure.hidden = Boolean(why) || !png;
  }

  // the kernel's values reach the controls, unless the learner's own request is on its way
  function fromModel() {
    if (pending) return;
    if (input.value !== model.get("sentence")) input.value = model.get("sentence");
    if (beam.valueAsNumber !== model.get("k")) beam.value = model.get("k");
  }

  function setBusy(busy) {
    const now = busy || model.get("busy");
    if (now && document.activeElement === button) refocus = true;
    button.disabled = now;
    out.setAttribute("aria-busy", String(now));
    root.classList.toggle("xp-tr--busy", now);
    if (!now && refocus && (document.activeElement === document.body || !document.activeElement)) button.focus();
    if (!now) refocus = false;
  }

  function say(text) {
    if (note.textContent !== text) note.textContent = text;
  }

  function staticNote() {
    say(
      "Translating a new sentence needs the notebook running, and this page is a saved copy of it: " +
        `it still shows the translation of “${model.get("sentence")}” with k = ${model.get("k")}, saved when the page was built. ` +
        "To translate your own, open the page on Binder or Colab with the launch button at the top of the page " +
        "(the rocket), run its cells, and use the box there.",
    );
  }

  function request() {
    if (isStatic) return staticNote();
    if (pending) {
      again = true;
      return;
    }
    const sentence = input.value;
    const k = beam.valueAsNumber;
    pending = true;
    setBusy(true);
    say(`Translating with k = ${k}…`);
    clearTimeout(timer);
    timer = setTimeout(() => {
      say("Still waiting for the kernel. If nothing changes, it may have stopped: restart it and run the page's cells again.");
    }, WAIT_MS);
    try {
      model.send({ type: "translate", sentence, k });
    } catch (err) {
      finish();
      say(`The kernel did not take the request (${err && err.message ? err.message : err}): restart it and run the page's cells again.`);
    }
  }

  function finish() {
    clearTimeout(timer);
    pending = false;
    say("");
    draw();
    setBusy(false);
    if (again) {
      again = false;
      request();
    }
  }

  form.addEventListener("submit", (event) => {
    event.preventDefault();
    request();
  });
  beam.addEventListener("input", () => showK(beam.valueAsNumber));
  beam.addEventListener("change", request);
  input.addEventListener("input", () => {
    if (isStatic) staticNote();
  });

  const onChange = () => {
    fromModel();
    draw();
    setBusy(pending);
  };
  const onMessage = (msg) => {
    if (msg && msg.type === "done") finish();
  };
  model.on("change", onChange);
  model.on("msg:custom", onMessage);
  fromModel();
  draw();
  setBusy(false);
  host.appendChild(root);
  return () => {
    clearTimeout(timer);
    model.off("change", onChange);
    model.off("msg:custom", onMessage);
    root.remove();
  };
}

export default { render };
