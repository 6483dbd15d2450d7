"""The explorables: every widget's Python and its front end (ES module and stylesheet) together.

Each widget is an anywidget whose front end computes in the reader's browser, so it works on
the static website as in Jupyter, Binder and Colab:

* :mod:`.sliders`: the slider explorers of "The attention step" (``chapters/attention_step``),
  "Softmax" (``chapters/softmax``) and "Entropy" (``chapters/entropy``), ``sliders.js``;
* :mod:`.drag`: drag the decoder state in "Score functions" (``chapters/score_functions``),
  ``attention_drag.js``;
* :mod:`.translate`: translate your own sentence in "Real alignments"
  (``chapters/real_alignments``), ``translate.js``.

:data:`ASSETS` is this folder, where the front ends are.
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["ASSETS"]

ASSETS = Path(__file__).resolve().parent
"""The folder of the explorables' ES modules and stylesheets."""
