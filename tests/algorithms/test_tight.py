"""The tight entries: exactly the target (epsilon, delta), and their counterparts otherwise."""

from __future__ import annotations

import math

import dp_accounting as dpa
import numpy as np
import pytest

from dpreg.algorithms.registry import get_algorithm
from dpreg.algorithms.tight import COUNTERPARTS, ENTRIES, tight_multiplier
from dpreg.preprocess.stats import SuffStats
from dpreg.privacy.calibrate import RTOL
from dpreg.privacy.ledger import release_columns

DELTA = 1e-6
EPSILONS = [0.1, 1.0, 10.0]
KW = {"delta": DELTA, "d": 8, "bound_x": 1.0, "bound_y": 1.0, "n": 2000}
NAMES = sorted(COUNTERPARTS)
GAUSSIAN_ONLY = ["adassp-tight", "dp-gd-tight", "ssp-tight"]


@pytest.mark.parametrize("eps", EPSILONS)
@pytest.mark.parametrize("name", NAMES)
def test_the_ledger_spends_exactly_the_target(name, eps):
    rel = get_algorithm(name).releases(epsilon=eps, **KW)
    cols = release_columns(rel, delta=DELTA)
    # never above eps (1e-12: rounding of the Gaussian closed form)
    assert eps * (1 - RTOL) <= cols["eps_exact"] <= eps * (1 + 1e-12)
    assert cols["eps_basic"] == pytest.approx(eps, rel=1e-12)
    # delta_exact: the profile's delta at the (basic = target) epsilon, never missing
    assert math.isfinite(cols["delta_exact"])
    assert DELTA * 0.99 <= cols["delta_exact"] <= DELTA * (1 + 1e-3)
    assert all(r.valid for r in rel) and {r.calibration for r in rel} == {"tight"}


@pytest.mark.parametrize("eps", EPSILONS)
@pytest.mark.parametrize("name", GAUSSIAN_ONLY)
def test_gaussian_tight_entries_against_the_pld_accountant(name, eps):
    rel = get_algorithm(name).releases(epsilon=eps, **KW)
    # value discretisation 1e-4: the PLD epsilon is within about that above the exact one
    acc = dpa.pld.PLDAccountant(
        dpa.NeighboringRelation.ADD_OR_REMOVE_ONE, value_discretization_interval=1e-4
    )
    acc.compose(dpa.ComposedDpEvent([dpa.GaussianDpEvent(r.scale / r.sensitivity) for r in rel]))
    assert acc.get_epsilon(DELTA) == pytest.approx(eps, rel=1e-3)


@pytest.mark.parametrize("name", NAMES)
def test_a_tight_entry_is_its_counterpart_with_other_scales(name):
    ours, base = get_algorithm(name), get_algorithm(COUNTERPARTS[name])
    # the same fit function object: no copied code
    assert ours.fit_fn is base.fit_fn
    for field in ("noise_kinds", "needs_rows", "has_lambda", "neighbouring", "stacks_runs"):
        assert getattr(ours, field) == getattr(base, field), field
    assert dict(ours.hyperparameters) == dict(base.hyperparameters)
    assert ours.neighbouring == "add/remove"
    a, b = ours.releases(epsilon=1.0, **KW), base.releases(epsilon=1.0, **KW)
    assert [r.name for r in a] == [r.name for r in b]
    assert [r.sensitivity for r in a] == [r.sensitivity for r in b]
    z = tight_multiplier(name, epsilon=1.0, **KW)
    for ra, rb in zip(a, b, strict=True):
        if ra.mechanism == "gaussian":
            assert ra.scale == pytest.approx(z * rb.scale, rel=1e-12)
        else:  # IHM's sketches: the floor gamma B_X^2 = sqrt(k) sigma_l scales by z
            assert ra.mechanism == "gaussian-mixing"
            assert ra.scale == pytest.approx(math.sqrt(z) * rb.scale, rel=1e-12)


@pytest.mark.parametrize("eps", EPSILONS)
@pytest.mark.parametrize(
    ("tight", "gdp"), [("adassp-tight", "adassp-gdp"), ("ssp-tight", "ssp-gdp")]
)
def test_gaussian_tight_noise_equals_the_closed_form_gdp_entries(tight, gdp, eps):
    a = get_algorithm(tight).releases(epsilon=eps, **KW)
    b = get_algorithm(gdp).releases(epsilon=eps, **KW)
    # Gaussian releases only: the calibration takes the closed form of GDP
    assert [r.scale for r in a] == pytest.approx([r.scale for r in b], rel=1e-12)


@pytest.mark.parametrize("name", NAMES)
def test_tight_entries_spend_more_and_add_less_noise_than_their_counterparts(name):
    # the published calibrations spend 42-78% of eps = 1 (the ledger): tight noise
    # is smaller, never larger
    z = tight_multiplier(name, epsilon=1.0, **KW)
    assert 0.3 < z < 1.0


def _stats(rng: np.random.Generator, n: int = 400, d: int = 4):
    X = rng.normal(size=(n, d))
    X /= np.maximum(1.0, np.linalg.norm(X, axis=1))[:, None]
    y = np.clip(X @ np.full(d, 0.4) + 0.1 * rng.normal(size=n), -1, 1)
    return SuffStats.from_arrays(X, y, bound_x=1.0, bound_y=1.0), (X, y)


@pytest.mark.parametrize("name", ["adassp-tight", "ssp-tight"])
def test_the_fit_draws_the_counterparts_normals_times_z(name):
    """Same noise layout, same stream: the released noise is the counterpart's times z."""
    stats, _ = _stats(np.random.default_rng(3))
    kw = {"epsilon": 1.0, "delta": DELTA, "size": 5, "capture": True}
    ours = get_algorithm(name).fit(stats, rng=np.random.default_rng(11), **kw)
    base = get_algorithm(COUNTERPARTS[name]).fit(stats, rng=np.random.default_rng(11), **kw)
    z = tight_multiplier(
        name, epsilon=1.0, delta=DELTA, d=stats.d, bound_x=1.0, bound_y=1.0, n=stats.n
    )
    noise_ours = ours.released["Xty"] - stats.xty
    noise_base = base.released["Xty"] - stats.xty
    np.testing.assert_allclose(noise_ours, z * noise_base, rtol=1e-9, atol=1e-12)


def test_every_tight_entry_is_registered():
    assert sorted(e.name for e in ENTRIES) == NAMES
    for e in ENTRIES:
        assert get_algorithm(e.name) is e


@pytest.mark.parametrize(("name", "release"), [("dp-gd-tight", "grad_1"), ("ihm-tight", "grad_1")])
def test_row_based_fits_draw_the_counterparts_normals_times_z(name, release):
    """The first gradient (at theta_0 = 0, before any noise enters theta) carries the
    counterpart's noise times z: the same fit, the same stream, only the scale differs."""
    stats, rows = _stats(np.random.default_rng(4))
    kw = {"epsilon": 1.0, "delta": DELTA, "size": 3, "capture": True, "rows": rows}
    ours = get_algorithm(name).fit(stats, rng=np.random.default_rng(12), **kw)
    base = get_algorithm(COUNTERPARTS[name]).fit(stats, rng=np.random.default_rng(12), **kw)
    z = tight_multiplier(
        name, epsilon=1.0, delta=DELTA, d=stats.d, bound_x=1.0, bound_y=1.0, n=stats.n
    )
    X, y = rows
    clean = X.T @ np.clip(y, -1.0, 1.0)  # the clipped gradient sum at theta = 0
    np.testing.assert_allclose(
        ours.released[release] - clean, z * (base.released[release] - clean), rtol=1e-8
    )
    if name == "ihm-tight":
        lam = stats.lambda_min()
        np.testing.assert_allclose(
            ours.released["lambda_min"] - lam, z * (base.released["lambda_min"] - lam), rtol=1e-8
        )
