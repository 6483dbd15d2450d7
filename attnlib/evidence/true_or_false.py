"""The claims of the chapter "True or false" that rest on trained models, for any seed; its costs.

Two parts of :func:`check_claims`:

* "statement_6" (does attention fix long inputs?): the three models of the chapter "The
  fixed-length bottleneck" (``LONG_COPY``), on their longest test strings and on longer ones
  than they trained on;
* "statement_9" (is attention order-blind?): three experiments on the trained SVO → SOV
  model, driven through its public pieces with :func:`decode_from`: permuting h (groups
  "permute"), swapping subject and object ("reorder"), rebuilding s_0 from permuted states
  ("s_0").

Every one of these claims varies with the training seed; seeds 1 and 2 retrain the recipes
with that seed (:func:`attnlib.evidence._shared.trained_model`). The chapter also shows the
"ablation" checks of :mod:`attnlib.evidence.seq2seq` under its statement 1.

Statement 8 (is attention cheap?) is arithmetic: :func:`seq2seq_macs` counts a sentence's
multiply-adds from a model's weights, :func:`crossover_length` solves for the length at
which attention's share reaches half, :func:`count_parts` counts the products a forward pass
runs. They depend on sizes, not on a seed, so the chapter checks them where it computes them;
:func:`time_parts` times the same two runs for ``bench/bench_cost.py`` (no claim rests on a
clock). The chapter's other checks are arithmetic on given arrays and stay there too.

See Also
--------
The chapter "True or false" (chapters/true_or_false).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import numpy as np
import torch

from attnlib import claims
from attnlib.evidence._shared import (
    LONG_COPY,
    LONGER_BUCKETS,
    Checks,
    choose_parts,
    longer_copy_task,
    trained_model,
    with_checks,
)
from attnlib.experiments import Products, count_products
from attnlib.models import AdditiveAttention, BahdanauDecoder, BiGRUEncoder, NoAttentionDecoder
from attnlib.runtime import torch_threads
from attnlib.tasks import SVO_NOUNS, SVO_VERBS
from attnlib.train import encode_pairs, evaluate, translate
from attnlib.vocab import BOS_ID, EOS_ID, PAD_ID

__all__ = [
    "AT_LEAST",
    "GROUPS",
    "PARTS",
    "Macs",
    "PartCounts",
    "PartTimes",
    "QueryStep",
    "check_claims",
    "count_parts",
    "crossover_length",
    "decode_from",
    "score_queries",
    "seq2seq_macs",
    "time_parts",
]

#: The groups of checks the chapter displays, each under its statement.
GROUPS = ("statement_6", "permute", "reorder", "s_0")
#: The parts of :func:`check_claims`: statement 6 (group "statement_6") and statement 9
#: (groups "permute", "reorder", "s_0").
PARTS = ("statement_6", "statement_9")
#: Fewest claims :func:`check_claims` must check (what the chapter shows).
AT_LEAST = 10


def check_claims(seed: int = 0, *, parts: Sequence[str] | None = None) -> dict[str, Any]:
    """Statements 6 and 9, checked for training seed ``seed``.

    Parameters
    ----------
    seed : int
        Training seed; 0 is the shipped models.
    parts : sequence of str, optional
        Which parts of :data:`PARTS` to run (default: both).

    Returns
    -------
    dict
        For statement 6: ``metrics`` (role of ``LONG_COPY`` → held-out Metrics by length
        bucket) and ``beyond`` (``{"attention": Metrics}`` on the strings of 21–30 letters);
        for statement 9 what :func:`_statement_9` returns (``n``, ``permute``, ``reorder``,
        ``s_0``); ``checks`` (the groups of the parts run).
    """
    run = choose_parts(parts, PARTS)
    numbers: dict[str, Any] = {}
    checks: Checks = {}
    if "statement_6" in run:
        found, checks["statement_6"] = _statement_6(seed)
        numbers.update(found)
    if "statement_9" in run:
        found, groups = _statement_9(seed)
        numbers.update(found)
        checks.update(groups)
    return with_checks(numbers, checks)


def _statement_6(seed: int) -> tuple[dict[str, Any], list[claims.Checked]]:
    """Statement 6 on the models of ``LONG_COPY``: attention helps long strings, within limits."""
    runs = {role: trained_model(name, seed) for role, name in LONG_COPY.items()}
    metrics = {role: run.metrics for role, run in runs.items()}
    exact = {role: [b.exact_match for b in m.by_length] for role, m in metrics.items()}
    token = {role: [b.token_accuracy for b in m.by_length] for role, m in metrics.items()}
    labels = [b.label for b in metrics["attention"].by_length]
    longer = longer_copy_task()
    beyond = {
        "attention": evaluate(runs["attention"].model, longer, "test", buckets=list(LONGER_BUCKETS))
    }
    b_far = beyond["attention"].by_length[-1]
    checks = [
        claims.greater(
            token["attention"][-1],
            token["none"][-1],
            "on the longest sources attention gets far more letters right than the "
            "baseline with the same budget",
            names=(f"token accuracy {labels[-1]}, attention", "baseline"),
            by=0.3,
        ),
        claims.at_most(
            exact["none_4x"][-1],
            0.05,
            "four times the training does not rescue the baseline on them",
            name=f"exact match {labels[-1]}, baseline 4×",
        ),
        claims.at_most(
            b_far.exact_match,
            0.05,
            "trained on 5–20 letters, attention too fails on strings of 26–30",
            name=f"exact match {b_far.label}, attention",
        ),
    ]
    return {"metrics": metrics, "beyond": beyond}, checks


# --------------------------------------------------------------------------- statement 5
class QueryStep(NamedTuple):
    """One decoder step, as a spy on its scores saw it: how far the query the scores were
    computed from lies from the state before the step, s_{t-1}, and from the one after, s_t
    (largest absolute difference; 0 is that very state)."""

    t: int
    from_s_prev: float
    from_s_t: float


def score_queries(model: Any, src: Any, steps: int) -> list[QueryStep]:
    """Greedy-decode ``src`` (1, T_x) for ``steps`` steps and record the query of every score.

    A score edit that changes nothing (a spy, :class:`attnlib.models.ScoreEdit`) records the
    query each step's scores receive; the loop keeps the decoder state before the step and
    the one the step returns. A Bahdanau decoder (:class:`attnlib.models.BahdanauDecoder`)
    scores with s_{t-1}: ``from_s_prev`` is 0 and ``from_s_t`` is not.

    Raises
    ------
    ValueError
        If ``model`` has no Bahdanau decoder (Luong's carries another state).

    See Also
    --------
    The chapter "True or false" (chapters/true_or_false), statement 5.
    """
    if not isinstance(model.decoder, BahdanauDecoder):
        raise ValueError(
            f"score_queries reads a Bahdanau decoder, got {type(model.decoder).__name__}"
        )
    seen: list[Any] = []

    def spy(e: Any, *, query: Any, mask: Any) -> Any:
        seen.append(query.detach().clone())
        return e

    out = []
    with torch.no_grad():
        h, final, mask = model.encode(src)
        mem = model.decoder.memory(h, final, mask, edit=spy)
        s = model.decoder.init_state(final)
        y = torch.full((src.shape[0],), BOS_ID, dtype=torch.long)
        never = torch.zeros(model.tgt_vocab_size)
        never[[PAD_ID, BOS_ID]] = float("-inf")
        for t in range(1, steps + 1):
            logits, s_t, _ = model.decoder.step(y, s, mem)
            query = seen[-1]
            out.append(
                QueryStep(t, float((query - s).abs().max()), float((query - s_t).abs().max()))
            )
            y, s = (logits + never).argmax(dim=-1), s_t
    return out


# --------------------------------------------------------------------------- statement 9
def decode_from(
    model: Any, h: Any, final: Any, mask: Any, *, max_len: int, s_0: Any = None
) -> tuple[Any, Any]:
    """Greedy decoding from given encoder outputs, through the decoder's public steps.

    What :meth:`attnlib.models.Seq2Seq.greedy` does after ``model.encode``, but
    with h, the mask and s_0 chosen by the caller, so that an experiment can
    hand the decoder permuted encoder states. Every row runs ``max_len`` steps
    (nothing is masked after ``<eos>``).

    Parameters
    ----------
    model : Seq2Seq
    h : (B, T_x, d_h) tensor
    final : (B, d_final) tensor
        The encoder summary (s_0 is built from it unless ``s_0`` is given).
    mask : (B, T_x) bool tensor
    max_len : int
    s_0 : (B, d_s) tensor, optional

    Returns
    -------
    tokens : (B, max_len) long tensor
    alpha : (B, max_len, T_x) tensor, or None without attention

    See Also
    --------
    The chapter "True or false" (chapters/true_or_false), statement 9.
    """
    with torch.no_grad():
        mem = model.decoder.memory(h, final, mask)
        s = model.decoder.init_state(final) if s_0 is None else s_0
        y = torch.full((h.shape[0],), BOS_ID, dtype=torch.long)
        never = torch.zeros(model.tgt_vocab_size)
        never[[PAD_ID, BOS_ID]] = float("-inf")
        tokens, alphas = [], []
        for _ in range(max_len):
            logits, s, alpha = model.decoder.step(y, s, mem)
            y = (logits + never).argmax(dim=-1)
            tokens.append(y)
            alphas.append(alpha)
    out = torch.stack(tokens, dim=1)
    return out, (None if alphas[0] is None else torch.stack(alphas, dim=1))


def _until_eos(tokens: Any) -> list[tuple[int, ...]]:
    """Each row's ids up to and including its first ``<eos>``."""
    rows = []
    for row in tokens.tolist():
        rows.append(tuple(row[: row.index(EOS_ID) + 1] if EOS_ID in row else row))
    return rows


def _swap_subject_object(src: Sequence[str], tgt: Sequence[str]) -> tuple[tuple, tuple] | None:
    """For a plain "S V O" sentence: "O V S" and its translation if that differs, else None."""
    if "in" in src or "o" not in tgt or len([w for w in src if w in SVO_VERBS]) != 1:
        return None
    v = next(i for i, w in enumerate(src) if w in SVO_VERBS)
    if v + 1 == len(src) or src[-1] not in SVO_NOUNS:
        return None  # an adverb after the object
    ga, o = tgt.index("ga"), tgt.index("o")
    new_tgt = (*tgt[ga + 1 : o], "ga", *tgt[:ga], "o", *tgt[o + 1 :])
    if new_tgt == tuple(tgt):
        return None  # the same noun phrase twice (up to "the"/"a"): the meaning is unchanged
    return (*src[v + 1 :], src[v], *src[:v]), new_tgt


def _statement_9(seed: int) -> tuple[dict[str, Any], Checks]:
    """Statement 9 on the trained SVO → SOV model, for training seed ``seed``.

    Three experiments on every held-out sentence, all through the model's
    public pieces (``model.encode``, ``model.decoder.memory/init_state/step``,
    see :func:`decode_from`):

    * **permute h**: each row's encoder states h_i and its mask are permuted
      (padding positions too) and s_0 is built from the unchanged summary, as
      the encoder made it: the scores permute with the h_i, so every output
      should be the same and every α_t the same weights, permuted;
    * **reorder the words**: plain "S V O" sentences with subject and object
      swapped ("O V S", the same words): the encoder writes new states, and
      the model translates the new sentence;
    * **s_0 from permuted h**: the h_i permuted within each sentence and s_0
      recomputed from them the way the encoder builds its summary
      ([→h at the last position; ←h at the first]): now s_0 changes.

    Returns
    -------
    numbers : dict
        ``n`` (sentences), ``permute`` (outputs unchanged, largest |Δα| after undoing the
        permutation), ``reorder`` (sentences, outputs changed, outputs equal to the swapped
        sentence's translation, the share of new h_i far from every old h_j and the median
        distance, in units of the median ‖h_j‖, one example), ``s_0`` (outputs changed, the
        check that the summary is [→h_L; ←h_1]).
    checks : dict
        Groups "permute", "reorder", "s_0".
    """
    svo = trained_model("svo_sov", seed)
    model, task = svo.model, svo.task
    pairs = task.test
    data = encode_pairs(task, pairs)
    max_len = int(data.tgt_out.shape[1]) + 2
    gen = torch.Generator().manual_seed(1000 + seed)
    out: dict[str, Any] = {"n": len(pairs)}
    with torch_threads(1), torch.no_grad():
        h, final, mask = model.encode(data.src)
        B, T_x, _ = h.shape
        rows = torch.arange(B).unsqueeze(1)
        ref_tok, ref_alpha = decode_from(model, h, final, mask, max_len=max_len)
        ref = _until_eos(ref_tok)

        # (a) permute every row's T_x positions, pads included; the mask moves with them
        perm = torch.stack([torch.randperm(T_x, generator=gen) for _ in range(B)])
        tok_p, alpha_p = decode_from(model, h[rows, perm], final, mask[rows, perm], max_len=max_len)
        same = sum(a == b for a, b in zip(_until_eos(tok_p), ref, strict=True))
        steps = torch.tensor([len(r) for r in ref])
        live = (torch.arange(max_len).unsqueeze(0) < steps.unsqueeze(1)).unsqueeze(-1)
        undone = torch.gather(ref_alpha, 2, perm.unsqueeze(1).expand(-1, max_len, -1))
        d_alpha = float(((alpha_p - undone).abs() * live).max())
        out["permute"] = {"same": same, "d_alpha": d_alpha}

        # (c) permute within each sentence and rebuild s_0 from the permuted states
        lengths = mask.sum(dim=1)
        hid = h.shape[2] // 2
        summary = torch.cat([h[torch.arange(B), lengths - 1, :hid], h[:, 0, hid:]], dim=-1)
        inner = torch.stack(
            [
                torch.cat([torch.randperm(int(n), generator=gen), torch.arange(int(n), T_x)])
                for n in lengths
            ]
        )
        h_q = h[rows, inner]
        final_q = torch.cat([h_q[torch.arange(B), lengths - 1, :hid], h_q[:, 0, hid:]], dim=-1)
        tok_q, _ = decode_from(model, h_q, final_q, mask, max_len=max_len)
        changed_s0 = sum(a != b for a, b in zip(_until_eos(tok_q), ref, strict=True))
        moved = inner[:, :1] != 0  # rows whose first position moved: their s_0 changes
        out["s_0"] = {
            "changed": changed_s0,
            "summary_gap": float((summary - final).abs().max()),
            "moved": int(moved.sum()),
        }

    # (b) the same words in another order: subject and object swapped
    swaps = [(src, sw) for src, tgt in pairs if (sw := _swap_subject_object(src, tgt))]
    sources = [src for src, _ in swaps]
    new_sources = [sw[0] for _, sw in swaps]
    before = translate(model, task, sources)
    after = translate(model, task, new_sources)
    changed = sum(a.text != b.text for a, b in zip(before, after, strict=True))
    correct = sum(b.text == task.tgt_text(sw[1]) for (_, sw), b in zip(swaps, after, strict=True))
    with torch_threads(1), torch.no_grad():
        nearest = []  # per new h_i: distance to the closest old h_j, over the median ‖h_j‖
        for src, new in zip(sources, new_sources, strict=True):
            h_old = model.encode(torch.tensor([task.src_vocab.encode(src)]))[0][0]
            h_new = model.encode(torch.tensor([task.src_vocab.encode(new)]))[0][0]
            scale = h_old.norm(dim=-1).median()
            nearest.extend((torch.cdist(h_new, h_old).min(dim=1).values / scale).tolist())
    far = float(np.mean(np.array(nearest) > 0.1))
    example = 0
    out["reorder"] = {
        "n": len(swaps),
        "changed": changed,
        "correct": correct,
        "far": far,
        "nearest": float(np.median(nearest)),
        "example": (sources[example], new_sources[example], before[example], after[example]),
    }

    n = len(pairs)
    checks: Checks = {
        "permute": [
            claims.check(
                same == n,
                "permuting h_i (and the mask) leaves every output unchanged",
                evidence=f"{same} of {n} held-out sentences",
            ),
            claims.at_most(
                d_alpha,
                1e-5,
                "the weights permute with the h_i",
                name="largest difference from the old α, permuted",
            ),
        ],
        "reorder": [
            claims.check(
                changed == len(swaps),
                "swapping subject and object changes the output",
                evidence=f"{changed} of {len(swaps)} sentences",
            ),
            claims.at_least(
                correct / len(swaps),
                0.95,
                "the new output is the translation of the reordered sentence",
                name="share of swapped sentences translated exactly",
            ),
            claims.at_least(
                far,
                0.9,
                "the encoder writes new states, not the old ones reordered",
                name="share of new h_i farther than 0.1 median ‖h‖ from every old h_j",
            ),
        ],
        "s_0": [
            claims.close(
                summary,
                final,
                "the encoder's summary is [→h at the last position; ←h at the first]",
                tol=0.0,
                name="largest difference",
            ),
            claims.at_least(
                changed_s0 / n,
                0.5,
                "rebuilding s_0 from the permuted states changes most outputs",
                name="share of outputs changed",
            ),
        ],
    }
    return out, checks


# --------------------------------------------------------------------------- statement 8
class Macs(NamedTuple):
    """Multiply-adds of one sentence through a seq2seq model, by part.

    Counted in the matrix and vector products only (one multiply-add per
    weight a product uses, plus the score and context sums of attention);
    elementwise work (gates, tanh, exp) and the embedding lookups are left out.

    Attributes
    ----------
    encoder : int
        The recurrent encoder: T_x steps (both directions).
    decoder : int
        s_0 and the recurrent state updates: T_y steps.
    readout : int
        The output layer: T_y steps.
    attention : int
        The keys U_a h_i (T_x of them, once), the query W_a s_{t-1} (T_y of them)
        and, for each of the T_x · T_y pairs, the score's v_a^T (d_a) and the
        context's α_ti h_i (d_h).
    """

    encoder: int
    decoder: int
    readout: int
    attention: int

    @property
    def total(self) -> int:
        """All four parts."""
        return self.encoder + self.decoder + self.readout + self.attention

    @property
    def attention_share(self) -> float:
        """attention / total."""
        return self.attention / self.total


def seq2seq_macs(model: Any, T_x: int, T_y: int) -> Macs:
    """Count the multiply-adds of one sentence (T_x source and T_y target steps) through ``model``.

    Each weight matrix of a recurrent step or of the output layer is used once
    per step, so a step costs as many multiply-adds as those matrices have
    weights; the counts are read off the model's own parameters. Attention
    adds, besides its projections, (d_a + d_h) per pair (t, i): the only
    term that grows with T_x · T_y.

    Parameters
    ----------
    model : Seq2Seq
        A Bahdanau model or a no-attention baseline (``decoder="bahdanau"``
        or ``"none"``) with the recurrent encoder.
    T_x, T_y : int
        Source positions (``<eos>`` included) and output steps.

    Returns
    -------
    Macs

    See Also
    --------
    The chapter "True or false" (chapters/true_or_false), statement 8.
    """
    enc, dec = model.encoder, model.decoder
    if not isinstance(enc, BiGRUEncoder) or not isinstance(
        dec, BahdanauDecoder | NoAttentionDecoder
    ):
        raise TypeError(
            "seq2seq_macs counts a recurrent encoder with a Bahdanau or no-attention decoder"
        )
    if not (isinstance(T_x, int) and isinstance(T_y, int) and T_x >= 1 and T_y >= 1):
        raise ValueError(f"T_x and T_y must be whole numbers ≥ 1, got {T_x!r} and {T_y!r}")

    def weights(*modules: Any) -> int:
        return sum(p.numel() for m in modules for n, p in m.named_parameters() if "weight" in n)

    encoder = T_x * weights(enc.gru_forward, enc.gru_backward)
    decoder = weights(dec.W_s) + T_y * weights(dec.cell)
    readout = T_y * weights(dec.W_o, dec.W_y)
    attention = 0
    if isinstance(dec, BahdanauDecoder):
        attn = dec.attention
        if not isinstance(attn, AdditiveAttention):
            raise TypeError("seq2seq_macs counts the additive score")
        pair = attn.d_a + attn.d_h  # v_a^T tanh(…) and α_ti h_i
        attention = T_x * weights(attn.U_a) + T_y * weights(attn.W_a) + T_x * T_y * pair
    return Macs(encoder, decoder, readout, attention)


def crossover_length(model: Any) -> float:
    """The length T = T_x = T_y at which attention's multiply-adds equal the rest's.

    With T_x = T_y = T the rest of the model costs R_0 + r·T (:func:`seq2seq_macs`:
    R_0 builds s_0 once) and attention b·T + c·T²; this solves
    c·T² + (b − r)·T − R_0 = 0 for its positive root. For state size d and
    attention size d_a it is of the order of d² / d_a.

    See Also
    --------
    The chapter "True or false" (chapters/true_or_false), statement 8.
    """
    one, two = seq2seq_macs(model, 1, 1), seq2seq_macs(model, 2, 2)
    if one.attention == 0:
        raise ValueError("a model without attention has no crossover")
    rest_1, rest_2 = one.total - one.attention, two.total - two.attention
    r = rest_2 - rest_1
    r_0 = rest_1 - r
    c = (two.attention - 2 * one.attention) / 2
    b = one.attention - c
    return float(((r - b) + np.sqrt((r - b) ** 2 + 4 * c * r_0)) / (2 * c))


class PartCounts(NamedTuple):
    """The matrix products of one sentence through a model, and of its attention alone.

    Counted as they run (:func:`attnlib.experiments.count_products`): the same on
    every run and every machine.

    Attributes
    ----------
    forward : Products
        One teacher-forced forward pass (encoder, T_y decoder steps, output layer).
    attention : Products
        The attention of the same pass on its own: the keys U_a h_i once, then T_y
        steps of scores, softmax and context.
    """

    forward: Products
    attention: Products

    @property
    def attention_share(self) -> float:
        """Attention's share of the multiply-adds of the pass's matrix products."""
        return self.attention.multiply_adds / self.forward.multiply_adds


class PartTimes(NamedTuple):
    """Wall-clock seconds of one sentence through a model, and of its attention alone.

    For display and benchmarks (``bench/bench_cost.py``) only: a time depends on what
    else the machine runs, so no claim rests on it (:class:`PartCounts` counts).

    Attributes
    ----------
    forward : float
        Median time of one teacher-forced forward pass (encoder, T_y decoder
        steps, output layer).
    attention : float
        Median time of the attention of the same pass on its own: the keys
        U_a h_i once, then T_y steps of scores, softmax and context.
    attention_share : float
        Median over the repeats of attention / forward, each ratio taken from
        two runs made one right after the other.
    """

    forward: float
    attention: float
    attention_share: float


def _one_sentence(
    model: Any, T_x: int, T_y: int, seed: int
) -> tuple[Callable[[], None], Callable[[], None]]:
    """A forward pass of one random sentence through ``model``, and its attention alone."""
    attn = model.decoder.attention
    gen = torch.Generator().manual_seed(seed)
    src = torch.randint(EOS_ID + 1, model.src_vocab_size, (1, T_x), generator=gen)
    src[0, -1] = EOS_ID
    tgt = torch.randint(EOS_ID + 1, model.tgt_vocab_size, (1, T_y), generator=gen)
    h = torch.randn(1, T_x, attn.d_h, generator=gen)
    s_prev = torch.randn(T_y, 1, attn.d_s, generator=gen)

    def forward() -> None:
        model(src, tgt)

    def attention() -> None:
        keys = attn.precompute(h)
        for t in range(T_y):
            attn(s_prev[t], h, keys=keys)

    return forward, attention


def count_parts(model: Any, T_x: int, T_y: int, *, seed: int = 0) -> PartCounts:
    """Count the matrix products of a forward pass of one random sentence, and of its attention.

    Parameters
    ----------
    model : Seq2Seq
        With the Bahdanau decoder.
    T_x, T_y : int
        Source positions (``<eos>`` included) and output steps.
    seed : int
        For the random sentence and states (the counts do not depend on it).

    Returns
    -------
    PartCounts

    See Also
    --------
    The chapter "True or false" (chapters/true_or_false), statement 8.
    """
    forward, attention = _one_sentence(model, T_x, T_y, seed)
    with torch.no_grad():
        return PartCounts(count_products(forward), count_products(attention))


def time_parts(model: Any, T_x: int, T_y: int, *, repeats: int = 5, seed: int = 0) -> PartTimes:
    """Time a forward pass of one random sentence and its attention alone, on one thread.

    The two are timed in alternation, ``repeats`` times each. A share is the
    median of the ratios of runs made one right after the other: another
    process that slows the machine for a while slows both runs of a pair
    alike, and a few disturbed pairs do not move a median. No time is a
    difference of two others. For display and benchmarks only
    (``bench/bench_cost.py``); :func:`count_parts` counts the same two runs.

    Parameters
    ----------
    model : Seq2Seq
        With the Bahdanau decoder.
    T_x, T_y : int
        Source positions (``<eos>`` included) and output steps.
    repeats : int
    seed : int
        For the random sentence and states.

    Returns
    -------
    PartTimes

    See Also
    --------
    The chapter "True or false" (chapters/true_or_false), statement 8.
    """
    forward, attention = _one_sentence(model, T_x, T_y, seed)
    times: dict[str, list[float]] = {"forward": [], "attention": []}
    with torch_threads(1), torch.no_grad():
        forward()  # warm-up
        attention()
        for _ in range(repeats):
            for name, fn in (("forward", forward), ("attention", attention)):
                start = time.perf_counter()
                fn()
                times[name].append(time.perf_counter() - start)
    ratios = np.array(times["attention"]) / np.array(times["forward"])
    return PartTimes(
        float(np.median(times["forward"])),
        float(np.median(times["attention"])),
        float(np.median(ratios)),
    )
