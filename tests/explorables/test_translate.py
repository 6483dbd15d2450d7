"""Tests for attnlib.explorables.translate: read_sentence a sentence, draw it, and the translate-your-own widget.

The widget's front end is tested in a browser in ``tests/explorables/test_front_ends.py``.

Most tests use a tiny *untrained* model built from the first 300 Tatoeba pairs (no
checkpoint, well under a second): its translations are nonsense, but the contract is the
same — the translation equals ``translate``'s, α has one row per output token and one
column per source token, each row sums to 1, unknown words become ``<unk>``. The tests
marked slow load the shipped "attention" checkpoint once (module-scoped fixture).

Expected values are computed here independently of the module: the entropy from the
definition, the source tokens from ``tatoeba.tokenise`` and the vocabulary, the
translation from ``Trained.translate``.
"""

from __future__ import annotations

import base64
import dataclasses
import html
import io
import math
import re

import matplotlib.pyplot as plt
import numpy as np
import pytest
import traitlets
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from ipywidgets import embed
from matplotlib.figure import Figure
from PIL import Image

from attnlib.explorables import ASSETS
from attnlib.explorables import translate as T
from attnlib.mt import tatoeba as tb
from attnlib.mt import translation as tr

TINY = tr.Recipe(
    limit=300, test_sources=40, valid_sources=20, min_freq=1, emb=16, hidden=16, d_s=24, d_a=8,
    threads=1,
)  # fmt: skip


def _untrained(recipe: tr.Recipe, data: tr.Data) -> tr.Trained:
    model = tr.build_model(recipe, data)
    model.eval()
    return tr.Trained("tiny", recipe, model, data, tr.History())


@pytest.fixture(scope="module")
def tiny_data() -> tr.Data:
    return tr.prepare(TINY, tb.load_pairs()[:300])


@pytest.fixture(scope="module")
def tiny(tiny_data: tr.Data) -> tr.Trained:
    return _untrained(TINY, tiny_data)


@pytest.fixture(scope="module")
def known(tiny: tr.Trained) -> str:
    """A short training sentence: with min_freq=1 every one of its tokens is in the vocabulary.

    Short, because the untrained model rarely writes <eos>: it decodes to 2 T_x + 2 steps.
    """
    return next(p.en for p in tiny.data.split.train if len(tb.tokenise(p.en, "en")) == 4)


@pytest.fixture(scope="module")
def shipped() -> tr.Trained:
    return tr.load("attention", retrain=False)


def expected_entropy(alpha: np.ndarray) -> np.ndarray:
    a = np.asarray(alpha, dtype=float)
    terms = np.where(a > 0, a * np.log(np.where(a > 0, a, 1.0)), 0.0)
    return -terms.sum(axis=1)


def check_contract(trained: tr.Trained, text: str, k: int) -> T.Reading:
    """Everything read_sentence promises about one sentence, checked against independent values."""
    ex = T.read_sentence(trained, text, k)
    assert ex.translation == trained.translate([text], k=k)[0].text
    assert ex.k == k
    assert ex.text == text
    vocab = trained.data.src_vocab.stoi
    typed = tb.tokenise(text, "en")
    assert ex.source_tokens == (*(t if t in vocab else "<unk>" for t in typed), "<eos>")
    assert ex.alpha.shape == (ex.T_y, ex.T_x) == (len(ex.output_tokens), len(ex.source_tokens))
    np.testing.assert_allclose(ex.alpha.sum(axis=1), 1.0, atol=1e-5)
    assert (ex.alpha >= 0).all()
    assert ex.entropy.shape == (ex.T_y,)
    np.testing.assert_allclose(ex.entropy, expected_entropy(ex.alpha), atol=1e-9)
    assert (ex.entropy >= 0).all()
    assert (ex.entropy <= math.log(ex.T_x) + 1e-9).all()
    assert (ex.output_tokens[-1] == "<eos>") == ex.finished
    assert "<eos>" not in ex.output_tokens[:-1]
    return ex


# --------------------------------------------------------------------------- read_sentence
@pytest.mark.parametrize("k", [1, 2])
def test_explain_keeps_the_contract_on_a_known_sentence(
    tiny: tr.Trained, known: str, k: int
) -> None:
    ex = check_contract(tiny, known, k)
    assert ex.unknown == ()
    assert ex.message is None or "vocabulary" not in ex.message


def test_unknown_words_become_unk_and_are_listed_once(tiny: tr.Trained) -> None:
    a, b = [t for t in tiny.data.src_vocab.itos if t.isalpha()][:2]  # frequent words
    text = f"Zorblax {a} zorblax {b} flimflam."
    ex = check_contract(tiny, text, 2)
    assert ex.unknown == ("zorblax", "flimflam")  # lower case, each once, in order
    assert ex.source_tokens[:5] == ("<unk>", a, "<unk>", b, "<unk>")
    assert ex.message is not None
    for needed in ("'zorblax'", "'flimflam'", "<unk>", f"min_freq = {TINY.min_freq}"):
        assert needed in ex.message


@pytest.mark.parametrize("text", ["", " ", "\t\n  ", "\u200b\u00a0"])
def test_empty_input_is_refused_with_a_message(tiny: tr.Trained, text: str) -> None:
    with pytest.raises(ValueError, match="nothing to translate: type an English sentence"):
        T.read_sentence(tiny, text)


def test_the_length_limit_counts_tokens_and_says_what_it_is(tiny: tr.Trained) -> None:
    at_limit = " ".join(["word"] * (T.MAX_TOKENS - 1)) + "."  # MAX_TOKENS tokens
    ex = T.read_sentence(tiny, at_limit, 1)
    assert ex.T_x == T.MAX_TOKENS + 1  # with <eos>
    over = " ".join(["word"] * T.MAX_TOKENS) + "."
    with pytest.raises(
        ValueError, match=rf"has {T.MAX_TOKENS + 1} tokens .* at most {T.MAX_TOKENS}"
    ):
        T.read_sentence(tiny, over, 1)
    with pytest.raises(ValueError, match=f"at most {T.MAX_CHARS} characters"):
        T.read_sentence(tiny, "a" * (T.MAX_CHARS + 1), 1)  # refused before tokenising


def test_punctuation_counts_towards_the_limit(tiny: tr.Trained) -> None:
    with pytest.raises(ValueError, match="tokens"):
        T.read_sentence(tiny, "! " * (T.MAX_TOKENS + 1), 1)


@pytest.mark.parametrize("bad", [None, 42, ["I am here."], b"I am here."])
def test_a_non_string_is_a_type_error(tiny: tr.Trained, bad: object) -> None:
    with pytest.raises(TypeError, match="English sentence"):
        T.read_sentence(tiny, bad)  # type: ignore[arg-type]


def test_a_bad_beam_size_is_refused(tiny: tr.Trained, known: str) -> None:
    with pytest.raises(ValueError, match="k must be a whole number"):
        T.read_sentence(tiny, known, 0)


def test_a_model_without_attention_is_refused(tiny_data: tr.Data, known: str) -> None:
    recipe = dataclasses.replace(TINY, decoder="none")
    with pytest.raises(ValueError, match="no attention"):
        T.read_sentence(_untrained(recipe, tiny_data), known)


def test_an_explanation_cannot_be_changed(tiny: tr.Trained, known: str) -> None:
    ex = T.read_sentence(tiny, known, 1)
    with pytest.raises(dataclasses.FrozenInstanceError):
        ex.translation = "x"  # type: ignore[misc]
    with pytest.raises(ValueError, match="read-only"):
        ex.alpha[0, 0] = 1.0


# --------------------------------------------------------------------------- figure and render
def test_plot_draws_alpha_with_token_labels_and_entropy_bars(tiny: tr.Trained) -> None:
    ex = T.read_sentence(tiny, "I paid $5 and $6, zorblax.", 2)
    fig = Figure()
    axes = fig.subplots(1, 2)
    assert T.plot_reading(ex, ax=axes) is fig
    fig.canvas.draw()  # two "$" among the labels must not start mathtext
    (image,) = axes[0].get_images()
    np.testing.assert_allclose(image.get_array(), ex.alpha)
    xs = [t.get_text() for t in axes[0].get_xticklabels()]
    ys = [t.get_text() for t in axes[0].get_yticklabels()]
    assert [x.replace("\\$", "$") for x in xs] == list(ex.source_tokens)
    assert ys == list(ex.output_tokens)
    widths = [p.get_width() for p in axes[1].patches]
    np.testing.assert_allclose(widths, expected_entropy(ex.alpha), atol=1e-9)


def test_plot_without_axes_makes_one_pyplot_figure(tiny: tr.Trained, known: str) -> None:
    ex = T.read_sentence(tiny, known, 1)
    before = set(plt.get_fignums())
    fig = T.plot_reading(ex)
    try:
        assert set(plt.get_fignums()) - before == {fig.number}
        assert len(fig.axes) == 3  # heatmap, entropy bars, colorbar
        assert not fig.axes[0].get_title()  # the caption belongs to the notebook cell
    finally:
        plt.close(fig)


@pytest.mark.slow
@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(text=st.text(max_size=40))
def test_any_text_gives_a_result_or_a_clear_refusal(tiny: tr.Trained, text: str) -> None:
    n = len(tb.tokenise(text, "en"))
    if n == 0:
        with pytest.raises(ValueError, match="nothing to translate"):
            T.read_sentence(tiny, text, 1)
    elif n > T.MAX_TOKENS:
        with pytest.raises(ValueError, match=f"at most {T.MAX_TOKENS}"):
            T.read_sentence(tiny, text, 1)
    else:
        ex = T.read_sentence(tiny, text, 1)
        assert ex.T_x == n + 1
        np.testing.assert_allclose(ex.alpha.sum(axis=1), 1.0, atol=1e-5)


def test_plot_checks_its_arguments(tiny: tr.Trained, known: str) -> None:
    ex = T.read_sentence(tiny, known, 1)
    with pytest.raises(ValueError, match="two Axes"):
        T.plot_reading(ex, ax=[Figure().subplots()])
    with pytest.raises(TypeError, match="Reading"):
        T.plot_reading(ex.alpha)  # type: ignore[arg-type]


def test_render_escapes_what_was_typed(tiny: tr.Trained) -> None:
    ex = T.read_sentence(tiny, "<script>alert(1)</script> I <b>am</b> here", 1)
    shown = T.render(ex)
    for part in (shown.summary, shown.table):
        assert "<script" not in part
        assert "<b>am" not in part
    assert "&lt;eos&gt;" in shown.summary  # the source tokens, escaped
    assert shown.table.count("<tr>") == ex.T_y + 1  # a header row and one row per output step
    with Image.open(io.BytesIO(shown.png)) as picture:
        assert picture.format == "PNG"
        assert picture.width > 300
    assert f"{ex.T_y} rows" in shown.alt
    assert f"{ex.T_x} columns" in shown.alt


def test_the_table_names_where_each_step_looks(tiny: tr.Trained, known: str) -> None:
    ex = T.read_sentence(tiny, known, 1)
    body = T.render(ex).table.split("<tbody>")[1]
    rows = [re.findall(r"<td[^>]*>(.*?)</td>", r) for r in body.split("</tr>")[:-1]]
    H = expected_entropy(ex.alpha)
    assert len(rows) == ex.T_y
    for t, cells in enumerate(rows):
        i = int(np.argmax(ex.alpha[t]))
        assert cells == [
            str(t + 1),
            html.escape(ex.output_tokens[t]),
            html.escape(ex.source_tokens[i]),
            f"{ex.alpha[t, i]:.2f}",
            f"{H[t]:.2f}",
        ]


# --------------------------------------------------------------------------- widget
# The widget is one anywidget: the front end (translate.js) shows the synced traits; these tests
# play the front end's part on the kernel side (its custom message, its state updates) and hold
# the traits to read_sentence() and render() computed here for the same sentence and k.


def shows(w: T.TranslateWidget, trained: tr.Trained, text: str, k: int) -> None:
    """The synced traits are what render(read_sentence(text, k)) gives, and nothing is wrong."""
    expected = T.render(T.read_sentence(trained, text, k))
    assert (w.sentence, w.k) == (text, k)
    assert w.problem is None
    assert w.summary == expected.summary
    assert w.table == expected.table
    assert w.alt == expected.alt
    assert base64.b64decode(w.png, validate=True) == expected.png
    assert html.escape(trained.translate([text], k=k)[0].text) in w.summary
    assert not w.busy
    assert w.reading is not None
    assert (w.reading.text, w.reading.k) == (text, k)


def ask(w: T.TranslateWidget, **content: object) -> list[object]:
    """What the front end sends on Enter, the button or a new k; returns the widget's answers."""
    answers: list[object] = []
    w.send = answers.append  # type: ignore[method-assign]
    try:
        w._handle_custom_msg({"type": "translate", **content}, [])
    finally:
        del w.send
    return answers


def test_the_widget_opens_with_its_sentence_translated(tiny: tr.Trained, known: str) -> None:
    w = T.translate_widget(tiny, known, k=2)
    shows(w, tiny, known, 2)
    assert w.png.startswith(base64.b64encode(b"\x89PNG\r\n\x1a\n").decode()[:8])


def test_the_initial_state_is_in_the_embedded_widget_state(tiny: tr.Trained, known: str) -> None:
    # What the built website shows without a kernel: the saved state of every model, all of
    # them models anywidget_static.js draws without the widget manager.
    w = T.translate_widget(tiny, known, k=1)
    state = embed.dependency_state(w, drop_defaults=False)  # as nbclient saves it
    models = {(s["model_module"], s["model_name"]) for s in state.values()}
    assert models == {("anywidget", "AnyModel"), ("@jupyter-widgets/base", "LayoutModel")}
    [saved] = [s for s in state.values() if s["model_module"] == "anywidget"]
    assert not saved.get("buffers")  # the figure travels as base64 text in the state
    values = saved["state"]
    expected = T.render(T.read_sentence(tiny, known, 1))
    assert values["sentence"] == known
    assert values["k"] == 1
    assert values["summary"] == expected.summary
    assert "French" in values["summary"]
    assert "<table" in values["table"]
    assert base64.b64decode(values["png"]) == expected.png
    assert values["alt"] == expected.alt
    assert len(values["alt"]) > 40  # the figure's accessible name
    assert values["max_beam"] == T.MAX_BEAM
    assert values.get("problem") is None
    assert values["_esm"] == (ASSETS / "translate.js").read_text(encoding="utf-8")
    assert values["_css"] == (ASSETS / "translate.css").read_text(encoding="utf-8")


def test_a_new_sentence_or_beam_size_from_the_front_end_is_translated(
    tiny: tr.Trained, known: str
) -> None:
    w = T.translate_widget(tiny, known, k=1)
    first_html, first_png = w.summary, w.png
    word = next(t for t in tb.tokenise(known, "en") if t.isalpha())  # in the vocabulary
    text = f"Zorblax {word}."
    assert ask(w, sentence=text, k=1) == [{"type": "done"}]
    shows(w, tiny, text, 1)
    assert w.summary != first_html
    assert w.png != first_png
    assert "zorblax" in w.summary
    assert w.reading is not None
    assert w.reading.unknown == ("zorblax",)
    assert ask(w, sentence=text, k=2.0) == [{"type": "done"}]  # JavaScript's numbers are floats
    shows(w, tiny, text, 2)
    assert "k = 2" in w.summary


def test_setting_the_sentence_or_k_translates(tiny: tr.Trained, known: str) -> None:
    """From Python, or as a plain state update from a front end: each change translates."""
    w = T.translate_widget(tiny, known, k=1)
    w.k = 2
    shows(w, tiny, known, 2)
    w.set_state({"sentence": f"{known} {known}"})
    shows(w, tiny, f"{known} {known}", 2)


def test_the_button_translates_again(tiny: tr.Trained, known: str) -> None:
    """Translate on an unchanged sentence still translates, busy while it does."""
    w = T.translate_widget(tiny, known, k=1)
    w.summary = ""
    seen: list[bool] = []
    w.observe(lambda change: seen.append(change["new"]), names="busy")
    assert ask(w, sentence=known, k=1) == [{"type": "done"}]
    shows(w, tiny, known, 1)
    assert seen == [True, False]


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("   ", "nothing to translate"),
        ("word " * (T.MAX_TOKENS + 5), f"at most {T.MAX_TOKENS}"),
        ("x" * (T.MAX_CHARS + 1), "characters"),
    ],
)
def test_bad_input_is_a_message_not_a_traceback(
    tiny: tr.Trained, known: str, text: str, said: str
) -> None:
    w = T.translate_widget(tiny, known, k=1)
    assert ask(w, sentence=text, k=1) == [{"type": "done"}]  # must not raise
    assert w.problem is not None
    assert said in w.problem
    assert "Traceback" not in w.problem
    assert w.reading is None
    assert (w.summary, w.table, w.png, w.alt) == ("", "", "", "")  # no stale heatmap
    assert not w.busy
    w.sentence = known  # and it recovers
    shows(w, tiny, known, 1)


@pytest.mark.parametrize(
    ("content", "said"),
    [
        ({"sentence": "Hi.", "k": 0}, f"from 1 to {T.MAX_BEAM}"),
        ({"sentence": "Hi.", "k": T.MAX_BEAM + 1}, f"from 1 to {T.MAX_BEAM}"),
        ({"sentence": "Hi.", "k": 1.5}, "int"),
        ({"sentence": None, "k": 1}, "must be text"),
    ],
)
def test_a_bad_request_is_a_message(tiny: tr.Trained, known: str, content: dict, said: str) -> None:
    w = T.translate_widget(tiny, known, k=3)
    assert ask(w, **content) == [{"type": "done"}]
    assert w.problem is not None
    assert said in w.problem
    assert w.reading is None
    assert (w.sentence, w.k) == (known, 3)  # a refused request changes neither


def test_an_error_inside_the_callback_becomes_a_message(
    tiny: tr.Trained, known: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    w = T.translate_widget(tiny, known, k=1)

    def broken(*_args: object, **_kw: object) -> None:
        raise RuntimeError("the decoder fell over")

    for name in ("read_sentence", "render"):
        with monkeypatch.context() as patch:
            patch.setattr(T, name, broken)
            assert ask(w, sentence=known, k=1) == [{"type": "done"}]  # must not raise
            assert w.translate() is None
        assert w.problem is not None
        assert "Something went wrong" in w.problem, name
        assert "the decoder fell over" in w.problem
        assert "Traceback" not in w.problem
        assert w.reading is None
        assert w.png == ""
        assert not w.busy
    assert ask(w, sentence=known, k=1) == [{"type": "done"}]
    shows(w, tiny, known, 1)


def test_translate_returns_the_explanation_it_shows(tiny: tr.Trained, known: str) -> None:
    w = T.translate_widget(tiny, known, k=2)
    ex = w.translate()
    assert ex is w.reading
    assert ex is not None
    assert ex.translation == tiny.translate([known], k=2)[0].text


def test_other_messages_are_ignored(tiny: tr.Trained, known: str) -> None:
    w = T.translate_widget(tiny, known, k=1)
    before = w.get_state()
    w._handle_custom_msg({"type": "something else", "sentence": "Hi."}, [])
    w._handle_custom_msg("translate", [])
    assert w.get_state() == before


def test_the_beam_size_trait_refuses_values_outside_the_control(
    tiny: tr.Trained, known: str
) -> None:
    w = T.translate_widget(tiny, known, k=3)
    assert (w.max_beam, w.k) == (T.MAX_BEAM, 3)
    for bad in (0, T.MAX_BEAM + 1, True):
        with pytest.raises(traitlets.TraitError, match=f"from 1 to {T.MAX_BEAM}"):
            w.k = bad
    assert w.k == 3


@pytest.mark.parametrize("k", [0, T.MAX_BEAM + 1, 2.0, True])
def test_the_widget_refuses_a_beam_size_outside_the_slider(tiny: tr.Trained, k: object) -> None:
    with pytest.raises(ValueError, match=f"from 1 to {T.MAX_BEAM}"):
        T.translate_widget(tiny, "Hi.", k=k)  # type: ignore[arg-type]


def test_something_that_is_not_a_model_is_refused() -> None:
    with pytest.raises(TypeError, match="trained translation model"):
        T.translate_widget("attention")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="trained translation model"):
        T.read_sentence("attention", "I am here.")  # type: ignore[arg-type]


# --------------------------------------------------------------------------- the shipped model
@pytest.mark.slow
@pytest.mark.parametrize("k", [1, 5])
def test_the_shipped_model_explains_the_example(shipped: tr.Trained, k: int) -> None:
    ex = check_contract(shipped, T.EXAMPLE, k)
    assert ex.finished


@pytest.mark.slow
def test_the_shipped_vocabulary_turns_a_made_up_word_into_unk(shipped: tr.Trained) -> None:
    ex = check_contract(shipped, "I like zorblax.", 5)
    assert ex.unknown == ("zorblax",)
    assert ex.source_tokens[2] == "<unk>"
    assert ex.message is not None
    assert f"min_freq = {shipped.recipe.min_freq}" in ex.message


@pytest.mark.slow
def test_the_shipped_widget_shows_the_example(shipped: tr.Trained) -> None:
    w = T.translate_widget(shipped)
    assert w.reading is not None
    french = shipped.translate([T.EXAMPLE], k=5)[0].text
    assert w.reading.translation == french
    shows(w, shipped, T.EXAMPLE, 5)


@pytest.mark.slow
def test_the_length_limit_is_twice_the_longest_training_source() -> None:
    recipe = tr.RECIPES["attention"]
    parts = tb.split(
        tb.load_pairs(), seed=recipe.seed, test_sources=recipe.test_sources,
        valid_sources=recipe.valid_sources,
    )  # fmt: skip
    longest = max(len(tb.tokenise(en, "en")) for en in {p.en for p in parts.train})
    assert 2 * longest == T.MAX_TOKENS
