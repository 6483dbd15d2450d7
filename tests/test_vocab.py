"""Tests for attnlib.vocab: the special ids, encoding and decoding, and clear errors."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from attnlib import vocab
from attnlib.vocab import BOS_ID, EOS_ID, PAD_ID, Vocab


def test_special_ids_come_first() -> None:
    v = Vocab(["x", "y"])
    assert (v.pad_id, v.bos_id, v.eos_id) == (PAD_ID, BOS_ID, EOS_ID) == (0, 1, 2)
    assert v.itos[:3] == ("<pad>", "<bos>", "<eos>")
    assert v.tokens == ("x", "y")
    assert len(v) == 5


@given(st.lists(st.sampled_from(list("abcdefg")), max_size=30))
def test_encode_decode_round_trip(tokens: list[str]) -> None:
    v = Vocab("abcdefg")
    ids = v.encode(tokens)
    assert ids[-1] == EOS_ID
    assert len(ids) == len(tokens) + 1
    assert v.decode(ids) == tokens
    assert v.decode([BOS_ID, *ids, PAD_ID, PAD_ID]) == tokens  # specials stripped


def test_decode_without_strip_shows_special_tokens() -> None:
    v = Vocab("ab")
    assert v.decode([1, 3, 2, 0], strip=False) == ["<bos>", "a", "<eos>", "<pad>"]
    assert v.decode([3, 2, 4]) == ["a"]  # stops at the first <eos>


def test_unknown_token_is_a_clear_error() -> None:
    v = Vocab("abc", name="letters")
    with pytest.raises(ValueError, match=r"token 'z' at position 1 is not in the letters"):
        v.encode(["a", "z"])


@pytest.mark.parametrize("bad", [-1, 5, 99])
def test_decode_rejects_ids_outside_the_vocabulary(bad: int) -> None:
    v = Vocab("ab")
    with pytest.raises(ValueError, match=rf"id {bad} at position 0 is outside .* ids 0 … 4"):
        v.decode([bad])


@pytest.mark.parametrize(
    ("tokens", "message"),
    [(["a", "a"], "duplicate"), (["<eos>"], "special token"), ([""], "non-empty strings")],
)
def test_vocab_rejects_bad_token_lists(tokens: list[str], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        Vocab(tokens)


def test_docstring_examples_run() -> None:
    import doctest

    result = doctest.testmod(vocab)
    assert result.attempted > 0
    assert result.failed == 0
