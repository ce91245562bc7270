"""TukeyEM's number of models ``m`` chosen privately (``tukey-em-tuned``).

Why not the Poisson protocol of :mod:`dpreg.algorithms.tuning`
--------------------------------------------------------------
Papernot & Steinke's Theorem 6 needs a base mechanism that is Renyi-DP.
TukeyEM's propose-test-release (:mod:`dpreg.algorithms.tukey`) makes it
``(epsilon, delta)``-DP but not Renyi-DP at any finite order (the test passes
an unsafe dataset with probability ``delta``, on which the restricted
exponential mechanism has unbounded privacy loss), so that bound does not
apply.  Liu & Talwar's (2019) random stopping, as implemented (OpenDP's
``make_select_private_candidate``: an ``epsilon``-DP candidate gives a
``2 epsilon``-DP selection above a threshold), is stated for pure-DP
candidates.  With ``J = 3`` candidates, running each once is the simple bound
that covers propose-test-release: this entry's guarantee follows from basic
composition alone.

The protocol
------------
The public grid holds the ``m`` rules of the three TukeyEM entries,
``tukey-em-n1d`` (``m = n/d``), ``tukey-em`` (``n/2d``) and ``tukey-em-n4d``
(``n/4d``): ``J = 3`` candidates (under replace-one neighbours ``n`` is public,
so each rule is a public number).  A rule giving fewer than 4 models or
batches of fewer than ``d`` rows (:func:`dpreg.algorithms.tukey.resolve_m`)
is dropped from the grid before anything is computed, a function of the
public ``n`` and ``d`` (on Wang's breastcancer and autos only ``n/d`` is
left, ``J = 1``).  On a training fold, for ``j = 1 .. J``:

1. run TukeyEM with ``m_j`` at parameter ``epsilon_t = 2 eps2`` and
   ``delta_t`` (published form: PTR's ``Lap(1/eps2)`` on ``k_hat``, then the
   restricted exponential mechanism at ``e^{eps2 q}``), releasing its
   noisy distance and its model ``theta_j`` (NaN when the test fails);
2. release the score ``S_j = sum_i min((y_i - x_i^T theta_j)^2, C_S) +
   Lap(C_S / eps_S)`` over the training rows, ``C_S = 4 B_Y^2`` (a failed fit
   scores ``n C_S`` before noise, as in :mod:`dpreg.algorithms.tuning`);

then output the model of the smallest noisy score (ties: the first
candidate).  Every candidate runs in every trial; the output is a
function of the ``2J`` releases.

Proof sketch (replace-one)
--------------------------
* TukeyEM run at ``(epsilon_t, delta_t)`` costs ``(1.5 epsilon_t, 2 delta_t)``:
  the test's Laplace release is ``eps2``-DP (Dwork & Roth 2014, Theorem 3.6;
  ``k_hat`` has sensitivity 1), the exponential mechanism on a score of
  sensitivity 1 with weights ``e^{eps2 q}`` is ``2 eps2``-DP (McSherry &
  Talwar 2007, Theorem 6) on the datasets the test certifies safe, with the
  stated ``delta_t``, and the test passes an unsafe dataset with probability
  ``p_t = P(Lap(1/eps2) > ln(1/(2 delta_t))/eps2) = delta_t``
  (:func:`dpreg.algorithms.tukey.ptr_false_pass_probability`).  The ledger
  records exactly these three releases, the exponential one at its true
  ``2 eps2`` (so each is within its theorem: ``valid``), not at the nominal
  ``eps2`` of ``tukey-em`` (which is marked outside validity there).
* For any fixed ``theta``, changing one row moves one clipped term between
  two values in ``[0, C_S]``: the score's replace-one sensitivity is ``C_S``
  and ``Lap(C_S / eps_S)`` makes it ``eps_S``-DP.  ``theta_j`` is an earlier
  release, so the score composes adaptively.
* ``2J`` adaptively composed releases of ``(eps_i, delta_i)`` are
  ``(sum eps_i, sum delta_i)``-DP (basic composition; Dwork & Roth 2014,
  Theorem 3.16, and its adaptive form, Dwork, Rothblum & Vadhan 2010); the
  selection is post-processing.

Calibration (closed form; :func:`budgets`)
-------------------------------------------
Each candidate gets ``epsilon / J``: ``eps_S = SCORE_SHARE epsilon / J`` and
``1.5 epsilon_t = (1 - SCORE_SHARE) epsilon / J``, i.e. ``eps2 = (1 -
SCORE_SHARE) epsilon / (3 J)``; and ``delta / J``: ``delta_t = p_t = delta /
(2J)``.  The ledger's accountant (:func:`dpreg.privacy.accounting.compose`)
adds pure and stated epsilons and deltas across kinds, so its ``eps_exact`` is
``epsilon`` and ``delta_exact`` is ``delta``; both are shaded by a relative
``1e-9`` so that floating-point rounding never puts them above the target.
Basic composition is tight for this protocol only as an upper bound on
running all candidates; no finer accountant applies to PTR.

Randomness: one draw from the caller's generator seeds ``2J`` child streams,
candidate ``j``'s TukeyEM noise and its score noise; with a ``shared_seed``
candidate ``j`` partitions from that seed's child ``j`` (the epsilon-free
step, :mod:`dpreg.algorithms.tukey`).  Repeats are prefix-stable and each
trial is an exact run of the protocol.

References
----------
Amin, K., Joseph, M., Ribero, M. & Vassilvitskii, S. (2023). Easy differentially
private linear regression. ICLR.
McSherry, F. & Talwar, K. (2007). Mechanism design via differential privacy. FOCS.
Dwork, C. & Roth, A. (2014). The Algorithmic Foundations of Differential Privacy.
Dwork, C., Rothblum, G. & Vadhan, S. (2010). Boosting and differential privacy. FOCS.
Liu, J. & Talwar, K. (2019). Private selection from private candidates. STOC.
"""

from __future__ import annotations

from dataclasses import replace
from types import MappingProxyType

import numpy as np

from dpreg._validation import DPRegError
from dpreg.algorithms import tukey
from dpreg.algorithms.base import Algorithm, Style, shared_child
from dpreg.algorithms.fits import FitOptions, FitResult, ReleaseContext, _as_result
from dpreg.preprocess.stats import SuffStats
from dpreg.privacy import drawcheck
from dpreg.privacy import mechanisms as mech
from dpreg.privacy.mechanisms import Release
from dpreg.privacy.selection import candidate_name

__all__ = ["CANDIDATES", "ENTRIES", "SCORE_SHARE", "budgets"]

#: the TukeyEM entries whose ``m`` rules form the public grid (in this order)
CANDIDATES = ("tukey-em-n1d", "tukey-em", "tukey-em-n4d")
#: Share of each candidate's epsilon spent on its score (the fit gets the rest).
SCORE_SHARE = 0.1
#: Clip of each row's squared residual in the score, in units of ``B_Y^2``.
SCORE_CLIP = 4.0
#: Relative margin keeping the composed budget at or below the target in floating point.
_SHADE = 1e-9

_ENTRIES = {a.name: a for a in tukey.ENTRIES}
_BASE = _ENTRIES["tukey-em"]


def _grid(n: int | None, d: int) -> tuple[object, ...]:
    """The ``m`` rules of :data:`CANDIDATES` TukeyEM can run at ``n`` rows of ``d`` features
    (``m >= 4`` models of ``>= d`` rows; ``n`` is public under replace-one); all of them
    when ``n`` is unknown (a release list without data)."""
    rules = tuple(_ENTRIES[name].hyperparameters["m"] for name in CANDIDATES)
    if n is None:
        return rules
    ok = []
    for m in rules:
        try:
            tukey.resolve_m(m, n, d)
        except DPRegError:
            continue
        ok.append(m)
    if not ok:
        # the error of the candidate with the most models, which names what is needed
        tukey.resolve_m(rules[0], n, d)
    return tuple(ok)


def budgets(epsilon: float, delta: float, J: int) -> dict[str, float]:
    """Each candidate's ``eps2`` (TukeyEM runs at ``2 eps2``), ``delta_t``, and score
    ``eps_S``, so that ``J (3 eps2 + eps_S) = epsilon`` and ``2 J delta_t = delta``
    (less a relative ``1e-9``)."""
    eps, dlt = epsilon * (1.0 - _SHADE), delta * (1.0 - _SHADE)
    return {
        "eps2": (1.0 - SCORE_SHARE) * eps / (3.0 * J),
        "delta_t": dlt / (2.0 * J),
        "eps_score": SCORE_SHARE * eps / J,
    }


def _tukey_context(ctx: ReleaseContext, eps2: float, delta_t: float, m: object):
    return replace(ctx, epsilon=2.0 * eps2, delta=delta_t, params=(("m", m),))


def _releases(ctx: ReleaseContext) -> list[Release]:
    grid = _grid(ctx.n, ctx.d)
    b = budgets(ctx.epsilon, ctx.delta, len(grid))
    c_s = SCORE_CLIP * ctx.bound_y**2
    out: list[Release] = []
    for j, m in enumerate(grid, start=1):
        ptr, em, fail = _BASE.release_fn(_tukey_context(ctx, b["eps2"], b["delta_t"], m))
        if em.true_epsilon != 2.0 * b["eps2"]:  # tukey-em's own charge of the depth step
            raise DPRegError(f"tukey-em charges its depth step {em.true_epsilon}, not 2 eps2")
        out += [
            replace(ptr, name=candidate_name(j, ptr.name)),
            # the depth step at its true cost 2 eps2 (McSherry & Talwar 2007, Theorem 6)
            mech.stated_release(
                candidate_name(j, em.name),
                mechanism="exponential",
                epsilon=2.0 * b["eps2"],
                delta=em.delta,
                calibration=em.calibration,
                sensitivity=em.sensitivity,
                scale=em.scale,
            ),
            mech.failure_release(
                candidate_name(j, fail.name),
                probability=fail.delta,
                calibration="laplace-tail",
                valid=True,  # counted in the entry's delta
            ),
            mech.laplace_release(
                candidate_name(j, "score"),
                sensitivity=c_s,
                b=c_s / b["eps_score"],
                epsilon=b["eps_score"],
            ),
        ]
    return out


def _fit(stats: SuffStats, rel: list[Release], opts: FitOptions) -> FitResult:
    X, y = opts.rows  # type: ignore[misc]
    n, d = X.shape
    R = opts.size
    grid = _grid(n, d)
    J = len(grid)
    by_name = {r.name: r for r in rel}
    if len(rel) != 4 * J:
        raise DPRegError(
            f"tukey-em-tuned: {len(rel) // 4} candidates released, {J} runnable at n={n}, "
            f"d={d}; compute the releases with n={n}"
        )
    seed = np.random.SeedSequence(int(opts.rng.integers(2**63)))  # type: ignore[union-attr]
    streams = [np.random.default_rng(s) for s in seed.spawn(2 * J)]
    thetas = np.full((J, R, d), np.nan)
    scores = np.full((J, R), np.nan)
    captured: dict[str, np.ndarray] = {}
    for j, m in enumerate(grid, start=1):
        em = by_name[candidate_name(j, "tukey_depth_em")]
        eps2 = 1.0 / em.scale
        base_rel = _BASE.release_fn(
            _tukey_context(ReleaseContext(2.0 * eps2, em.delta, d, n=n), eps2, em.delta, m)
        )
        own = FitOptions(
            rng=streams[2 * (j - 1)],
            size=R,
            params=MappingProxyType({"m": m}),
            rows=opts.rows,
            capture=opts.capture,
            shared_seed=None if opts.shared_seed is None else shared_child(opts.shared_seed, j),
            cache=opts.cache.setdefault(("tukey-em-tuned", j), {}),
        )
        with drawcheck.prefixed(candidate_name(j, "")):
            res = _as_result(_BASE.fit_fn(stats, base_rel, own))
        thetas[j - 1] = res.theta
        score = by_name[candidate_name(j, "score")]
        c_s = score.sensitivity
        with np.errstate(over="ignore", invalid="ignore"):
            r2 = (y[:, None] - X @ np.nan_to_num(res.theta, nan=0.0).T) ** 2
        r2[:, res.failed] = c_s  # a failed fit: every row at the clip
        r2 = np.where(np.isfinite(r2), r2, c_s)
        # terms in [0, C_S] are C_S/2 plus terms in [-C_S/2, C_S/2]: recorded as a clip at
        # C_S of rows of norm 1/2, whose replace-one sensitivity 2 (1/2) C_S is the release's
        sse = drawcheck.clip(r2, c_s, release=score.name, row_norm=0.5).sum(axis=0)
        noise = mech.laplace_noise(
            (R,), scale=score.scale, rng=streams[2 * j - 1], release=score.name
        )
        scores[j - 1] = sse + noise
        if opts.capture:
            for k, v in (res.released or {}).items():
                captured[candidate_name(j, k)] = v
            captured[score.name] = scores[j - 1]
    best = np.argmin(scores, axis=0)  # the first of equal scores
    theta = thetas[best, np.arange(R)]
    failed = ~np.all(np.isfinite(theta), axis=1)
    theta[failed] = np.nan
    return FitResult(theta, np.full(R, np.nan), failed, captured if opts.capture else None)


ENTRIES = [
    Algorithm(
        "tukey-em-tuned",
        "TukeyEM (tuned privately)",
        private=True,
        calibration="tukey-selection",
        release_fn=_releases,
        fit_fn=_fit,
        needs_rows=True,
        epsilon_free_step=True,
        tuned_privately=("m",),
        neighbouring="replace-one",
        style=Style("darkolivegreen", "-.", "P"),
        reference="TukeyEM with m in {n/d, n/2d, n/4d} chosen privately: every candidate at "
        "ε/J (its depth step charged 2ε₂) plus a Laplace clipped-loss score, the best "
        "output; basic composition, replace-one",
    ),
]
