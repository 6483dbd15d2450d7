// Typesets TeX at build time with the site's pinned MathJax (node_modules/mathjax), so the
// pages need no MathJax JavaScript (0.76 MB less per page): _ext/static_math.py sends every
// formula of the site here and puts the result in place of the TeX.
//
// stdin:  {"fontURL": "...", "formulas": [{"tex": "...", "display": true|false}, ...]}
// stdout: {"html": ["<mjx-container ...>", ...], "css": "...", "errors": [[index, message], ...]}
//   (errors: MathJax's error boxes and unknown commands, which it would draw in red)
//
// Output is MathJax's CommonHTML with its MathML copy for screen readers (assistive-mml), the
// same as the browser produced before. The stylesheet covers the characters of every formula
// sent (MathJax's adaptive CSS), with the web fonts loaded from fontURL.
"use strict";
const path = require("path");

async function main() {
  const chunks = [];
  for await (const chunk of process.stdin) chunks.push(chunk);
  const job = JSON.parse(Buffer.concat(chunks).toString("utf8"));
  const MathJax = await require(path.join(__dirname, "..", "node_modules", "mathjax")).init({
    loader: { load: ["input/tex", "output/chtml", "adaptors/liteDOM", "a11y/assistive-mml"] },
    chtml: { fontURL: job.fontURL },
    startup: { typeset: false },
  });
  const adaptor = MathJax.startup.adaptor;
  const html = [];
  const errors = [];
  for (const [i, f] of job.formulas.entries()) {
    // the promise form waits for TeX packages loaded on first use (e.g. \boldsymbol)
    const node = await MathJax.tex2chtmlPromise(f.tex, { display: f.display });
    const error = adaptor.tags(node, "mjx-merror")[0];
    if (error) errors.push([i, adaptor.getAttribute(error, "data-mjx-error") || adaptor.textContent(error)]);
    const out = adaptor.outerHTML(node);
    // an unknown command is not an error to MathJax (noundefined): it is drawn in red
    const unknown = out.match(/<mtext mathcolor="red">(\\[^<]*)<\/mtext>/);
    if (unknown) errors.push([i, `undefined control sequence ${unknown[1]}`]);
    html.push(out);
  }
  const css = adaptor.textContent(MathJax.chtmlStylesheet());
  process.stdout.write(JSON.stringify({ html, css, errors }));
}

main().catch((err) => {
  console.error(err && err.stack ? err.stack : String(err));
  process.exit(1);
});
