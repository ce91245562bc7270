"""Fixtures shared by the test modules."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest


def bounded_data(
    n: int = 300,
    d: int = 3,
    seed: int = 0,
    bx: float = 1.0,
    by: float = 1.0,
    *,
    at_bound: bool = False,
) -> tuple[np.ndarray, np.ndarray]:
    """Toy regression rows inside the bounds: ``||x_i|| <= bx`` and ``|y_i| <= by``.

    ``X`` is Gaussian, scaled so that its largest row norm is exactly ``bx``
    (with ``at_bound=True`` every row is scaled to norm ``bx``, the worst
    case for sensitivity); ``y`` is linear in ``X`` plus 5% noise, scaled so
    that ``max |y_i| = by``.  Well conditioned for ``n >> d``.
    """
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    norms = (
        np.linalg.norm(X, axis=1, keepdims=True) if at_bound else np.linalg.norm(X, axis=1).max()
    )
    X *= bx / norms
    y = X @ np.linspace(0.8, -0.5, d) / bx + 0.05 * rng.normal(size=n)
    y *= by / np.abs(y).max()
    return X, y


@pytest.fixture(scope="session")
def make_data() -> Callable[..., tuple[np.ndarray, np.ndarray]]:
    """The :func:`bounded_data` factory (call it with the size, seed and bounds you need)."""
    return bounded_data
