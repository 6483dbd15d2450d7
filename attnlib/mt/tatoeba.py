"""Real English→French sentence pairs (Tatoeba), from text to padded id tensors.

The course's toy tasks (:mod:`attnlib.tasks`) are generated in code; this module
turns the 76,037 English–French pairs shipped in ``attnlib/mt/data`` into the same
kind of batches, one explicit step at a time:

1. :func:`load_pairs` reads the file (the shipped one, or the newer
   manythings.org release with its attribution column) into :class:`TextPair` s.
2. :func:`normalise` fixes the typography that would otherwise split one word
   into several tokens: Unicode composition, curly apostrophes, non-breaking
   spaces, «» and “” quotes, runs of spaces. :func:`normalisation_report`
   counts the lines each rule changes.
3. :func:`tokenise` splits a sentence into lower-cased tokens; French elision
   comes out as ``l' homme``, ``j' ai``, ``qu' il``. :func:`detokenise` is its
   inverse, for scoring a model's output with sacrebleu.
4. :func:`split` holds out whole English sentences: a test source is never seen
   in training, and all its French references stay together.
5. :func:`build_vocab` keeps the tokens seen at least ``min_freq`` times and
   maps the others to ``<unk>``; :func:`unk_share` measures how many held-out
   tokens that loses.
6. :func:`batches` groups pairs of similar source length into padded batches
   that :class:`attnlib.models.Seq2Seq` and :func:`attnlib.train.train` accept.

Quick start::

    from attnlib.mt import tatoeba as tb
    pairs = tb.load_pairs()                          # 76,037 TextPair(en, fr, attribution)
    data = tb.split(pairs, seed=0)                   # by distinct English sentence
    train = tb.tokenise_pairs(data.train)            # [(("go", "."), ("va", "!")), …]
    src_v = tb.build_vocab([s for s, _ in train], min_freq=2, name="English vocabulary")
    tgt_v = tb.build_vocab([t for _, t in train], min_freq=2, name="French vocabulary")
    enc = tb.encode_each(train, src_v, tgt_v)        # ids, <eos> appended, <unk> for rare tokens
    for batch in tb.batches(enc, batch_size=64, seed=0):
        logits, alpha = model(batch.src, batch.tgt_in)

Decisions
---------
**Unicode: NFC, not NFKC.** NFC only composes letters with their accents
(``e`` + U+0301 → ``é``), which never changes what a reader sees. NFKC also
folds "compatibility" characters: it would turn the narrow no-break spaces of
French typography into spaces, which we want, but also ``m²`` into ``m2``,
``½`` into ``1⁄2`` and ``…`` into ``...`` without a word. Every change beyond
NFC is a named rule of its own here, so the chapter can count it and a reader
can see it.

**Tokenizer: sacremoses (the Moses tokenizer), not a home-made regex.** Moses
is the tokenizer machine translation research has used for twenty years and
sacremoses is its maintained Python port. It already knows the French rules
(elision split after the apostrophe: ``qu'il`` → ``qu' il``; ``-`` kept inside
``est-ce``) and the English ones (``don't`` → ``don 't``, ``U.S.A.`` kept
whole), and it comes with the matching *detokenizer*, which sacrebleu needs:
BLEU must be computed on detokenised text with sacrebleu's own tokenisation, or
the numbers cannot be compared with anyone else's. A regex of our own would be
faster (Moses takes 5–7 s for all 76k pairs on a 2-core machine; a second pass
takes well under a second, as results are cached) but would need a detokenizer
of our own too, with French spacing rules, and neither would be standard. We
escape nothing (``escape=False``: ``'`` stays ``'``, not ``&apos;``) and mend
one Moses quirk: ``aujourd'hui`` is one word.

**Lower case.** :func:`tokenise` lower-cases by default: on 76k short sentences
"Je" (first word) and "je" (elsewhere) would otherwise be two tokens with
half the counts each, and most sentence-initial words would be rare. The
model therefore writes lower case; ``translation`` restores the case of its
output (a capital first letter, and each word's usual spelling inside training
sentences, e.g. ``Tom``, ``Paris``) before scoring, so BLEU stays
case-sensitive (the signature says ``case:mixed``). Pass ``lower=False`` to keep case.

**Malformed lines are errors, not skipped.** The shipped file has none; a
line with the wrong number of columns or an empty side in a file you point
:func:`load_pairs` at means the file is not what you think it is, and silently
dropping lines would change the split. The error names the file and the line
number. Empty lines (a trailing newline, say) are not pairs and are skipped.

**Unknown words.** :class:`attnlib.vocab.Vocab` has only ``<pad>``, ``<bos>``
and ``<eos>``; the vocabularies built here put ``<unk>`` first among the
ordinary tokens, so it always has id :data:`UNK_ID` = 3, and
:func:`encode` maps every token the vocabulary lacks to it.

See Also
--------
The Part IV chapter "From text to tensors" teaches this module; the data's
provenance and licence are in ``attnlib/mt/data/README.md``.
"""

from __future__ import annotations

import dataclasses
import gzip
import random
import re
import unicodedata
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from functools import cache, lru_cache
from importlib import resources
from pathlib import Path
from typing import Any, Literal, NamedTuple

import torch

from attnlib.train import Batch
from attnlib.vocab import EOS_ID, PAD_ID, SPECIALS, Vocab

__all__ = [
    "ATTRIBUTION",
    "COLOURS",
    "NORMALISATION_RULES",
    "UNK",
    "UNK_ID",
    "UNK_SCORED",
    "EncodedPair",
    "Split",
    "TextPair",
    "TokenPair",
    "batches",
    "build_vocab",
    "count_words",
    "data_path",
    "detokenise",
    "encode",
    "encode_each",
    "group_references",
    "load_pairs",
    "normalisation_report",
    "normalise",
    "split",
    "tokenise",
    "tokenise_pairs",
    "unk_as_word",
    "unk_share",
    "words",
]

Lang = Literal["en", "fr"]
LANGS: tuple[str, ...] = ("en", "fr")

ATTRIBUTION = (
    "English–French sentence pairs from the Tatoeba Project (tatoeba.org), "
    "CC-BY 2.0 FR, via manythings.org/anki"
)
"""The credit the licence asks for, wherever these pairs are shown or passed on."""

UNK = "<unk>"
UNK_SCORED = "UNK"
"""How a ``<unk>`` the model writes is scored (:func:`unk_as_word`): one token, which
sacrebleu's 13a tokenizer keeps whole (it would cut the text ``<unk>`` into ``<``, ``unk``,
``>``: three wrong words for one) and which no French reference contains."""
UNK_ID = len(SPECIALS)  # 3: the first ordinary token of every vocabulary built here
"""Id of ``<unk>`` in every vocabulary made by :func:`build_vocab`."""


class TextPair(NamedTuple):
    """One line of the file: an English sentence and one French translation.

    Attributes
    ----------
    en, fr : str
        The sentences exactly as in the file (not yet normalised).
    attribution : str
        The third column of the newer release ("CC-BY 2.0 (France)
        Attribution: tatoeba.org #… (user) & #… (user)"), or "" for the
        two-column file shipped with the course.
    """

    en: str
    fr: str
    attribution: str = ""


TokenPair = tuple[tuple[str, ...], tuple[str, ...]]
"""``(src_tokens, tgt_tokens)``: English and French tokens (the course's ``Pair``)."""

EncodedPair = tuple[list[int], list[int]]
"""``(src_ids, tgt_ids)``, each with ``<eos>`` appended (as :meth:`Vocab.encode` does)."""


def _check_lang(lang: object) -> None:
    if lang not in LANGS:
        raise ValueError(f"lang must be 'en' (English, the source) or 'fr' (French), got {lang!r}")


# --------------------------------------------------------------------------- loading
def data_path() -> Path:
    """Path of the shipped ``eng-fra.tsv.gz`` (inside the installed package)."""
    return Path(str(resources.files("attnlib.mt.data").joinpath("eng-fra.tsv.gz")))


def _read_text(path: Path) -> str:
    raw = path.read_bytes()
    if raw[:2] == b"\x1f\x8b":  # gzip magic number, whatever the file is called
        try:
            raw = gzip.decompress(raw)
        except (OSError, EOFError) as err:
            raise ValueError(
                f"{path} looks gzip-compressed but cannot be unpacked: {err}"
            ) from None
    try:
        return raw.decode("utf-8-sig")  # -sig: a byte-order mark, if any, is not text
    except UnicodeDecodeError as err:
        line = raw[: err.start].count(b"\n") + 1
        raise ValueError(f"{path}, line {line}: not UTF-8 text ({err.reason})") from None


def load_pairs(path: str | Path | None = None) -> list[TextPair]:
    """Read English–French pairs, one ``English<TAB>French`` line each.

    Parameters
    ----------
    path : str or Path, optional
        A tab-separated file, gzip-compressed or plain (told apart by its
        first bytes, not its name). Two formats are accepted: the older
        two-column release shipped with the course, and the newer
        manythings.org release with a third, attribution column. Default: the
        shipped ``attnlib/mt/data/eng-fra.tsv.gz``.

    Returns
    -------
    list of TextPair
        In file order; the text is not normalised (see :func:`normalise`).

    Raises
    ------
    FileNotFoundError
        If ``path`` does not exist.
    ValueError
        For a line with fewer than 2 or more than 3 tab-separated columns, an
        empty English or French side, or bytes that are not UTF-8. The message
        names the file and the line number. Empty lines are skipped.

    See Also
    --------
    The chapter "From text to tensors" (Part IV).
    """
    p = data_path() if path is None else Path(path)
    if not p.is_file():
        raise FileNotFoundError(f"no file of sentence pairs at {p}")
    pairs: list[TextPair] = []
    for number, line in enumerate(_read_text(p).splitlines(), start=1):
        if line.strip() == "":
            continue
        cols = line.split("\t")
        if not 2 <= len(cols) <= 3:
            raise ValueError(
                f"{p}, line {number}: expected 'English<TAB>French' or "
                f"'English<TAB>French<TAB>attribution', found {len(cols)} column(s): {line[:80]!r}"
            )
        en, fr = cols[0].strip(), cols[1].strip()
        for side, text in (("English", en), ("French", fr)):
            if text == "":
                raise ValueError(f"{p}, line {number}: the {side} sentence is empty: {line[:80]!r}")
        pairs.append(TextPair(en, fr, cols[2].strip() if len(cols) == 3 else ""))
    if not pairs:
        raise ValueError(f"{p} holds no sentence pairs")
    return pairs


# --------------------------------------------------------------------------- normalisation
_APOSTROPHES = "\u2019\u2018\u02bc\u2032\u0060\u00b4"  # ’ ‘ ʼ ′ ` ´
_DOUBLE_QUOTES = "\u00ab\u00bb\u201c\u201d\u201e\u201f\u2033"  # « » “ ” „ ‟ ″
_HYPHENS = "\u2010\u2011"  # ‐ ‑ (the en and em dashes are punctuation and stay)
_APOS_TABLE = str.maketrans(dict.fromkeys(_APOSTROPHES, "'"))
_QUOTE_TABLE = str.maketrans(dict.fromkeys(_DOUBLE_QUOTES, '"'))
_HYPHEN_TABLE = str.maketrans(dict.fromkeys(_HYPHENS, "-"))
_OTHER_SPACE = re.compile(r"[^\S\n\t ]|[\u200b\u2060\ufeff]")  # NBSP, narrow NBSP, thin…; ZW
_RUNS = re.compile(r"\s+")


def _spaces(text: str) -> str:
    # Zero-width characters vanish; every other Unicode space becomes a plain one.
    return _OTHER_SPACE.sub(lambda m: "" if m.group() in "\u200b\u2060\ufeff" else " ", text)


NORMALISATION_RULES: tuple[tuple[str, Callable[[str], str]], ...] = (
    ("Unicode NFC", lambda s: unicodedata.normalize("NFC", s)),
    ("curly apostrophes → '", lambda s: s.translate(_APOS_TABLE)),
    ('«» and “” → "', lambda s: s.translate(_QUOTE_TABLE)),
    ("Unicode hyphens → -", lambda s: s.translate(_HYPHEN_TABLE)),
    ("ellipsis … → ...", lambda s: s.replace("\u2026", "...")),
    ("no-break and other spaces → space", _spaces),
    ("collapse whitespace", lambda s: _RUNS.sub(" ", s).strip()),
)
"""The rules :func:`normalise` applies, in order, as ``(name, function)``."""


def normalise(text: str, lang: Lang) -> str:
    """Clean up the typography of one sentence, before tokenising it.

    The rules, in order (:data:`NORMALISATION_RULES`):

    1. Unicode NFC: an accent typed as a separate combining mark is composed
       with its letter (``e`` + U+0301 → ``é``), so one word has one spelling.
    2. Curly and other typographic apostrophes ``’ ‘ ʼ`` → ``'``
       (``C’est`` → ``C'est``; the data has both, and ``J‘aime`` too).
    3. Double quotes ``« » “ ” „`` → ``"``: one quote token for both languages
       (``Dis : « oui »`` → ``Dis : " oui "``).
    4. Unicode hyphens ``‐ ‑`` → ``-`` (``rendez‐vous`` → ``rendez-vous``).
    5. Ellipsis ``…`` → ``...``.
    6. No-break space (U+00A0), narrow no-break space (U+202F, before French
       ``! ? : ;``), thin space and the other Unicode spaces → a plain space;
       zero-width spaces are removed.
    7. Runs of whitespace → one space; none at either end.

    The same rules serve English and French; ``lang`` is checked so that a
    caller states which side a sentence is on, as :func:`tokenise` needs.
    Applying :func:`normalise` twice changes nothing.

    Parameters
    ----------
    text : str
    lang : {"en", "fr"}

    Returns
    -------
    str

    See Also
    --------
    normalisation_report : how many lines of a corpus each rule changes.
    The chapter "From text to tensors" (Part IV).
    """
    if not isinstance(text, str):
        raise TypeError(f"text must be a string, got {type(text).__name__}")
    _check_lang(lang)
    for _, rule in NORMALISATION_RULES:
        text = rule(text)
    return text


@dataclass(frozen=True)
class RuleCount:
    """How many lines one normalisation rule changed, with one example."""

    rule: str
    lines: int
    example: tuple[str, str] | None  # (before, after) of the first line it changed


def normalisation_report(texts: Iterable[str], lang: Lang) -> list[RuleCount]:
    """Count the lines each rule of :func:`normalise` changes, applied in order.

    A line counts for a rule if that rule, applied to the output of the rules
    before it, changes the line. The counts say what normalisation does to a
    corpus, e.g. ``normalisation_report((p.fr for p in pairs), "fr")``.

    Returns
    -------
    list of RuleCount
        One per rule of :data:`NORMALISATION_RULES`, in order.
    """
    _check_lang(lang)
    counts = [0] * len(NORMALISATION_RULES)
    examples: list[tuple[str, str] | None] = [None] * len(NORMALISATION_RULES)
    for text in texts:
        for k, (_, rule) in enumerate(NORMALISATION_RULES):
            new = rule(text)
            if new != text:
                counts[k] += 1
                if examples[k] is None:
                    examples[k] = (text, new)
            text = new
    return [
        RuleCount(name, n, ex)
        for (name, _), n, ex in zip(NORMALISATION_RULES, counts, examples, strict=True)
    ]


# --------------------------------------------------------------------------- tokenisation
@cache
def _moses(lang: str) -> tuple[Any, Any]:
    from sacremoses import (  # type: ignore[import-untyped]  # no stubs
        MosesDetokenizer,
        MosesTokenizer,
    )

    return MosesTokenizer(lang=lang), MosesDetokenizer(lang=lang)


def _tokenise_cached(text: str, lang: Lang, lower: bool) -> tuple[str, ...]:
    out = _tokenise_cased(text, lang)  # one Moses pass serves both cases
    return tuple(t.lower() for t in out) if lower else out


@lru_cache(maxsize=1 << 18)
def _tokenise_cased(text: str, lang: Lang) -> tuple[str, ...]:
    tok, _ = _moses(lang)
    out: list[str] = tok.tokenize(normalise(text, lang), escape=False)
    if lang == "fr":  # Moses splits after any French apostrophe; one word has one inside it
        k = 0
        while k < len(out) - 1:
            if out[k].lower() == "aujourd'" and out[k + 1].lower() == "hui":
                out[k : k + 2] = [out[k] + out[k + 1]]
            k += 1
    return tuple(out)


def tokenise(text: str, lang: Lang, *, lower: bool = True) -> tuple[str, ...]:
    """Normalise and split one sentence into tokens (Moses rules, lower case).

    French elision is split after the apostrophe, which stays on the first
    part (``l'homme`` → ``l' homme``, ``j'ai`` → ``j' ai``, ``qu'il`` →
    ``qu' il``); English clitics keep their apostrophe in front (``don't`` →
    ``don 't``, ``Tom's`` → ``tom 's``). Punctuation is split off; hyphenated
    words (``est-ce``, ``rendez-vous``) stay whole. The result depends only on
    the arguments.

    Parameters
    ----------
    text : str
        A sentence; :func:`normalise` is applied first.
    lang : {"en", "fr"}
    lower : bool
        Lower-case the tokens (default; see the module notes on why).

    Returns
    -------
    tuple of str
        Empty for a text with nothing but whitespace.

    See Also
    --------
    detokenise : tokens back to text, for sacrebleu.
    The chapter "From text to tensors" (Part IV).
    """
    if not isinstance(text, str):
        raise TypeError(f"text must be a string, got {type(text).__name__}")
    _check_lang(lang)
    return _tokenise_cached(text, lang, bool(lower))


def detokenise(tokens: Iterable[str], lang: Lang) -> str:
    """Join tokens into text the way the language writes it (Moses detokenizer).

    ``detokenise(("qu'", "il", "vienne", "!"), "fr") == "qu'il vienne !"``: the
    inverse of :func:`tokenise` up to case and normalisation. Use it on a
    model's output before scoring with sacrebleu.
    """
    _check_lang(lang)
    toks = list(tokens)
    for k, t in enumerate(toks):
        if not isinstance(t, str):
            raise TypeError(f"token {k} must be a string, got {type(t).__name__}")
    _, detok = _moses(lang)
    return str(detok.detokenize(toks))


def count_words(tokens: Iterable[str]) -> int:
    """Words among tokens: those holding a letter or a digit (punctuation is not a word).

    ``I'm`` is the two tokens ``i 'm``, so two words; ``!`` is none.
    """
    return sum(any(ch.isalnum() for ch in t) for t in tokens)


def words(sentence: str, lang: Lang = "en") -> int:
    """Words of a sentence: :func:`count_words` of its tokens.

    The unit of source length on the English–French pairs: the length buckets of
    :func:`attnlib.mt.translation.evaluate` (:data:`attnlib.mt.translation.BUCKET_EDGES`)
    and ``Recipe.max_src_len`` count English words.
    """
    return count_words(tokenise(sentence, lang))


def tokenise_pairs(pairs: Iterable[TextPair], *, lower: bool = True) -> list[TokenPair]:
    """Tokenise English and French of every pair: ``[(src_tokens, tgt_tokens), …]``.

    Raises
    ------
    ValueError
        If a side has no token left (a sentence of spaces only).
    """
    out: list[TokenPair] = []
    for k, p in enumerate(pairs):
        src, tgt = tokenise(p.en, "en", lower=lower), tokenise(p.fr, "fr", lower=lower)
        if not src or not tgt:
            raise ValueError(f"pair {k} ({p.en!r} → {p.fr!r}) has a side with no tokens")
        out.append((src, tgt))
    return out


# --------------------------------------------------------------------------- split
def _source_key(en: str) -> str:
    """What makes two English sentences 'the same source': text after normalise, any case."""
    return normalise(en, "en").casefold()


def group_references(pairs: Iterable[TextPair]) -> list[tuple[str, list[str]]]:
    """Group pairs by English sentence: ``[(en, [fr_1, fr_2, …]), …]`` in first-seen order.

    The French sentences of one source are its references for multi-reference
    BLEU. Sources are the same if they agree after :func:`normalise` and case
    folding; the first spelling met is the one returned.
    """
    groups: dict[str, tuple[str, list[str]]] = {}
    for p in pairs:
        key = _source_key(p.en)
        if key not in groups:
            groups[key] = (p.en, [])
        groups[key][1].append(p.fr)
    return list(groups.values())


@dataclass(frozen=True)
class Split:
    """Pairs split three ways by distinct English sentence.

    Attributes
    ----------
    train, valid, test : list of TextPair
        In file order. No English sentence is in two of them, and every
        translation of a held-out sentence is in the same split.
    seed : int
    """

    train: list[TextPair]
    valid: list[TextPair]
    test: list[TextPair]
    seed: int

    def sources(self, name: str) -> int:
        """Number of distinct English sentences in split ``name``."""
        return len(group_references(self._get(name)))

    def references(self, name: str) -> list[tuple[str, list[str]]]:
        """``[(en, [fr references…]), …]`` of split ``name``, for multi-reference BLEU."""
        return group_references(self._get(name))

    def _get(self, name: str) -> list[TextPair]:
        if name not in ("train", "valid", "test"):
            raise ValueError(f"split must be 'train', 'valid' or 'test', got {name!r}")
        return list(getattr(self, name))

    def __repr__(self) -> str:
        return (
            f"Split(seed={self.seed}: train {len(self.train)} pairs, valid {len(self.valid)}, "
            f"test {len(self.test)} pairs)"
        )


def split(
    pairs: Sequence[TextPair],
    seed: int = 0,
    test_sources: int = 2000,
    valid_sources: int = 1000,
) -> Split:
    """Hold out whole English sentences, deterministically from ``seed``.

    The distinct English sentences (same after :func:`normalise`, any case)
    are shuffled with a generator seeded by ``seed`` alone; the first
    ``test_sources`` go to test, the next ``valid_sources`` to valid, the rest
    to train. Every pair follows its English sentence, so a test source is
    never seen in training and keeps all its French references. Because the
    file is sorted by length and the choice is uniform, the held-out splits
    have the length profile of the whole.

    Parameters
    ----------
    pairs : sequence of TextPair
    seed : int
    test_sources, valid_sources : int
        Distinct English sentences to hold out for test and for validation.

    Returns
    -------
    Split

    Raises
    ------
    ValueError
        If the counts are not whole numbers (test ≥ 1, valid ≥ 0) or leave no
        source for training.

    See Also
    --------
    The chapter "From text to tensors" (Part IV).
    """
    for label, n, least in (("test_sources", test_sources, 1), ("valid_sources", valid_sources, 0)):
        if isinstance(n, bool) or not isinstance(n, int) or n < least:
            raise ValueError(f"{label} must be a whole number ≥ {least}, got {n!r}")
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise ValueError(f"seed must be a whole number, got {seed!r}")
    keys = [_source_key(p.en) for p in pairs]
    distinct = list(dict.fromkeys(keys))  # first-seen order: independent of set hashing
    if test_sources + valid_sources >= len(distinct):
        raise ValueError(
            f"the pairs have {len(distinct)} distinct English sentences; holding out "
            f"test_sources={test_sources} + valid_sources={valid_sources} leaves none to train on"
        )
    random.Random(f"attnlib.tatoeba/split/{seed}").shuffle(distinct)
    where = dict.fromkeys(distinct[:test_sources], "test")
    where.update(dict.fromkeys(distinct[test_sources : test_sources + valid_sources], "valid"))
    parts: dict[str, list[TextPair]] = {"train": [], "valid": [], "test": []}
    for p, key in zip(pairs, keys, strict=True):
        parts[where.get(key, "train")].append(p)
    return Split(parts["train"], parts["valid"], parts["test"], seed)


# --------------------------------------------------------------------------- vocabulary
def build_vocab(
    token_lists: Iterable[Sequence[str]], min_freq: int = 1, *, name: str = "vocabulary"
) -> Vocab:
    """A :class:`Vocab` of the tokens seen at least ``min_freq`` times, plus ``<unk>``.

    Ids: ``<pad>``, ``<bos>``, ``<eos>`` = 0, 1, 2 as everywhere in the course,
    ``<unk>`` = 3 (:data:`UNK_ID`), then the kept tokens from the most to the
    least frequent (ties in alphabetical order, so the ids are reproducible).
    Build it on the training split only: a vocabulary that has seen the test
    set hides exactly the unknown words the test set is there to reveal.

    Parameters
    ----------
    token_lists : iterable of sequences of str
        Tokenised sentences of one language.
    min_freq : int
        Keep a token seen at least this many times (1 keeps them all).
    name : str
        For error messages ("English vocabulary").

    Returns
    -------
    Vocab

    See Also
    --------
    encode : tokens to ids, rare tokens to ``<unk>``.
    unk_share : the fraction of held-out tokens that become ``<unk>``.
    """
    if isinstance(min_freq, bool) or not isinstance(min_freq, int) or min_freq < 1:
        raise ValueError(f"min_freq must be a whole number ≥ 1, got {min_freq!r}")
    counts: Counter[str] = Counter()
    for k, toks in enumerate(token_lists):
        if isinstance(toks, str):
            raise TypeError(f"sentence {k} is a string; pass lists of tokens (see tokenise)")
        counts.update(toks)
    for special in (*SPECIALS, UNK):
        if special in counts:
            raise ValueError(f"{name}: the token {special!r} is reserved and cannot come from text")
    kept = sorted((t for t, n in counts.items() if n >= min_freq), key=lambda t: (-counts[t], t))
    return Vocab([UNK, *kept], name=name)


def _check_unk(vocab: Vocab) -> None:
    if not isinstance(vocab, Vocab):
        raise TypeError(f"expected a Vocab, got {type(vocab).__name__}")
    if len(vocab) <= UNK_ID or vocab.itos[UNK_ID] != UNK:
        raise ValueError(f"the {vocab.name} has no {UNK} at id {UNK_ID}; build it with build_vocab")


def encode(tokens: Iterable[str], vocab: Vocab, *, eos: bool = True) -> list[int]:
    """Token ids under ``vocab``, unknown tokens as ``<unk>`` (id 3), ``<eos>`` appended."""
    _check_unk(vocab)
    stoi = vocab.stoi
    ids = [stoi.get(t, UNK_ID) for t in tokens]
    if eos:
        ids.append(EOS_ID)
    return ids


def encode_each(
    pairs: Iterable[TokenPair], src_vocab: Vocab, tgt_vocab: Vocab
) -> list[EncodedPair]:
    """Encode each ``(src_tokens, tgt_tokens)`` pair with :func:`encode` (``<eos>`` on both sides).

    The pairs stay a list of id lists, of their own lengths: :func:`batches` pads them into
    :class:`attnlib.train.Batch` es (``attnlib.train.encode_pairs`` pads a toy task's pairs
    into one).
    """
    _check_unk(src_vocab)
    _check_unk(tgt_vocab)
    return [(encode(s, src_vocab), encode(t, tgt_vocab)) for s, t in pairs]


def unk_share(vocab: Vocab, token_lists: Iterable[Sequence[str]]) -> float:
    """Fraction of the tokens in ``token_lists`` that ``vocab`` maps to ``<unk>``.

    Measured on held-out sentences, this is what a frequency cut-off costs:
    the share of test words the model cannot read (source side) or can
    never produce (target side). Special tokens are not counted.
    """
    _check_unk(vocab)
    n = unk = 0
    for toks in token_lists:
        n += len(toks)
        unk += sum(t not in vocab.stoi for t in toks)
    if n == 0:
        raise ValueError("unk_share needs at least one token")
    return unk / n


# --------------------------------------------------------------------------- batches
def _make_batch(encoded: Sequence[EncodedPair], idx: list[int]) -> Batch:
    batch = Batch.of([encoded[i][0] for i in idx], [encoded[i][1] for i in idx])
    return dataclasses.replace(batch, index=torch.tensor(idx, dtype=torch.long))


def batches(
    encoded_pairs: Sequence[EncodedPair], batch_size: int, seed: int | None = 0
) -> Iterator[Batch]:
    """Padded batches of pairs with similar source lengths, in a seeded order.

    The pairs are shuffled (seed), sorted by source length (stable, so equal
    lengths stay shuffled), cut into runs of ``batch_size`` and the runs
    shuffled again: each batch has sources of nearly one length, so little
    padding is computed, and the order still changes from epoch to epoch if
    the seed does. Every pair is in exactly one batch; the last batch of a
    length may be smaller. ``seed=None`` keeps the sorted order (for
    evaluation).

    Parameters
    ----------
    encoded_pairs : sequence of (src_ids, tgt_ids)
        From :func:`encode_each`: non-empty id lists ending in ``<eos>``.
    batch_size : int
    seed : int or None

    Yields
    ------
    attnlib.train.Batch
        ``src (B, T_x)``, ``tgt_in``/``tgt_out (B, T_y)``, ``mask (B, T_x)``:
        what ``Seq2Seq.forward(batch.src, batch.tgt_in)`` and the loss of
        :func:`attnlib.train.train` take, padded with ``<pad>`` (id 0); ``index``
        (B,), the rows' positions in ``encoded_pairs``.

    Raises
    ------
    ValueError
        For no pairs, a batch size below 1, or a pair whose ids are empty, do
        not end in ``<eos>`` or contain ``<pad>``.

    See Also
    --------
    The chapter "From text to tensors" (Part IV).
    """
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
        raise ValueError(f"batch_size must be a whole number ≥ 1, got {batch_size!r}")
    if len(encoded_pairs) == 0:
        raise ValueError("batches needs at least one encoded pair")
    for k, (src, tgt) in enumerate(encoded_pairs):
        if len(src) < 2:
            raise ValueError(
                f"pair {k}: the source ids {list(src)} hold no token before <eos>; "
                "each source needs T_x ≥ 1 token"
            )
        for side, ids in (("source", src), ("target", tgt)):
            if ids[-1] != EOS_ID or PAD_ID in ids:
                raise ValueError(
                    f"pair {k}: the {side} ids must end in <eos> (id {EOS_ID}) and hold no "
                    f"<pad> (id {PAD_ID}); got {list(ids)} (use encode_each)"
                )
    order = list(range(len(encoded_pairs)))
    rng = random.Random(f"attnlib.tatoeba/batches/{seed}") if seed is not None else None
    if rng is not None:
        rng.shuffle(order)
    order.sort(key=lambda i: len(encoded_pairs[i][0]))
    runs = [order[j : j + batch_size] for j in range(0, len(order), batch_size)]
    if rng is not None:
        rng.shuffle(runs)
    for run in runs:
        yield _make_batch(encoded_pairs, run)


#: English colours and their French forms (every gender and number): the course's counts of
#: colours carried over (:func:`attnlib.mt.examples.carried_details`) and of adjectives placed
#: after their noun (:data:`attnlib.mt.alignments.ADJECTIVES`).
COLOURS: dict[str, tuple[str, ...]] = {
    "red": ("rouge", "rouges"),
    "blue": ("bleu", "bleue", "bleus", "bleues"),
    "green": ("vert", "verte", "verts", "vertes"),
    "white": ("blanc", "blanche", "blancs", "blanches"),
    "black": ("noir", "noire", "noirs", "noires"),
    "yellow": ("jaune", "jaunes"),
    "brown": ("brun", "brune", "bruns", "brunes", "marron"),
    "grey": ("gris", "grise", "grises"),
    "gray": ("gris", "grise", "grises"),
    "pink": ("rose", "roses"),
    "purple": ("violet", "violette", "violets", "violettes"),
}


def unk_as_word(text: str) -> str:
    """``text`` with every ``<unk>`` written as :data:`UNK_SCORED`, for scoring.

    A ``<unk>`` is one word the model could not write; scored as the text ``<unk>``, BLEU
    would count it as three wrong tokens. The course's BLEU (``translation.evaluate``,
    the example tables and the per-length bootstrap) scores what this returns.
    """
    return text.replace(UNK, UNK_SCORED)
