"""Empirical privacy audit of the mechanisms and private algorithms.

``dpreg audit`` (also ``dpreg-audit`` and ``python -m dpreg.audit``) computes,
for every raw mechanism and every algorithm the project calls private, a
statistically valid *lower* bound on the epsilon it really has at its
claimed delta, and compares it with the claim and with the exact epsilon
computed from the ledger.  A lower bound above the claim is a proven
violation (at confidence ``1 - 1e-3``); a lower bound above the exact
epsilon means a sensitivity or noise scale in the code differs from the
ledger's; a lower bound below both is consistent with the claim but does
not prove it (an audit can only refute).

Two layers
----------
* End to end (:mod:`dpreg.audit.endtoend`): neighbouring datasets at the
  bounds go through the real fit path -- the statistics' bound check, the
  private pre-processing for private-stats variants, and
  ``Algorithm.fit(capture=True)`` -- and what is audited is what that path
  releases.  It catches any bug in the code that runs (a release without
  noise, a draw not scaled by its sigma, a Laplace scale that differs from
  the ledger's), for every algorithm of the registry, with no model of its
  noise.
* Declared scales (:mod:`dpreg.audit.declared`, described below): the
  releases simulated from their declared scales with the project's draw
  functions, which allows far larger samples (a scalar shortcut verified
  by direct draws) and so tighter bounds, for the layouts it has a model
  of (:func:`dpreg.audit.model.declared_layout`).

Modules: :mod:`~dpreg.audit.model` (targets, noise blocks, neighbouring
datasets), :mod:`~dpreg.audit.likelihood` (likelihood-ratio statistics),
:mod:`~dpreg.audit.bounds` (Clopper-Pearson bounds, the distinguishing test,
the verdict), :mod:`~dpreg.audit.declared`, :mod:`~dpreg.audit.endtoend`,
:mod:`~dpreg.audit.pairs` (per-algorithm neighbouring pairs of the end-to-end
layer) and :mod:`~dpreg.audit.cli` (modes, exit status, output files).

The declared-scale layer
========================

What is audited
---------------
The privacy argument of every algorithm goes through its list of releases
(:meth:`dpreg.algorithms.Algorithm.releases`): ``lambda_min``, ``X^T X``,
``X^T y`` (Gaussian) or the functional mechanism's objective coefficients
(Laplace).  The coefficients ``theta`` are post-processing of those releases,
so the audit observes the releases themselves -- the strongest view, and the
one the claim is made about.  The releases are simulated with the draw
functions the algorithm uses, from the generator in the same order as
:meth:`Algorithm.fit` draws (:func:`simulate_releases`), so with equal seeds
the model draws exactly the noise the algorithm adds; the layer is used for
an entry only when this holds on a test draw
(:func:`dpreg.audit.model.reproduces_fit`: the simulated releases equal the
ones ``fit(capture=True)`` records), and direct draws in the audit itself use
:func:`~dpreg.privacy.mechanisms.symmetric_noise`,
:func:`~dpreg.privacy.mechanisms.wang_symmetric_noise`,
:func:`~dpreg.privacy.mechanisms.full_noise`, :func:`~dpreg.privacy.mechanisms.vector_noise`
and :func:`~dpreg.privacy.mechanisms.laplace_noise`.

Neighbouring datasets
---------------------
``D`` holds each of ``e_2 .. e_d`` twice as rows (``d = 3`` by default, so
``X^T X = diag(0, 2, .., 2)``); ``D' = D`` plus one row at the bound,
``||x|| = B_X = 1``, ``y = B_Y = 1``.  The added row is the candidate (``e_1``
or ``(1, .., 1)/sqrt(d)``) with the largest privacy-loss bound for the
algorithm: ``e_1`` moves ``X^T X`` by ``e_1 e_1^T`` (Frobenius norm ``B_X^2``),
``X^T y`` by ``e_1`` and ``lambda_min`` by exactly ``B_X^2``, so every Gaussian
release is hit at its full sensitivity at once; ``(1, .., 1)/sqrt(d)`` attains
the functional mechanism's L1 sensitivity ``d B_X^2 + 2 sqrt(d) B_X B_Y``.
Every output line reports whether the pair attains each release's sensitivity.

Test statistic and composition
------------------------------
The optimal (Neyman-Pearson) test between ``D`` and ``D'`` thresholds the
log-likelihood ratio of the whole output.  Releases are independent, so it
is the sum of per-release log-likelihood ratios:

* Gaussian release, observed coordinates ``o`` with mean ``m`` under ``D``,
  ``m + Delta`` under ``D'``, independent coordinates of variance ``v``:
  ``LLR = sum Delta (o - m) / v - 1/2 sum Delta^2 / v``, i.e. the projection of
  the noise on the sensitivity direction, weighted by the per-entry noise
  variances.  A symmetric matrix is observed through its upper triangle
  (diagonal included; the lower triangle is an exact mirror, which the audit
  checks): variance ``sigma^2`` everywhere for ``symmetric_noise``, ``sigma^2``
  on the diagonal and ``sigma^2 / 2`` off it for ``wang_symmetric_noise``; a
  full non-symmetric matrix (``full_noise``) is observed through all ``d^2``
  entries.
* Laplace coordinates with scale ``b``: ``LLR = sum (|o - m| - |o - m'|) / b``.

Summing the per-release statistics means the audit tests the algorithm's
whole ``(epsilon, delta)`` claim, not one release at a time
(:func:`audit_release` audits a single release against its own share).

Two ways to draw the statistic (the output's ``method`` says which was used)
-----------------------------------------------------------------------------
* ``direct``: draw the full noisy releases with the project's draw functions
  on ``D`` and on ``D'`` and compute the LLR from them.
* ``shortcut`` (the big sample): each release's LLR drawn from its exact law
  under the independent-coordinate model above.  For a Gaussian release it is
  ``N(-mu^2/2, mu^2)`` under ``D`` and ``N(mu^2/2, mu^2)`` under ``D'`` with
  ``mu^2 = sum Delta^2 / v`` -- one scalar per release instead of a matrix.
  For a Laplace release it is a sum over the coordinates with
  ``Delta != 0`` of ``(|e| - |e - Delta|) / b`` (``D``) or ``(|e + Delta| - |e|) / b``
  (``D'``), ``e`` drawn by :func:`~dpreg.privacy.mechanisms.laplace_noise`.
  The shortcut is used only after a *verification sample*
  (``check_samples`` direct draws per hypothesis, default 20,000) confirms
  the model: per-coordinate noise means and variances, pairwise
  correlations, exact mirroring of symmetric draws, and a
  Kolmogorov-Smirnov test of the direct per-release LLR against the
  shortcut's law under both hypotheses.  If any check fails the big sample
  is drawn directly instead (``shortcut_verified: false``, ``method: direct``).

The LLR is rounded to 9 decimals before thresholding: the last bits of a
floating-point release depend on which mean the noise was added to
(Mironov 2012), and a threshold placed between a few ulps of an LLR atom
would measure that side channel rather than the noise calibration.

Lower bound
-----------
For a test set ``S`` (``LLR >= t`` or ``LLR <= t``), ``(epsilon, delta)``-DP
requires ``P_D'(S) <= e^epsilon P_D(S) + delta`` (and the same with ``D``, ``D'``
swapped), so ``epsilon >= ln((P_D'(S) - delta) / P_D(S))``.  The audit puts
one-sided Clopper-Pearson bounds on both probabilities, each at level
``alpha / 2`` (union bound, overall confidence ``1 - alpha``, ``alpha = 1e-3``):
``epsilon_lb = ln((P1_lower - delta) / P0_upper)``.  The threshold and the
direction are chosen on a first part of the samples (a fifth here, half in
the end-to-end layer), over a grid of tail quantiles, each scored by the
bound it is expected to give on the rest (pessimistic one-sided
Clopper-Pearson estimates at level 0.02, scaled to the evaluation size --
without the pessimism the search picks far tails whose few counts fell
well); the bound is computed once, on the rest, so no Bonferroni correction
is needed for the thresholds tried.  A bound below zero is reported as 0 (``epsilon >= 0``
always holds).

Each line also carries ``exact_epsilon``: the exact epsilon at the claimed
delta of the audited releases from the Gaussian-DP accounting
(:func:`dpreg.privacy.mechanisms.compose`; for Laplace releases the sum of
``sensitivity / b``).  For a correct algorithm
``empirical_epsilon_lb <= exact_epsilon <= claimed_epsilon``.

Power (what the audit can and cannot see)
-----------------------------------------
An empirical bound is limited by the sample size: at delta = 1e-6 with
10^7 samples per hypothesis a Gaussian release with ``mu`` gives a bound of
roughly ``3 mu`` (about 0.7 for ``mu = 0.237``, the exact ``(1, 1e-6)``
budget).  So violations of a few tens of percent in epsilon at small epsilon
are beyond its reach; the ``exact_epsilon`` field covers those analytically.

Every record states its power (:func:`dpreg.audit.bounds.power_of`):
``ceiling``, the largest epsilon a threshold test can certify with the
record's draws (:func:`~dpreg.audit.bounds.gaussian_ceiling` from the exact
Gaussian-DP profile when the whole output is Gaussian, else
:func:`~dpreg.audit.bounds.count_ceiling`, the bound at the best possible
counts ``n`` and ``0``); ``tightness = lower bound / min(claim, ceiling)``;
and ``power``: ``none`` when the lower bound is 0 or the count ceiling cannot
exceed the claim, else ``ok``.  ``audit.md`` lists the private records with
no power by name; they do not change the exit status.  The declared layer
chooses its threshold on a fifth of the draws (``SELECT_SHARE``) and
evaluates it on the rest; one Gaussian release at ``(1, 1e-5)`` with 10^6
draws per side reaches tightness 0.94 on average (ceiling 0.695).

Output
------
One JSON object per (target, epsilon): ``name``, ``label`` (``private``, or
``reproduction`` for ``ssp-wang`` and ``adassp-wang``, Wang's published
scales, which are audited and reported but do not decide the exit status),
``kind`` (``mechanism`` or ``algorithm``), ``claimed_epsilon``, ``delta`` (the
claimed delta; 0 for the pure-DP Laplace targets), ``empirical_epsilon_lb``,
``exact_epsilon``, ``exact_exceeds_claim``, ``n_samples`` (per hypothesis),
``ceiling``, ``tightness``, ``power``,
``verdict`` (:func:`dpreg.audit.bounds.judge`), ``method``, ``noise_factor`` and ``seed``; ``--full`` adds the test set,
the per-release sensitivities and scales, the neighbouring pair and the
verification checks.
"""

from dpreg.audit.bounds import (
    ALPHA,
    clopper_pearson,
    distinguishing_test,
    epsilon_lower_bound,
    judge,
)
from dpreg.audit.cli import main
from dpreg.audit.declared import CHECK_SAMPLES, DEFAULT_SAMPLES, audit_algorithm, audit_release
from dpreg.audit.endtoend import E2E_SAMPLES, audit_end_to_end
from dpreg.audit.model import (
    AUDITED,
    MECHANISMS,
    PRIVATE_ALGORITHMS,
    neighbouring_pair,
    simulate_releases,
)

__all__ = [
    "ALPHA",
    "AUDITED",
    "CHECK_SAMPLES",
    "DEFAULT_SAMPLES",
    "E2E_SAMPLES",
    "MECHANISMS",
    "PRIVATE_ALGORITHMS",
    "audit_algorithm",
    "audit_end_to_end",
    "audit_release",
    "clopper_pearson",
    "distinguishing_test",
    "epsilon_lower_bound",
    "judge",
    "main",
    "neighbouring_pair",
    "simulate_releases",
]
