"""Adam, written out: the optimiser step of ``torch.optim.Adam``, for a few tensors.

Two computations of the course optimise a handful of tensors directly rather than a model's
parameters: the fit of the tanh and the linear score
(:func:`attnlib.experiments.fit_pointer_scores`) and the search for other weights α' with the
same output
(:func:`attnlib.importance.adversarial_attention`). Both step with :class:`Adam`: the
update rule of ``torch.optim.Adam`` (no weight decay, no AMSGrad), without importing
``torch.optim``, whose first use costs about a second, more than either computation takes.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import Tensor

__all__ = ["Adam"]


class Adam:
    """Adam (Kingma & Ba, 2015) on ``params``, updated in place by :meth:`step`.

    m ← β₁ m + (1 − β₁) g,  v ← β₂ v + (1 − β₂) g²,
    p ← p − lr / (1 − β₁ᵏ) · m / (√v / √(1 − β₂ᵏ) + ε)   at step k.

    Parameters
    ----------
    params : sequence of Tensor
        The tensors to optimise (leaf tensors; they are changed in place, without autograd).
    lr : float
        The step size.
    betas : (float, float)
        β₁ and β₂, the decay of the two moment estimates.
    eps : float
        ε, added to the root of the second moment.
    """

    def __init__(
        self,
        params: Sequence[Tensor],
        lr: float,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
    ) -> None:
        if not params:
            raise ValueError("Adam needs at least one tensor to optimise")
        if not lr > 0:
            raise ValueError(f"Adam's lr must be > 0, got {lr!r}")
        self.params, self.lr, self.betas, self.eps, self.k = list(params), lr, betas, eps, 0
        self.m = [torch.zeros_like(p) for p in self.params]
        self.v = [torch.zeros_like(p) for p in self.params]

    @torch.no_grad()
    def step(self, grads: Sequence[Tensor]) -> None:
        """One update of every tensor, from its gradient ``grads[j]`` (same order as ``params``)."""
        if len(grads) != len(self.params):
            raise ValueError(
                f"Adam steps {len(self.params)} tensor(s) but got {len(grads)} gradient(s)"
            )
        (b1, b2), self.k = self.betas, self.k + 1
        for p, g, m, v in zip(self.params, grads, self.m, self.v, strict=True):
            m.mul_(b1).add_(g, alpha=1 - b1)
            v.mul_(b2).addcmul_(g, g, value=1 - b2)
            denom = (v.sqrt() / (1 - b2**self.k) ** 0.5).add_(self.eps)
            p.addcdiv_(m, denom, value=-self.lr / (1 - b1**self.k))
