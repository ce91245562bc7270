"""DPKendall feature selection followed by plug-in private regression.

Dick, Gillenwater & Joseph (NeurIPS 2023, arXiv 2306.00920), as in their code
(google-research ``private_kendall/``: ``kendall.py``, ``top_k.py``,
``experiment.py``).  Formulas (K1)-(K6) of ``SPEC-frontier-methods.md``
section 3:

(K1) Ties: every entry of ``X`` and ``y`` gets ``U(-1e-6, 1e-6)`` (the authors'
     preprocessing), so ``tau_b = tau_a``.  Here the perturbed copy feeds the
     selection only; the regression runs on the rows as they are.
(K2) ``kappa(u, v) = (n/2) |tau_b(u, v)|`` (scipy ``kendalltau``, variant b);
     ``tau_a = (2/(n(n-1))) sum_{i<j} sgn(u_i - u_j) sgn(v_i - v_j)``.
(K3) Round ``r = 1..k``:
     ``score_j = kappa(X_j, y) - (1/(r-1)) sum_{s<r} kappa(X_j, X_{j_s})``;
     selected features get ``-inf``.
(K4) ``j_r = argmax_j (score_j + Gumbel(0, 2 k Delta_r / eps_fs))``: the
     exponential mechanism at ``eps_fs / k`` with a non-monotone utility; the
     ``k`` rounds compose to pure ``eps_fs``-DP (:func:`kendall_select`).
(K5) ``n~ = max(1, floor(n + Lap(1/eps_n) - ln(1/(2 eta))/eps_n))`` (``eps_n``-DP;
     ``n~ <= n`` with probability ``1 - eta``), ``m = floor(n~/(k+1))``.
(K6) Regression on the ``k`` selected columns (no intercept: the SPEC
     protocol centres the data).

Budget (SPEC-frontier, the check's split: the paper's was not read):
``eps_fs = 0.05 eps``, ``eps_n = 0.05 eps`` (Tukey only), ``eps_reg`` the rest,
``delta`` to the regression; ``k = min(5, d)``, ``eta = 1e-4``.  The nominal
total is ``(eps, delta)`` by basic composition; the ledger lists every release
with what it really costs.  For ``dpk-bas`` that is the nominal budget.  For
``dpk-tukey`` the regression's releases are ``tukey-em``'s at ``eps_reg = 0.9
eps``, whose depth step is charged the generic exponential-mechanism bound
``2 (eps_reg/2)`` (McSherry & Talwar 2007, Theorem 6; see
:mod:`dpreg.algorithms.tukey`) and whose safety test adds a false-pass
probability ``delta``: the run costs ``eps_fs + eps_n + 1.5 eps_reg = 1.45 eps``
at ``2 delta`` (``eps_n`` and the selection exactly their shares), outside its
nominal budget and flagged so.  The noise is not rescaled to meet the nominal
budget.

Sensitivity of the scores (K3)
------------------------------
``(n/2) tau_a = S/(n-1)`` with ``S`` the sum of the ``n(n-1)/2`` pair signs.
*Add/remove* (the spec's proof): adding a row adds ``<= n`` terms to ``S`` and
``|S| <= n(n-1)/2``, so ``|S'/n - S/(n-1)| <= 1/2 + 1``: ``Delta_1 = 3/2`` and
``Delta_r = 3`` for a difference of two such terms.  *Replace-one* (``n``
fixed): the ``n - 1`` pairs of the changed row move ``S`` by at most
``2(n-1)``, so ``kappa`` moves by at most 2 and a round-``r`` score by at
most 4: ``Delta_1 = 2``, ``Delta_r = 4`` (:func:`selection_sensitivities`;
checked by brute force in the tests).

The two entries
---------------
``dpk-tukey``
    Selection, ``n~`` and TukeyEM (the project's ``tukey-em``: published PTR
    with ``Lap(1/eps2)``, exact depth sampling) on the selected columns with
    ``m = min(floor(n~/(k+1)), floor(n/k))`` models (the cap keeps ``k`` rows
    per batch in the probability-``eta`` event ``n~ > n``; ``m < 4`` or a failed
    safety test is a failed trial; ``n < 4(k+1)``, where even ``n~ = n`` gives
    fewer than 4 models, is refused like ``tukey-em`` refuses too many models).  TukeyEM's guarantee is replace-one, so the
    whole entry is replace-one and the selection is calibrated with the
    replace-one sensitivities ``(2, 4)`` instead of the spec's add/remove
    ``(3/2, 3)`` (which would give ``2 eps_fs`` under replace-one by group
    privacy).  Not the authors' TukeyEM: their modified PTR and the released
    ``dp_regression`` quirks (Laplace scale ``eps2``) are not reproduced.
    Bound-free: no sensitivity depends on ``B_X`` or ``B_Y``.  Its
    epsilon-free step (:attr:`~dpreg.algorithms.base.Algorithm.epsilon_free_step`):
    with a shared seed, the (K1) perturbation of repeat ``r`` and the Kendall
    vectors computed on it are shared by every epsilon of a grid (computed
    once), and TukeyEM's partition comes from that seed too; the Laplace,
    Gumbel and TukeyEM draws still come from each epsilon's ``rng``.
``dpk-bas``
    Selection (add/remove, ``(3/2, 3)``) then Dick et al.'s BoostedAdaSSP
    (``bas-google``'s algorithm: full noise on ``X^T X``, noisy ``lambda_min``
    added, ``pinv``; ``T = 100``) at ``(0.95 eps, delta)`` with the exact GDP
    ``mu`` (their grid's ``mu``, slightly too large, is not reproduced; see
    :mod:`dpreg.algorithms.boosted`).  Needs the bounds ``B_X``, ``B_Y``.

References
----------
Dick, T., Gillenwater, J. & Joseph, M. (2023). Better private linear
regression through better private feature selection. NeurIPS (arXiv
2306.00920); code google-research ``private_kendall/``.
Durfee, D. & Rogers, R. (2019). Practical differentially private top-k
selection with pay-what-you-get composition. NeurIPS (arXiv 1905.04273,
Lemmas 4.1-4.2: the Gumbel peeling mechanism).
Kendall, M. G. (1938). A new measure of rank correlation. Biometrika.
"""

from __future__ import annotations

import math
from types import MappingProxyType

import numpy as np

from dpreg._validation import DPRegError
from dpreg.algorithms import tukey
from dpreg.algorithms.base import Algorithm, Style, shared_child
from dpreg.algorithms.boosted import bas_fit, bas_releases
from dpreg.algorithms.fits import FitOptions, FitResult, ReleaseContext, _as_result
from dpreg.preprocess.stats import SuffStats
from dpreg.privacy import drawcheck
from dpreg.privacy import mechanisms as mech
from dpreg.privacy.mechanisms import Release

__all__ = [
    "ENTRIES",
    "ETA",
    "SHARE_FS",
    "SHARE_N",
    "TIE_WIDTH",
    "kendall_kappa",
    "kendall_select",
    "private_n",
    "selection_sensitivities",
]

#: Width of the tie-breaking perturbation (K1).
TIE_WIDTH = 1e-6
#: Probability that the private row count exceeds n (K5).
ETA = 1e-4
#: Budget shares of the selection and of the private row count.
SHARE_FS = 0.05
SHARE_N = 0.05


def kendall_kappa(U: np.ndarray, v: np.ndarray, order: np.ndarray | None = None) -> np.ndarray:
    """(K2) ``(n/2) |tau_b(U_j, v)|`` for every column ``j`` of ``U`` (scipy, variant b).

    A constant column (tau undefined) scores 0.  Bit for bit
    ``scipy.stats.kendalltau(U[:, j], v, variant="b")`` (tested): scipy's steps
    in its floating-point order, the sort on ``v`` done once for all columns.
    A column without ties has one sorting permutation: its stable sort in
    ``v``'s order is its plain sort ``order[:, j]`` (``np.argsort(U, axis=0)``,
    which callers reuse for every ``v``) mapped into that order.
    """
    U = np.asarray(U, dtype=float)
    v = np.asarray(v, dtype=float)
    n, p = U.shape
    try:  # scipy's compiled counter of discordant pairs, the one kendalltau calls
        from scipy.stats._stats import _kendall_dis  # here: costly to import
    except ImportError:  # pragma: no cover - the pinned scipy (requirements/lock.txt) has it
        return _kendall_kappa_scipy(U, v)
    out = np.empty(p)
    tot = (n * (n - 1)) // 2
    perm = np.argsort(v)  # scipy's (default-kind) sort on v: the same permutation
    vs = v[perm]
    yr = np.r_[True, vs[1:] != vs[:-1]].cumsum(dtype=np.intp)
    ytie = _tie_pairs(yr)
    where = np.empty(n, dtype=np.intp)
    where[perm] = np.arange(n)  # row i's place in v's order
    if order is None:
        order = np.argsort(U, axis=0)
    ranks = np.arange(1, n + 1, dtype=np.intp)
    for j in range(p):
        ax = order[:, j]
        xv = U[ax, j]
        if n > 1 and not np.any(xv[1:] == xv[:-1]):
            xr, ys = ranks, yr[where[ax]]  # no ties: the unique sort, dense ranks 1..n
        else:
            xs = U[perm, j]
            o = np.argsort(xs, kind="mergesort")  # stable, as scipy
            xs, ys = xs[o], yr[o]
            xr = np.r_[True, xs[1:] != xs[:-1]].cumsum(dtype=np.intp)
        xtie = _tie_pairs(xr)
        if n == 0 or xtie == tot or ytie == tot:
            out[j] = 0.0  # tau undefined (scipy: NaN)
            continue
        dis = int(_kendall_dis(xr, ys))  # ranks >= 1, xr sorted
        obs = np.r_[True, (xr[1:] != xr[:-1]) | (ys[1:] != ys[:-1]), True]
        cnt = np.diff(np.nonzero(obs)[0]).astype("int64", copy=False)
        ntie = int((cnt * (cnt - 1) // 2).sum())  # joint ties
        con_minus_dis = tot - xtie - ytie + ntie - 2 * dis
        tau = con_minus_dis / np.sqrt(tot - xtie) / np.sqrt(tot - ytie)
        tau = np.minimum(1.0, max(-1.0, tau))
        out[j] = 0.0 if not np.isfinite(tau) else abs(tau)
    return 0.5 * n * out


def _kendall_kappa_scipy(U: np.ndarray, v: np.ndarray) -> np.ndarray:
    """:func:`kendall_kappa` column by column through ``scipy.stats.kendalltau``."""
    from scipy.stats import kendalltau  # here: costly to import, needed only here

    n, p = U.shape
    out = np.empty(p)
    for j in range(p):
        tau = kendalltau(U[:, j], v, variant="b").statistic
        out[j] = 0.0 if not np.isfinite(tau) else abs(tau)
    return 0.5 * n * out


def _tie_pairs(ranks: np.ndarray) -> int:
    """Pairs tied in a vector of dense ranks (scipy's ``count_rank_tie``, first term)."""
    cnt = np.bincount(ranks).astype("int64", copy=False)
    cnt = cnt[cnt > 1]
    return int((cnt * (cnt - 1) // 2).sum())


def selection_sensitivities(neighbouring: str) -> tuple[float, float]:
    """``(Delta_1, Delta_r)`` of the round scores (K3): add/remove ``(3/2, 3)``, replace-one ``(2, 4)``."""
    if neighbouring == "add/remove":
        return 1.5, 3.0
    if neighbouring == "replace-one":
        return 2.0, 4.0
    raise DPRegError(f"unknown neighbouring relation {neighbouring!r}")


def kendall_select(
    X: np.ndarray,
    y: np.ndarray,
    k: int,
    *,
    scales: tuple[float, float],
    gumbel: np.ndarray,
    memo: dict[object, np.ndarray] | None = None,
    release: str | None = None,
    sensitivities: tuple[float, float] | None = None,
) -> np.ndarray:
    """(K3)-(K4): ``k`` features chosen by Gumbel peeling on Kendall scores.

    Parameters
    ----------
    X, y : arrays
        Rows after the tie-breaking perturbation (K1).
    scales : (b_1, b_r)
        Gumbel scales of round 1 and of later rounds, ``2 k Delta / eps_fs``.
    gumbel : ndarray, shape (k, d)
        Standard Gumbel variables, one row per round.
    memo : dict, optional
        Kendall vectors already computed on these rows (``"y"``: against the
        labels, ``j``: against column ``j``; ``"order"``: the columns' sort); filled as they are computed, so
        the fits of an epsilon grid sharing the rows compute each once.
    release, sensitivities : optional
        The release the Gumbel noise serves and the round sensitivities
        ``(Delta_1, Delta_r)`` the scales were set for: each round's draw is
        recorded for :mod:`dpreg.privacy.drawcheck` with the scale it applies
        and its sensitivity (their ratio ``2 k / eps_fs`` is the release's).

    Returns the ``k`` column indices in the order chosen.
    """
    memo = {} if memo is None else memo

    def kappa(key: object) -> np.ndarray:
        if key not in memo:
            if "order" not in memo:  # the columns' sort, shared by every Kendall vector
                memo["order"] = np.argsort(X, axis=0)
            v = y if key == "y" else X[:, key]  # type: ignore[index]
            memo[key] = kendall_kappa(X, v, memo["order"])
        return memo[key]

    d = X.shape[1]
    label = kappa("y")
    corr = np.zeros(d)
    chosen: list[int] = []
    for r in range(k):
        if r == 0:
            score, b = label.copy(), scales[0]
        else:
            corr += kappa(chosen[-1])
            score, b = label - corr / r, scales[1]
        score[chosen] = -np.inf
        if release is not None:
            if sensitivities is None:
                raise DPRegError("kendall_select: a named release needs its sensitivities")
            sens = sensitivities[0] if r == 0 else sensitivities[1]
            drawcheck.record(release, "gumbel", b, gumbel[r].shape, sensitivity=sens)
        chosen.append(int(np.argmax(score + b * gumbel[r])))
    return np.asarray(chosen, dtype=np.int64)


def private_n(n: int, laplace: float, eps_n: float, eta: float = ETA) -> int:
    """(K5) ``max(1, floor(n + laplace - ln(1/(2 eta))/eps_n))``, ``laplace ~ Lap(1/eps_n)``.

    ``P(Lap(1/eps_n) > ln(1/(2 eta))/eps_n) = eta``, so ``n~ <= n`` with
    probability ``1 - eta``.
    """
    return max(1, math.floor(n + laplace - math.log(1.0 / (2.0 * eta)) / eps_n))


def _k(ctx_or_d: int, k: object) -> int:
    if isinstance(k, bool) or not isinstance(k, int | np.integer) or int(k) < 1:
        raise DPRegError(f"dpk: hyperparameter k must be an integer >= 1, got {k!r}")
    return min(int(k), int(ctx_or_d))


def _selection_release(eps_fs: float, k: int, neighbouring: str) -> Release:
    d1, dr = selection_sensitivities(neighbouring)
    sens = dr if k > 1 else d1
    return mech.stated_release(
        "kendall_selection",
        mechanism="exponential",
        epsilon=eps_fs,
        delta=0.0,
        calibration="kendall-peeling",
        sensitivity=sens,  # the largest round sensitivity
        scale=2.0 * k * sens / eps_fs,  # its Gumbel scale
    )


def _tukey_entry() -> Algorithm:
    return next(a for a in tukey.ENTRIES if a.name == "tukey-em")


def _releases_tukey(ctx: ReleaseContext) -> list[Release]:
    k = _k(ctx.d, ctx.param("k"))
    eps_n, eps_fs = SHARE_N * ctx.epsilon, SHARE_FS * ctx.epsilon
    eps_reg = ctx.epsilon - eps_n - eps_fs
    n_rel = mech.laplace_release("n_private", sensitivity=1.0, b=1.0 / eps_n, epsilon=eps_n)
    # tukey-em's releases at eps_reg, as they are: nominal eps_reg, charged 1.5 eps_reg
    reg = _tukey_entry().releases(epsilon=eps_reg, delta=ctx.delta, d=k)
    return [n_rel, _selection_release(eps_fs, k, "replace-one"), *reg]


def _bas_context(ctx: ReleaseContext, k: int) -> ReleaseContext:
    return ReleaseContext(
        ctx.epsilon * (1.0 - SHARE_FS),
        ctx.delta,
        k,
        ctx.bound_x,
        ctx.bound_y,
        ctx.rho,
        ctx.n,
        (("T", ctx.param("T")), ("eta", "1")),
    )


def _releases_bas(ctx: ReleaseContext) -> list[Release]:
    k = _k(ctx.d, ctx.param("k"))
    reg = bas_releases(_bas_context(ctx, k), variant="google-exact")
    return [_selection_release(SHARE_FS * ctx.epsilon, k, "add/remove"), *reg]


def _perturbed(X: np.ndarray, y: np.ndarray, g: np.random.Generator):
    """(K1): the rows plus ``U(-1e-6, 1e-6)`` in every entry (not privacy noise)."""
    n, d = X.shape
    tie = g.uniform(-TIE_WIDTH, TIE_WIDTH, size=(n, d + 1))
    return X + tie[:, :d], y + tie[:, d]


def _select(
    X: np.ndarray,
    y: np.ndarray,
    k: int,
    sel: Release,
    neighbouring: str,
    g: np.random.Generator,
    *,
    shared: tuple[np.random.SeedSequence, dict[object, object], int] | None = None,
) -> np.ndarray:
    """(K1) perturbation and (K3)-(K4) selection of one repeat.

    The Gumbel draws come from ``g``; the perturbation too, unless ``shared``
    = ``(seed, cache, r)`` is given: then repeat ``r`` perturbs with the
    seed's child ``r`` and keeps the perturbed rows and their Kendall vectors
    in ``cache``, shared by every epsilon of a grid (an epsilon-free step).
    """
    d = X.shape[1]
    d1, dr = selection_sensitivities(neighbouring)
    b_r = sel.scale if k > 1 else sel.scale * dr / d1  # scale of rounds >= 2
    scales = (b_r * d1 / dr, b_r)
    if shared is None:
        Xp, yp = _perturbed(X, y, g)
        memo: dict[object, np.ndarray] = {}
    else:
        seed, cache, r = shared
        key = ("kendall", r)
        if key not in cache:
            tg = np.random.default_rng(shared_child(seed, r))
            cache[key] = (*_perturbed(X, y, tg), {})
        Xp, yp, memo = cache[key]  # type: ignore[misc]
    gum = mech.gumbel_noise((k, d), rng=g)
    return kendall_select(
        Xp,
        yp,
        k,
        scales=scales,
        gumbel=gum,
        memo=memo,
        release=sel.name,
        sensitivities=(d1, dr),
    )


def _fit(stats: SuffStats, rel: list[Release], opts: FitOptions, *, reg: str) -> FitResult:
    X, y = opts.rows  # type: ignore[misc]
    n, d = X.shape
    k = _k(d, opts.params["k"])
    R = opts.size
    if reg == "tukey" and n // (k + 1) < 4:
        # n is public under replace-one: refuse, as tukey-em does for too many models
        raise DPRegError(
            f"dpk-tukey: n={n} rows give fewer than 4 models of k+1={k + 1} rows "
            f"(need n >= {4 * (k + 1)})"
        )
    theta = np.full((R, d), np.nan)
    lam = np.full(R, np.nan)
    failed = np.zeros(R, dtype=bool)
    records: list[dict[str, np.ndarray]] = []
    children = opts.rng.spawn(R)  # type: ignore[union-attr]  # one per repeat: prefix-stable
    for r, g in enumerate(children):
        rec: dict[str, np.ndarray] = {}
        share = None if opts.shared_seed is None else (opts.shared_seed, opts.cache, r)
        if reg == "tukey":
            lap = float(mech.laplace_noise((1,), scale=rel[0].scale, rng=g, release=rel[0].name)[0])
            # (K5)'s shift is no safety margin: n~ > n (probability eta) costs no privacy,
            # since m is capped at floor(n/k) below (n is public under replace-one)
            n_tilde = private_n(n, lap, rel[0].epsilon)
            rec["n_private"] = np.array([n + lap])  # the released noisy count
            sel, reg_rel = rel[1], rel[2:]
            S = _select(X, y, k, sel, "replace-one", g, shared=share)
        else:  # dpk-bas has no shared seed; dpk-bas-tuned passes one (tuning.py)
            sel, reg_rel = rel[0], rel[1:]
            S = _select(X, y, k, sel, "add/remove", g, shared=share)
        rec["kendall_selection"] = S[None, :]
        XS = X[:, S]
        res_rel: dict[str, np.ndarray]
        sub = SuffStats.from_arrays(XS, y, bound_x=stats.bound_x, bound_y=stats.bound_y)
        if reg == "tukey":
            m = min(n_tilde // (k + 1), n // k)
            if m < 4:
                res = FitResult(np.full((1, k), np.nan), np.full(1, np.nan), np.ones(1, bool))
                # nothing released by the regression: NaN records of the right shapes
                res_rel = {"ptr_distance": np.full(1, np.nan), "tukey_depth_em": res.theta}
            else:
                # TukeyEM's fit on this entry's own releases (the scales it draws
                # are the ledger's); its partition from the shared seed when there is one
                tukey_opts = FitOptions(
                    rng=g,
                    size=1,
                    params=MappingProxyType({"m": m}),
                    rows=(XS, y),
                    capture=opts.capture,
                    shared_seed=None
                    if opts.shared_seed is None
                    else shared_child(opts.shared_seed, r),
                )
                res = _as_result(_tukey_entry().fit_fn(sub, list(reg_rel), tukey_opts))
                res_rel = dict(res.released or {})
        else:
            sub_opts = FitOptions(
                rng=g,
                size=1,
                params=MappingProxyType({"T": opts.params["T"], "eta": "1"}),
                rows=(XS, y),
                capture=opts.capture,
            )
            res = bas_fit(sub, list(reg_rel), sub_opts, variant="google-exact")
            res_rel = dict(res.released or {})
        if not res.failed[0]:
            theta[r] = 0.0
            theta[r, S] = res.theta[0]
        failed[r] = bool(res.failed[0])
        lam[r] = res.lam[0]
        rec.update(res_rel)
        records.append(rec)
    released = None
    if opts.capture:
        released = {key: np.concatenate([rec[key] for rec in records]) for key in records[0]}
    return FitResult(theta, lam, failed, released)


def _fit_tukey(stats: SuffStats, rel: list[Release], opts: FitOptions) -> FitResult:
    return _fit(stats, rel, opts, reg="tukey")


def _fit_bas(stats: SuffStats, rel: list[Release], opts: FitOptions) -> FitResult:
    return _fit(stats, rel, opts, reg="bas")


ENTRIES = [
    Algorithm(
        "dpk-tukey",
        "DPKendall + TukeyEM",
        private=True,
        calibration="kendall+restricted-em-ptr",
        release_fn=_releases_tukey,
        fit_fn=_fit_tukey,
        needs_rows=True,
        hyperparameters={"k": 5},
        neighbouring="replace-one",
        epsilon_free_step=True,
        bound_free=True,
        style=Style("saddlebrown", "-", ">"),
        reference="Dick, Gillenwater & Joseph (NeurIPS 2023): DPKendall top-k (ε/20, "
        "replace-one sensitivities 2, 4), private n (ε/20), TukeyEM (0.9ε nominal, charged "
        "1.35ε: 1.45ε in all) on k = min(5, d)",
    ),
    Algorithm(
        "dpk-bas",
        "DPKendall + BoostedAdaSSP",
        private=True,
        calibration="kendall+gdp",
        release_fn=_releases_bas,
        fit_fn=_fit_bas,
        needs_rows=True,
        has_lambda=True,
        hyperparameters={"k": 5, "T": 100},
        style=Style("darkviolet", "--", ">"),
        reference="Dick, Gillenwater & Joseph (NeurIPS 2023): DPKendall top-k (ε/20), then "
        "their BoostedAdaSSP (T = 100, exact GDP μ) at (0.95ε, δ) on k = min(5, d)",
    ),
]
