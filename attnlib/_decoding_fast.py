"""Greedy decoding of one sentence at a time, made fast: the translate widget's path.

:func:`attnlib.decoding.beam_search` with k = 1 on a single source sentence (what the
translate widget and a learner typing a sentence do) runs here when the model is the
course's own Bahdanau seq2seq (bidirectional GRU encoder, additive attention). The readable
version is :func:`attnlib.models.greedy_steps` over :class:`attnlib.models.BahdanauDecoder`'s
step; this module does the same arithmetic, rearranged for one sentence:

* Vectors, not batches: s_{t-1}, c_t and the logits are 1-D, every product is a
  matrix-vector product, with each weight laid out once, when the model is first used.
  Products of the same vector are stacked into one matrix (s_t meets W_o's state block
  now, W_hh and W_a at the next step; c_t meets W_ih's and W_o's context blocks).
* What depends only on a token is looked up, not computed: the GRUs' input gates and
  the output layer read E y_{t-1} (and the encoder E x_i); their token parts are
  tables with one row per token, built once per set of weights (training writes the
  weights in place and bumps their version counters, which the cache compares).
* The GRU cells written out: r, z = σ(gi + gh) at once, n = tanh(gi_n + r ⊙ gh_n),
  s_t = n + z ⊙ (s_{t-1} - n) as one lerp; the encoder's two directions run as one
  recurrence on [→h; ←h] with a block-diagonal W_hh.
* Intermediate vectors are written in place into buffers whose parts are views made
  once; the log-probabilities come after the loop, from one log-softmax over all steps.

The numbers are those of the batched path up to float32 rounding (sums run in another
order): ``tests/test_decoding_fast.py`` checks the same tokens, with log p and α within
1e-5, and ``tests/mt/test_translation.py`` every test sentence of the English–French model.
The input checks are the model's own (``Seq2Seq.source_mask``).
``bench/bench_translation.py`` times it against the PyTorch tutorial's model.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor

from attnlib.vocab import BOS_ID, EOS_ID

__all__ = ["greedy_one"]


@dataclass(frozen=True)
class _FastWeights:
    """The model's weights, laid out for matrix-vector products on one sentence.

    Products of the same vector are stacked into one matrix: s_t meets W_o's state
    block now and W_hh and W_a at the next step.
    """

    # encoder: the two directions of the GRU as one recurrence on h = [→h; ←h] (2H,),
    # rows ordered by gate, then direction: [r→; r←; z→; z←; n→; n←]
    src_gi_f: Tensor  # (V_src, 3H): forward W_ih E_x + b_ih, gates [r; z; n]
    src_gi_b: Tensor  # (V_src, 3H): the same for the backward direction
    enc_W_hh: Tensor  # (6H, 2H): both directions' W_hh, block-diagonal
    enc_b_hh: Tensor  # (6H,)
    # decoder
    U_a: Tensor  # (d_a, d_h)
    v_a: Tensor  # (d_a,)
    W_s: Tensor  # (d_s + 3 d_s + d_a, d_s): [W_o's s-block; W_hh; W_a]
    b_s_all: Tensor  # (d_s + 3 d_s + d_a,): b_hh of the n gate in its place, else 0
    # (V, 3 d_s + d_s): [W_ih's y-block E_y + b_ih (+ b_hh on r, z); W_o's y-block E_y + b_o]
    y_tab: Tensor
    W_c: Tensor  # (3 d_s + d_s, d_h): [W_ih's c-block; W_o's c-block]
    W_yT: Tensor  # (d_s, V): W_y transposed, contiguous
    b_y: Tensor  # (V,)
    W_s0: Tensor  # (d_s, ·): s_0 = tanh(W_s0 final[s0_from:] + b_s0)
    b_s0: Tensor  # (d_s,)
    s0_from: int  # 0 (s0="final") or H (s0="backward": ←h_1 only)


def _param_slots(model: Any) -> list[tuple[dict[str, Any], str]]:
    """Where each weight the fast path reads lives: (a module's parameter dict, name)."""
    enc, dec = model.encoder, model.decoder
    att, cell = dec.attention, dec.cell
    gru_names = ("weight_ih_l0", "weight_hh_l0", "bias_ih_l0", "bias_hh_l0")
    return [
        (enc.embedding._parameters, "weight"),
        *((g._parameters, n) for g in (enc.gru_forward, enc.gru_backward) for n in gru_names),
        (dec.embedding._parameters, "weight"),
        (att.W_a._parameters, "weight"),
        (att.U_a._parameters, "weight"),
        (att.v_a._parameters, "weight"),
        *((cell._parameters, n) for n in ("weight_ih", "weight_hh", "bias_ih", "bias_hh")),
        *((m._parameters, n) for m in (dec.W_o, dec.W_y, dec.W_s) for n in ("weight", "bias")),
    ]


_Key = tuple[tuple[int, int, int], ...]
_FAST_CACHE: weakref.WeakKeyDictionary[
    Any, tuple[list[tuple[dict[str, Any], str]], _Key, _FastWeights, list[Any]]
]
_FAST_CACHE = weakref.WeakKeyDictionary()


def _key(slots: list[tuple[dict[str, Any], str]]) -> _Key:
    """(object id, storage, version) of every parameter; the cache keeps the objects alive."""
    return tuple((id(p), p.data_ptr(), p._version) for p in (d[n] for d, n in slots))


def _gates_bias(b_ih: Tensor, b_hh: Tensor, size: int) -> Tensor:
    """b_ih with b_hh added on the r and z gates (there the two biases just add up)."""
    out = b_ih.clone()
    out[: 2 * size] += b_hh[: 2 * size]
    return out


def _by_gate(f: Tensor, b: Tensor, H: int) -> Tensor:
    """Rows [r; z; n] of each direction → [r→; r←; z→; z←; n→; n←] (also for 1-D biases)."""
    return torch.stack([f.reshape(3, H, -1), b.reshape(3, H, -1)], dim=1).reshape(
        6 * H, *f.shape[1:]
    )


@torch.no_grad()
def _tables(model: Any) -> _FastWeights:
    """The laid-out weights of ``model``, rebuilt whenever a weight has changed.

    The cache compares every parameter's object, storage and version counter: an
    optimiser step or ``load_state_dict`` writes the weights in place and bumps the
    counter, and a replaced parameter is another object.
    """
    hit = _FAST_CACHE.get(model)
    if hit is not None and _key(hit[0]) == hit[1]:
        return hit[2]
    slots = _param_slots(model)
    key = _key(slots)
    kept = [d[n] for d, n in slots]  # held by the cache entry, so no id is reused
    params = (p.detach() for p in kept)
    (E_x, fw_ih, fw_hh, fb_ih, fb_hh, bw_ih, bw_hh, bb_ih, bb_hh, E, W_a, U_a, v_a,
     W_ih, W_hh, b_ih, b_hh, W_o, b_o, W_y, b_y, W_s0, b_s0) = params  # fmt: skip
    H = fw_hh.shape[1]
    emb, d_s = model.decoder.emb, model.decoder.d_s
    y_cols = W_o.shape[1] - emb  # W_o reads [s_t; c_t; E y_{t-1}]
    zero = torch.zeros_like(fw_hh)
    b_s_all = torch.zeros(W_o.shape[0] + W_hh.shape[0] + W_a.shape[0])
    b_s_all[d_s + 2 * d_s : d_s + 3 * d_s] = b_hh[2 * d_s :]
    weights = _FastWeights(
        src_gi_f=F.linear(E_x, fw_ih, fb_ih).contiguous(),
        src_gi_b=F.linear(E_x, bw_ih, bb_ih).contiguous(),
        enc_W_hh=_by_gate(torch.cat([fw_hh, zero], 1), torch.cat([zero, bw_hh], 1), H),
        enc_b_hh=_by_gate(fb_hh, bb_hh, H),
        U_a=U_a.contiguous(),
        v_a=v_a[0].contiguous(),
        W_s=torch.cat([W_o[:, :d_s], W_hh, W_a]).contiguous(),
        b_s_all=b_s_all,
        y_tab=torch.cat(
            [
                F.linear(E, W_ih[:, :emb], _gates_bias(b_ih, b_hh, d_s)),
                F.linear(E, W_o[:, y_cols:], b_o),
            ],
            dim=1,
        ),
        W_c=torch.cat([W_ih[:, emb:], W_o[:, d_s:y_cols]]).contiguous(),
        W_yT=W_y.t().contiguous(),
        b_y=b_y.contiguous(),
        W_s0=W_s0.contiguous(),
        b_s0=b_s0.contiguous(),
        s0_from=0 if model.decoder.s0 == "final" else H,
    )
    _FAST_CACHE[model] = (slots, key, weights, kept)
    return weights


def _encode(w: _FastWeights, ids: Tensor) -> tuple[Tensor, Tensor]:
    """The bidirectional GRU on one sentence's real ids (T_x,): h (T_x, 2H), final (2H,).

    Both directions run as one recurrence on [→h; ←h]: at step t the forward half reads
    x_t and the backward half x_{T+1-t}, so the last state is already [→h_T; ←h_1].
    """
    T, H = ids.shape[0], w.src_gi_f.shape[1] // 3
    # the input gates of every step, both directions, in the [r→; r←; z→; z←; n→; n←] order
    G = torch.stack(
        [w.src_gi_f.index_select(0, ids).view(T, 3, H),
         w.src_gi_b.index_select(0, ids.flip(0)).view(T, 3, H)], dim=2,
    ).view(T, 6 * H)  # fmt: skip
    W_hh, b_hh = w.enc_W_hh, w.enc_b_hh
    h = torch.zeros(2 * H)
    outs = []
    # Buffers written in place every step, and their parts as views made once.
    gh, rz = torch.empty(6 * H), torch.empty(4 * H)
    gh_rz, gh_n, r, z = gh[: 4 * H], gh[4 * H :], rz[: 2 * H], rz[2 * H :]
    for gi_rz, gi_n in zip(G[:, : 4 * H].unbind(0), G[:, 4 * H :].unbind(0), strict=True):
        torch.addmv(b_hh, W_hh, h, out=gh)
        torch.sigmoid(gi_rz + gh_rz, out=rz)
        h = torch.lerp(torch.tanh(torch.addcmul(gi_n, r, gh_n)), h, z)  # n + z ⊙ (h - n)
        outs.append(h)
    hs = torch.stack(outs)  # (T, 2H): row t = [→h_t; ←h_{T+1-t}]
    return torch.cat([hs[:, :H], hs[:, H:].flip(0)], dim=1), h


@torch.inference_mode()  # as no_grad, and lighter on small tensors (no version counters)
def greedy_one(
    model: Any, src: Tensor, max_len: int | None, return_attention: bool
) -> tuple[tuple[int, ...], list[float], bool, list[Tensor]]:
    """Greedy decoding of one sentence ``src`` (1, T_x) by the course's Bahdanau seq2seq.

    Only for a model :func:`attnlib.decoding.beam_search` has checked is the course's own
    (bidirectional GRU encoder, additive attention, c_t in both the state and the output,
    no method replaced).

    Returns
    -------
    tokens : tuple of int
        The output ids, without ``<eos>``.
    log_ps : list of float
        log p of every scored step (the tokens, then ``<eos>`` if finished), float64 values
        of the float32 log-softmax, in step order.
    finished : bool
        True if the output ended with ``<eos>``; False if ``max_len`` cut it.
    alphas : list of (T_x,) tensors
        α_t of every scored step over the sentence's real source positions (empty
        without ``return_attention``); inference tensors, stacked by the caller.
    """
    mask = model.source_mask(src)  # the model's own checks on src
    n = int(mask.sum())
    w = _tables(model)
    H, final = _encode(w, src[0, :n].long())  # (T_x, d_h): only the real positions
    Ht = H.t()
    keys = F.linear(H, w.U_a)  # (T_x, d_a): U_a h_i, once per sentence
    s = torch.tanh(torch.addmv(w.b_s0, w.W_s0, final[w.s0_from :]))  # s_0 (d_s,)
    d_s = s.shape[0]
    limit = 2 * n + 2 if max_len is None else max_len
    first = EOS_ID  # <pad> and <bos> (ids below <eos>) are never outputs
    v_a, W_s, b_s, y_tab, W_c, W_yT, b_y = w.v_a, w.W_s, w.b_s_all, w.y_tab, w.W_c, w.W_yT, w.b_y
    mv, addmv, tanh = torch.mv, torch.addmv, torch.tanh
    # Buffers written in place every step, and their parts as views made once:
    # S = W_s s + b_s = [W_o's s-block s; W_hh s + b_hh (r, z | n); W_a s]
    # Y = W_c c + y_tab[y] = [W_ih [E y; c] + b_ih (r, z | n); W_o's (c, y)-blocks [c; E y] + b_o]
    S, Y, rz = torch.empty(W_s.shape[0]), torch.empty(W_c.shape[0]), torch.empty(2 * d_s)
    S_o, S_rz, S_n, q = S[:d_s], S[d_s : 3 * d_s], S[3 * d_s : 4 * d_s], S[4 * d_s :]
    Y_rz, Y_n, Y_o = Y[: 2 * d_s], Y[2 * d_s : 3 * d_s], Y[3 * d_s :]
    r, z = rz[:d_s], rz[d_s:]
    addmv(b_s, W_s, s, out=S)  # of s_0, for step 1
    tok = BOS_ID
    toks: list[int] = []
    logits_rows: list[Tensor] = []
    alphas: list[Tensor] = []
    finished = False
    for t in range(1, limit + 1):
        # α_t and c_t from s_{t-1}: e_ti = v_a^T tanh(W_a s_{t-1} + U_a h_i)
        alpha = torch.softmax(mv(tanh(keys + q), v_a), 0)
        c = mv(Ht, alpha)
        addmv(y_tab[tok], W_c, c, out=Y)
        # s_t = GRU([E y_{t-1}; c_t], s_{t-1}) = n + z ⊙ (s_{t-1} - n)
        torch.sigmoid(Y_rz + S_rz, out=rz)
        s = torch.lerp(tanh(torch.addcmul(Y_n, r, S_n)), s, z)
        addmv(b_s, W_s, s, out=S)
        # ỹ_t = W_y tanh(W_o [s_t; c_t; E y_{t-1}] + b_o)
        logits = torch.addmm(b_y, tanh(Y_o + S_o).unsqueeze(0), W_yT)  # (1, V)
        tok = int(logits.argmax())  # the first of the largest, as everywhere in decoding
        if tok < first:  # <pad> and <bos> are never outputs: the best of the others
            tok = int(logits[0, first:].argmax()) + first
        logits_rows.append(logits)
        if return_attention:
            alphas.append(alpha)
        if tok == EOS_ID:
            finished = True
            break
        toks.append(tok)
        if t >= limit:
            break
    chosen = torch.tensor([*toks, EOS_ID] if finished else toks)
    log_p = torch.log_softmax(torch.cat(logits_rows), dim=-1)
    log_ps = log_p.gather(1, chosen.unsqueeze(1)).squeeze(1).double().tolist()
    return tuple(toks), log_ps, finished, alphas
