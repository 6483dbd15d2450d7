"""Token vocabularies: a fixed token ↔ id mapping with the three special tokens.

Every vocabulary in the course gives ids 0, 1, 2 to ``<pad>``, ``<bos>`` and
``<eos>`` (:data:`PAD_ID`, :data:`BOS_ID`, :data:`EOS_ID`); the models, the
training loop and the tasks all rely on that, so the ids live here, below all
of them.

See Also
--------
The chapter "A Bahdanau seq2seq, built from parts" (chapters/seq2seq).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

__all__ = ["BOS", "BOS_ID", "EOS", "EOS_ID", "PAD", "PAD_ID", "SPECIALS", "Pair", "Vocab"]

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
