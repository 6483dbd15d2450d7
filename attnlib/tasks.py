"""Synthetic sequence-to-sequence tasks whose correct alignment is known.

Every task is generated in code from a seed (nothing is downloaded) and comes
with its own vocabularies and three disjoint splits: ``train`` to fit on,
``valid`` to decide when to stop, and ``test`` to report. A held-out source
never appears in ``train``; for ``"dates"`` even the underlying date does not
(a test date is never seen in training in any surface form).

========== ====================================== ======================= ==========
name       example (source → target)              alignment               tokens
========== ====================================== ======================= ==========
copy       ``hcaje`` → ``hcaje``                  diagonal                characters
reverse    ``hcaje`` → ``ejach``                  anti-diagonal           characters
dates      ``may 3, 1979`` → ``1979-05-03``       reordered blocks        characters
svo_sov    ``the cat sees a dog`` →               the verb moves to the   words
           ``neko ga inu o miru``                 end, particles appear
majority   ``31373`` → ``3``                      diffuse: every          characters
                                                  position counts
========== ====================================== ======================= ==========

Quick start::

    from attnlib.tasks import make_task
    task = make_task("reverse", seed=0)
    print(task.describe())
    src, tgt = task.train[0]                   # tuples of string tokens
    ids = task.src_vocab.encode(src)           # list of int ids, EOS appended
    task.src_vocab.decode(ids)                 # back to the tokens

Conventions
-----------
* Ids 0, 1, 2 are ``<pad>``, ``<bos>``, ``<eos>`` in every vocabulary
  (:data:`PAD_ID`, :data:`BOS_ID`, :data:`EOS_ID`).
* A pair is ``(src_tokens, tgt_tokens)``, two tuples of strings without
  special tokens; :meth:`Vocab.encode` appends ``<eos>``.
* ``Task.src_sep``/``Task.tgt_sep`` join tokens into readable text ("" for
  character tasks, " " for word tasks); :meth:`Task.tokenize` splits text back.
* Lengths count source tokens without ``<eos>``.

See Also
--------
The chapter "A Bahdanau seq2seq, built from parts" (chapters/06_seq2seq) trains
on these tasks; "Reading alignment heatmaps" (chapters/08_heatmaps) reads their
attention maps.
"""

from __future__ import annotations

import datetime as _dt
import random
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "BOS",
    "BOS_ID",
    "EOS",
    "EOS_ID",
    "PAD",
    "PAD_ID",
    "TASKS",
    "Pair",
    "Task",
    "Vocab",
    "make_task",
]

PAD, BOS, EOS = "<pad>", "<bos>", "<eos>"
PAD_ID, BOS_ID, EOS_ID = 0, 1, 2
SPECIALS: tuple[str, ...] = (PAD, BOS, EOS)

Pair = tuple[tuple[str, ...], tuple[str, ...]]
"""One example: ``(src_tokens, tgt_tokens)``."""


# --------------------------------------------------------------------------- Vocab
class Vocab:
    """A fixed token ↔ id mapping with ``<pad>``, ``<bos>``, ``<eos>`` at ids 0, 1, 2.

    Parameters
    ----------
    tokens : iterable of str
        The ordinary tokens, in the order their ids should follow the three
        special ones. Duplicates and special tokens are not allowed.
    name : str
        Used in error messages ("the source vocabulary of dates").

    Examples
    --------
    >>> v = Vocab("abc", name="letters")
    >>> v.encode("cab")
    [5, 3, 4, 2]
    >>> v.decode([5, 3, 4, 2, 0, 0])
    ['c', 'a', 'b']
    """

    pad_id: int = PAD_ID
    bos_id: int = BOS_ID
    eos_id: int = EOS_ID

    def __init__(self, tokens: Iterable[str], name: str = "vocabulary") -> None:
        toks = list(tokens)
        for tok in toks:
            if not isinstance(tok, str) or tok == "":
                raise ValueError(f"{name}: tokens must be non-empty strings, got {tok!r}")
            if tok in SPECIALS:
                raise ValueError(f"{name}: {tok!r} is a special token and is added automatically")
        dupes = sorted(t for t, k in Counter(toks).items() if k > 1)
        if dupes:
            raise ValueError(f"{name}: duplicate tokens {dupes}")
        self.name = name
        self.itos: tuple[str, ...] = (*SPECIALS, *toks)
        self.stoi: dict[str, int] = {t: i for i, t in enumerate(self.itos)}

    def __len__(self) -> int:
        return len(self.itos)

    def __contains__(self, token: object) -> bool:
        return token in self.stoi

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Vocab) and self.itos == other.itos

    def __hash__(self) -> int:
        return hash(self.itos)

    def __repr__(self) -> str:
        shown = " ".join(self.itos[3:13]) + (" …" if len(self) > 13 else "")
        return f"Vocab({self.name!r}, {len(self)} ids: <pad> <bos> <eos> {shown})"

    @property
    def tokens(self) -> tuple[str, ...]:
        """The ordinary tokens (without the three special ones), in id order."""
        return self.itos[len(SPECIALS) :]

    def encode(self, tokens: Iterable[str], *, eos: bool = True) -> list[int]:
        """Map tokens to ids, appending ``<eos>`` unless ``eos=False``.

        Raises
        ------
        ValueError
            If a token is not in the vocabulary; the message names it, its
            position and the tokens that are known.
        """
        ids = []
        for pos, tok in enumerate(tokens):
            idx = self.stoi.get(tok)
            if idx is None:
                known = " ".join(repr(t) for t in self.tokens[:40])
                raise ValueError(
                    f"token {tok!r} at position {pos} is not in the {self.name} "
                    f"(known tokens: {known}{' …' if len(self.tokens) > 40 else ''})"
                )
            ids.append(idx)
        if eos:
            ids.append(self.eos_id)
        return ids

    def decode(self, ids: Iterable[int], *, strip: bool = True) -> list[str]:
        """Map ids back to tokens.

        Parameters
        ----------
        ids : iterable of int
            Python ints, or anything with ``int()`` (numpy or torch scalars, a
            1-D tensor).
        strip : bool
            If True (default), stop at the first ``<eos>`` and drop ``<bos>``
            and ``<pad>``: what is left is the readable sequence. If False,
            every id is shown, special tokens included (for heatmap labels).

        Raises
        ------
        ValueError
            If an id is outside ``0 … len(vocab) - 1``.
        """
        out = []
        for pos, raw in enumerate(ids):
            i = int(raw)
            if not 0 <= i < len(self):
                raise ValueError(
                    f"id {i} at position {pos} is outside the {self.name}, "
                    f"which has ids 0 … {len(self) - 1}"
                )
            if strip:
                if i == self.eos_id:
                    break
                if i in (self.pad_id, self.bos_id):
                    continue
            out.append(self.itos[i])
        return out


# --------------------------------------------------------------------------- Task
@dataclass(frozen=True, eq=False)
class Task:
    """A generated task: vocabularies and three disjoint splits of pairs.

    Attributes
    ----------
    name : str
        One of :data:`TASKS`.
    src_vocab, tgt_vocab : Vocab
    train, valid, test : list of Pair
        ``(src_tokens, tgt_tokens)`` tuples. ``valid`` is for early stopping,
        ``test`` for the numbers a chapter reports; neither overlaps ``train``.
    src_sep, tgt_sep : str
        Separator that joins tokens into readable text ("" or " ").
    params : dict
        The arguments of :func:`make_task` that produced the task, so that
        ``make_task(**task.params)`` rebuilds it exactly.
    """

    name: str
    src_vocab: Vocab
    tgt_vocab: Vocab
    train: list[Pair]
    valid: list[Pair]
    test: list[Pair]
    src_sep: str = ""
    tgt_sep: str = ""
    params: dict[str, Any] = field(default_factory=dict)

    def split(self, name: str) -> list[Pair]:
        """The pairs of split ``name`` ("train", "valid" or "test")."""
        if name not in ("train", "valid", "test"):
            raise ValueError(f"split must be 'train', 'valid' or 'test', got {name!r}")
        return getattr(self, name)

    def src_text(self, tokens: Iterable[str]) -> str:
        """Join source tokens into readable text."""
        return self.src_sep.join(tokens)

    def tgt_text(self, tokens: Iterable[str]) -> str:
        """Join target tokens into readable text."""
        return self.tgt_sep.join(tokens)

    def tokenize(self, text: str) -> tuple[str, ...]:
        """Split a source text typed by hand into tokens (the inverse of :meth:`src_text`)."""
        if not isinstance(text, str):
            raise TypeError(f"text must be a string, got {type(text).__name__}")
        return tuple(text.split()) if self.src_sep == " " else tuple(text)

    def src_lengths(self, split: str = "train") -> tuple[int, int]:
        """Shortest and longest source length (tokens, without ``<eos>``) in a split."""
        lens = [len(s) for s, _ in self.split(split)]
        return min(lens), max(lens)

    def describe(self) -> str:
        """A few lines that say what the task is, with two examples."""
        lo, hi = self.src_lengths("train")
        tlo = min(len(t) for _, t in self.train)
        thi = max(len(t) for _, t in self.train)
        lines = [
            f"task {self.name!r}: {len(self.train)} train / {len(self.valid)} valid / "
            f"{len(self.test)} test pairs",
            f"  source: {lo}–{hi} tokens, vocabulary of {len(self.src_vocab)} ids",
            f"  target: {tlo}–{thi} tokens, vocabulary of {len(self.tgt_vocab)} ids",
        ]
        for src, tgt in self.train[:2]:
            lines.append(f"  {self.src_text(src)!r} → {self.tgt_text(tgt)!r}")
        return "\n".join(lines)

    def __repr__(self) -> str:
        return (
            f"Task({self.name!r}, train={len(self.train)}, valid={len(self.valid)}, "
            f"test={len(self.test)})"
        )


# --------------------------------------------------------------------------- generators
LETTERS = tuple("abcdefghijklmnopqrst")  # 20 symbols for copy / reverse
DIGITS = tuple("0123456789")

Generator = Callable[[random.Random], tuple[Pair, Any]]
"""Draw one example; return it with the key that must not repeat across splits."""


def _random_string(rng: random.Random, alphabet: Sequence[str], lo: int, hi: int) -> tuple:
    return tuple(rng.choice(alphabet) for _ in range(rng.randint(lo, hi)))


def _gen_copy(lo: int, hi: int, alphabet: Sequence[str], reverse: bool) -> Generator:
    def draw(rng: random.Random) -> tuple[Pair, Any]:
        src = _random_string(rng, alphabet, lo, hi)
        return (src, src[::-1] if reverse else src), src

    return draw


def _gen_majority(lo: int, hi: int, alphabet: Sequence[str]) -> Generator:
    def draw(rng: random.Random) -> tuple[Pair, Any]:
        while True:
            src = _random_string(rng, alphabet, lo, hi)
            (top, k1), *rest = Counter(src).most_common(2)
            if not rest or rest[0][1] < k1:  # a unique most frequent symbol
                return (src, (top,)), src

    return draw


MONTHS = (
    "January", "February", "March", "April", "May", "June",
    "July", "August", "September", "October", "November", "December",
)  # fmt: skip

# Surface forms of one date; {D} day, {DD} zero-padded day, {M} month number, {MM}
# zero-padded, {Month}/{month}/{MONTH} name, {Mon}/{mon} three-letter, {Y} year.
DATE_FORMATS = (
    "{D} {Month} {Y}",  # 3 May 1979
    "{D} {month} {Y}",  # 3 may 1979
    "{DD} {Mon} {Y}",  # 03 May 1979
    "{D} {MON} {Y}",  # 3 MAY 1979
    "{Month} {D}, {Y}",  # May 3, 1979
    "{month} {D}, {Y}",  # may 3, 1979
    "{Mon} {D}, {Y}",  # May 3, 1979 / Sep 3, 1979
    "{mon} {DD} {Y}",  # may 03 1979
    "{DD}/{MM}/{Y}",  # 03/05/1979
    "{D}.{M}.{Y}",  # 3.5.1979
    "{DD}.{MM}.{Y}",  # 03.05.1979
    "{Y}/{MM}/{DD}",  # 1979/05/03
)
DATE_FIRST, DATE_LAST = _dt.date(1900, 1, 1), _dt.date(2099, 12, 31)


def format_date(date: _dt.date, fmt: str) -> str:
    """Write ``date`` in one of the :data:`DATE_FORMATS`."""
    name = MONTHS[date.month - 1]
    return fmt.format(
        D=date.day,
        DD=f"{date.day:02d}",
        M=date.month,
        MM=f"{date.month:02d}",
        Month=name,
        month=name.lower(),
        MONTH=name.upper(),
        Mon=name[:3],
        mon=name[:3].lower(),
        MON=name[:3].upper(),
        Y=f"{date.year:04d}",
    )


def _gen_dates() -> Generator:
    n_days = (DATE_LAST - DATE_FIRST).days + 1

    def draw(rng: random.Random) -> tuple[Pair, Any]:
        date = DATE_FIRST + _dt.timedelta(days=rng.randrange(n_days))
        src = format_date(date, rng.choice(DATE_FORMATS))
        return (tuple(src), tuple(date.isoformat())), date  # the key is the date itself

    return draw


def _date_src_tokens() -> list[str]:
    chars = set("0123456789 ,./-")
    for m in MONTHS:
        chars |= set(m) | set(m.lower()) | set(m.upper())
    return sorted(chars)


# English → a Japanese-like SOV language, in miniature. Determiners vanish; the
# particles ga (subject), o (object) and de (place) appear; the verb goes last.
SVO_NOUNS = {
    "cat": "neko", "dog": "inu", "bird": "tori", "fish": "sakana",
    "child": "kodomo", "teacher": "sensei", "student": "gakusei", "doctor": "isha",
}  # fmt: skip
SVO_ADJECTIVES = {
    "big": "ookii", "small": "chiisai", "red": "akai", "black": "kuroi",
    "old": "furui", "young": "wakai",
}  # fmt: skip
SVO_VERBS = {
    "sees": "miru", "eats": "taberu", "likes": "konomu", "helps": "tasukeru",
    "follows": "ou", "calls": "yobu", "finds": "mitsukeru",
}  # fmt: skip
SVO_ADVERBS = {"quickly": "hayaku", "slowly": "yukkuri", "often": "yoku", "quietly": "shizukani"}
SVO_PLACES = {"park": "kouen", "school": "gakkou", "house": "ie", "garden": "niwa"}


def _svo_noun_phrase(rng: random.Random) -> tuple[list[str], list[str]]:
    adjs = rng.sample(sorted(SVO_ADJECTIVES), rng.choice((0, 0, 1, 1, 2)))
    noun = rng.choice(sorted(SVO_NOUNS))
    en = [rng.choice(("the", "a")), *adjs, noun]
    ja = [SVO_ADJECTIVES[a] for a in adjs] + [SVO_NOUNS[noun]]
    return en, ja


def _gen_svo(lo: int, hi: int) -> Generator:
    def draw(rng: random.Random) -> tuple[Pair, Any]:
        while True:
            s_en, s_ja = _svo_noun_phrase(rng)
            o_en, o_ja = _svo_noun_phrase(rng)
            verb = rng.choice(sorted(SVO_VERBS))
            en = [*s_en, verb, *o_en]
            adv_ja: list[str] = []
            place_ja: list[str] = []
            if rng.random() < 0.4:
                adv = rng.choice(sorted(SVO_ADVERBS))
                en.append(adv)
                adv_ja = [SVO_ADVERBS[adv]]
            if rng.random() < 0.4:
                place = rng.choice(sorted(SVO_PLACES))
                en += ["in", "the", place]
                place_ja = [SVO_PLACES[place], "de"]
            ja = [*s_ja, "ga", *place_ja, *o_ja, "o", *adv_ja, SVO_VERBS[verb]]
            if lo <= len(en) <= hi:
                return (tuple(en), tuple(ja)), tuple(en)

    return draw


def _svo_vocabs() -> tuple[list[str], list[str]]:
    en = ["the", "a", "in", *SVO_NOUNS, *SVO_ADJECTIVES, *SVO_VERBS, *SVO_ADVERBS, *SVO_PLACES]
    ja = [
        "ga", "o", "de",
        *SVO_NOUNS.values(), *SVO_ADJECTIVES.values(), *SVO_VERBS.values(),
        *SVO_ADVERBS.values(), *SVO_PLACES.values(),
    ]  # fmt: skip
    return en, ja


TASKS: dict[str, str] = {
    "copy": "copy a string of letters (monotonic alignment: a diagonal)",
    "reverse": "reverse a string of letters (an anti-diagonal)",
    "dates": "normalise a date written in one of 12 forms to YYYY-MM-DD (reordered blocks)",
    "svo_sov": "translate English SVO sentences into a toy Japanese-like SOV language",
    "majority": "output the most frequent digit (diffuse attention is correct)",
}
"""The task names :func:`make_task` accepts, with one line on each."""

_SVO_SHORTEST, _SVO_LONGEST = 5, 13  # source lengths the toy grammar can produce


def make_task(
    name: str,
    *,
    n_train: int = 20_000,
    n_valid: int = 500,
    n_test: int = 1_000,
    min_len: int | None = None,
    max_len: int | None = None,
    seed: int = 0,
) -> Task:
    """Generate one of the synthetic tasks, deterministically from ``seed``.

    Parameters
    ----------
    name : str
        "copy", "reverse", "dates", "svo_sov" or "majority" (see :data:`TASKS`).
    n_train, n_valid, n_test : int
        Number of pairs in each split; all sources are distinct.
    min_len, max_len : int, optional
        Range of source lengths (uniform) for "copy", "reverse" and "majority"
        (default 5–15); a filter on the sentence length for "svo_sov" (the
        grammar makes 5–13 words). "dates" has the lengths of its formats
        (8–18 characters) and accepts neither.
    seed : int
        Same seed, same task: the pairs and their order are reproducible.

    Returns
    -------
    Task

    Raises
    ------
    ValueError
        For an unknown name, impossible lengths, or more distinct pairs than
        the task can produce.

    See Also
    --------
    The chapter "A Bahdanau seq2seq, built from parts" (chapters/06_seq2seq).
    """
    if name not in TASKS:
        raise ValueError(f"unknown task {name!r}; choose one of {', '.join(TASKS)}")
    for label, n in (("n_train", n_train), ("n_valid", n_valid), ("n_test", n_test)):
        if isinstance(n, bool) or not isinstance(n, int) or n < (1 if label == "n_train" else 0):
            least = int(label == "n_train")
            raise ValueError(f"{label} must be a whole number ≥ {least}, got {n!r}")
    params: dict[str, Any] = {
        "name": name, "n_train": n_train, "n_valid": n_valid, "n_test": n_test,
        "min_len": min_len, "max_len": max_len, "seed": seed,
    }  # fmt: skip
    if name == "dates":
        if min_len is not None or max_len is not None:
            raise ValueError(
                "the dates task takes its lengths from its formats (8–18 characters); "
                "do not pass min_len or max_len"
            )
    else:
        default_hi = 13 if name == "svo_sov" else 15
        lo = 5 if min_len is None else min_len
        hi = default_hi if max_len is None else max_len
        if not (isinstance(lo, int) and isinstance(hi, int) and 1 <= lo <= hi):
            raise ValueError(f"need 1 ≤ min_len ≤ max_len, got min_len={lo}, max_len={hi}")
        if name == "svo_sov" and (hi < _SVO_SHORTEST or lo > _SVO_LONGEST):
            raise ValueError(
                f"svo_sov sentences have {_SVO_SHORTEST}–{_SVO_LONGEST} words; "
                f"min_len={lo}, max_len={hi} leaves none"
            )

    sep = ""
    if name in ("copy", "reverse"):
        src_toks = tgt_toks = list(LETTERS)
        draw = _gen_copy(lo, hi, LETTERS, reverse=name == "reverse")
    elif name == "majority":
        src_toks = tgt_toks = list(DIGITS)
        draw = _gen_majority(lo, hi, DIGITS)
    elif name == "dates":
        src_toks, tgt_toks = _date_src_tokens(), list("0123456789-")
        draw = _gen_dates()
    else:
        src_toks, tgt_toks = _svo_vocabs()
        draw = _gen_svo(lo, hi)
        sep = " "

    rng = random.Random(f"attnlib.tasks/{name}/{seed}")
    n_total = n_train + n_valid + n_test
    pairs: list[Pair] = []
    seen: set[Any] = set()
    misses = 0
    while len(pairs) < n_total:
        pair, key = draw(rng)
        if key in seen:
            misses += 1
            if misses > 20 * n_total + 1000:
                raise ValueError(
                    f"could only draw {len(pairs)} distinct {name} pairs, but "
                    f"n_train + n_valid + n_test = {n_total}; ask for fewer or allow longer inputs"
                )
            continue
        seen.add(key)
        pairs.append(pair)
    # Held-out splits first, so that test and valid do not change with n_train.
    test, valid, train = (
        pairs[:n_test],
        pairs[n_test : n_test + n_valid],
        pairs[n_test + n_valid :],
    )
    return Task(
        name=name,
        src_vocab=Vocab(src_toks, name=f"source vocabulary of {name}"),
        tgt_vocab=Vocab(tgt_toks, name=f"target vocabulary of {name}"),
        train=train,
        valid=valid,
        test=test,
        src_sep=sep,
        tgt_sep=sep,
        params=params,
    )
