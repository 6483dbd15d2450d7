"""Exercise 4, an attention module in torch, trained: the grader's checks (public and hidden).

Question 1 builds the learner's ``MyAdditiveAttention`` in the worker with
weights W_a, U_a, v_a the grader drew itself (:meth:`Probe.new`), calls its
``forward``, ``precompute`` and ``scores`` on drawn inputs, and compares what
comes back with the pure-Python references (:mod:`attnlib.grading.reference`)
computed here from those same weights. Every draw keeps d_s, d_h, d_a, T_x and
B different, so that no transposed or swapped map fits by accident.

Question 1 asks the learner to write the module, so it is graded where attnlib
computes nothing (:attr:`attnlib.grading.cases.Exercise.modules` is empty).

Question 2 trains the model with attnlib's trainer, so it is graded where all of
attnlib is there; the grader reads the trained ``model`` back as plain arrays
(:meth:`Probe.state`). Its first point rests on that worker's own report of the
class of ``model.decoder.attention``, which the learner's code could forge; its
two other points do not: the grader loads the arrays into the course's own model,
built here, with one part replaced: its attention is **the learner's
MyAdditiveAttention**, built in the worker without attnlib (:meth:`Probe.own`)
with the trained W_a, U_a and v_a, whose ``precompute`` and ``scores`` the grader
calls at every step while it decodes strings the training never saw. Weights
trained with the course's module while the learner's returns zeros thus decode
nothing; a correct module earns what it earns in training.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from typing import TYPE_CHECKING, Any

import numpy as np

from attnlib.grading.cases import (
    Check,
    Exercise,
    Fail,
    Probe,
    Question,
    Torch,
    as_array,
    as_tuple,
    expect_close,
    f32,
)
from attnlib.grading.reference import py_additive_scores, py_context, py_softmax

if TYPE_CHECKING:
    from attnlib.models import Seq2Seq
    from attnlib.tasks import Task

RTOL, ATOL = 1e-4, 1e-5  # the learner's module computes in float32

#: The notebook's cell "Train it", as the learner runs it (tests/grading/test_grading_torch.py
#: checks these against exercises/source/04_attention_module.ipynb).
TASK = dict(n_train=2000, n_valid=100, n_test=200, min_len=3, max_len=7, seed=0)
SIZES = dict(emb=16, hidden=24, d_s=32, d_a=16)
HELD_OUT = 200  # strings decoded by the trusted model
PASS_MARK = 0.8  # exact match the question asks for


# --------------------------------------------------------------------------- draws


def _distinct_sizes(rng: np.random.Generator, lo: int, hi: int) -> list[int]:
    """Five different sizes in lo … hi (d_s, d_h, d_a, T_x, B in some order)."""
    return [int(d) for d in rng.choice(np.arange(lo, hi + 1), size=5, replace=False)]


def _weights(
    rng: np.random.Generator, d_s: int, d_h: int, d_a: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """W_a (d_a, d_s), U_a (d_a, d_h), v_a (d_a,): tanh neither flat nor linear on normal inputs."""
    W = f32(rng.normal(size=(d_a, d_s)) / math.sqrt(d_s))
    U = f32(rng.normal(size=(d_a, d_h)) / math.sqrt(d_h))
    v = f32(rng.normal(size=d_a) * 1.5)
    return W, U, v


def _build(probe: Probe, W: np.ndarray, U: np.ndarray, v: np.ndarray) -> str:
    """The learner's module in the worker, holding the grader's W_a, U_a and v_a."""
    d_a, d_s = W.shape
    d_h = U.shape[1]
    return probe.new(
        "MyAdditiveAttention",
        d_s,
        d_h,
        d_a,
        weights={
            "W_a.weight": Torch(W),
            "U_a.weight": Torch(U),
            "v_a.weight": Torch(v[None, :]),
        },
    )


def _reference(
    s_prev: np.ndarray,
    h: np.ndarray,
    W: np.ndarray,
    U: np.ndarray,
    v: np.ndarray,
    mask: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(e, alpha, c) of every sentence of the batch, from the pure-Python references."""
    W_a, U_a, v_a = W.tolist(), U.tolist(), v.tolist()
    es, alphas, cs = [], [], []
    for b in range(h.shape[0]):
        e = py_additive_scores(s_prev[b].tolist(), h[b].tolist(), W_a, U_a, v_a)
        alpha = py_softmax(e, None if mask is None else mask[b].tolist())
        es.append(e)
        alphas.append(alpha)
        cs.append(py_context(alpha, h[b].tolist()))
    return np.array(es), np.array(alphas), np.array(cs)


def _call(probe: Probe, handle: str, method: str, label: str, *args: Any) -> Any:
    """``handle.method(*args)`` in the worker; a failure names the method, not the handle."""
    target = handle if method == "forward" else f"{handle}.{method}"
    try:
        return probe.call(target, *args)
    except Fail as fail:
        text = str(fail)
        if text.startswith(target):
            text = f"{method}({label})" + text[len(target) :]
        raise Fail(text, kind=fail.kind, note=fail.note, raised=fail.raised) from None


def _forward(probe: Probe, handle: str, label: str, *args: Any) -> tuple[np.ndarray, np.ndarray]:
    c, alpha = as_tuple(_call(probe, handle, "forward", label, *args), 2, f"forward({label})")
    return as_array(c, f"c of forward({label})"), as_array(alpha, f"alpha of forward({label})")


# --------------------------------------------------------------------------- question 1
def _q1_shapes(probe: Probe, rng: np.random.Generator) -> None:
    # The notebook's public check: B = 2, T_x = 6, d_s = 3, d_h = 5, d_a = 4.
    B, T_x, d_s, d_h, d_a = 2, 6, 3, 5, 4
    handle = _build(probe, *_weights(rng, d_s, d_h, d_a))
    s_prev, h = f32(rng.normal(size=(B, d_s))), f32(rng.normal(size=(B, T_x, d_h)))
    out = _call(probe, handle, "forward", "s_prev, h", Torch(s_prev), Torch(h))
    c, alpha = as_tuple(out, 2, "forward(s_prev, h)")
    got = [as_array(x, n).shape for x, n in ((c, "c"), (alpha, "alpha"))]
    want = [(B, d_h), (B, T_x)]
    if got != want:
        raise Fail(
            f"with B = {B}, T_x = {T_x}, d_s = {d_s}, d_h = {d_h}, d_a = {d_a}, (c, alpha) should "
            f"have shapes {want}, but they have shapes {got}",
            kind="shape",
        )


def _q1_values(probe: Probe, rng: np.random.Generator) -> None:
    d_s, d_h, d_a, T_x, B = _distinct_sizes(rng, 2, 9)
    W, U, v = _weights(rng, d_s, d_h, d_a)
    handle = _build(probe, W, U, v)
    s_prev, h = f32(rng.normal(size=(B, d_s))), f32(rng.normal(size=(B, T_x, d_h)))
    _, alpha_ref, c_ref = _reference(s_prev, h, W, U, v)
    label = f"s_prev ({B}, {d_s}), h ({B}, {T_x}, {d_h}), d_a = {d_a}"
    c, alpha = _forward(probe, handle, label, Torch(s_prev), Torch(h))
    expect_close(alpha, alpha_ref, f"alpha of forward({label})", rtol=RTOL, atol=ATOL)
    expect_close(c, c_ref, f"c of forward({label})", rtol=RTOL, atol=ATOL)


def _q1_precompute_scores(probe: Probe, rng: np.random.Generator) -> None:
    d_s, d_h, d_a, T_x, B = _distinct_sizes(rng, 2, 9)
    W, U, v = _weights(rng, d_s, d_h, d_a)
    handle = _build(probe, W, U, v)
    h = f32(rng.normal(size=(B, T_x, d_h)))
    label = f"h of shape ({B}, {T_x}, {d_h}), d_a = {d_a}"
    keys = as_array(_call(probe, handle, "precompute", label, Torch(h)), f"precompute({label})")
    expect_close(keys, h @ U.T, f"keys = U_a h_i from precompute({label})", rtol=RTOL, atol=ATOL)
    # scores on its own, with keys the grader made: e_ti = v_a^T tanh(W_a s_{t-1} + keys_i)
    s_prev = f32(rng.normal(size=(B, d_s)))
    keys_in = f32(rng.normal(size=(B, T_x, d_a)))
    eye = np.eye(d_a).tolist()
    want = [
        py_additive_scores(s_prev[b].tolist(), keys_in[b].tolist(), W.tolist(), eye, v.tolist())
        for b in range(B)
    ]
    label = f"s_prev ({B}, {d_s}), keys ({B}, {T_x}, {d_a})"
    e = as_array(
        _call(probe, handle, "scores", label, Torch(s_prev), Torch(keys_in)), f"scores({label})"
    )
    expect_close(e, want, f"scores({label})", rtol=RTOL, atol=ATOL)


def _mask_case(rng: np.random.Generator) -> tuple[np.ndarray, ...]:
    """A batch whose padding has the largest score by far (> 110 above every real one).

    exp(e_ti − max) of a real position then underflows in float32 when the
    maximum is taken over the padding too, so only a mask applied *before* the
    softmax gives the right weights. Row 0 has one real position.
    """
    for _ in range(100):
        d_s, d_h, d_a, T_x, B = _distinct_sizes(rng, 3, 10)
        if d_a < 4 or d_h < d_a + 2 or T_x < 4 or B < 3 or B > 6:
            continue
        W, U, _ = _weights(rng, d_s, d_h, d_a)
        v = f32(rng.choice([-1.0, 1.0], size=d_a) * rng.uniform(35, 50, size=d_a))
        s_prev = f32(rng.normal(size=(B, d_s)) * 0.1)
        h = rng.normal(size=(B, T_x, d_h)) * 0.1
        mask = np.zeros((B, T_x), dtype=bool)
        for b in range(B):  # row 0: one real position; the others 2 … T_x - 1; all pad some
            real = 1 if b == 0 else int(rng.integers(2, T_x))
            mask[b, rng.permutation(T_x)[:real]] = True
        # padding: W_a s + U_a h_i = 4 sign(v_a), so e_ti ≈ sum |v_a|
        pinv = np.linalg.pinv(U)
        for b in range(B):
            pad = pinv @ (4.0 * np.sign(v) - W @ s_prev[b])
            h[b, ~mask[b]] = pad
        h = f32(h)
        e, alpha, c = _reference(s_prev, h, W, U, v, mask)
        gap = min(e[b][~mask[b]].min() - e[b][mask[b]].max() for b in range(B))
        if gap > 110 and np.all(np.isfinite(h)):
            return W, U, v, s_prev, h, mask, alpha, c
    raise RuntimeError("no masked case with a large score on padding was drawn")  # pragma: no cover


def _q1_mask(probe: Probe, rng: np.random.Generator) -> None:
    W, U, v, s_prev, h, mask, alpha_ref, c_ref = _mask_case(rng)
    B, T_x, _ = h.shape
    handle = _build(probe, W, U, v)
    label = f"a ({B}, {T_x}) batch with its mask, the largest score on padding"
    c, alpha = _forward(probe, handle, label, Torch(s_prev), Torch(h), Torch(mask, dtype="bool"))
    expect_close(
        alpha, alpha_ref, f"alpha of forward({label})", rtol=RTOL, atol=ATOL, exact_zeros=True
    )
    expect_close(c, c_ref, f"c of forward({label})", rtol=RTOL, atol=ATOL)


# --------------------------------------------------------------------------- question 2
def _q2_your_module(probe: Probe, rng: np.random.Generator) -> None:
    """The decoder attends with the learner's class.

    This point rests on the worker's own report (the class names of
    ``model.decoder.attention``), which code in the learner's notebook could
    forge; the two points of the held-out check do not.
    """
    parts = probe.state("model", parts=["decoder.attention"]).get("parts")
    mro = parts.get("decoder.attention") if isinstance(parts, dict) else None
    if not isinstance(mro, list) or not mro or not all(isinstance(n, str) for n in mro):
        raise Fail("the class of model.decoder.attention could not be read", kind="type")
    if mro[0] != "MyAdditiveAttention":
        raise Fail(
            f"model.decoder.attention should be your MyAdditiveAttention, but it is {mro[0][:100]}",
            note="model.decoder.attention is not your MyAdditiveAttention",
        )
    if "AdditiveAttention" in mro:
        raise Fail(
            "your MyAdditiveAttention is built on the course's AdditiveAttention: write it as an "
            "nn.Module of your own",
            note="your MyAdditiveAttention is built on the course's AdditiveAttention",
        )


@functools.cache
def _training_task() -> Task:
    from attnlib.tasks import make_task

    return make_task("reverse", **TASK)


def _held_out(seed: int) -> Task:
    """The notebook's task with HELD_OUT test strings of seed ``seed`` never seen in training."""
    from attnlib.tasks import make_task

    task = _training_task()
    seen = {src for src, _ in (*task.train, *task.valid)}
    lengths = {k: TASK[k] for k in ("min_len", "max_len")}
    drawn = make_task(
        "reverse", n_train=1, n_valid=0, n_test=HELD_OUT + 100, seed=seed, **lengths
    ).test
    test = [pair for pair in drawn if pair[0] not in seen][:HELD_OUT]
    return dataclasses.replace(task, test=test)


def _trusted_model(params: Any) -> Seq2Seq:
    """The course's model, built here, holding the learner's trained weights (plain arrays)."""
    import torch

    from attnlib.models import make_seq2seq

    task = _training_task()
    model = make_seq2seq(task.src_vocab, task.tgt_vocab, **SIZES, seed=0)  # type: ignore[arg-type]
    if not isinstance(params, dict):
        raise Fail("the parameters of model could not be read", kind="type")
    want = model.state_dict()
    loaded = {}
    for name, ref in want.items():
        if name not in params and name.startswith("decoder.attention."):
            raise Fail(
                f"the trained model has no parameter {name}: model.decoder.attention should be "
                "your MyAdditiveAttention, with the layers W_a, U_a and v_a the skeleton creates",
                note="the trained model's attention lacks one of the layers W_a, U_a, v_a the "
                "skeleton creates",
            )
        if name not in params:
            raise Fail(
                f"the trained model has no parameter {name}: build it with make_seq2seq as the "
                "cell does and replace only model.decoder.attention",
                note="the trained model lacks a parameter of the course's model: build it with "
                "make_seq2seq as the cell does",
            )
        got = as_array(params[name], name)
        if got.shape != tuple(ref.shape):
            raise Fail(
                f"{name} has shape {got.shape}, the course's model expects {tuple(ref.shape)} "
                f"(d_s = {SIZES['d_s']}, d_h = 2 x hidden = {2 * SIZES['hidden']}, "
                f"d_a = {SIZES['d_a']})",
                kind="shape",
                note="a parameter of the trained model has a shape the course's model does not "
                "expect (use the sizes of SIZES)",
            )
        loaded[name] = torch.from_numpy(got).to(ref.dtype)
    extra = sorted(set(params) - set(want))
    if extra:
        raise Fail(
            f"the trained model has a parameter the course's model does not: {extra[0][:100]} "
            "(MyAdditiveAttention holds W_a, U_a and v_a only)",
            note="the trained model has a parameter the course's model does not "
            "(MyAdditiveAttention holds W_a, U_a and v_a only)",
        )
    model.load_state_dict(loaded)
    return model


def _remote_attention(probe: Probe, handle: str) -> Any:
    """An attention module for the course's decoder whose arithmetic is the learner's module
    (``handle`` in the worker without attnlib): ``precompute`` and ``scores`` are its calls."""
    import torch
    from torch import nn

    class Remote(nn.Module):
        def _ask(self, method: str, want: tuple[int, ...], *args: Any) -> torch.Tensor:
            plain = [Torch(a.detach().cpu().numpy()) for a in args]
            got = as_array(_call(probe, handle, method, "during decoding", *plain), method)
            if got.shape != want:
                raise Fail(
                    f"{method} returned shape {got.shape} while decoding, expected {want}",
                    kind="shape",
                )
            return torch.from_numpy(got).to(torch.float32)

        def precompute(self, h: torch.Tensor) -> torch.Tensor:
            B, T_x, _ = h.shape
            return self._ask("precompute", (B, T_x, SIZES["d_a"]), h)

        def scores(self, s_prev: torch.Tensor, keys: torch.Tensor) -> torch.Tensor:
            return self._ask("scores", tuple(keys.shape[:2]), s_prev, keys)

    return Remote()


def _q2_held_out(probe: Probe, rng: np.random.Generator) -> None:
    from attnlib.train import evaluate

    params = probe.state("model").get("params")
    model = _trusted_model(params)
    attn = model.decoder.attention
    W, U, v = (
        f32(attn.state_dict()[f"{k}.weight"].double().numpy()) for k in ("W_a", "U_a", "v_a")
    )
    own = probe.own()
    handle = _build(own, W, U, v.reshape(-1))
    model.decoder.attention = _remote_attention(own, handle)
    task = _held_out(int(rng.integers(1, 2**31)))
    exact = float(evaluate(model, task, "test").exact_match)
    if not exact >= PASS_MARK:
        raise Fail(
            f"the trained model, with your MyAdditiveAttention, reverses {exact:.0%} of "
            f"{len(task.test)} held-out strings exactly; {PASS_MARK:.0%} are needed",
            note=f"with your module as its attention, the trained model reverses less than "
            f"{PASS_MARK:.0%} of the held-out strings exactly",
        )


_Q1 = Question(
    "q1_module",
    "MyAdditiveAttention",
    (
        Check(
            "shapes",
            1,
            "c is (B, d_h) and alpha is (B, T_x), for every sentence of the batch at once",
            _q1_shapes,
            public=True,
        ),
        Check(
            "values",
            1,
            "alpha_ti is the softmax over i of e_ti = v_a^T tanh(W_a s_{t-1} + U_a h_i), "
            "and c_t = sum_i alpha_ti h_i",
            _q1_values,
        ),
        Check(
            "precompute and scores",
            1,
            "precompute(h) returns the keys U_a h_i (B, T_x, d_a); scores(s_prev, keys) "
            "returns e_ti (B, T_x) from any keys it is given",
            _q1_precompute_scores,
        ),
        Check(
            "mask",
            1,
            "padding (mask False) gets weight exactly 0 and counts neither in the maximum nor "
            "in the denominator: mask the scores before the softmax",
            _q1_mask,
        ),
    ),
)
_Q2 = Question(
    "q2_trained",
    "model",
    (
        Check(
            "your module in the decoder",
            1,
            "set model.decoder.attention = MyAdditiveAttention(d_s, d_h, d_a) with the sizes "
            "from SIZES, before training",
            _q2_your_module,
            public=True,
        ),
        Check(
            "held-out exact match",
            2,
            "the trained model, with your MyAdditiveAttention as its attention, should reverse "
            "at least 80 % of strings it never saw exactly; train it with your module in place",
            _q2_held_out,
        ),
    ),
    uses_attnlib=True,  # trained with attnlib's trainer; the module itself is the learner's
)

EXERCISE = Exercise("04_attention_module", 4, (_Q1, _Q2), cell_seconds=120.0)
