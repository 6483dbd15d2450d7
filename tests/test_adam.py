"""attnlib._adam: the course's one hand-written Adam, held to torch.optim.Adam."""

from __future__ import annotations

import pytest
import torch

from attnlib._adam import Adam


def _grad(p: torch.Tensor) -> torch.Tensor:
    """A gradient that depends on where p is, so that the two runs must stay together."""
    return torch.sin(3 * p) + p


@pytest.mark.slow  # torch.optim.Adam's first use costs about a second
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_adam_steps_as_torch_adam_does(dtype: torch.dtype) -> None:
    g = torch.Generator().manual_seed(0)
    mine = [torch.randn(4, 5, generator=g, dtype=dtype), torch.randn(3, generator=g, dtype=dtype)]
    theirs = [p.clone().requires_grad_(True) for p in mine]
    adam, ref = Adam(mine, lr=0.3), torch.optim.Adam(theirs, lr=0.3)
    for _ in range(30):
        adam.step([_grad(p) for p in mine])
        for p in theirs:
            p.grad = _grad(p.detach())
        ref.step()
    tol = 1e-5 if dtype == torch.float32 else 1e-12
    for a, b in zip(mine, theirs, strict=True):
        torch.testing.assert_close(a, b.detach(), rtol=0, atol=tol)


def test_adam_moves_against_the_gradient_by_about_lr_at_first() -> None:
    # At step 1 the bias-corrected m / √v is sign(g) (up to ε): every entry moves by lr.
    p = torch.tensor([1.0, -2.0, 3.0], dtype=torch.float64)
    Adam([p], lr=0.1).step([torch.tensor([0.5, -4.0, 1e-3], dtype=torch.float64)])
    torch.testing.assert_close(
        p, torch.tensor([0.9, -1.9, 2.9], dtype=torch.float64), atol=1e-4, rtol=0
    )


def test_adam_refuses_what_it_cannot_step() -> None:
    with pytest.raises(ValueError, match="at least one tensor"):
        Adam([], lr=0.1)
    with pytest.raises(ValueError, match="lr must be > 0"):
        Adam([torch.zeros(2)], lr=0.0)
    with pytest.raises(ValueError, match=r"1 tensor\(s\) but got 2 gradient\(s\)"):
        Adam([torch.zeros(2)], lr=0.1).step([torch.zeros(2), torch.zeros(2)])
