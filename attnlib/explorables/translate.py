"""Translate your own sentence: the French output, its heatmap of α_ti and the entropy H_t.

Three entry points, from plain data to a widget:

* :func:`read_sentence` — one English sentence → a :class:`Reading`: the source
  tokens the model reads (``<unk>`` where a word is not in its vocabulary), the
  French tokens it writes, the translation as :func:`attnlib.mt.translation.translate`
  gives it, the weights α (T_y, T_x) of the best beam-search hypothesis and the
  entropy H_t = -Σ_i α_ti log α_ti of every output step.
* :func:`plot_reading` — that reading as a heatmap (output steps t as
  rows, source positions i as columns) with a bar of H_t beside each row.
* :func:`translate_widget` — a text box, a beam-size control k and a button over
  the translation, the figure and a table, for Jupyter, Binder or Colab.

The widget is one `anywidget <https://anywidget.dev>`_, like the explorers of
:mod:`attnlib.explorables.sliders`: its front end (``attnlib/explorables/translate.js`` and
``translate.css``) draws the form and the output area, and the kernel fills the
output through synced traits (the summary and the table as HTML, the figure as a
base64 PNG, its alt text, the problem if any), computed by :func:`read_sentence` and
:func:`render`. The widget opens with its first sentence translated, so the built
website, which embeds the widget state saved when the chapter ran, shows that
translation, figure and table without a kernel and without the ipywidgets widget
manager; there, editing the sentence or k shows a note that translating needs the
notebook running (Binder or Colab) and the saved translation stays. Bad input (an
empty box, a pasted page) and any error inside the model become a message in the
output area, never a traceback.

See Also
--------
attnlib.mt.translation : the English→French model, its recipes and checkpoints.
The chapter that ends with this widget, "Bahdanau et al.'s two figures on real data"
(chapters/real_alignments).
"""

from __future__ import annotations

import base64
import html
import io
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, NamedTuple

import anywidget
import matplotlib.pyplot as plt
import numpy as np
import traitlets
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from attnlib.core import entropy
from attnlib.explorables import ASSETS
from attnlib.mt import tatoeba as tb
from attnlib.mt import translation as tr
from attnlib.plots import heatmap_entropy
from attnlib.vocab import EOS

__all__ = [
    "DPI",
    "EXAMPLE",
    "MAX_BEAM",
    "MAX_CHARS",
    "MAX_TOKENS",
    "Reading",
    "Rendered",
    "TranslateWidget",
    "plot_reading",
    "read_sentence",
    "render",
    "translate_widget",
]

EXAMPLE = "The red car is mine."
"""The sentence the widget opens with."""

MAX_TOKENS = 26
"""Most source tokens (words and punctuation, T_x without ``<eos>``) :func:`read_sentence` accepts.

Twice the longest English source of the training split, which has 13 tokens
(9 words; the training sources have 1 to 9 words). A sentence up to twice as
long as anything the model was trained on still shows what happens beyond the
training lengths, with a heatmap that stays readable; longer input is refused
with a message. ``tests/explorables/test_translate.py`` checks the 13 against the data.
"""

MAX_CHARS = 400
"""Most characters of input, checked before tokenising (26 tokens fit easily in 400)."""

MAX_BEAM = 10
"""Largest beam size k the widget offers (k = 1 is greedy decoding)."""

DPI = 90
"""Resolution of the widget's figure, as in :mod:`attnlib.explorables.sliders`."""


# --------------------------------------------------------------------------- reading
@dataclass(frozen=True, eq=False)
class Reading:
    """One sentence as the model reads, attends and writes it.

    Attributes
    ----------
    text : str
        The English sentence as typed.
    k : int
        Beam size (1: greedy decoding).
    source_tokens : tuple of str, length T_x
        The tokens the encoder reads, lower case, with ``<unk>`` for every token
        outside the English vocabulary, and the final ``<eos>``: the columns of α.
    unknown : tuple of str
        The typed tokens that became ``<unk>``, each once, in order of appearance.
    output_tokens : tuple of str, length T_y
        The French tokens the decoder writes (lower case, as the model writes
        them), with the final ``<eos>`` if the search finished: the rows of α.
    translation : str
        The detokenised French with case restored, exactly as
        :func:`attnlib.mt.translation.translate` gives it for the same k.
    alpha : (T_y, T_x) array
        α_ti of the best hypothesis; every row sums to 1 over the real source
        positions (no padding). Read-only.
    entropy : (T_y,) array
        H_t = -Σ_i α_ti log α_ti in nats, between 0 (all weight on one h_i) and
        log T_x (uniform). Read-only.
    finished : bool
        False if the search stopped at its length limit before writing ``<eos>``.
    message : str or None
        What the learner should know about this result (unknown words, a cut
        translation, a source longer than the model was trained on); None when
        there is nothing to add.

    See Also
    --------
    read_sentence : makes one.
    """

    text: str
    k: int
    source_tokens: tuple[str, ...]
    unknown: tuple[str, ...]
    output_tokens: tuple[str, ...]
    translation: str
    alpha: np.ndarray
    entropy: np.ndarray
    finished: bool
    message: str | None

    @property
    def T_x(self) -> int:
        """Source positions, ``<eos>`` included."""
        return len(self.source_tokens)

    @property
    def T_y(self) -> int:
        """Output steps, the final ``<eos>`` included if written."""
        return len(self.output_tokens)


def _check_trained(trained: object) -> None:
    if not all(hasattr(trained, a) for a in ("model", "data", "recipe", "name")):
        raise TypeError(
            "trained must be a trained translation model "
            "(attnlib.mt.translation.load('attention')), "
            f"got {type(trained).__name__}"
        )


def _check_text(text: object) -> tuple[str, ...]:
    """The tokens of ``text``, or a TypeError/ValueError a learner can act on."""
    if not isinstance(text, str):
        raise TypeError(f"text must be an English sentence (a str), got {type(text).__name__}")
    if len(text) > MAX_CHARS:
        raise ValueError(
            f"This text has {len(text)} characters; the translator takes one sentence of at "
            f"most {MAX_CHARS} characters and {MAX_TOKENS} tokens. Type a shorter sentence."
        )
    tokens = tb.tokenise(text, "en")
    if not tokens:
        raise ValueError(
            f"There is nothing to translate: type an English sentence (for example: {EXAMPLE})"
        )
    if len(tokens) > MAX_TOKENS:
        raise ValueError(
            f"This sentence has {len(tokens)} tokens (words and punctuation), so T_x would be "
            f"{len(tokens) + 1} with <eos>. The translator takes at most {MAX_TOKENS}: twice the "
            f"longest English sentence of the training split ({MAX_TOKENS // 2} tokens). "
            "Type a shorter sentence, or split this one."
        )
    return tokens


def _message(
    trained: tr.Trained, unknown: Sequence[str], tokens: Sequence[str], finished: bool, limit: int
) -> str | None:
    notes = []
    if unknown:
        quoted = ", ".join(f"'{w}'" for w in unknown)
        what = "This word is" if len(unknown) == 1 else "These words are"
        notes.append(
            f"{what} not in the model's English vocabulary: {quoted}. The vocabulary keeps "
            f"only the tokens seen at least min_freq = {trained.recipe.min_freq} times in the "
            "training pairs; every other token is read as <unk>, so the model sees <unk> "
            "where you typed it and cannot know what it meant."
        )
    trained_on = trained.recipe.max_src_len
    if trained_on is not None and tb.count_words(tokens) > trained_on:
        notes.append(
            f"This model was trained only on sources of at most {trained_on} words; "
            f"this one has {tb.count_words(tokens)}."
        )
    if not finished:
        notes.append(
            f"The search stopped after {limit} output steps (2 T_x + 2) without writing "
            "<eos>: the translation is cut there."
        )
    return " ".join(notes) if notes else None


def read_sentence(trained: tr.Trained, text: str, k: int = 5) -> Reading:
    """Translate one English sentence and keep what the model attended to at every step.

    Parameters
    ----------
    trained : attnlib.mt.translation.Trained
        A model with attention, e.g. ``attnlib.mt.translation.load("attention")``.
    text : str
        One English sentence (normalised and tokenised as in training: lower case,
        Moses rules), at most :data:`MAX_TOKENS` tokens.
    k : int
        Beam size; 1 is greedy decoding.

    Returns
    -------
    Reading
        ``alpha`` has shape (T_y, T_x) = (len(output_tokens), len(source_tokens)).

    Raises
    ------
    TypeError
        If ``text`` is not a str, or ``trained`` is not a trained model.
    ValueError
        If ``text`` has no tokens (empty or only spaces), more than
        :data:`MAX_TOKENS` tokens or :data:`MAX_CHARS` characters; if k is not a
        whole number ≥ 1; if the model has no attention (the baseline).

    See Also
    --------
    attnlib.mt.translation.translate : the translation behind it.
    plot_reading : the figure.
    """
    _check_trained(trained)
    tokens = _check_text(text)
    stoi = trained.data.src_vocab.stoi
    unknown = tuple(dict.fromkeys(t for t in tokens if t not in stoi))
    [done] = tr.translate(trained.model, trained.data, [text], k)
    if done.alpha is None:
        raise ValueError(
            f"the {trained.name!r} model has no attention (decoder={trained.recipe.decoder!r}): "
            "there are no weights α_ti to show; use translation.load('attention')"
        )
    alpha = done.alpha.astype(np.float64)
    source, output = tuple(done.src), tuple(done.out)
    if alpha.shape != (len(output), len(source)):  # the decoder broke its own contract
        raise RuntimeError(
            f"alpha has shape {alpha.shape}, expected (T_y, T_x) = ({len(output)}, {len(source)})"
        )
    finished = output[-1:] == (EOS,)
    H = np.asarray(entropy(alpha), dtype=float)
    alpha.setflags(write=False)
    H.setflags(write=False)
    return Reading(
        text=text,
        k=k,
        source_tokens=source,
        unknown=unknown,
        output_tokens=output,
        translation=done.text,
        alpha=alpha,
        entropy=H,
        finished=finished,
        message=_message(trained, unknown, tokens, finished, 2 * len(source) + 2),
    )


# --------------------------------------------------------------------------- figure
def _label(token: str) -> str:
    r"""A token as a tick label: ``$`` escaped, so two of them never start mathtext."""
    return token.replace("$", r"\$")


def _layout(expl: Reading) -> tuple[tuple[float, float], list[float]]:
    """Figure size and panel widths (inches): 0.6 in per source column, 2.8 in for the bars."""
    widths = [1.6 + 0.6 * max(expl.T_x, 3), 2.8]
    return (sum(widths), max(2.8, 1.3 + 0.42 * expl.T_y)), widths


def plot_reading(expl: Reading, ax: Sequence[Axes] | None = None) -> Figure:
    """Draw α of a reading as a heatmap, with the entropy H_t of each step beside it.

    Rows are the output steps t (the French tokens, top to bottom), columns the
    source positions i (the English tokens, ``<unk>`` included, then ``<eos>``);
    the cividis colour scale runs from 0 to 1. The bars on the right are H_t in
    nats, with a dashed line at the ceiling log T_x (uniform attention).

    Parameters
    ----------
    expl : Reading
        From :func:`read_sentence`.
    ax : two matplotlib Axes, optional
        Where to draw the heatmap and the bars; a new pyplot figure if None
        (end the cell with ``;`` so that it is shown once).

    Returns
    -------
    Figure
        The figure drawn on.

    See Also
    --------
    attnlib.plots.heatmap_entropy : the drawing itself.
    The chapter "Reading alignment heatmaps" (chapters/heatmaps).
    """
    if not isinstance(expl, Reading):
        raise TypeError(f"expl must be a Reading from read_sentence(), got {type(expl).__name__}")
    if ax is None:
        figsize, widths = _layout(expl)
        _, axes = plt.subplots(1, 2, figsize=figsize, layout="constrained", width_ratios=widths)
    else:
        axes = list(ax)
        if len(axes) != 2:
            raise ValueError(f"ax must be two Axes (heatmap, entropy bars), got {len(axes)}")
    image, _ = heatmap_entropy(
        expl.alpha,
        [_label(t) for t in expl.source_tokens],
        [_label(t) for t in expl.output_tokens],
        axes=axes,
    )
    if max(map(len, expl.source_tokens)) > 5:  # wider than a 0.6 in column: slant the labels
        axes[0].tick_params(axis="x", labelrotation=45)
        for label in axes[0].get_xticklabels():
            label.set(ha="right", rotation_mode="anchor")
    return image.figure  # type: ignore[return-value]  # a subfigure is never passed here


# --------------------------------------------------------------------------- what the widget shows
def _alt(expl: Reading) -> str:
    return (
        f"Heatmap of the attention weights α_ti for {expl.text!r}: {expl.T_y} rows, one per "
        f"output step t (the French tokens {' '.join(expl.output_tokens)}), by {expl.T_x} "
        f"columns, one per source token ({' '.join(expl.source_tokens)}), with a bar of the "
        "entropy H_t of each row beside it. The table below the figure gives the numbers."
    )


def _table(expl: Reading) -> str:
    top = np.argmax(expl.alpha, axis=1)
    cell = 'style="padding: 0.1em 0.8em; text-align: left"'
    rows = "".join(
        "<tr>"
        f"<td {cell}>{t + 1}</td><td {cell}>{html.escape(out)}</td>"
        f"<td {cell}>{html.escape(expl.source_tokens[i])}</td>"
        f"<td {cell}>{expl.alpha[t, i]:.2f}</td><td {cell}>{expl.entropy[t]:.2f}</td>"
        "</tr>"
        for t, (out, i) in enumerate(zip(expl.output_tokens, top, strict=True))
    )
    head = "".join(
        f'<th scope="col" {cell}>{h}</th>'
        for h in ("t", "output token", "leans most on", "largest α_ti", "H_t (nats)")
    )
    return (
        "<details><summary>The numbers behind the figure: for each output step t, the "
        "source token with the largest α_ti, and H_t</summary>"
        '<table style="border-collapse: collapse; margin: 0.4em 0">'
        f'<caption style="text-align: left">H_t is at most log T_x = {np.log(expl.T_x):.2f} '
        "nats (uniform weights over the T_x source positions)</caption>"
        f"<thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table></details>"
    )


class Rendered(NamedTuple):
    """What the widget shows for one reading (see :func:`render`)."""

    summary: str
    """HTML: the translation, the source tokens, the message if any."""
    table: str
    """HTML: a collapsed table of the largest α_ti and H_t of every output step."""
    png: bytes
    """The heatmap-and-entropy figure."""
    alt: str
    """A description of the figure for screen readers."""


def render(expl: Reading) -> Rendered:
    """What the widget shows for a reading: two pieces of HTML, the figure, its alt text.

    A plain function (no widget, no pyplot figure), so it is tested without a front end.
    Each call draws a new figure: a new sentence changes T_x and T_y, so the axes, their
    ticks and the figure's size all change, and no artist of the old figure could be
    updated in place (unlike the sliders of :mod:`attnlib.explorables.sliders`).

    Parameters
    ----------
    expl : Reading

    Returns
    -------
    Rendered
        ``summary`` (the translation, the source tokens, the message if any),
        ``table`` (the largest α_ti and H_t per step), ``png`` (the figure of
        :func:`plot_reading`) and ``alt`` (its description).
    """
    parts = [
        f"<p><b>French</b> (beam size k = {expl.k}): {html.escape(expl.translation)}</p>",
        f"<p><b>Source tokens</b> (T_x = {expl.T_x}): "
        f"<code>{html.escape(' '.join(expl.source_tokens))}</code></p>",
    ]
    if expl.message:
        parts.append(f"<p><b>Note:</b> {html.escape(expl.message)}</p>")
    figsize, widths = _layout(expl)
    fig = Figure(figsize=figsize, layout="constrained", dpi=DPI)
    axes = fig.subplots(1, 2, width_ratios=widths)
    plot_reading(expl, ax=axes)
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", metadata={"Software": None})
    return Rendered("".join(parts), _table(expl), buffer.getvalue(), _alt(expl))


def _problem(error: Exception) -> str:
    """An exception as a message for the output area (plain text, no traceback)."""
    if isinstance(error, ValueError | TypeError | traitlets.TraitError):
        return str(error)
    # not the learner's fault: say what broke, briefly
    return f"Something went wrong while translating ({type(error).__name__}: {error})."


# --------------------------------------------------------------------------- widget
#: The widget's front end, shipped in its saved state (as :mod:`attnlib.explorables.sliders` does).
ESM = (ASSETS / "translate.js").read_text(encoding="utf-8")
CSS = (ASSETS / "translate.css").read_text(encoding="utf-8")


class TranslateWidget(anywidget.AnyWidget):
    """A text box, a beam-size control k and a button over the translation and its α_ti.

    Build it with :func:`translate_widget`. One anywidget: the front end
    (``attnlib/explorables/translate.js``) draws the form and shows the synced traits
    below; the kernel computes them. Enter in the text box, the Translate button and a
    new k send the front end's sentence and k in one custom message
    ``{"type": "translate", "sentence": ..., "k": ...}``; the widget sets :attr:`sentence`
    and :attr:`k` from it, calls :meth:`translate` (even if nothing changed, so the button
    always translates) and answers ``{"type": "done"}``. Setting :attr:`sentence` or
    :attr:`k` from Python translates too.

    Attributes
    ----------
    sentence : str
        The English sentence (synced).
    k : int
        The beam size, 1 to :data:`MAX_BEAM` (synced).
    summary : str
        HTML: the translation, the source tokens, a note if any; empty after a problem.
    table : str
        HTML: a collapsed table of the largest α_ti and H_t per step; empty after a problem.
    png : str
        The figure of :func:`plot_reading`, a PNG in base64; empty after a problem.
    alt : str
        The figure's description (the image's alt text).
    problem : str or None
        Why there is no translation (plain text: the input refused, or what broke);
        None after a result. The front end shows it with ``role="alert"`` and hides the
        figure and the table.
    busy : bool
        True while the kernel translates (the front end disables the button).
    reading : Reading or None
        The last result (kernel side only); None after a problem.

    See Also
    --------
    read_sentence, render : what fills the output area.
    """

    _esm = ESM
    _css = CSS
    sentence = traitlets.Unicode("").tag(sync=True)
    k = traitlets.Int(5).tag(sync=True)
    max_beam = traitlets.Int(MAX_BEAM, read_only=True).tag(sync=True)
    placeholder = traitlets.Unicode(f"Type an English sentence, e.g. {EXAMPLE}").tag(sync=True)
    summary = traitlets.Unicode("").tag(sync=True)
    table = traitlets.Unicode("").tag(sync=True)
    png = traitlets.Unicode("").tag(sync=True)
    alt = traitlets.Unicode("").tag(sync=True)
    problem = traitlets.Unicode(None, allow_none=True).tag(sync=True)
    busy = traitlets.Bool(False).tag(sync=True)
    #: False until the widget is built, and while a request sets sentence and k together
    _live = False

    def __init__(self, trained: tr.Trained, text: str, k: int) -> None:
        super().__init__(sentence=text, k=k)
        self.trained = trained
        self.reading: Reading | None = None
        self.on_msg(self._on_message)
        self.translate()
        self._live = True

    @traitlets.validate("k")
    def _check_k(self, proposal: Any) -> int:
        k = proposal["value"]
        if isinstance(k, bool) or not 1 <= k <= MAX_BEAM:
            raise traitlets.TraitError(
                f"the beam size k must be a whole number from 1 to {MAX_BEAM}, got {k!r}"
            )
        return int(k)

    @traitlets.observe("sentence", "k")
    def _on_change(self, _change: object) -> None:
        if self._live:
            self.translate()

    @contextmanager
    def _quietly(self) -> Iterator[None]:
        """Set sentence and k without translating at each."""
        live, self._live = self._live, False
        try:
            yield
        finally:
            self._live = live

    def _on_message(self, _widget: object, content: Any, _buffers: object) -> None:
        """The front end's request: translate its sentence with its k, then say "done"."""
        if not isinstance(content, dict) or content.get("type") != "translate":
            return
        try:
            with self._quietly():
                sentence = content.get("sentence", self.sentence)
                if not isinstance(sentence, str):
                    raise TypeError(f"the sentence must be text, got {type(sentence).__name__}")
                k = content.get("k", self.k)
                if isinstance(k, float) and k.is_integer():
                    k = int(k)  # JavaScript has one kind of number
                self.k = k  # first: a refused k leaves the sentence as it was
                self.sentence = sentence
        except Exception as error:  # shown to the learner instead of a traceback
            self._show_problem(error)
        else:
            self.translate()
        finally:
            self.send({"type": "done"})

    def _show_problem(self, error: Exception) -> None:
        self.reading = None
        with self.hold_sync():
            self.problem = _problem(error)
            self.summary = self.table = self.png = self.alt = ""
            self.busy = False

    def translate(self) -> Reading | None:
        """Translate :attr:`sentence` with beam size :attr:`k` and show the result.

        Any exception becomes :attr:`problem`, shown in the output area (never a traceback).

        Returns
        -------
        Reading or None
            None if the input was refused or something failed.
        """
        self.busy = True
        try:
            expl = read_sentence(self.trained, self.sentence, self.k)
            shown = render(expl)
        except Exception as error:  # shown to the learner instead of a traceback
            self._show_problem(error)
            return None
        self.reading = expl
        with self.hold_sync():
            self.summary, self.table, self.alt = shown.summary, shown.table, shown.alt
            self.png = base64.b64encode(shown.png).decode("ascii")
            self.problem = None
            self.busy = False
        return expl


def translate_widget(trained: tr.Trained, text: str = EXAMPLE, k: int = 5) -> TranslateWidget:
    """Type an English sentence, see its French translation, the weights α_ti and H_t.

    The widget opens with ``text`` already translated, so the built website shows
    that result without a kernel; in Jupyter, on Binder or on Colab every new sentence
    (Enter or the button) and every new beam size k is translated live.

    Parameters
    ----------
    trained : attnlib.mt.translation.Trained
        A model with attention, e.g. ``attnlib.mt.translation.load("attention")``.
    text : str
        The sentence to show first.
    k : int
        The beam size to start with, 1 to :data:`MAX_BEAM`.

    Returns
    -------
    TranslateWidget
        An anywidget; make it the last expression of a cell.

    See Also
    --------
    read_sentence, plot_reading
    """
    if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= MAX_BEAM:
        raise ValueError(f"the beam size k must be a whole number from 1 to {MAX_BEAM}, got {k!r}")
    _check_trained(trained)
    return TranslateWidget(trained, text, k)
