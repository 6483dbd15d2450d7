"""attnlib.mt.tatoeba: loading, normalising, tokenising, splitting, vocabularies and batches."""

from __future__ import annotations

import gzip
import shutil
from collections import Counter
from pathlib import Path

import pytest
import torch

from attnlib.models import make_seq2seq
from attnlib.mt import tatoeba as tb
from attnlib.tasks import Task
from attnlib.train import encode_pairs as train_encode_pairs
from attnlib.vocab import BOS_ID, EOS_ID, PAD_ID, Vocab

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "tatoeba"
ATTRIBUTED = FIXTURES / "eng-fra-attributed.tsv"


@pytest.fixture(scope="module")
def real_pairs() -> list[tb.TextPair]:
    return tb.load_pairs()


# --------------------------------------------------------------------------- loading
def test_shipped_file_matches_its_readme(real_pairs):
    # Numbers from ../shared/data/README.md: 76,037 lines, 49,197 distinct English sentences.
    assert len(real_pairs) == 76_037
    assert len({p.en for p in real_pairs}) == 49_197
    assert real_pairs[0].en == "Go."
    assert real_pairs[-1] == (
        "My whole family is doing well.",
        "Toute ma famille se porte bien.",
        "",
    )
    assert all(p.attribution == "" for p in real_pairs)
    assert tb.data_path().name == "eng-fra.tsv.gz"
    assert (tb.data_path().parent / "README.md").read_text(encoding="utf-8").count("CC-BY 2.0") >= 1


def test_attributed_format_is_read_with_its_third_column():
    pairs = tb.load_pairs(ATTRIBUTED)
    assert len(pairs) == 8
    assert pairs[0] == (
        "Hi.",
        "Salut.",
        "CC-BY 2.0 (France) Attribution: tatoeba.org #538123 (CM) & #509819 (Aiji)",
    )
    assert [p.en for p in pairs].count("Run!") == 2
    assert all(
        p.attribution.startswith("CC-BY 2.0 (France) Attribution: tatoeba.org #") for p in pairs
    )
    assert pairs[1].fr == "Cours\u202f!"  # loading does not normalise


def test_gzip_and_plain_give_the_same_pairs(tmp_path):
    gz = tmp_path / "no-telling-suffix.txt"
    gz.write_bytes(gzip.compress(ATTRIBUTED.read_bytes()))
    assert tb.load_pairs(gz) == tb.load_pairs(ATTRIBUTED)
    plain = tmp_path / "old.tsv"
    plain.write_text("Go.\tVa !\nHi.\tSalut !\n\n", encoding="utf-8")  # a trailing blank line
    assert tb.load_pairs(plain) == [("Go.", "Va !", ""), ("Hi.", "Salut !", "")]
    crlf = tmp_path / "crlf.tsv"
    crlf.write_bytes("\ufeffGo.\tVa !\r\nHi.\tSalut !\r\n".encode())
    assert tb.load_pairs(crlf) == [("Go.", "Va !", ""), ("Hi.", "Salut !", "")]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("Go.\tVa !\nHi. Salut !\n", r"line 2: expected .*found 1 column"),
        ("Go.\tVa !\n\nHi.\tSalut !\tCC-BY\textra\n", r"line 3: .*found 4 column"),
        ("Go.\t \n", r"line 1: the French sentence is empty"),
        ("\tVa !\n", r"line 1: the English sentence is empty"),
        ("\n\n", r"holds no sentence pairs"),
    ],
)
def test_malformed_lines_are_errors_naming_the_line(tmp_path, text, message):
    path = tmp_path / "bad.tsv"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ValueError, match=message):
        tb.load_pairs(path)


def test_unreadable_files(tmp_path):
    with pytest.raises(FileNotFoundError, match="no file"):
        tb.load_pairs(tmp_path / "missing.tsv")
    latin1 = tmp_path / "latin1.tsv"
    latin1.write_bytes("Go.\tVa !\nHe's here.\tIl est là.\n".encode("latin-1"))
    with pytest.raises(ValueError, match="line 2: not UTF-8"):
        tb.load_pairs(latin1)
    broken = tmp_path / "broken.gz"
    broken.write_bytes(gzip.compress(b"Go.\tVa !\n" * 50)[:30])
    with pytest.raises(ValueError, match="cannot be unpacked"):
        tb.load_pairs(broken)


# --------------------------------------------------------------------------- normalise
@pytest.mark.parametrize(
    ("raw", "clean"),
    [
        ("Cafe\u0301 !", "Café !"),  # NFC: e + combining acute → é
        ("C\u2019est triste.", "C'est triste."),  # curly apostrophe
        ("J\u2018aime celui-ci.", "J'aime celui-ci."),  # the data's left quote as apostrophe
        ("Dis : \u00ab oui \u00bb.", 'Dis : " oui ".'),  # guillemets
        ("\u201cLook,\u201d she said.", '"Look," she said.'),  # English curly quotes
        ("soutien\u2010gorge", "soutien-gorge"),  # Unicode hyphen
        ("Attends\u2026", "Attends..."),  # ellipsis
        ("Cours\u202f!", "Cours !"),  # narrow no-break space
        ("Qui\u00a0?", "Qui ?"),  # no-break space
        ("Recule\u2009!", "Recule !"),  # thin space
        ("Qui est cette fille  ?", "Qui est cette fille ?"),  # double space
        ("  Va !\t", "Va !"),  # ends
        ("m\u00b2", "m\u00b2"),  # NFC, not NFKC: ² stays
        ("\ufb01n", "\ufb01n"),  # and so does the ligature ﬁ
    ],
)
def test_normalise_rules(raw, clean):
    assert tb.normalise(raw, "fr") == clean
    assert tb.normalise(clean, "fr") == clean  # idempotent


def test_normalise_checks_its_input():
    with pytest.raises(ValueError, match="lang must be 'en'"):
        tb.normalise("Go.", "de")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="text must be a string"):
        tb.normalise(b"Go.", "en")  # type: ignore[arg-type]


def test_normalisation_report_counts_lines_per_rule():
    texts = ["C\u2019est \u00ab ok \u00bb.", "Cours\u202f!", "Bien.", "L\u2019a  vu\u00a0!"]
    report = {r.rule: r for r in tb.normalisation_report(texts, "fr")}
    assert [r.rule for r in tb.normalisation_report([], "fr")] == [
        name for name, _ in tb.NORMALISATION_RULES
    ]
    assert report["curly apostrophes → '"].lines == 2
    assert report['«» and “” → "'].lines == 1
    assert report["no-break and other spaces → space"].lines == 2
    assert report["collapse whitespace"].lines == 1  # only "L'a  vu !" has a double space
    assert report["Unicode NFC"].lines == 0
    assert report["curly apostrophes → '"].example == (
        "C\u2019est \u00ab ok \u00bb.",
        "C'est \u00ab ok \u00bb.",
    )


def test_normalisation_on_the_real_french(real_pairs):
    report = {r.rule: r.lines for r in tb.normalisation_report((p.fr for p in real_pairs), "fr")}
    # Counted independently of the rules: lines holding the characters they replace.
    assert report["no-break and other spaces → space"] == sum(
        any(c in p.fr for c in "\u00a0\u202f\u2009") for p in real_pairs
    )
    assert report["curly apostrophes → '"] == sum(
        ("\u2019" in p.fr or "\u2018" in p.fr) for p in real_pairs
    )
    assert report['«» and “” → "'] == sum("\u00ab" in p.fr for p in real_pairs)
    assert report["Unicode NFC"] == 0


# --------------------------------------------------------------------------- tokenise
@pytest.mark.parametrize(
    ("text", "lang", "tokens"),
    [
        ("L'homme est là.", "fr", ("l'", "homme", "est", "là", ".")),
        ("J'ai faim !", "fr", ("j'", "ai", "faim", "!")),
        ("Qu'il vienne.", "fr", ("qu'", "il", "vienne", ".")),
        (
            "Je l\u2019ai vu.",
            "fr",
            ("je", "l'", "ai", "vu", "."),
        ),  # curly apostrophe first normalised
        ("Cours\u202f!", "fr", ("cours", "!")),
        ("Dis : « oui ».", "fr", ("dis", ":", '"', "oui", '"', ".")),
        ("Aujourd'hui, c'est lundi.", "fr", ("aujourd'hui", ",", "c'", "est", "lundi", ".")),
        ("Est-ce qu'il est là ?", "fr", ("est-ce", "qu'", "il", "est", "là", "?")),
        ("I don't know.", "en", ("i", "don", "'t", "know", ".")),
        ("It's Tom's.", "en", ("it", "'s", "tom", "'s", ".")),
        ('"Look," she said.', "en", ('"', "look", ",", '"', "she", "said", ".")),
        ("   ", "en", ()),
    ],
)
def test_tokenise(text, lang, tokens):
    assert tb.tokenise(text, lang) == tokens


def test_tokenise_keeps_case_on_request_and_is_deterministic():
    assert tb.tokenise("Ça va, Tom ?", "fr", lower=False) == ("Ça", "va", ",", "Tom", "?")
    first = tb.tokenise("Ça va, Tom ?", "fr")
    tb._tokenise_cased.cache_clear()
    assert tb.tokenise("Ça va, Tom ?", "fr") == first == ("ça", "va", ",", "tom", "?")
    with pytest.raises(ValueError, match="lang must be"):
        tb.tokenise("Go.", "english")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("text", "lang"),
    [("Qu'il vienne !", "fr"), ("Je l'ai vu, non ?", "fr"), ("I don't know, Tom.", "en")],
)
def test_detokenise_inverts_tokenise(text, lang):
    assert tb.detokenise(tb.tokenise(text, lang, lower=False), lang) == text


def test_tokenise_pairs_refuses_empty_sides():
    assert tb.tokenise_pairs([tb.TextPair("Go.", "Va !")]) == [(("go", "."), ("va", "!"))]
    with pytest.raises(ValueError, match=r"pair 0 .* no tokens"):
        tb.tokenise_pairs([tb.TextPair("Go.", "\u00a0")])


# --------------------------------------------------------------------------- split
def test_split_keeps_a_source_and_its_references_together():
    pairs = tb.load_pairs(ATTRIBUTED)
    for seed in range(10):
        s = tb.split(pairs, seed=seed, test_sources=2, valid_sources=2)
        assert sorted(s.train + s.valid + s.test) == sorted(pairs)
        homes = [
            name for name in ("train", "valid", "test") for p in getattr(s, name) if p.en == "Run!"
        ]
        assert len(homes) == 2
        assert homes[0] == homes[1]
        assert (s.sources("test"), s.sources("valid"), s.sources("train")) == (2, 2, 3)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"test_sources": 0}, "test_sources must be a whole number ≥ 1"),
        ({"valid_sources": -1}, "valid_sources must be"),
        ({"test_sources": 2.5}, "test_sources must be"),
        ({"test_sources": 4, "valid_sources": 3}, "7 distinct English sentences.*leaves none"),
        ({"seed": "0"}, "seed must be"),
    ],
)
def test_split_checks_its_counts(kwargs, message):
    with pytest.raises(ValueError, match=message):
        tb.split(tb.load_pairs(ATTRIBUTED), **kwargs)


@pytest.mark.slow
def test_split_of_the_real_data_is_by_english_sentence_and_seeded(real_pairs):
    s = tb.split(real_pairs, seed=0)
    assert len(s.train) + len(s.valid) + len(s.test) == len(real_pairs)
    assert s.sources("test") == 2000
    assert s.sources("valid") == 1000

    # Disjoint by English sentence, compared on a key written here (case and apostrophes folded).
    def key(en: str) -> str:
        return en.replace("\u2019", "'").lower()

    seen = {name: {key(p.en) for p in getattr(s, name)} for name in ("train", "valid", "test")}
    assert not seen["test"] & seen["train"]
    assert not seen["valid"] & seen["train"]
    assert not seen["test"] & seen["valid"]
    # Every French reference of a test source is in test.
    everywhere = Counter(key(p.en) for p in real_pairs)
    in_test = Counter(key(p.en) for p in s.test)
    assert all(everywhere[k] == n for k, n in in_test.items())
    assert any(n > 1 for n in in_test.values())  # multi-reference sources exist
    # The same seed gives the same split; another seed another test set.
    assert tb.split(real_pairs, seed=0) == s
    assert {p.en for p in tb.split(real_pairs, seed=1).test} != {p.en for p in s.test}
    refs = dict(s.references("test"))
    assert len(refs) == 2000
    assert sum(len(v) for v in refs.values()) == len(s.test)


# --------------------------------------------------------------------------- vocabulary
SENTENCES = [("le", "chat", "dort"), ("le", "chien", "dort"), ("le", "chat", "mange")]


def test_build_vocab_cuts_rare_tokens_and_puts_unk_at_3():
    v1 = tb.build_vocab(SENTENCES, min_freq=1, name="French")
    assert v1.itos[:4] == ("<pad>", "<bos>", "<eos>", "<unk>")
    assert tb.UNK_ID == 3
    # le ×3, then chat ×2 and dort ×2 (alphabetical), then chien and mange ×1.
    assert v1.tokens == ("<unk>", "le", "chat", "dort", "chien", "mange")
    v2 = tb.build_vocab(SENTENCES, min_freq=2)
    assert v2.tokens == ("<unk>", "le", "chat", "dort")
    assert tb.build_vocab(SENTENCES, min_freq=4).tokens == ("<unk>",)
    assert tb.encode(("le", "chien", "dort"), v2) == [4, 3, 6, EOS_ID]
    assert tb.encode(("le",), v2, eos=False) == [4]
    assert v2.decode(tb.encode(("le", "chien"), v2)) == ["le", "<unk>"]


def test_unk_share():
    v2 = tb.build_vocab(SENTENCES, min_freq=2)
    assert tb.unk_share(v2, [("le", "chien", "dort"), ("un", "chat")]) == pytest.approx(2 / 5)
    assert tb.unk_share(tb.build_vocab(SENTENCES), SENTENCES) == 0.0


@pytest.mark.parametrize(
    ("call", "error", "message"),
    [
        (
            lambda: tb.build_vocab(SENTENCES, min_freq=0),
            ValueError,
            "min_freq must be a whole number ≥ 1",
        ),
        (lambda: tb.build_vocab(["le chat"]), TypeError, "sentence 0 is a string"),
        (lambda: tb.build_vocab([("<unk>", "x")]), ValueError, "reserved"),
        (lambda: tb.encode(("a",), Vocab("ab")), ValueError, "no <unk> at id 3"),
        (lambda: tb.unk_share(tb.build_vocab(SENTENCES), [()]), ValueError, "at least one token"),
    ],
)
def test_vocab_errors(call, error, message):
    with pytest.raises(error, match=message):
        call()


@pytest.mark.slow
def test_unk_share_on_the_real_test_set_grows_with_min_freq(real_pairs):
    s = tb.split(real_pairs, seed=0)
    train, test = tb.tokenise_pairs(s.train), tb.tokenise_pairs(s.test)
    sizes, shares = [], []
    for min_freq in (1, 2, 3, 5):
        v = tb.build_vocab([t for _, t in train], min_freq)
        sizes.append(len(v))
        shares.append(tb.unk_share(v, [t for _, t in test]))
    assert sizes == sorted(sizes, reverse=True)
    assert len(set(sizes)) == 4
    assert shares == sorted(shares)
    assert len(set(shares)) == 4
    assert 0 < shares[0] < 0.05  # a few test words are never seen in training, not many
    # min_freq=1 keeps every training token: the unknown ones are exactly those absent from train.
    known = {tok for _, t in train for tok in t}
    test_tokens = [tok for _, t in test for tok in t]
    assert shares[0] == pytest.approx(
        sum(tok not in known for tok in test_tokens) / len(test_tokens)
    )


# --------------------------------------------------------------------------- batches
TOKEN_PAIRS = [
    (("go", "."), ("va", "!")),
    (("i", "see", "."), ("je", "vois", ".")),
    (("who", "is", "he", "?"), ("qui", "est-il", "?")),
    (("run", "!"), ("cours", "!")),
    (("the", "car", "is", "red", "."), ("la", "voiture", "est", "rouge", ".")),
    (("i", "see", "the", "car", "."), ("je", "vois", "la", "voiture", ".")),
    (("hi", "."), ("salut", ".")),
]


@pytest.fixture(scope="module")
def vocabs() -> tuple[Vocab, Vocab]:
    return (
        tb.build_vocab([s for s, _ in TOKEN_PAIRS], name="English"),
        tb.build_vocab([t for _, t in TOKEN_PAIRS], name="French"),
    )


def test_batches_are_padded_masked_and_cover_every_pair(vocabs):
    src_v, tgt_v = vocabs
    enc = tb.encode_each(TOKEN_PAIRS, src_v, tgt_v)
    out = list(tb.batches(enc, batch_size=3, seed=0))
    assert sorted(i for b in out for i in b.index.tolist()) == list(range(len(TOKEN_PAIRS)))
    assert [len(b) for b in out].count(3) == 2
    for b in out:
        B = len(b)
        src_lens = [len(TOKEN_PAIRS[i][0]) + 1 for i in b.index.tolist()]  # + <eos>
        tgt_lens = [len(TOKEN_PAIRS[i][1]) + 1 for i in b.index.tolist()]
        assert b.src.shape == (B, max(src_lens))
        assert b.src.dtype == torch.long
        assert b.tgt_in.shape == b.tgt_out.shape == (B, max(tgt_lens))
        assert b.mask.dtype == torch.bool
        assert b.mask.sum(dim=1).tolist() == src_lens
        assert (b.src[~b.mask] == PAD_ID).all()
        assert (b.src[b.mask] != PAD_ID).all()
        for row, i in enumerate(b.index.tolist()):
            assert src_v.decode(b.src[row]) == list(TOKEN_PAIRS[i][0])
            assert tgt_v.decode(b.tgt_out[row]) == list(TOKEN_PAIRS[i][1])
            n = tgt_lens[row]
            assert b.tgt_in[row, 0] == BOS_ID
            assert b.tgt_out[row, n - 1] == EOS_ID
            assert torch.equal(b.tgt_in[row, 1:n], b.tgt_out[row, : n - 1])
            assert (b.tgt_in[row, n:] == PAD_ID).all()
            assert (b.tgt_out[row, n:] == PAD_ID).all()


def test_batches_group_similar_lengths_and_follow_the_seed(vocabs):
    src_v, tgt_v = vocabs
    enc = tb.encode_each(TOKEN_PAIRS, src_v, tgt_v)
    # Source lengths (with <eos>) sorted: 3 3 3 4 5 6 6; batches of 3 are cut from that order.
    ordered = list(tb.batches(enc, batch_size=3, seed=None))
    assert [b.mask.sum(dim=1).tolist() for b in ordered] == [[3, 3, 3], [4, 5, 6], [6]]

    def run(seed):
        return [b.index.tolist() for b in tb.batches(enc, batch_size=2, seed=seed)]

    assert run(0) == run(0)
    assert len({str(run(seed)) for seed in range(8)}) > 1


def test_batches_match_train_encode_pairs_and_feed_the_model(vocabs):
    src_v, tgt_v = vocabs
    task = Task("tiny", src_v, tgt_v, [], [], [], " ", " ")
    enc = tb.encode_each(TOKEN_PAIRS, src_v, tgt_v)
    [b] = tb.batches(enc, batch_size=len(TOKEN_PAIRS), seed=0)
    ref = train_encode_pairs(task, [TOKEN_PAIRS[i] for i in b.index.tolist()])
    assert torch.equal(b.src, ref.src)
    assert torch.equal(b.tgt_in, ref.tgt_in)
    assert torch.equal(b.tgt_out, ref.tgt_out)
    model = make_seq2seq(src_v, tgt_v, seed=0)
    assert torch.equal(model.source_mask(b.src), b.mask)
    logits, alpha = model(b.src, b.tgt_in)
    assert logits.shape == (*b.tgt_out.shape, len(tgt_v))
    assert alpha.shape == (*b.tgt_in.shape, b.src.shape[1])


@pytest.mark.parametrize(
    ("encoded", "batch_size", "message"),
    [
        ([([4, 2], [4, 2])], 0, "batch_size must be"),
        ([], 2, "at least one encoded pair"),
        ([([2], [4, 2])], 2, "T_x ≥ 1"),
        ([([4, 5], [4, 2])], 2, "must end in <eos>"),
        ([([4, 0, 2], [4, 2])], 2, "hold no <pad>"),
    ],
)
def test_batches_check_their_input(encoded, batch_size, message):
    with pytest.raises(ValueError, match=message):
        list(tb.batches(encoded, batch_size))


def test_shipped_attribution_is_next_to_the_data(tmp_path):
    text = (tb.data_path().parent / "README.md").read_text(encoding="utf-8")
    assert "tatoeba.org" in text
    assert "CC-BY 2.0" in text
    assert "Tatoeba" in tb.ATTRIBUTION
    assert "CC-BY 2.0 FR" in tb.ATTRIBUTION
    # The loader reads a copy of the shipped file anywhere (a fresh clone has no ../shared).
    copy = tmp_path / "copy.gz"
    shutil.copy(tb.data_path(), copy)
    assert len(tb.load_pairs(copy)) == 76_037
