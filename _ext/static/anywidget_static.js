// Draws a page's anywidgets (attnlib.explorable) from the widget state saved in the page, in the
// browser, with no kernel and without the 3.6 MB ipywidgets widget manager (html-manager).
//
// _ext/offline_site.py loads this script instead of RequireJS + the widget manager on pages whose
// saved widgets are all anywidgets (plus the LayoutModel each one carries). An anywidget's front end
// is an ES module saved in its state (`_esm`, with its stylesheet in `_css`); it only needs a model
// with get / set / on / off / save_changes, which this file provides over the saved values. There is
// no kernel on a static page, so save_changes and send have nowhere to go and do nothing.
//
// A front end can tell it is on such a page: its model's `widget_manager` is `{static: true}`
// (in Jupyter, on Binder and on Colab it is the real widget manager, which has no `static`).
// Test it as `Boolean(model.widget_manager && model.widget_manager.static)`. A widget whose work
// is done by the kernel (attnlib.translator's translate form) uses it to say that the page must be
// run for that, instead of looking as if it were working.
//
// Like the widget manager, each view is drawn into a <div class="widget-subarea"> placed right
// before its <script type="application/vnd.jupyter.widget-view+json">.
(function () {
  "use strict";
  const STATE = "application/vnd.jupyter.widget-state+json";
  const VIEW = "application/vnd.jupyter.widget-view+json";

  function model(values) {
    const handlers = new Map(); // event name -> [callback, context][]
    const self = {
      get: (name) => values[name],
      set(name, value) {
        if (Object.is(values[name], value)) return;
        values[name] = value;
        for (const event of [`change:${name}`, "change"]) {
          for (const [fn, ctx] of (handlers.get(event) || []).slice()) fn.call(ctx, self, value);
        }
      },
      on(events, fn, ctx) {
        for (const e of String(events).split(/\s+/)) {
          if (!handlers.has(e)) handlers.set(e, []);
          handlers.get(e).push([fn, ctx]);
        }
      },
      off(events, fn) {
        if (!events) return handlers.clear();
        for (const e of String(events).split(/\s+/)) {
          handlers.set(e, (handlers.get(e) || []).filter(([f]) => fn && f !== fn));
        }
      },
      save_changes() {}, // no kernel to save to
      send() {}, // no kernel to send to
      widget_manager: { static: true }, // the flag above: no kernel, no widget manager
    };
    return self;
  }

  async function draw(view, saved) {
    const id = JSON.parse(view.textContent).model_id;
    const entry = saved[id];
    if (!entry || entry.model_module !== "anywidget") return;
    const values = entry.state;
    if (values._css) {
      const style = document.createElement("style");
      style.textContent = values._css;
      document.head.appendChild(style);
    }
    const url = URL.createObjectURL(new Blob([values._esm], { type: "text/javascript" }));
    let widget = (await import(url)).default;
    URL.revokeObjectURL(url);
    if (typeof widget === "function") widget = await widget();
    const m = model(values);
    if (widget.initialize) await widget.initialize({ model: m });
    const host = document.createElement("div");
    host.className = "widget-subarea";
    const el = document.createElement("div");
    el.className = "anywidget-static";
    host.appendChild(el);
    view.parentNode.insertBefore(host, view);
    await widget.render({ model: m, el });
  }

  async function drawAll() {
    const state = document.querySelector(`script[type="${STATE}"]`);
    if (!state) return;
    const saved = JSON.parse(state.textContent).state || {};
    const views = document.querySelectorAll(`script[type="${VIEW}"]`);
    await Promise.all(
      Array.from(views).map((v) =>
        draw(v, saved).catch((err) => console.error("anywidget_static: cannot draw", err)),
      ),
    );
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", drawAll);
  else drawAll();
})();
