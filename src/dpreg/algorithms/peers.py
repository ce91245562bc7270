"""diffprivlib's ``LinearRegression``: an external library as a registry entry.

``diffprivlib`` (IBM's Differential Privacy Library, Holohan et al. 2019)
is an optional dependency (``pip install 'dpreg[peers]'``).  Its
``LinearRegression`` implements the functional mechanism (Zhang et al.
2012) on raw rows, so the entry needs the transformed training rows of each
fold (``needs_rows``); it is fitted once per repeat (the library has no
batched interface).  This module is the only one of dpreg that names the
library: the entry declares it in ``requires`` (with its install hint), so
a run without it skips the entry with that hint, and provenance records its
version -- the same contract a plug-in (:mod:`dpreg.algorithms.plugins`) has.

The library calibrates its noise internally: the entry's one release is
:func:`dpreg.privacy.mechanisms.external_release`, the budget the library
states taken at face value, recorded as calibration ``external`` in the
trial tables and in provenance alike.
"""

from __future__ import annotations

import warnings

import numpy as np

from dpreg.algorithms.base import Algorithm, Style
from dpreg.algorithms.fits import FitOptions, FitResult, ReleaseContext
from dpreg.preprocess.stats import SuffStats
from dpreg.privacy import mechanisms as mech
from dpreg.privacy.mechanisms import Release
from dpreg.seeding import as_generator

__all__ = ["ENTRIES", "fit_diffprivlib", "library_seeds"]

_NAME = "diffprivlib"


def fit_diffprivlib(
    X: np.ndarray, y: np.ndarray, *, epsilon: float, seeds: np.ndarray
) -> np.ndarray:
    """Fit ``diffprivlib.models.LinearRegression`` once per seed.

    ``X`` rows must lie in the unit ball and ``|y| <= 1`` (the transformed
    training rows); the bounds passed to the library are the public box
    ``[-1, 1]`` per feature and for ``y`` -- never taken from the data.
    Returns coefficients of shape ``(len(seeds), d)``.
    """
    from diffprivlib.models import LinearRegression  # optional dependency (dpreg[peers])

    d = X.shape[1]
    out = np.empty((len(seeds), d))
    bounds_x = (-np.ones(d), np.ones(d))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the library warns on every fit about its own settings
        for i, s in enumerate(seeds):
            model = LinearRegression(
                epsilon=float(epsilon),
                bounds_X=bounds_x,
                bounds_y=(-1.0, 1.0),
                fit_intercept=False,
                random_state=int(s),
            )
            model.fit(X, y)
            out[i] = np.asarray(model.coef_, dtype=float).ravel()
    return out


def library_seeds(rng: np.random.Generator, size: int) -> np.ndarray:
    """``size`` integer seeds for the library, prefix-stable in ``size``.

    A fresh generator (the sweep's: one per fold and epsilon, built from
    its ``SeedSequence``) gives the first ``size`` words of that
    ``SeedSequence`` -- the seeds the sweep has always used -- and is then
    advanced, so a second call on it draws new seeds; a generator already
    drawn from gives its next ``size`` 32-bit integers.
    """
    rng = as_generator(rng)
    bg = rng.bit_generator
    seq = getattr(bg, "seed_seq", None)
    fresh = isinstance(seq, np.random.SeedSequence) and bg.state == type(bg)(seq).state
    drawn = rng.integers(0, 2**32, size=size, dtype=np.uint32)
    if fresh:
        assert isinstance(seq, np.random.SeedSequence)
        return seq.generate_state(size)
    return drawn


def _releases(ctx: ReleaseContext) -> list[Release]:
    """One externally calibrated pure epsilon-DP release (the library's stated budget)."""
    return [
        mech.external_release(
            _NAME,
            epsilon=ctx.epsilon,
            delta=0.0,
            calibration="functional mechanism (library-internal)",
        )
    ]


def _fit(stats: SuffStats, rel: list[Release], opts: FitOptions) -> FitResult:
    assert opts.rows is not None and opts.rng is not None
    X, y = opts.rows
    theta = fit_diffprivlib(X, y, epsilon=rel[0].epsilon, seeds=library_seeds(opts.rng, opts.size))
    failed = ~np.all(np.isfinite(theta), axis=1)
    # the library releases the coefficients themselves
    released = {rel[0].name: theta.copy()} if opts.capture else None
    return FitResult(theta, np.full(opts.size, np.nan), failed, released)


ENTRIES = [
    Algorithm(
        _NAME,
        "diffprivlib LinearRegression",
        private=True,
        calibration="external",
        release_fn=_releases,
        fit_fn=_fit,
        needs_rows=True,
        style=Style("rosybrown", ":", "p"),
        reference="Holohan, Braghin, Mac Aonghusa & Levacher 2019 (diffprivlib); "
        "Zhang et al. 2012 (the functional mechanism it implements)",
        requires=(_NAME,),
        install_hint="pip install 'dpreg[peers]'",
        note="numerically chaotic fits, differ across machines",
    )
]
