"""Reading a translation model's output: examples picked by rule, beam traces, what s_0 can see.

A corpus score says how good a model is on average; a handful of sentences says *how*
it goes wrong. Chosen by hand, they show what the chooser wanted to show, so here
every example is picked from the test split by a stated rule (:data:`RULES`), and a
retrained model gets its own examples by the same rules.

* :func:`pick_examples` — one test sentence per rule: the lowest sentence BLEU,
  where beam search fixes greedy decoding and where it makes it worse, an ``<unk>``,
  the longest source, the shortest and the longest output relative to the references.
* :func:`carried_details`, :func:`carried_pairs` — over a whole split, how many of the
  source's names, numbers and colours that a reference carries over the model's output
  carries over too, and which of two models keeps more of them (a sign test).
* :func:`reference_disagreement` — the human reference that scores lowest against
  the other references of its own source: a valid translation BLEU punishes.
* :func:`beam_trace` — what a beam of size k holds after each of the first steps.
* :func:`final_state_sensitivity` — how much →h_{T_x} and ←h_1 (the two halves of the
  encoder's final state, from which s_0 is built) change when the first or the last
  word of the source changes.

See Also
--------
The chapter "Training, decoding and scoring an English→French model"
(chapters/training_and_decoding).
"""

from __future__ import annotations

import html
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor

from attnlib.decoding import Hypothesis, beam_search
from attnlib.mt import scoring
from attnlib.mt import tatoeba as tb
from attnlib.runtime import eval_mode
from attnlib.vocab import PAD_ID, Vocab

__all__ = [
    "RULES",
    "Carried",
    "Disagreement",
    "Example",
    "PairedDetails",
    "Sensitivity",
    "beam_trace",
    "carried_details",
    "carried_pairs",
    "examples_html",
    "final_state_sensitivity",
    "html_table",
    "pick_examples",
    "pieces",
    "reference_disagreement",
    "sentence_bleus",
    "trace_text",
]

RULES: dict[str, str] = {
    "lowest BLEU": "the lowest sentence BLEU of the beam output (ties: the longest source)",
    "beam fixes greedy": "the largest gain in sentence BLEU from greedy to beam",
    "beam breaks greedy": "the largest loss in sentence BLEU from greedy to beam",
    "<unk>": "the longest source whose beam output holds <unk>",
    "longest source": "the source with the most English words",
    "over-short": "the beam output shortest relative to the shortest reference",
    "over-long": "the beam output longest relative to the longest reference",
}
"""The rules of :func:`pick_examples`, by name; ties go to the first sentence of the split.

Lengths of French outputs and references are counted in word pieces (:func:`pieces`),
so that ``Prouve-le-moi !`` counts as long as ``Prouve le moi``."""


@dataclass(frozen=True)
class Carried:
    """How many details of one kind an output carries over: ``kept`` of ``n``."""

    kept: int
    n: int

    @property
    def share(self) -> float:
        """``kept / n`` (NaN for a kind with no detail)."""
        return self.kept / self.n if self.n else float("nan")


@dataclass(frozen=True)
class PairedDetails:
    """Two systems' outputs on the same details: which keeps what the other drops.

    ``a_only`` details only the first output keeps, ``b_only`` only the second;
    ``p`` the exact one-sided sign test of "the first keeps more" on those discordant
    details (the chance of ``a_only`` or more of ``a_only + b_only`` coin flips).
    """

    a_only: int
    b_only: int
    p: float


#: One detail: (source index, kind, the forms an output may carry it over in).
_Detail = tuple[int, str, tuple[str, ...]]


def _details(sources: Sequence[str], references: Sequence[Sequence[str]]) -> list[_Detail]:
    """The names, numbers and colours of the sources that a reference carries over."""
    found: list[_Detail] = []
    for k, (source, refs) in enumerate(zip(sources, references, strict=True)):
        ref_tokens = [set(tb.tokenise(r, "fr", lower=False)) for r in refs]
        ref_lower = [{t.lower() for t in toks} for toks in ref_tokens]
        for word in dict.fromkeys(tb.tokenise(source, "en", lower=False)):  # once each
            wanted: tuple[str, ...]
            if word.isalpha() and word[0].isupper() and word != "I":
                kind, wanted, verbatim = "names", (word.lower(),), True
            elif any(c.isdigit() for c in word):
                kind, wanted, verbatim = "numbers", (word.lower(),), True
            elif word.lower() in tb.COLOURS:
                kind, wanted, verbatim = "colours", tb.COLOURS[word.lower()], False
            else:
                continue
            if verbatim:
                carried = any(word in toks for toks in ref_tokens)
            else:
                carried = any(set(wanted) & toks for toks in ref_lower)
            if carried:
                found.append((k, kind, wanted))
    return found


def _kept(details: list[_Detail], outputs: Sequence[str]) -> list[bool]:
    words = [{t.lower() for t in tb.tokenise(o, "fr", lower=False)} for o in outputs]
    return [bool(set(wanted) & words[k]) for k, _, wanted in details]


def carried_details(
    sources: Sequence[str], references: Sequence[Sequence[str]], outputs: Sequence[str]
) -> dict[str, Carried]:
    """Names, numbers and colours of the sources that the outputs carry over, counted.

    A detail is counted where a reference carries it over, so the count asks only for
    what a translator did write:

    - ``"names"``: a source word spelt with a capital (not *I*) that a reference writes
      exactly so (*Tom*, *Boston*; French keeps names as they are);
    - ``"numbers"``: a source token holding a digit that a reference writes exactly so;
    - ``"colours"``: an English colour of :data:`attnlib.mt.tatoeba.COLOURS` of which a
      reference holds a French form.

    An output keeps a name or a number if it holds it (any case), a colour if it holds one
    of its French forms. One count per (source, detail): a source naming Tom twice counts once.

    Returns
    -------
    dict of str to Carried
        ``"names"``, ``"numbers"``, ``"colours"``, then ``"all"`` (the three together).
    """
    _check_lists(len(sources), references=references, outputs=outputs)
    details = _details(sources, references)
    kept = _kept(details, outputs)
    found = {
        kind: Carried(
            sum(k for (_, c, _), k in zip(details, kept, strict=True) if c == kind),
            sum(c == kind for _, c, _ in details),
        )
        for kind in ("names", "numbers", "colours")
    }
    found["all"] = Carried(sum(kept), len(details))
    return found


def carried_pairs(
    sources: Sequence[str],
    references: Sequence[Sequence[str]],
    outputs_a: Sequence[str],
    outputs_b: Sequence[str],
) -> PairedDetails:
    """Which of two systems carries over more of the same details (:func:`carried_details`):
    the details one keeps and the other drops, and a sign test on them."""
    _check_lists(len(sources), references=references, outputs_a=outputs_a, outputs_b=outputs_b)
    details = _details(sources, references)
    pairs = list(zip(_kept(details, outputs_a), _kept(details, outputs_b), strict=True))
    a_only = sum(a and not b for a, b in pairs)
    b_only = sum(b and not a for a, b in pairs)
    n = a_only + b_only
    p = sum(math.comb(n, j) for j in range(a_only, n + 1)) / 2**n
    return PairedDetails(a_only, b_only, p)


_PIECE = re.compile(r"\w+")


def pieces(text: str) -> int:
    """Runs of letters and digits in a text: ``l'orchestre`` is 2, ``prouve-le-moi`` 3."""
    return len(_PIECE.findall(text))


def _check_lists(n: int, **lists: Sequence[Any]) -> None:
    for name, xs in lists.items():
        if isinstance(xs, str):
            raise TypeError(f"{name} must be a list with one entry per source, not a string")
        if len(xs) != n:
            raise ValueError(
                f"{name} has {len(xs)} entries but there are {n} sources; "
                "give one per source, in the order of the split"
            )


def sentence_bleus(hypotheses: Sequence[str], references: Sequence[Sequence[str]]) -> list[float]:
    """Smoothed sentence BLEU (:func:`attnlib.mt.scoring.sentence_bleu`) of every hypothesis.

    A ``<unk>`` counts as one wrong word (:func:`attnlib.mt.tatoeba.unk_as_word`), as in the
    corpus scores of ``translation.evaluate``.
    """
    _check_lists(len(hypotheses), references=references)
    pairs = zip(hypotheses, references, strict=True)
    return [scoring.sentence_bleu(tb.unk_as_word(h), list(r)).score for h, r in pairs]


@dataclass(frozen=True)
class Example:
    """One test sentence picked by a rule, with both decodings and their sentence BLEU.

    Attributes
    ----------
    rule : str
        A key of :data:`RULES`.
    index : int
        Position of the source in the split.
    source : str
    references : tuple of str
    greedy, beam : str
        The model's outputs with k = 1 and with the beam.
    bleu_greedy, bleu_beam : float
        Their sentence BLEU against all the references.
    """

    rule: str
    index: int
    source: str
    references: tuple[str, ...]
    greedy: str
    beam: str
    bleu_greedy: float
    bleu_beam: float


def pick_examples(
    sources: Sequence[str],
    references: Sequence[Sequence[str]],
    greedy: Sequence[str],
    beam: Sequence[str],
) -> list[Example]:
    """One example per rule of :data:`RULES`, in that order.

    Parameters
    ----------
    sources : sequence of str
        The English sources of a split (``Evaluation.sources``).
    references : sequence of sequence of str
        All references of each source.
    greedy, beam : sequence of str
        The model's output for each source with k = 1 and with the beam
        (``Evaluation.hypotheses``).

    Returns
    -------
    list of Example
        The ``"<unk>"`` rule is left out when no beam output holds ``<unk>``.
    """
    n = len(sources)
    if n == 0:
        raise ValueError("pick_examples needs at least one source")
    _check_lists(n, references=references, greedy=greedy, beam=beam)
    bg, bb = sentence_bleus(greedy, references), sentence_bleus(beam, references)
    n_src = [tb.words(s, "en") for s in sources]
    n_out = [pieces(h) for h in beam]
    n_ref = [[pieces(r) for r in refs] for refs in references]
    idx = range(n)
    chosen = {
        "lowest BLEU": min(idx, key=lambda i: (bb[i], -n_src[i], i)),
        "beam fixes greedy": min(idx, key=lambda i: (bg[i] - bb[i], i)),
        "beam breaks greedy": min(idx, key=lambda i: (bb[i] - bg[i], i)),
        "longest source": min(idx, key=lambda i: (-n_src[i], i)),
        "over-short": min(idx, key=lambda i: (n_out[i] / max(min(n_ref[i]), 1), i)),
        "over-long": min(idx, key=lambda i: (-n_out[i] / max(max(n_ref[i]), 1), i)),
    }
    unk = [i for i in idx if tb.UNK in beam[i]]
    if unk:
        chosen["<unk>"] = min(unk, key=lambda i: (-n_src[i], i))
    return [
        Example(rule, i, sources[i], tuple(references[i]), greedy[i], beam[i], bg[i], bb[i])
        for rule in RULES
        if (i := chosen.get(rule)) is not None
    ]


@dataclass(frozen=True)
class Disagreement:
    """A human reference scored against the other references of its own source.

    Attributes
    ----------
    index : int
        Position of the source in the split.
    source : str
    reference : str
        The reference scored as if it were a hypothesis.
    others : tuple of str
        The references it is scored against.
    bleu : float
        Its sentence BLEU.
    """

    index: int
    source: str
    reference: str
    others: tuple[str, ...]
    bleu: float


def reference_disagreement(
    sources: Sequence[str], references: Sequence[Sequence[str]]
) -> Disagreement:
    """The reference with the lowest sentence BLEU against its source's other references.

    Among the sources with at least two references, each reference in turn is scored
    against the others; the lowest is returned (ties: the first source, then the first
    reference). It is a translation a person wrote, so what it shows is BLEU's, not a
    model's: a valid translation that no other reference words the same way.

    Raises
    ------
    ValueError
        If no source has two references.
    """
    _check_lists(len(sources), references=references)
    best: Disagreement | None = None
    for i, refs in enumerate(references):
        for j, ref in enumerate(refs if len(refs) >= 2 else ()):
            others = tuple(refs[:j]) + tuple(refs[j + 1 :])
            score = scoring.sentence_bleu(ref, list(others)).score
            if best is None or score < best.bleu:
                best = Disagreement(i, sources[i], ref, others, score)
    if best is None:
        raise ValueError("no source has two references to compare")
    return best


def beam_trace(model: Any, src: Tensor, k: int, steps: int) -> list[tuple[Hypothesis, ...]]:
    """What a beam of size k holds after each of the first ``steps`` steps.

    Entry t - 1 is what :func:`attnlib.decoding.beam_search` returns when cut after
    t steps (``max_len=t``): the search runs exactly as without the cut up to step t,
    so these are its live prefixes at step t (unfinished), plus any hypothesis that
    has already ended with ``<eos>`` and scores among the k best.

    Parameters
    ----------
    model : Seq2Seq
    src : (1, T_x) long
        One source sentence, ``<eos>`` last.
    k : int
        The beam size.
    steps : int
        How many steps to trace, ≥ 1.

    Returns
    -------
    list of tuple of Hypothesis
        Per step, best (by normalised score) first.
    """
    if not isinstance(src, Tensor) or src.dim() != 2 or src.shape[0] != 1:
        shape = tuple(src.shape) if isinstance(src, Tensor) else type(src).__name__
        raise ValueError(f"beam_trace follows one sentence: src must be (1, T_x), got {shape}")
    if isinstance(steps, bool) or not isinstance(steps, int) or steps < 1:
        raise ValueError(f"steps must be a whole number ≥ 1, got {steps!r}")
    return [beam_search(model, src, k, max_len=t)[0].kbest for t in range(1, steps + 1)]


def trace_text(trace: Sequence[Sequence[Hypothesis]], vocab: Vocab) -> str:
    """The trace of :func:`beam_trace` as lines: step, prefix tokens, log p, finished or not."""
    lines = []
    for t, hyps in enumerate(trace, start=1):
        for rank, h in enumerate(hyps, start=1):
            toks = " ".join(vocab.itos[i] for i in h.tokens) + (" <eos>" if h.finished else "")
            lead = f"t = {t}" if rank == 1 else ""
            lines.append(f"{lead:<6} {rank}. log p = {h.log_prob:7.3f}   {toks}")
    return "\n".join(lines)


@dataclass(frozen=True)
class Sensitivity:
    """Mean relative change of the final encoder states when one source word changes.

    ``first_forward`` is the mean of ‖Δ→h_{T_x}‖ / ‖→h_{T_x}‖ when word 1 becomes ``<unk>``;
    the others likewise (``last``: the last word, punctuation not counted;
    ``backward``: ←h_1). ``n`` sentences were measured.
    """

    first_forward: float
    first_backward: float
    last_forward: float
    last_backward: float
    n: int


@torch.no_grad()
def final_state_sensitivity(model: Any, src_vocab: Vocab, sentences: Sequence[str]) -> Sensitivity:
    """How much →h_{T_x} and ←h_1 change when the first or the last word becomes ``<unk>``.

    The bidirectional encoder's final state is [→h_{T_x}; ←h_1]: →h_{T_x} has read the sentence
    left to right and ends on its last token, ←h_1 right to left and ends on word 1.
    Each sentence is encoded as it is, with its first word replaced by ``<unk>`` and
    with its last word replaced; sentences of one word, and those whose first or last
    word already is ``<unk>``, are left out.

    Parameters
    ----------
    model : Seq2Seq
        With the bidirectional GRU encoder.
    src_vocab : Vocab
        The model's English vocabulary (``<unk>`` at id :data:`attnlib.mt.tatoeba.UNK_ID`).
    sentences : sequence of str
        Raw English sentences.

    Returns
    -------
    Sensitivity
    """
    if isinstance(sentences, str):
        raise TypeError("sentences must be a list of sentences; wrap a single one in [ ]")
    d_final = getattr(model.encoder, "d_final", None)
    if not hasattr(model.encoder, "gru_backward") or d_final is None:
        raise ValueError(
            "final_state_sensitivity needs the bidirectional GRU encoder, whose final state "
            "is [→h_{T_x}; ←h_1]"
        )
    rows: list[tuple[list[int], int, int]] = []  # ids, position of word 1, of the last word
    for s in sentences:
        toks = tb.tokenise(s, "en")
        at = [p for p, t in enumerate(toks) if any(ch.isalnum() for ch in t)]
        ids = tb.encode(toks, src_vocab)
        if len(at) >= 2 and tb.UNK_ID not in (ids[at[0]], ids[at[-1]]):
            rows.append((ids, at[0], at[-1]))
    if not rows:
        raise ValueError("no sentence with two known words to change")

    def final(batch: list[list[int]]) -> Tensor:
        width = max(len(r) for r in batch)
        src = torch.tensor([r + [PAD_ID] * (width - len(r)) for r in batch])
        with eval_mode(model):
            return model.encode(src)[1]  # (B, d_final) = [→h_{T_x}; ←h_1]

    def swapped(ids: list[int], p: int) -> list[int]:
        return [*ids[:p], tb.UNK_ID, *ids[p + 1 :]]

    half = d_final // 2
    base = final([ids for ids, _, _ in rows])
    out: dict[str, float] = {}
    for word, new in (
        ("first", final([swapped(ids, p) for ids, p, _ in rows])),
        ("last", final([swapped(ids, p) for ids, _, p in rows])),
    ):
        for direction, part in (("forward", slice(0, half)), ("backward", slice(half, d_final))):
            change = (new[:, part] - base[:, part]).norm(dim=1) / base[:, part].norm(dim=1)
            out[f"{word}_{direction}"] = float(change.mean())
    return Sensitivity(**out, n=len(rows))


def html_table(header: Sequence[str], rows: Sequence[Sequence[str | Sequence[str]]]) -> str:
    """An HTML table; a cell given as a list of strings shows one per line. Text is escaped."""

    def cell(x: str | Sequence[str]) -> str:
        parts = [x] if isinstance(x, str) else list(x)
        return "<td>" + "<br>".join(html.escape(p) for p in parts) + "</td>"

    head = "".join(f"<th>{html.escape(h)}</th>" for h in header)
    body = "".join("<tr>" + "".join(cell(x) for x in row) + "</tr>" for row in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def examples_html(examples: Sequence[Example]) -> str:
    """An HTML table of examples: rule, source, references, greedy and beam with sentence BLEU."""
    return html_table(
        ("rule", "source", "references", "greedy (BLEU)", "beam (BLEU)"),
        [
            (e.rule, e.source, e.references, f"{e.greedy} ({e.bleu_greedy:.0f})",
             f"{e.beam} ({e.bleu_beam:.0f})")
            for e in examples
        ],
    )  # fmt: skip
