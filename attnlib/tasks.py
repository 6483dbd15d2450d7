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
The chapter "A Bahdanau seq2seq, built from parts" (chapters/seq2seq) trains
on these tasks; "Reading alignment heatmaps" (chapters/heatmaps) reads their
attention maps.
"""

from __future__ import annotations

import datetime as _dt
import random
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from attnlib.vocab import BOS, BOS_ID, EOS, EOS_ID, PAD, PAD_ID, Pair, Vocab

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
    "TaskSpec",
    "Vocab",
    "make_task",
]


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


@dataclass(frozen=True)
class TaskSpec:
    """How one task is made: what it is, its vocabularies and how to draw one example.

    Attributes
    ----------
    description : str
        One line on the task and the alignment it needs.
    vocabs : callable
        ``vocabs() -> (src_tokens, tgt_tokens)``, the ordinary tokens of each side.
    generator : callable
        ``generator(lo, hi)`` returns a function that draws one example (and the
        key that must not repeat across splits) from a ``random.Random``.
    lengths : (int, int) or None
        Default source lengths (min_len, max_len); None for a task whose
        lengths come from its own formats and that accepts neither.
    length_note : str
        What fixes the lengths of such a task, for its error message.
    grammar : (int, int) or None
        The lengths the task can produce at all (a filter range must meet it).
    sep : str
        "" for character tasks, " " for word tasks.
    """

    description: str
    vocabs: Callable[[], tuple[list[str], list[str]]]
    generator: Callable[[int, int], Generator]
    lengths: tuple[int, int] | None = (5, 15)
    length_note: str = ""
    grammar: tuple[int, int] | None = None
    sep: str = ""


_SVO_SHORTEST, _SVO_LONGEST = 5, 13  # source lengths the toy grammar can produce

TASKS: dict[str, TaskSpec] = {
    "copy": TaskSpec(
        "copy a string of letters (monotonic alignment: a diagonal)",
        lambda: (list(LETTERS), list(LETTERS)),
        lambda lo, hi: _gen_copy(lo, hi, LETTERS, reverse=False),
    ),
    "reverse": TaskSpec(
        "reverse a string of letters (an anti-diagonal)",
        lambda: (list(LETTERS), list(LETTERS)),
        lambda lo, hi: _gen_copy(lo, hi, LETTERS, reverse=True),
    ),
    "dates": TaskSpec(
        "normalise a date written in one of 12 forms to YYYY-MM-DD (reordered blocks)",
        lambda: (_date_src_tokens(), list("0123456789-")),
        lambda lo, hi: _gen_dates(),
        lengths=None,
        length_note="8–18 characters",
    ),
    "svo_sov": TaskSpec(
        "translate English SVO sentences into a toy Japanese-like SOV language",
        _svo_vocabs,
        _gen_svo,
        lengths=(5, 13),
        grammar=(_SVO_SHORTEST, _SVO_LONGEST),
        sep=" ",
    ),
    "majority": TaskSpec(
        "output the most frequent digit (diffuse attention is correct)",
        lambda: (list(DIGITS), list(DIGITS)),
        lambda lo, hi: _gen_majority(lo, hi, DIGITS),
    ),
}
"""The tasks :func:`make_task` builds, by name: the one registry of tasks."""


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
    The chapter "A Bahdanau seq2seq, built from parts" (chapters/seq2seq).
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
    spec = TASKS[name]
    lo, hi = 0, 0
    if spec.lengths is None:
        if min_len is not None or max_len is not None:
            raise ValueError(
                f"the {name} task takes its lengths from its formats ({spec.length_note}); "
                "do not pass min_len or max_len"
            )
    else:
        lo = spec.lengths[0] if min_len is None else min_len
        hi = spec.lengths[1] if max_len is None else max_len
        if not (isinstance(lo, int) and isinstance(hi, int) and 1 <= lo <= hi):
            raise ValueError(f"need 1 ≤ min_len ≤ max_len, got min_len={lo}, max_len={hi}")
        if spec.grammar is not None and (hi < spec.grammar[0] or lo > spec.grammar[1]):
            raise ValueError(
                f"{name} sentences have {spec.grammar[0]}–{spec.grammar[1]} words; "
                f"min_len={lo}, max_len={hi} leaves none"
            )
    src_toks, tgt_toks = spec.vocabs()
    draw = spec.generator(lo, hi)
    sep = spec.sep

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
