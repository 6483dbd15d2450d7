"""Exercise 6, decoding: greedy and beam search: the grader's checks (public and hidden).

The learner's two functions take a model, and the channel carries plain data only. So the
grader draws every weight of a model itself (:func:`draw_model`), has the worker build it,
``make_seq2seq(V_src, V_tgt)`` (the notebook's first code cell imports it) with those weights
set (:func:`_handle`), builds the same model here, and hands the worker's copy to the learner's
function by its handle (:class:`attnlib.grading.cases.Handle`). Untrained models with small
weights repeat one token forever; the drawn W_o reads s_t, c_t and E y_{t-1} with large gains,
so outputs change with the source and from step to step, and the bias of <eos> (and of <pad>
and <bos>) is set per case. The public cases use the notebook's model instead:
make_seq2seq's own seeded weights, its output layers made sharper.

**Greedy** answers are checked step by step against the trusted model, by teacher forcing: every
id must be the most probable output of its step (<pad> and <bos> excluded), and a row must end
exactly where <eos> is the most probable output, or after max_len steps. Two logits within
:data:`LOGIT_TOL` tie, and either token is then right, as the notebook says.

**Beam** answers are compared with :func:`attnlib.decoding.beam_search` run here on the same
weights: every row's hypotheses, in order, with their tokens and scores. Where two candidates
nearly tie at the edge of a beam, two answers would be right; so a beam case is drawn again
until its reference result stays the same when W_y moves by :data:`NUDGE` in three random
directions, either way, and its scores are at least :data:`GAP` apart.

The cases depend on the private seed and on the student (the grader draws each check's seed
from both), so every student meets cases of their own; drawing them costs a fraction of a
second, and a student's are kept while the student is graded (:func:`functools.lru_cache`).
No draw and no trusted model rests on torch's global random generator.

The learner writes both decoders, so the worker's attnlib holds only what the notebook needs
to build and run a model (``attnlib.models`` and ``attnlib.vocab``, :data:`MODULES`), with the
model's own greedy decoder switched off (:data:`SWITCHED_OFF` names every function of attnlib
that decodes: those of the modules the worker holds raise, the others are not there): an
answer that calls one gets a NotImplementedError and no points.
"""

from __future__ import annotations

import functools
import itertools
import math
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from attnlib.grading import cases, channel
from attnlib.grading.cases import Check, Exercise, Fail, Probe, Question, Torch, f32
from attnlib.vocab import BOS_ID, EOS_ID, PAD_ID

if TYPE_CHECKING:
    from attnlib.decoding import Decoded
    from attnlib.models import Seq2Seq

LOGIT_TOL = 1e-4
"""Two logits closer than this tie (float32 logits of size ~10 are good to ~1e-6)."""

SCORE_ATOL = 1e-4
"""A beam score (|score| up to ~30, float32 log-probabilities summed over ≤ 12 steps)."""

NUDGE = 3e-5
"""Standard deviation of the moves of W_y a beam case must withstand (logits move by ~2e-4)."""

GAP = 1e-3
"""The least gap between consecutive scores of a reference row: a closer pair is a near-tie."""

MAX_DRAWS = 400
FIRST_OUTPUT = EOS_ID  # ids below it (<pad>, <bos>) are never outputs

#: The attnlib modules the worker holds: the notebook builds and runs models with them.
MODULES = ("models", "vocab")

#: Every attnlib function that decodes, switched off in the sandbox
#: (tests/grading/test_grading_decoding.py checks that no other function in attnlib runs the
#: decoder step by step on its own outputs).
SWITCHED_OFF = (
    "decoding.beam_search",
    "decoding.greedy",
    "decoding._search",
    "decoding._search_k1",
    "models.Seq2Seq.greedy",
    "models.greedy_steps",
    "_decoding_fast.greedy_one",
    "evidence.true_or_false.decode_from",
)

#: The notebook's public tests, as the grader rebuilds them: make_seq2seq(12, 11) with W_o and
#: W_y (weights and bias) multiplied by PUBLIC_GAIN, decoding PUBLIC_SRC.
PUBLIC_VOCAB = (12, 11)
PUBLIC_GAIN = 3.0
PUBLIC_SRC = ((4, 5, 6, 7, 2), (8, 3, 2, 0, 0), (9, 2, 0, 0, 0))
PUBLIC_MAX_LEN = 8
PUBLIC_K, PUBLIC_ALPHA = 3, 0.6


# =========================================================================== models and sources
_RNG = threading.Lock()  # make_seq2seq seeds torch's one global generator: one build at a time


@functools.cache
def _layout(n_src: int, n_tgt: int) -> tuple[tuple[str, tuple[int, ...], bool], ...]:
    """(name, shape, held by an nn.Linear) of each parameter of make_seq2seq(n_src, n_tgt)."""
    import torch

    from attnlib.models import make_seq2seq

    with _RNG:
        model = make_seq2seq(n_src, n_tgt)
    linear = {f"{m}.{p}" for m, mod in model.named_modules() if isinstance(mod, torch.nn.Linear)
              for p, _ in mod.named_parameters(recurse=False)}  # fmt: skip
    return tuple((n, tuple(v.shape), n in linear) for n, v in model.state_dict().items())


@dataclass(frozen=True)
class Drawn:
    """``make_seq2seq(n_src, n_tgt)`` with every parameter set to ``weights`` (float32 values).

    Nothing of the model rests on make_seq2seq's seeded initial weights: the grader's threads
    share torch's global generator with the threads grading other submissions.
    """

    n_src: int
    n_tgt: int
    weights: dict[str, np.ndarray] = field(compare=False)

    def build(self) -> Seq2Seq:
        """The model, here in the grader (eval mode)."""
        import torch

        from attnlib.models import make_seq2seq

        with _RNG:
            model = make_seq2seq(self.n_src, self.n_tgt)
        state = {k: torch.from_numpy(v.astype(np.float32)) for k, v in self.weights.items()}
        model.load_state_dict(state)  # every parameter: strict
        return model.eval()

    def nudged(self, move: np.ndarray) -> Drawn:
        """The same model with ``move`` added to W_y."""
        name = "decoder.W_y.weight"
        return Drawn(self.n_src, self.n_tgt, {**self.weights, name: f32(self.weights[name] + move)})


@functools.cache
def public_model() -> Drawn:
    """The notebook's public model: make_seq2seq(12, 11), W_o and W_y times PUBLIC_GAIN.

    make_seq2seq's seeded weights, built until two builds in a row agree (another thread
    may reseed torch's global generator in the middle of one).
    """
    from attnlib.models import make_seq2seq

    while True:
        with _RNG:
            a, b = (make_seq2seq(*PUBLIC_VOCAB).state_dict() for _ in range(2))
        if all(bool((a[k] == b[k]).all()) for k in a):
            break
    weights = {k: v.detach().double().numpy() for k, v in a.items()}
    for name in ("decoder.W_o.weight", "decoder.W_y.weight", "decoder.W_y.bias"):
        weights[name] = weights[name] * PUBLIC_GAIN
    return Drawn(*PUBLIC_VOCAB, {k: f32(v) for k, v in weights.items()})


def public_src() -> tuple[np.ndarray, list[int]]:
    """The notebook's public source batch and its rows' lengths (without <eos>)."""
    src = np.array(PUBLIC_SRC, dtype=np.int64)
    return src, [row.index(EOS_ID) for row in PUBLIC_SRC]


def draw_model(
    rng: np.random.Generator,
    n_tgt: int,
    *,
    eos: float = 0.0,
    specials: float = -1.0,
    tie: bool = False,
) -> Drawn:
    """A model with every weight drawn and a vocabulary of ``n_tgt`` output ids.

    Weights are normal, scaled by 1/sqrt(fan-in) and a gain; W_o reads s_t with gain 20 and
    c_t, E y_{t-1} with gain 5, so that the output moves with the state, the source and the
    previous id. ``eos`` and ``specials`` are added to the W_y bias of <eos>, and of <pad>
    and <bos> (+8 makes <pad> or <bos> the most probable output nearly everywhere; -8 keeps
    <eos> from ever winning). With ``tie``, two ordinary ids get the same row of W_y and the
    same bias, raised by 2: their logits tie at every step.
    """
    n_src = int(rng.integers(6, 16))
    layout = _layout(n_src, n_tgt)
    shapes = {name: shape for name, shape, _ in layout}
    d_s, d_h = shapes["decoder.W_s.weight"][0], shapes["decoder.attention.U_a.weight"][1]
    weights: dict[str, np.ndarray] = {}
    for name, shape, linear in layout:
        if name.endswith("embedding.weight"):
            value = rng.normal(size=shape)
        elif len(shape) == 2:
            value = rng.normal(size=shape) / math.sqrt(shape[1]) * (3.0 if linear else 1.5)
            if name == "decoder.W_o.weight" and shape[1] > d_s + d_h:  # [s_t; c_t; E y_{t-1}]
                value[:, :d_s] *= 20.0 / 3.0
                value[:, d_s:] *= 5.0 / 3.0
            elif name == "decoder.W_y.weight":
                value *= 4.0 / 3.0
        else:
            value = rng.normal(size=shape) * 0.5
            if name == "decoder.W_y.bias":
                value[EOS_ID] += eos
                value[[PAD_ID, BOS_ID]] += specials
        weights[name] = value
    if tie:
        one, two = (int(t) for t in rng.choice(np.arange(FIRST_OUTPUT + 1, n_tgt), 2, False))
        for name in ("decoder.W_y.weight", "decoder.W_y.bias"):
            weights[name][two] = weights[name][one]
        weights["decoder.W_y.bias"][[one, two]] += 2.0
    return Drawn(n_src, n_tgt, {k: f32(v) for k, v in weights.items()})


def tied_ids(drawn: Drawn) -> tuple[int, ...]:
    """The ordinary ids whose row of W_y and bias another id shares: their logits always tie."""
    W, c = drawn.weights["decoder.W_y.weight"], drawn.weights["decoder.W_y.bias"]
    ids = range(FIRST_OUTPUT + 1, drawn.n_tgt)
    return tuple(
        a for a in ids if any(b != a and np.array_equal(W[a], W[b]) and c[a] == c[b] for b in ids)
    )


def draw_src(rng: np.random.Generator, n_src: int, lengths: Sequence[int]) -> np.ndarray:
    """A padded batch (B, T_x): each row ``lengths[b]`` ordinary ids, <eos>, then <pad>."""
    src = np.full((len(lengths), max(lengths) + 1), PAD_ID, dtype=np.int64)
    for b, n in enumerate(lengths):
        src[b, :n] = rng.integers(FIRST_OUTPUT + 1, n_src, size=n)
        src[b, n] = EOS_ID
    return src


def _lengths(rng: np.random.Generator, B: int, lo: int = 1, hi: int = 8) -> list[int]:
    """B source lengths; with B ≥ 2 not all equal, so that the batch has padding."""
    while True:
        lengths = [int(n) for n in rng.integers(lo, hi + 1, size=B)]
        if B == 1 or len(set(lengths)) > 1:
            return lengths


def reference(
    drawn: Drawn, src: np.ndarray, k: int, max_len: int, length_alpha: float
) -> list[Decoded]:
    """attnlib's beam search (k = 1: greedy) on the trusted model."""
    import torch

    from attnlib.decoding import beam_search

    model = drawn.build()
    return beam_search(
        model, torch.from_numpy(src), k, max_len, length_alpha, return_attention=False
    )


def _kbest(results: Sequence[Decoded]) -> list[list[tuple[tuple[int, ...], bool]]]:
    return [[(h.tokens, h.finished) for h in d.kbest] for d in results]


def steady(
    drawn: Drawn,
    src: np.ndarray,
    k: int,
    max_len: int,
    length_alpha: float,
    rng: np.random.Generator,
) -> list[Decoded] | None:
    """The reference result, or None if a near-tie could make another answer right too."""
    want = reference(drawn, src, k, max_len, length_alpha)
    for d in want:
        scores = [h.score for h in d.kbest]
        if any(a - b < GAP for a, b in itertools.pairwise(scores)):
            return None
    shape = drawn.weights["decoder.W_y.weight"].shape
    for _ in range(3):
        move = rng.normal(size=shape) * NUDGE
        for sign in (1.0, -1.0):
            moved = reference(drawn.nudged(sign * move), src, k, max_len, length_alpha)
            if _kbest(moved) != _kbest(want):
                return None
    return want


# =========================================================================== reading answers
def _describe(value: Any) -> str:
    if value is None:
        return "None"
    if channel.is_array(value):
        return f"an array of shape {tuple(value['array'].get('shape', ()))}"
    if isinstance(value, dict) and "object" in value:
        return f"a {str(value['object'])[:100]}"
    if isinstance(value, dict) and "tuple" in value:
        return "a tuple"
    return f"a {type(value).__name__}"


def _items(value: Any, name: str, what: str) -> list[Any]:
    """The items of a list (or tuple) the learner returned."""
    if value is None:
        raise Fail(f"{name} is None: the function does not return anything yet", kind="none")
    if isinstance(value, dict) and isinstance(value.get("tuple"), list) and len(value) == 1:
        return list(value["tuple"])
    if isinstance(value, list):
        return value
    raise Fail(f"{name} should be a list of {what}, but it is {_describe(value)}", kind="type")


def _number(v: Any, name: str) -> float:
    """One entry of a list of ids: a number, or a numpy or torch scalar (a 0-d array)."""
    if channel.is_array(v):
        try:
            shape, _dtype, data = channel.read_array(v)
        except channel.ChannelError as err:
            raise Fail(f"{name} could not be read: {err}", kind="type") from None
        if len(data) == 1 and len(shape) <= 1:
            return data[0]
    if isinstance(v, bool) or not isinstance(v, int | float):
        raise Fail(
            f"{name} should hold token ids (whole numbers), but it holds {_describe(v)}",
            kind="type",
        )
    return float(v)


def _ids(value: Any, name: str) -> list[int]:
    """A list of token ids (a list, a tuple, a 1-D array or tensor of whole numbers)."""
    if channel.is_array(value):
        try:
            shape, _dtype, data = channel.read_array(value)
        except channel.ChannelError as err:
            raise Fail(f"{name} could not be read: {err}", kind="type") from None
        if len(shape) != 1:
            raise Fail(
                f"{name} should be a flat list of token ids, but it has shape {shape}", kind="type"
            )
    else:
        data = [_number(v, name) for v in _items(value, name, "token ids")]
    ids = []
    for v in data:
        if not math.isfinite(v) or v != int(v):
            raise Fail(
                f"{name} should hold token ids (whole numbers), but it holds {v}", kind="type"
            )
        ids.append(int(v))
    return ids


def token_rows(value: Any, B: int, name: str) -> list[list[int]]:
    """What greedy_decode returned, as B lists of ids (a (B, n) array is B rows of n)."""
    if channel.is_array(value):
        try:
            shape, _dtype, data = channel.read_array(value)
        except channel.ChannelError as err:
            raise Fail(f"{name} could not be read: {err}", kind="type") from None
        if len(shape) != 2 or shape[0] != B:
            raise Fail(
                f"{name} should be a list of {B} lists of token ids, one per source row, but it "
                f"is an array of shape {shape}",
                kind="type",
            )
        n = shape[1]
        value = [channel.array((n,), "list", data[b * n : (b + 1) * n]) for b in range(B)]
    rows = _items(value, name, f"{B} lists of token ids, one per source row")
    if len(rows) != B:
        raise Fail(
            f"{name} should hold {B} lists, one per source row, but it holds {len(rows)}",
            kind="type",
        )
    return [_ids(row, f"row {b} of {name}") for b, row in enumerate(rows)]


def hypothesis_rows(value: Any, B: int, name: str) -> list[list[tuple[list[int], float]]]:
    """What beam_decode returned, as B lists of (ids, score) pairs."""
    rows = _items(value, name, f"{B} lists of (tokens, score) pairs, one per source row")
    if len(rows) != B:
        raise Fail(
            f"{name} should hold {B} lists, one per source row, but it holds {len(rows)}",
            kind="type",
        )
    out = []
    for b, row in enumerate(rows):
        hyps = []
        for j, hyp in enumerate(_items(row, f"row {b} of {name}", "(tokens, score) pairs")):
            label = f"hypothesis {j + 1} of row {b} of {name}"
            try:
                tokens, score = cases.as_tuple(hyp, 2, label)
            except Fail:
                raise Fail(
                    f"{label} should be a pair (tokens, score), but it is {_describe(hyp)}",
                    kind="type",
                ) from None
            value_ = cases.as_array(score, f"the score of {label}")
            if value_.size != 1 or not math.isfinite(float(value_.reshape(-1)[0])):
                raise Fail(f"the score of {label} should be one finite number", kind="type")
            hyps.append((_ids(tokens, f"the tokens of {label}"), float(value_.reshape(-1)[0])))
        out.append(hyps)
    return out


# =========================================================================== checking answers
def _name(token: int) -> str:
    return {PAD_ID: "<pad> (id 0)", BOS_ID: "<bos> (id 1)", EOS_ID: "<eos> (id 2)"}.get(
        token, f"id {token}"
    )


def check_greedy(
    drawn: Drawn,
    src: np.ndarray,
    lengths: Sequence[int],
    max_len: int,
    rows: Sequence[Sequence[int]],
    label: str,
) -> None:
    """:class:`Fail` unless every row is a greedy output of the trusted model (ties either way).

    Each row is fed to the model by teacher forcing, alone (its padding cut off); at every
    step its id must have the largest logit (<pad> and <bos> left out) up to LOGIT_TOL, and
    after its last id <eos> must, unless the row has max_len ids.
    """
    import torch

    model = drawn.build()
    V = drawn.n_tgt
    for b, (tokens, T_x) in enumerate(zip(rows, lengths, strict=True)):
        where = f"{label}, row {b}"
        odd = next((t for t in tokens if not FIRST_OUTPUT < t < V), None)
        if odd is not None:
            if odd == EOS_ID:
                why = "a row stops at its first <eos>, which is not part of the output"
            elif odd in (PAD_ID, BOS_ID):
                why = "<pad> and <bos> are never outputs: give their logits -inf before the argmax"
            else:
                why = f"the output vocabulary has ids 0 … {V - 1}"
            raise Fail(f"{where} holds {_name(odd)}: {why}")
        if len(tokens) > max_len:
            raise Fail(
                f"{where} has {len(tokens)} ids, but max_len = {max_len} steps give at most "
                f"{max_len}"
            )
        steps = len(tokens) + (len(tokens) < max_len)
        tgt_in = torch.tensor([[BOS_ID, *tokens[: steps - 1]]])
        with torch.no_grad():
            logits, _ = model(torch.from_numpy(src[b : b + 1, : T_x + 1]), tgt_in)
        z = logits[0].double()
        z[:, [PAD_ID, BOS_ID]] = -math.inf
        for t in range(steps):
            chosen = tokens[t] if t < len(tokens) else EOS_ID
            best = int(z[t].argmax())
            if float(z[t, chosen]) >= float(z[t, best]) - LOGIT_TOL:
                continue
            zc, zb = float(z[t, chosen]), float(z[t, best])
            if chosen == EOS_ID:
                raise Fail(
                    f"{where} ends after {len(tokens)} ids, but at step t = {t + 1} the most "
                    f"probable output is {_name(best)} (logit {zb:.3f}), not <eos> "
                    f"({zc:.3f}), and max_len = {max_len} allows more: a row ends at its first "
                    "<eos>, or after max_len steps"
                )
            if best == EOS_ID:
                raise Fail(
                    f"{where} goes on after step t = {t + 1}, where <eos> is the most probable "
                    f"output (logit {zb:.3f}, against {zc:.3f} for {_name(chosen)}): a row ends "
                    "at its first <eos>"
                )
            raise Fail(
                f"{where}: at step t = {t + 1} it emits {_name(chosen)} (logit {zc:.3f}), but "
                f"the most probable output there is {_name(best)} (logit {zb:.3f}), given the "
                f"ids before it: {list(tokens[:t])}"
            )


def _shown(tokens: Sequence[int], score: float) -> str:
    return f"{list(tokens)} with score {score:.4f}"


def check_beam(
    got: Sequence[Sequence[tuple[list[int], float]]],
    want: Sequence[Decoded],
    label: str,
) -> None:
    """:class:`Fail` unless each row holds the reference hypotheses, in order, with their scores."""
    for b, (row, ref) in enumerate(zip(got, want, strict=True)):
        where = f"{label}, row {b}"
        expected = [(list(h.tokens), h.score) for h in ref.kbest]
        if len(row) != len(expected):
            raise Fail(f"{where} holds {len(row)} hypotheses, expected {len(expected)}")
        close = [
            gt == wt and math.isclose(gs, ws, rel_tol=1e-5, abs_tol=SCORE_ATOL)
            for (gt, gs), (wt, ws) in zip(row, expected, strict=True)
        ]
        if all(close):
            continue
        j = close.index(False)
        if sorted(map(tuple, (t for t, _ in row))) == sorted(map(tuple, (t for t, _ in expected))):
            scores = {tuple(t): s for t, s in expected}
            if all(math.isclose(s, scores[tuple(t)], abs_tol=SCORE_ATOL) for t, s in row):
                raise Fail(
                    f"{where} holds the right hypotheses and scores, but not best first: "
                    f"hypothesis {j + 1} is {_shown(*row[j])}, expected {_shown(*expected[j])}"
                )
        raise Fail(
            f"{where}: hypothesis {j + 1} is {_shown(*row[j])}, expected {_shown(*expected[j])}"
        )


# =========================================================================== the cases
@dataclass(frozen=True)
class Case:
    """One call of the learner's function: its model, source, arguments and what to expect."""

    drawn: Drawn
    src: np.ndarray = field(compare=False)
    lengths: tuple[int, ...]
    max_len: int
    k: int = 1
    length_alpha: float = 0.6
    want: tuple[Decoded, ...] = field(default=(), compare=False)
    what: str = ""

    @property
    def label(self) -> str:
        B, T = self.src.shape
        rows = ", ".join(map(str, self.lengths))
        sizes = f"src ({B}, {T}) with rows of {rows} ids + <eos>, V = {self.drawn.n_tgt} output ids"
        extra = f"; {self.what}" if self.what else ""
        return f"{sizes}, max_len = {self.max_len}{extra}"


def _handle(probe: Probe, drawn: Drawn) -> Any:
    """The worker's copy of ``drawn``, as an argument for the learner's function.

    make_seq2seq builds it (the notebook imports it), with the nn.Linear layers copied in
    (:meth:`Probe.new`); the other parameters (embeddings, GRUs) are set one by one,
    ``param.data = value``, a call that returns nothing.
    """
    layout = _layout(drawn.n_src, drawn.n_tgt)
    try:
        name = probe.new(
            "make_seq2seq",
            drawn.n_src,
            drawn.n_tgt,
            weights={k: Torch(drawn.weights[k]) for k, _, linear in layout if linear},
        )
        for k, _, linear in layout:
            if not linear:
                probe.call(f"{name}.{k}.__setattr__", "data", Torch(drawn.weights[k]))
    except Fail as fail:
        raise Fail(
            f"the grader could not build its test model in your notebook ({fail}); keep the "
            "first code cell, which imports make_seq2seq"
        ) from None
    return cases.Handle(name)


def run_greedy(probe: Probe, case: Case) -> None:
    """Call the learner's greedy_decode on ``case`` and check its rows."""
    label = f"greedy_decode on {case.label}"
    got = probe.call(
        "greedy_decode", _handle(probe, case.drawn), Torch(case.src, "int64"), case.max_len
    )
    rows = token_rows(got, len(case.lengths), "greedy_decode(model, src, max_len)")
    check_greedy(case.drawn, case.src, case.lengths, case.max_len, rows, label)


def run_beam(probe: Probe, case: Case) -> None:
    """Call the learner's beam_decode on ``case`` and compare with the reference."""
    args = f"k = {case.k}, length_alpha = {case.length_alpha:g}"
    got = probe.call(
        "beam_decode",
        _handle(probe, case.drawn),
        Torch(case.src, "int64"),
        case.k,
        case.max_len,
        case.length_alpha,
    )
    rows = hypothesis_rows(
        got, len(case.lengths), "beam_decode(model, src, k, max_len, length_alpha)"
    )
    check_beam(rows, case.want, f"beam_decode with {args} on {case.label}")


def _search(
    rng: np.random.Generator, draw: Callable[[np.random.Generator], Case | None], what: str
) -> Case:
    for _ in range(MAX_DRAWS):
        case = draw(rng)
        if case is not None:
            return case
    raise RuntimeError(f"no case {what} was drawn in {MAX_DRAWS} tries")  # pragma: no cover


def _greedy_case(
    drawn: Drawn, src: np.ndarray, lengths: list[int], max_len: int, what: str = ""
) -> tuple[Case, list[Decoded]]:
    """The case and attnlib's greedy result on it (to choose cases by; answers are checked
    step by step, :func:`check_greedy`)."""
    got = reference(drawn, src, 1, max_len, 0.0)
    return Case(drawn, src, tuple(lengths), max_len, what=what), got


def _beam_case(
    rng: np.random.Generator,
    drawn: Drawn,
    lengths: list[int],
    k: int,
    max_len: int,
    length_alpha: float,
    what: str = "",
) -> Case | None:
    src = draw_src(rng, drawn.n_src, lengths)
    want = steady(drawn, src, k, max_len, length_alpha, rng)
    if want is None:
        return None
    return Case(drawn, src, tuple(lengths), max_len, k, length_alpha, tuple(want), what)


# --------------------------------------------------------------------------- question 1
def public_greedy_case() -> Case:
    src, lengths = public_src()
    return Case(public_model(), src, tuple(lengths), PUBLIC_MAX_LEN)


@functools.lru_cache(maxsize=8)
def greedy_eos_cases(seed: int) -> tuple[Case, ...]:
    """Rows that end at <eos> after different numbers of ids; then a batch of one."""
    rng = np.random.default_rng(seed)

    def batch(r: np.random.Generator) -> Case | None:
        drawn = draw_model(r, int(r.integers(7, 15)), eos=float(r.uniform(0.0, 2.0)))
        lengths = _lengths(r, int(r.integers(3, 6)))
        case, got = _greedy_case(drawn, draw_src(r, drawn.n_src, lengths), lengths, 12)
        ends = [len(d.tokens) for d in got if d.finished]
        outs = {len(d.tokens) for d in got}
        if ends and max(ends) >= 1 and len(outs) >= 2 and min(ends) < max(outs):
            return case
        return None

    def single(r: np.random.Generator) -> Case | None:
        drawn = draw_model(r, int(r.integers(7, 15)), eos=float(r.uniform(0.0, 2.0)))
        lengths = _lengths(r, 1)
        src = draw_src(r, drawn.n_src, lengths)
        case, got = _greedy_case(drawn, src, lengths, 12, "a batch of one")
        return case if got[0].finished and len(got[0].tokens) >= 2 else None

    return (_search(rng, batch, "with rows ending apart"), _search(rng, single, "of one row"))


@functools.lru_cache(maxsize=8)
def greedy_max_len_cases(seed: int) -> tuple[Case, ...]:
    """<eos> never most probable (every row cut at max_len); <eos> exactly at step max_len."""
    rng = np.random.default_rng(seed)

    def never(r: np.random.Generator) -> Case | None:
        drawn = draw_model(r, int(r.integers(7, 15)), eos=-8.0)
        lengths = _lengths(r, int(r.integers(2, 5)))
        src = draw_src(r, drawn.n_src, lengths)
        case, got = _greedy_case(drawn, src, lengths, int(r.integers(1, 6)), "no <eos> wins")
        return case if not any(d.finished for d in got) else None

    def exactly(r: np.random.Generator) -> Case | None:
        drawn = draw_model(r, int(r.integers(7, 15)), eos=float(r.uniform(0.0, 1.5)))
        lengths = _lengths(r, int(r.integers(2, 5)))
        src = draw_src(r, drawn.n_src, lengths)
        _, got = _greedy_case(drawn, src, lengths, 12)
        ends = [len(d.tokens) for d in got if d.finished and len(d.tokens) >= 1]
        if not ends:
            return None
        what = "a row ends with <eos> at step max_len"
        case, cut = _greedy_case(drawn, src, lengths, min(ends) + 1, what)
        return case if any(not d.finished for d in cut) else None

    return (_search(rng, never, "without <eos>"), _search(rng, exactly, "ending at max_len"))


@functools.lru_cache(maxsize=8)
def greedy_specials_cases(seed: int) -> tuple[Case, ...]:
    """<pad> and <bos> the most probable outputs (never emitted); two tokens that always tie."""
    rng = np.random.default_rng(seed)

    def specials(r: np.random.Generator) -> Case | None:
        import torch

        drawn = draw_model(r, int(r.integers(7, 15)), eos=float(r.uniform(0, 1)), specials=8.0)
        lengths = _lengths(r, int(r.integers(2, 4)))
        src = draw_src(r, drawn.n_src, lengths)
        case, got = _greedy_case(drawn, src, lengths, 8, "<pad> and <bos> most probable")
        if not any(len(d.tokens) >= 2 for d in got):
            return None
        with torch.no_grad():  # left in, they would be the first step's outputs
            logits, _ = drawn.build()(torch.from_numpy(src), torch.full((len(got), 1), BOS_ID))
        return case if bool((logits[:, 0].argmax(dim=-1) < FIRST_OUTPUT).all()) else None

    def tie(r: np.random.Generator) -> Case | None:
        drawn = draw_model(r, int(r.integers(7, 15)), eos=float(r.uniform(-0.5, 1.0)), tie=True)
        lengths = _lengths(r, int(r.integers(2, 4)))
        src = draw_src(r, drawn.n_src, lengths)
        case, got = _greedy_case(drawn, src, lengths, 8, "two ids always tie")
        return case if any(set(tied_ids(drawn)) & set(d.tokens) for d in got) else None

    return (_search(rng, specials, "with <pad>, <bos> first"), _search(rng, tie, "with a tie"))


def _q1_public(probe: Probe, rng: np.random.Generator) -> None:
    run_greedy(probe, public_greedy_case())


def _q1_eos(probe: Probe, rng: np.random.Generator) -> None:
    for case in greedy_eos_cases(int(rng.integers(2**62))):
        run_greedy(probe, case)


def _q1_max_len(probe: Probe, rng: np.random.Generator) -> None:
    for case in greedy_max_len_cases(int(rng.integers(2**62))):
        run_greedy(probe, case)


def _q1_specials(probe: Probe, rng: np.random.Generator) -> None:
    for case in greedy_specials_cases(int(rng.integers(2**62))):
        run_greedy(probe, case)


# --------------------------------------------------------------------------- question 2
@functools.cache
def public_beam_case() -> Case:
    src, lengths = public_src()
    drawn = public_model()
    want = reference(drawn, src, PUBLIC_K, PUBLIC_MAX_LEN, PUBLIC_ALPHA)
    return Case(drawn, src, tuple(lengths), PUBLIC_MAX_LEN, PUBLIC_K, PUBLIC_ALPHA, tuple(want))


def _differs_from_greedy(case: Case) -> bool:
    greedy = reference(case.drawn, case.src, 1, case.max_len, case.length_alpha)
    return any(g.tokens != w.tokens for g, w in zip(greedy, case.want, strict=True))


def _goes_on_after_a_finish(case: Case) -> bool:
    """Some row has a finished hypothesis and a longer one: the search went on, k wide."""
    for d in case.want:
        done = [h.steps for h in d.kbest if h.finished]
        if done and any(h.steps > min(done) for h in d.kbest):
            return True
    return False


@functools.lru_cache(maxsize=8)
def beam_kbest_cases(seed: int) -> tuple[Case, ...]:
    """Batches of 4 to 6 padded rows, k from 3 to 5: the search goes on after a finished
    hypothesis, and the best differs from greedy's."""
    rng = np.random.default_rng(seed)

    def draw(r: np.random.Generator) -> Case | None:
        drawn = draw_model(r, int(r.integers(7, 15)), eos=float(r.uniform(0.5, 2.5)))
        k, max_len = int(r.integers(3, 6)), int(r.integers(7, 11))
        alpha = round(float(r.uniform(0.4, 1.2)), 2)
        case = _beam_case(r, drawn, _lengths(r, int(r.integers(4, 7))), k, max_len, alpha)
        if case is None or not _goes_on_after_a_finish(case):
            return None
        return case if _differs_from_greedy(case) else None

    return tuple(_search(rng, draw, "for the k best") for _ in range(4))


@functools.lru_cache(maxsize=8)
def beam_length_cases(seed: int) -> tuple[Case, ...]:
    """Rows whose best by score is not their best by log p; then length_alpha = 0."""
    rng = np.random.default_rng(seed)

    def normalised(r: np.random.Generator) -> Case | None:
        drawn = draw_model(r, int(r.integers(7, 15)), eos=float(r.uniform(0.0, 2.0)))
        k, max_len = int(r.integers(3, 6)), int(r.integers(6, 11))
        alpha = round(float(r.uniform(0.8, 1.5)), 2)
        case = _beam_case(r, drawn, _lengths(r, int(r.integers(1, 4))), k, max_len, alpha)
        if case is None:
            return None
        by_log_p = reference(drawn, case.src, k, max_len, 0.0)
        return (
            case
            if any(a.tokens != b.tokens for a, b in zip(case.want, by_log_p, strict=True))
            else None
        )

    def raw(r: np.random.Generator) -> Case | None:
        drawn = draw_model(r, int(r.integers(7, 15)), eos=float(r.uniform(0.0, 2.0)))
        k, max_len = int(r.integers(2, 5)), int(r.integers(5, 10))
        case = _beam_case(r, drawn, _lengths(r, int(r.integers(1, 4))), k, max_len, 0.0)
        if case is None:
            return None
        steps = {h.steps for d in case.want for h in d.kbest}
        return case if len(steps) >= 2 and max(steps) >= 2 else None

    return (_search(rng, normalised, "normalised"), _search(rng, raw, "with length_alpha 0"))


@functools.lru_cache(maxsize=8)
def beam_edge_cases(seed: int) -> tuple[Case, ...]:
    """k = 1 on one row; k above the number of outputs; no <eos> before max_len; <pad>, <bos>."""
    rng = np.random.default_rng(seed)

    def k1(r: np.random.Generator) -> Case | None:
        drawn = draw_model(r, int(r.integers(7, 15)), eos=float(r.uniform(0.0, 1.5)))
        return _beam_case(r, drawn, _lengths(r, 1), 1, 10, 0.6, "k = 1 is greedy")

    def small(r: np.random.Generator) -> Case | None:
        n_tgt = int(r.integers(5, 7))  # 2 or 3 ordinary ids and <eos>: k is larger than V
        drawn = draw_model(r, n_tgt, eos=float(r.uniform(-1.0, 1.0)))
        k, max_len = n_tgt + int(r.integers(1, 3)), int(r.integers(2, 5))
        lengths = _lengths(r, int(r.integers(1, 3)))
        return _beam_case(r, drawn, lengths, k, max_len, 0.6, "k larger than the vocabulary")

    def no_eos(r: np.random.Generator) -> Case | None:
        drawn = draw_model(r, int(r.integers(7, 15)), eos=-8.0)
        lengths = _lengths(r, 2)
        case = _beam_case(r, drawn, lengths, 3, int(r.integers(3, 7)), 0.6, "no <eos> wins")
        if case is None or any(h.finished for d in case.want for h in d.kbest):
            return None
        return case

    def specials(r: np.random.Generator) -> Case | None:
        drawn = draw_model(r, int(r.integers(7, 15)), eos=float(r.uniform(0, 1)), specials=6.0)
        lengths = _lengths(r, 2)
        return _beam_case(r, drawn, lengths, 3, 6, 0.6, "<pad> and <bos> most probable")

    return (
        _search(rng, k1, "with k = 1"),
        _search(rng, small, "with a small vocabulary"),
        _search(rng, no_eos, "without <eos>"),
        _search(rng, specials, "with <pad>, <bos> first"),
    )


def _q2_public(probe: Probe, rng: np.random.Generator) -> None:
    run_beam(probe, public_beam_case())


def _q2_kbest(probe: Probe, rng: np.random.Generator) -> None:
    for case in beam_kbest_cases(int(rng.integers(2**62))):
        run_beam(probe, case)


def _q2_length(probe: Probe, rng: np.random.Generator) -> None:
    for case in beam_length_cases(int(rng.integers(2**62))):
        run_beam(probe, case)


def _q2_edges(probe: Probe, rng: np.random.Generator) -> None:
    for case in beam_edge_cases(int(rng.integers(2**62))):
        run_beam(probe, case)


_Q1 = Question(
    "q1_greedy",
    "greedy_decode",
    (
        Check(
            "the notebook's batch",
            1,
            "feed back the most probable output of each step, <pad> and <bos> excluded; "
            "a row ends at its first <eos>, which is not part of its output",
            _q1_public,
            public=True,
        ),
        Check(
            "rows end at their own <eos>",
            1,
            "every row of the batch stops at its own first <eos>; the others go on, and the "
            "ids a finished row would get afterwards are not part of its output",
            _q1_eos,
        ),
        Check(
            "max_len",
            1,
            "max_len counts decoder steps, the <eos> step included: a row without <eos> in its "
            "first max_len steps has max_len ids, and decoding stops there",
            _q1_max_len,
        ),
        Check(
            "never <pad> or <bos>; ties",
            1,
            "give <pad> and <bos> the logit -inf before the argmax, however probable the model "
            "makes them",
            _q1_specials,
        ),
    ),
)
_Q2 = Question(
    "q2_beam",
    "beam_decode",
    (
        Check(
            "the notebook's batch",
            1,
            "follow the six rules of the question: raw log p while searching, the "
            "length-normalised score ((5 + |y|) / 6)^length_alpha only at the end",
            _q2_public,
            public=True,
        ),
        Check(
            "the k best, best first",
            1,
            "keep the beam k wide with the k best candidates that do not end in <eos>; a "
            "candidate ending in <eos> among the k best is finished; return the k best by "
            "score, best first",
            _q2_kbest,
        ),
        Check(
            "length normalisation",
            1,
            "score = log p(y | x) / ((5 + |y|) / 6)^length_alpha, with |y| counting the <eos> "
            "of a finished hypothesis; length_alpha = 0 ranks by log p itself",
            _q2_length,
        ),
        Check(
            "k = 1, small vocabularies, no <eos>, <pad> and <bos>",
            1,
            "k = 1 is greedy decoding; with fewer candidates than k the beam is narrower; at "
            "max_len the live prefixes are unfinished hypotheses; the log-probabilities come "
            "from the softmax over the whole vocabulary, but <pad> and <bos> are never candidates",
            _q2_edges,
        ),
    ),
)

#: The first cells import torch and attnlib's models (a few seconds, more on a busy machine).
EXERCISE = Exercise(
    "06_decoding", 6, (_Q1, _Q2), switched_off=SWITCHED_OFF, cell_seconds=120.0, modules=MODULES
)
