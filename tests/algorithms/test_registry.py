"""The algorithm contract, checked on every registry entry (present and future).

Each test is parametrised over :data:`dpreg.algorithms.ALGORITHMS`, so an
algorithm added to a family module is held to the same contract without a
new test: releases are consistent with the fit, captured releases are the
ones the ledger lists, randomness is reproducible and prefix-stable, and
the facts other modules derive (style, validity, noise streams) exist.
"""

from __future__ import annotations

import re

import numpy as np
import pytest
from matplotlib.colors import is_color_like

from dpreg._validation import DPRegError
from dpreg.algorithms import ALGORITHMS, get_algorithm, private_algorithms
from dpreg.algorithms.base import Algorithm
from dpreg.algorithms.fits import ReleaseContext
from dpreg.preprocess.stats import SuffStats

DELTA = 1e-6
NAMES = sorted(ALGORITHMS)
PRIVATE = sorted(private_algorithms())


def toy(n: int = 4000, d: int = 4, seed: int = 5):
    """Rows inside the unit ball with |y| <= 1 and a clear linear signal."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    X /= np.maximum(np.linalg.norm(X, axis=1, keepdims=True), 1.0) * 1.5
    theta = np.linspace(1.0, -0.5, d)
    y = np.clip(X @ theta + 0.05 * rng.normal(size=n), -1.0, 1.0)
    return X, y


@pytest.fixture(scope="module")
def data():
    X, y = toy()
    return SuffStats.from_arrays(X, y, bound_x=1.0, bound_y=1.0), (X, y)


def fit(alg: Algorithm, data, *, eps=1.0, seed=3, size=4, capture=False, shared_seed=None):
    stats, rows = data
    return alg.fit(
        stats,
        epsilon=eps,
        delta=DELTA,
        rng=np.random.default_rng(seed),
        size=size,
        rows=rows if alg.needs_rows else None,
        capture=capture,
        shared_seed=shared_seed,
    )


def shared(seed: int | None) -> np.random.SeedSequence | None:
    return None if seed is None else np.random.SeedSequence(seed)


@pytest.mark.parametrize("name", NAMES)
def test_entry_declares_its_facts(name):
    alg = ALGORITHMS[name]
    assert alg.name == name
    assert re.fullmatch(r"[a-z0-9][a-z0-9-]*", name), "config names are lower-case words"
    assert alg.label.strip() and alg.reference.strip()
    assert is_color_like(alg.style.color)
    assert alg.neighbouring in ("add/remove", "replace-one")
    assert set(alg.tuned_nonprivately) <= set(alg.hyperparameters)
    if not alg.private:
        assert alg.releases(epsilon=1.0, delta=DELTA, d=3) == []


def test_private_algorithms_have_distinct_colours():
    colours = [ALGORITHMS[n].style.color for n in PRIVATE]
    assert len(set(colours)) == len(colours), "every private algorithm keeps its own colour"


@pytest.mark.parametrize("name", PRIVATE)
def test_releases_are_well_formed(name):
    alg = ALGORITHMS[name]
    for eps in (0.1, 1.0, 10.0):
        rel = alg.releases(epsilon=eps, delta=DELTA, d=4, n=4000)
        assert rel, "a private algorithm releases something"
        assert len({r.name for r in rel}) == len(rel), "release names are unique per run"
        for r in rel:
            if r.mechanism == "failure":
                # a failed safety margin or test: a pure delta term (0, p), no scale
                assert r.epsilon == 0 and 0 <= r.delta < 1  # 0: a tail that underflows
                continue
            if r.mechanism == "external":
                # calibrated inside a library: its stated budget, no sensitivity or scale
                assert 0 < r.epsilon <= eps * (1 + 1e-12) and 0 <= r.delta < 1
                assert np.isnan(r.sensitivity) and np.isnan(r.scale)
                continue
            if r.mechanism == "poisson-selection":
                # the best of K ~ Poisson(scale) runs over `copies` candidates (PS22): the
                # protocol's nominal budget, no sensitivity of its own
                assert r.epsilon == eps and r.copies >= 1 and np.isnan(r.sensitivity)
                assert r.scale > 0 and np.isfinite(r.scale)
                continue
            assert r.sensitivity > 0 and np.isfinite(r.sensitivity)
            assert r.scale > 0 and np.isfinite(r.scale)
            assert 0 < r.epsilon <= eps * (1 + 1e-12)
            assert 0 <= r.delta < 1
        if alg.noise_kinds:
            assert len(alg.noise_kinds) == len(rel)


@pytest.mark.parametrize("name", PRIVATE)
def test_captured_releases_are_the_ledgers_releases(name, data):
    """What the audit reads: one captured array per release, leading axis = repeats."""
    alg = ALGORITHMS[name]
    res = fit(alg, data, capture=True, size=5)
    rel = alg.releases(epsilon=1.0, delta=DELTA, d=data[0].d, n=data[0].n)
    assert res.released is not None, f"{name} does not report what it released"
    # a failure release is a delta term, not a noisy value: nothing to capture
    assert set(res.released) == {r.name for r in rel if r.mechanism != "failure"}
    for key, value in res.released.items():
        assert np.shape(value)[0] == 5, key
    # capturing changes nothing about the answer
    plain = fit(alg, data, capture=False, size=5)
    np.testing.assert_array_equal(plain.theta, res.theta)
    assert plain.released is None


@pytest.mark.parametrize("shared_seed", [None, 9])
@pytest.mark.parametrize("name", NAMES)
def test_same_rng_same_answer_and_prefix_stable(name, data, shared_seed):
    alg = ALGORITHMS[name]
    a = fit(alg, data, size=3, shared_seed=shared(shared_seed))
    b = fit(alg, data, size=3, shared_seed=shared(shared_seed))
    np.testing.assert_array_equal(a.theta, b.theta)
    np.testing.assert_array_equal(a.failed, b.failed)
    many = fit(alg, data, size=7, shared_seed=shared(shared_seed))
    np.testing.assert_array_equal(many.theta[:3], a.theta, err_msg="first repeats changed")
    assert a.theta.shape == (3, data[0].d) and a.lam.shape == (3,) and a.failed.dtype == bool
    assert np.isnan(a.theta[a.failed]).all()


@pytest.mark.parametrize("shared_seed", [None, 9])
@pytest.mark.parametrize("name", NAMES)
def test_grid_equals_one_fit_per_epsilon(name, data, shared_seed):
    """Also with a shared seed: the epsilon-free step done once equals doing it per epsilon."""
    alg = ALGORITHMS[name]
    stats, rows = data
    eps = [0.5, 2.0]
    grid = alg.fit_grid(
        stats,
        epsilons=eps,
        delta=DELTA,
        rngs=[np.random.default_rng(s) for s in (1, 2)] if alg.private else [None, None],
        size=3,
        rows=rows if alg.needs_rows else None,
        shared_seed=shared(shared_seed),
    )
    one = [
        fit(alg, data, eps=e, seed=s, size=3, shared_seed=shared(shared_seed))
        for e, s in zip(eps, (1, 2), strict=True)
    ]
    np.testing.assert_array_equal(grid.theta, np.concatenate([o.theta for o in one]))
    np.testing.assert_array_equal(grid.failed, np.concatenate([o.failed for o in one]))


@pytest.mark.parametrize("name", PRIVATE)
def test_shared_seed_only_moves_an_epsilon_free_step(name, data):
    """Entries without one ignore the seed; entries with one take that step from it."""
    alg = ALGORITHMS[name]
    # epsilon 10: TukeyEM's safety test passes on the toy data (at 1 the code's form fails)
    plain = fit(alg, data, eps=10.0, size=4)
    a = fit(alg, data, eps=10.0, size=4, shared_seed=shared(1))
    b = fit(alg, data, eps=10.0, size=4, shared_seed=shared(2))
    if not alg.epsilon_free_step:
        np.testing.assert_array_equal(a.theta, plain.theta)
        np.testing.assert_array_equal(b.theta, plain.theta)
    else:
        ok = ~(a.failed | b.failed)
        assert ok.any(), "the toy data should let some trials pass"
        assert not np.array_equal(a.theta[ok], b.theta[ok])


def test_shared_seed_must_be_a_seed_sequence(data):
    with pytest.raises(DPRegError, match="shared_seed must be None or a numpy SeedSequence"):
        fit(get_algorithm("adassp"), data, shared_seed=7)


@pytest.mark.parametrize("name", PRIVATE)
def test_other_seed_other_noise(name, data):
    alg = ALGORITHMS[name]
    a = fit(alg, data, seed=1, size=4)
    b = fit(alg, data, seed=2, size=4)
    ok = ~(a.failed | b.failed)
    if ok.any():
        assert not np.array_equal(a.theta[ok], b.theta[ok])


def test_noise_streams_shared_only_by_equal_layouts():
    by_stream: dict[str, set[tuple[str, ...]]] = {}
    for name in PRIVATE:
        alg = ALGORITHMS[name]
        by_stream.setdefault(alg.noise_stream, set()).add(alg.noise_kinds)
    for stream, layouts in by_stream.items():
        assert len(layouts) == 1, stream
    # the AdaSSP calibrations compared in the figures consume the same normals
    assert (
        ALGORITHMS["adassp"].noise_stream
        == ALGORITHMS["adassp-analytic"].noise_stream
        == ALGORITHMS["adassp-gdp"].noise_stream
    )
    assert ALGORITHMS["adassp-wang"].noise_stream != ALGORITHMS["adassp"].noise_stream


def test_common_random_numbers_scale_the_same_normals(data):
    """adassp and adassp-gdp share the normals: their noisy X^T y differ by sigma ratio."""
    a = fit(ALGORITHMS["adassp"], data, capture=True)
    g = fit(ALGORITHMS["adassp-gdp"], data, capture=True)
    stats = data[0]
    sa = ALGORITHMS["adassp"].releases(epsilon=1.0, delta=DELTA, d=stats.d)[2].scale
    sg = ALGORITHMS["adassp-gdp"].releases(epsilon=1.0, delta=DELTA, d=stats.d)[2].scale
    np.testing.assert_allclose(
        (a.released["Xty"] - stats.xty) / sa, (g.released["Xty"] - stats.xty) / sg, rtol=1e-10
    )


def test_unknown_hyperparameter_is_refused():
    alg = get_algorithm("adassp")
    with pytest.raises(DPRegError, match=r"no hyperparameter 'm' \(allowed: none\)"):
        alg.resolve_params({"m": 3})


def test_row_algorithms_refuse_missing_or_mismatched_rows(data):
    stats, (X, y) = data
    seen = []

    def fit_fn(st, rel, opts):
        seen.append(opts.rows)
        return ALGORITHMS["trivial"].fit_fn(st, rel, opts)

    alg = Algorithm(
        "rows-probe",
        "probe",
        private=False,
        calibration="none",
        release_fn=lambda ctx: [],
        fit_fn=fit_fn,
        needs_rows=True,
        reference="test",
    )
    with pytest.raises(DPRegError, match="needs the training rows"):
        alg.fit(stats, epsilon=1.0, delta=DELTA, rng=None)
    with pytest.raises(DPRegError, match="do not match the statistics"):
        alg.fit(stats, epsilon=1.0, delta=DELTA, rng=None, rows=(X[:10], y[:10]))
    alg.fit(stats, epsilon=1.0, delta=DELTA, rng=None, rows=(X, y))
    assert seen[0][0] is X


def test_release_context_needs_n_when_asked():
    ctx = ReleaseContext(1.0, DELTA, 3)
    with pytest.raises(DPRegError, match="depends on n"):
        ctx.need_n("x")


def test_rows_outside_bounds_are_refused_before_any_release():
    X, y = toy(n=50)
    X[7] *= 10.0
    with pytest.raises(DPRegError, match="row 7 has norm"):
        SuffStats.from_arrays(X, y, bound_x=1.0, bound_y=1.0)


@pytest.mark.parametrize("name", [n for n in NAMES if not ALGORITHMS[n].needs_rows])
def test_fit_runs_equals_one_fit_per_run(name):
    """Runs of private pre-processing (different statistics, same n): fit_runs, stacked
    or not, gives bit for bit what a loop of size-1 fits drawing from one generator does."""
    alg = ALGORITHMS[name]
    runs = []
    for seed in (11, 12, 13):
        X, y = toy(n=500, d=3, seed=seed)
        runs.append(SuffStats.from_arrays(X, y, bound_x=1.0, bound_y=1.0))
    kw = dict(epsilon=0.7, delta=DELTA, rho=0.05, xtx_offset=1.0)
    res = alg.fit_runs(runs, rng=np.random.default_rng(4) if alg.private else None, **kw)
    g = np.random.default_rng(4)
    one = [alg.fit(st, rng=g if alg.private else None, size=1, **kw) for st in runs]
    np.testing.assert_array_equal(res.theta, np.concatenate([o.theta for o in one]))
    np.testing.assert_array_equal(res.lam, np.concatenate([o.lam for o in one]))
    np.testing.assert_array_equal(res.failed, np.concatenate([o.failed for o in one]))
    if alg.stacks_runs:
        assert SuffStats.stack(runs).lambda_min(1.0).shape == (3,)
