"""The one-pass clipped-residual gradient against the direct two-pass formula."""

from __future__ import annotations

import numpy as np
import pytest

from dpreg.algorithms.residuals import DIRECT_SHARE, ClippedGradient
from dpreg.preprocess.stats import SuffStats
from dpreg.privacy import drawcheck


def _data(n=3000, d=7, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    X /= np.linalg.norm(X, axis=1).max()
    y = np.clip(X @ rng.normal(size=d) + 0.3 * rng.normal(size=n), -1, 1)
    return SuffStats.from_arrays(X, y), X, y


def _direct(X, y, theta, C):
    return (X.T @ np.clip(y[:, None] - X @ theta.T, -C, C)).T


@pytest.mark.parametrize("scale", [0.0, 0.3, 3.0, 300.0])
def test_equals_the_direct_form_whatever_share_of_rows_clips(scale):
    """scale 0: no row clips; 0.3: a few; 3 and 300: most (the direct branch).  Tolerance:
    the two forms differ by rounding only, at most a few ulps of ||X^T y|| (~n) per entry."""
    stats, X, y = _data()
    theta = np.random.default_rng(1).normal(size=(5, X.shape[1])) * scale
    C = 0.8
    shares = (np.abs(y[:, None] - X @ theta.T) > C).mean(axis=0)
    got = ClippedGradient(stats, X, y, 5, clip=C, row_norm=1.0)(theta, release="g")
    np.testing.assert_allclose(got, _direct(X, y, theta, C), rtol=0, atol=1e-11 * len(y))
    if scale == 0.3:  # repeats on both sides of the switch to the direct form
        assert 0 < shares.min() <= DIRECT_SHARE < shares.max()
    if scale == 300.0:
        assert shares.min() > DIRECT_SHARE


def test_non_finite_parameters_give_what_the_direct_form_gives():
    stats, X, y = _data()
    theta = np.zeros((3, X.shape[1]))
    theta[1, 0] = np.nan
    theta[2, 0] = np.inf
    got = ClippedGradient(stats, X, y, 3, clip=1.0, row_norm=1.0)(theta, release="g")
    with np.errstate(invalid="ignore"):
        want = _direct(X, y, theta, 1.0)
    np.testing.assert_allclose(got[0], want[0], atol=1e-11 * len(y))
    np.testing.assert_array_equal(np.isnan(got[1:]), np.isnan(want[1:]))
    finite = np.isfinite(want)
    np.testing.assert_allclose(got[finite], want[finite], rtol=0, atol=1e-11 * len(y))


def test_a_repeat_does_not_depend_on_the_others():
    """Bit for bit: repeats 0..2 of five equal the same three alone (prefix stability)."""
    stats, X, y = _data()
    theta = np.random.default_rng(2).normal(size=(5, X.shape[1])) * np.array(
        [[0.1], [5], [0.2], [50], [0.0]]
    )
    five = ClippedGradient(stats, X, y, 5, clip=0.5, row_norm=1.0)(theta, release="g")
    three = ClippedGradient(stats, X, y, 3, clip=0.5, row_norm=1.0)(theta[:3], release="g")
    one = ClippedGradient(stats, X, y, 1, clip=0.5, row_norm=1.0)(theta[1:2], release="g")
    np.testing.assert_array_equal(five[:3], three)
    np.testing.assert_array_equal(five[1], one[0])


def test_the_rows_gram_is_of_the_rows_given_not_of_the_statistics():
    """Statistics that do not match the rows (here: of other rows) do not leak into the result."""
    stats, X, y = _data()
    other, _, _ = _data(seed=5)
    theta = np.full((1, X.shape[1]), 0.01)
    got = ClippedGradient(other, X, y, 1, clip=0.8, row_norm=1.0)(theta, release="g")
    np.testing.assert_allclose(got, _direct(X, y, theta, 0.8), atol=1e-11 * len(y))
    # a second pair of rows with the same statistics object gets its own Gram matrix
    X2, y2 = X[::2].copy(), y[::2].copy()
    got2 = ClippedGradient(other, X2, y2, 1, clip=0.8, row_norm=1.0)(theta, release="g")
    np.testing.assert_allclose(got2, _direct(X2, y2, theta, 0.8), atol=1e-11 * len(y))


def test_the_clip_is_recorded_with_its_implied_sensitivity():
    stats, X, y = _data()
    with drawcheck.recording() as log:
        ClippedGradient(stats, X, y, 2, clip=0.5, row_norm=2.0)(
            np.zeros((2, X.shape[1])), release="grad_1"
        )
    (draw,) = [d for d in log if d.mechanism == "clip"]
    assert draw.release == "grad_1" and draw.scale == pytest.approx(1.0)
