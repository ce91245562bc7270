"""The fit-versus-release check: every entry draws exactly what its releases declare.

Deterministic: the check compares the scales, clip thresholds and margins a
fit applies with the ledger's releases, with no statistics.  Mutants (a fit
drawing Laplace noise at half its stated scale, clipping at 2C while the
release says C, or using any scale other than its releases') are caught.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

from dpreg.algorithms import ALGORITHMS, get_algorithm
from dpreg.algorithms.base import Algorithm, FitResult, Style
from dpreg.preprocess.stats import SuffStats
from dpreg.privacy import drawcheck
from dpreg.privacy import mechanisms as mech
from dpreg.privacy.selection import optional_releases

DELTA = 1e-6
PRIVATE = sorted(n for n, a in ALGORITHMS.items() if a.private)


@pytest.fixture(scope="module")
def data(make_data):
    X, y = make_data(n=600, d=3, seed=7)
    return SuffStats.from_arrays(X, y), (X, y)


def _check(alg: Algorithm, data, eps: float, seed: int = 0) -> list[str]:
    stats, rows = data
    return drawcheck.draw_check(
        alg, stats, epsilon=eps, delta=DELTA, rng=np.random.default_rng(seed), rows=rows
    )


@pytest.mark.parametrize("eps", [0.5, 5.0])
@pytest.mark.parametrize("name", sorted(ALGORITHMS))
def test_every_entry_draws_what_its_releases_declare(name, eps, data):
    assert _check(ALGORITHMS[name], data, eps) == []


@pytest.mark.parametrize("name", PRIVATE)
def test_every_private_entry_records_a_draw_for_each_noisy_release(name, data):
    """Not vacuous: each release that adds noise (or is a failure term) is matched by a draw."""
    stats, rows = data
    alg = ALGORITHMS[name]
    with drawcheck.recording() as log:
        alg.fit(
            stats,
            epsilon=1.0,
            delta=DELTA,
            rng=np.random.default_rng(1),
            size=2,
            rows=rows if alg.needs_rows else None,
        )
    rel = alg.releases_for(stats, epsilon=1.0, delta=DELTA)
    named = {d.release for d in log if d.release is not None}
    # a private selection runs a random subset of its candidates: those need no draw
    optional = optional_releases(rel)
    assert not optional or named & optional, f"{name}: no candidate ran"
    for r in rel:
        if r.name not in optional and (
            drawcheck.DRAW_FAMILY.get(r.mechanism) is not None
            or (r.mechanism == "failure" and r.delta > 0)
        ):
            assert r.name in named, f"{name}: no draw recorded for {r.name}"
    if all(r.mechanism == "external" for r in rel):
        # calibrated inside a library (diffprivlib): its draws are the library's own
        assert not named
        return
    # dropping every draw of one release makes the check fail
    first = next(iter(named))
    assert drawcheck.compare_draws(
        rel, [d for d in log if d.release != first], neighbouring=alg.neighbouring
    )


def test_nothing_is_recorded_outside_recording(data):
    stats, _ = data
    assert not drawcheck.active()
    get_algorithm("ssp").fit(stats, epsilon=1.0, delta=DELTA, rng=np.random.default_rng(0))
    with drawcheck.recording() as log:
        assert drawcheck.active()
    assert log == [] and not drawcheck.active()


# --------------------------------------------------------------------------
# mutants
# --------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["functional", "tukey-em", "sketch-ols", "tukey-code"])
def test_laplace_noise_at_half_scale_is_caught(name, data, monkeypatch):
    real = mech.laplace_noise

    def half(shape, *, scale, rng, release=None):
        return real(shape, scale=0.5 * scale, rng=rng, release=release)

    monkeypatch.setattr(mech, "laplace_noise", half)
    problems = _check(ALGORITHMS[name], data, 1.0)
    assert any("drew laplace scale" in p for p in problems), problems


@pytest.mark.parametrize("name", ["ssp", "ssp-wang", "adassp", "adassp-gdp", "adaops"])
def test_gaussian_block_at_half_scale_is_caught(name, data, monkeypatch):
    real = mech.normal_block_noise

    def half(kinds, scales, d, *, rng, size, releases=None):
        return real(kinds, [0.5 * s for s in scales], d, rng=rng, size=size, releases=releases)

    monkeypatch.setattr(mech, "normal_block_noise", half)
    problems = _check(ALGORITHMS[name], data, 1.0)
    assert any("drew gaussian scale" in p or "margin" in p for p in problems), problems


def _with_fit(alg: Algorithm, fit_fn) -> Algorithm:
    return dataclasses.replace(alg, name=alg.name + "-mutant", fit_fn=fit_fn)


@pytest.mark.parametrize("name", ["dp-gd", "dp-gd-lev", "ihm"])
def test_clip_at_twice_the_declared_threshold_is_caught(name, data):
    """The fit clips residuals at C = B_Y of the statistics it gets: hand it 2 B_Y."""
    alg = ALGORITHMS[name]

    def clip_2c(stats, rel, opts):
        return alg.fit_fn(dataclasses.replace(stats, bound_y=2.0 * stats.bound_y), rel, opts)

    problems = _check(_with_fit(alg, clip_2c), data, 1.0)
    assert any("clip implies sensitivity" in p for p in problems), problems
    # the unmutated entry passes (the difference is the clip, nothing else)
    assert _check(alg, data, 1.0) == []


@pytest.mark.parametrize("name", PRIVATE)
def test_any_change_of_the_scales_a_fit_uses_is_caught(name, data):
    """Hand the fit releases with every scale halved: if its draws change, the check says so.

    A fit that never reads a scale from its releases (NoisySGD recomputes its per-step
    scale from epsilon and delta) draws the same values; then nothing must be reported.
    """
    alg = ALGORITHMS[name]
    stats, rows = data

    def halved(st, rel, opts):
        return alg.fit_fn(
            st,
            [
                r if r.mechanism == "failure" else dataclasses.replace(r, scale=0.5 * r.scale)
                for r in rel
            ],
            opts,
        )

    mutant = _with_fit(alg, halved)
    kw = {"epsilon": 1.0, "delta": DELTA, "size": 2, "rows": rows if alg.needs_rows else None}
    a = alg.fit(stats, rng=np.random.default_rng(4), capture=True, **kw)
    b = mutant.fit(stats, rng=np.random.default_rng(4), capture=True, **kw)
    # the same draws: the same answer and the same released values
    same = np.array_equal(a.theta, b.theta, equal_nan=True) and all(
        np.array_equal(a.released[k], b.released[k], equal_nan=True) for k in a.released
    )
    problems = _check(mutant, data, 1.0, seed=4)
    if same:
        assert problems == [], problems
    else:
        assert problems, f"{name}: a fit drawing at other scales passed the check"


def test_a_margin_the_ledger_does_not_count_is_caught():
    rel = get_algorithm("adaops-cap").releases(epsilon=1.0, delta=DELTA, d=3, n=600)
    p = next(r for r in rel if r.name == "lambda_min_margin").delta
    sds = -math.sqrt(2.0) * _erfcinv(2.0 * p)  # the margin whose tail is p
    ok = [drawcheck.Draw("lambda_min_margin", "margin-gaussian", (), sds)]
    bad = [drawcheck.Draw("lambda_min_margin", "margin-gaussian", (), 0.5 * sds)]
    assert not any("lambda_min_margin" in x for x in drawcheck.compare_draws(rel, ok))
    assert any("ledger counts" in x for x in drawcheck.compare_draws(rel, bad))


def _erfcinv(y: float) -> float:
    from scipy.special import erfcinv

    return -float(erfcinv(y))


def test_a_plug_in_entry_gets_the_check_for_free(data):
    """A plug-in declaring a Gaussian release and drawing it at twice its scale."""

    def releases(ctx):
        return [
            mech.gaussian_release(
                "Xty",
                sensitivity=ctx.bound_x * ctx.bound_y,
                sigma=mech.analytic_sigma(
                    epsilon=ctx.epsilon, delta=ctx.delta, sensitivity=ctx.bound_x * ctx.bound_y
                ),
                epsilon=ctx.epsilon,
                delta=ctx.delta,
                calibration="analytic",
                valid=True,
            )
        ]

    def make(factor):
        def fit(stats, rel, opts):
            e = mech.vector_noise(
                stats.d, scale=factor * rel[0].scale, rng=opts.rng, size=opts.size, release="Xty"
            )
            A = np.broadcast_to(stats.xtx + np.eye(stats.d), (opts.size, stats.d, stats.d))
            theta = np.linalg.solve(A, (stats.xty + e)[..., None])[..., 0]
            return FitResult(theta, np.full(opts.size, np.nan), np.zeros(opts.size, bool))

        return Algorithm(
            f"plugin-{factor}",
            "plug-in",
            private=True,
            calibration="analytic",
            release_fn=releases,
            fit_fn=fit,
            style=Style("k"),
        )

    assert _check(make(1.0), data, 1.0) == []
    problems = _check(make(2.0), data, 1.0)
    assert any("drew gaussian scale" in p for p in problems), problems


def test_the_end_to_end_audit_runs_the_check(monkeypatch):
    from dpreg.audit import audit_end_to_end

    kw = {"epsilon": 1.0, "delta": DELTA, "seed": 20200601, "samples": 500}
    assert audit_end_to_end("functional", **kw)["draw_check"] == []
    real = mech.laplace_noise

    def halved(shape, *, scale, rng):  # a draw at b/2 behind an unchanged ledger
        return real(shape, scale=scale / 2, rng=rng)

    monkeypatch.setattr(mech, "laplace_noise", halved)
    found = audit_end_to_end("functional", **kw)["draw_check"]
    assert any("objective_coefficients: drew laplace scale" in p for p in found), found
