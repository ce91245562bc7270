"""The declared-scale audit layer: releases simulated from their declared scales."""

from __future__ import annotations

import dataclasses
import math
import time

from dpreg._validation import DPRegError, check_choice, check_positive_int
from dpreg.audit.bounds import distinguishing_test, judge, power_of
from dpreg.audit.likelihood import direct_llr, shortcut_llr, verify_shortcut
from dpreg.audit.model import (
    DEFAULT_D,
    MECHANISMS,
    blocks_for,
    claimed_releases,
    label_of,
    loss_bound,
    neighbouring_pair,
)
from dpreg.privacy import mechanisms as mech
from dpreg.privacy.mechanisms import Release
from dpreg.seeding import seed_sequence

__all__ = [
    "CHECK_SAMPLES",
    "DEFAULT_SAMPLES",
    "audit_algorithm",
    "audit_release",
    "exact_epsilon_of",
]

#: Draws of the test statistic per hypothesis (half select, half evaluate).
DEFAULT_SAMPLES = 10_000_000
#: Direct draws per hypothesis that verify the scalar shortcut.
CHECK_SAMPLES = 20_000
#: Share of the draws that chooses the threshold (the rest evaluate it): the
#: declared layer's samples are large, so a fifth is enough to find the
#: threshold and four fifths evaluate it (tightness 0.95 on average for one
#: Gaussian release at 10^6 draws, against 0.91 with half and half).
SELECT_SHARE = 0.2


def exact_epsilon_of(releases: list[Release], *, delta: float) -> tuple[float | None, float | None]:
    """Exact epsilon (and composed GDP ``mu``) of the audited releases, from the ledger's
    accountant (:func:`dpreg.privacy.mechanisms.compose`)."""
    c = mech.compose(releases, delta=delta)
    exact, mu = c["exact_epsilon"], c["gdp_mu"]
    return (
        None if exact is None else float(exact),  # type: ignore[arg-type]
        None if mu is None else float(mu),  # type: ignore[arg-type]
    )


def _release_info(r: Release, blocks: list, means: list) -> dict:
    """One audited release: its declared numbers and the privacy loss the pair attains.

    ``pair_loss`` is ``mu`` (Gaussian) or ``sum |Delta| / b`` (Laplace) of the
    neighbouring pair; ``sensitivity_loss`` the same at the release's full
    sensitivity.
    """
    mine = [i for i, b in enumerate(blocks) if b.release == r.name]
    bound = sum(loss_bound(blocks[i], means[i][1] - means[i][0]) for i in mine)
    pair_loss = math.sqrt(bound) if r.mechanism == "gaussian" else bound
    claimed_loss = r.sensitivity / r.scale
    return {
        "name": r.name,
        "mechanism": r.mechanism,
        "draw": "+".join(blocks[i].draw for i in mine),
        "sensitivity": r.sensitivity,
        "scale": r.scale,
        "epsilon": r.epsilon,
        "delta": r.delta,
        "calibration": r.calibration,
        "valid": r.valid,
        "pair_loss": pair_loss,
        "sensitivity_loss": claimed_loss,
        "pair_attains_sensitivity": bool(pair_loss >= claimed_loss * (1 - 1e-9)),
    }


def _run(
    name: str,
    releases: list[Release],
    *,
    claimed_epsilon: float,
    claimed_delta: float,
    samples: int,
    seed: int,
    noise_factor: float,
    d: int,
    check_samples: int,
    method: str,
    key: tuple,
    only: str | None = None,
) -> dict:
    samples = check_positive_int(samples, "samples", minimum=4)
    check_samples = check_positive_int(check_samples, "check_samples", minimum=10)
    if not (noise_factor > 0 and math.isfinite(noise_factor)):
        raise DPRegError(f"noise_factor must be a finite number > 0, got {noise_factor!r}")
    check_choice(method, "method", ("auto", "direct", "shortcut"))
    t_start = time.perf_counter()
    blocks = blocks_for(name, releases, d=d, noise_factor=noise_factor)
    if only is not None:  # one release of the list, audited against its own share
        blocks = [b for b in blocks if b.release == only]
        releases = [r for r in releases if r.name == only]
    s0, s1, x, y = neighbouring_pair(blocks, d=d)
    means = [(b.mean(s0), b.mean(s1)) for b in blocks]
    ss = seed_sequence(seed, "audit", *key, noise_factor)
    c0, c1, c2, b0, b1 = ss.spawn(5)

    check = verify_shortcut(blocks, means, s0, s1, seeds=(c0, c1, c2), n=check_samples)
    use_shortcut = method == "shortcut" or (method == "auto" and check["verified"])
    if use_shortcut:
        llr0 = shortcut_llr(blocks, means, seed=b0, n=samples, hypothesis=0)[0]
        llr1 = shortcut_llr(blocks, means, seed=b1, n=samples, hypothesis=1)[0]
    else:
        llr0 = direct_llr(blocks, s0, means, seed=b0, n=samples)[0]
        llr1 = direct_llr(blocks, s1, means, seed=b1, n=samples)[0]
    test = distinguishing_test(llr0, llr1, delta=claimed_delta, select_share=SELECT_SHARE)

    actual = [dataclasses.replace(r, scale=r.scale * noise_factor) for r in releases]
    exact, mu = exact_epsilon_of(actual, delta=claimed_delta)
    rel_info = [_release_info(r, blocks, means) for r in actual]
    lb = test["epsilon_lb"]
    verdict = judge(lb, exact, claimed_epsilon)
    all_gaussian = all(r.mechanism == "gaussian" for r in actual)
    power = power_of(
        lb,
        claimed_epsilon,
        test["n_selection"] + test["n_evaluation"],
        delta=claimed_delta,
        mu=mu if all_gaussian else None,
    )
    return {
        "layer": "declared",
        "name": name,
        "variant": None,
        "claimed_epsilon": claimed_epsilon,
        "delta": claimed_delta,
        "empirical_epsilon_lb": lb,
        "exact_epsilon": exact,
        "n_samples": samples,
        **verdict,
        **power,
        "label": label_of(name, releases),
        "kind": "mechanism" if name in MECHANISMS else "algorithm",
        "gdp_mu": mu,
        "noise_factor": noise_factor,
        "method": "shortcut" if use_shortcut else "direct",
        "shortcut_verified": bool(check["verified"]),
        "seed": seed,
        "d": d,
        "pair": {"added_x": [float(v) for v in x], "added_y": y},
        "test": test,
        "releases": rel_info,
        "check": check,
        "seconds": round(time.perf_counter() - t_start, 3),
    }


def audit_algorithm(
    name: str,
    *,
    epsilon: float,
    delta: float,
    samples: int = DEFAULT_SAMPLES,
    seed: int = 0,
    noise_factor: float = 1.0,
    d: int = DEFAULT_D,
    check_samples: int = CHECK_SAMPLES,
    method: str = "auto",
) -> dict:
    """Audit the whole ``(epsilon, delta)`` claim of a private algorithm or raw mechanism.

    Parameters
    ----------
    name : str
        A private algorithm of :data:`~dpreg.algorithms.ALGORITHMS` or one of
        :data:`MECHANISMS`.
    epsilon, delta : float
        The budget the algorithm is run at; the claim audited is
        ``(epsilon, delta)`` (``(epsilon, 0)`` for Laplace targets).
    samples : int
        Draws of the test statistic per hypothesis (half choose the test set,
        half evaluate it).
    seed : int
        Root seed; the result is a deterministic function of the arguments.
    noise_factor : float
        Multiplies every noise scale (``0.25``: the deliberately broken
        ``sigma / 4`` versions the tests use to show the audit's power).
    d : int
        Dimension of the neighbouring datasets.
    check_samples : int
        Direct draws per hypothesis that verify the scalar shortcut.
    method : {"auto", "shortcut", "direct"}
        ``auto`` uses the shortcut when verified, else draws directly.

    Returns
    -------
    dict
        The JSON record (see the module docstring and :func:`main`).
    """
    d = check_positive_int(d, "d", minimum=2)
    releases = claimed_releases(name, epsilon=epsilon, delta=delta, d=d)
    claimed_delta = 0.0 if all(r.mechanism == "laplace" for r in releases) else float(delta)
    return _run(
        name,
        releases,
        claimed_epsilon=float(epsilon),
        claimed_delta=claimed_delta,
        samples=samples,
        seed=seed,
        noise_factor=noise_factor,
        d=d,
        check_samples=check_samples,
        method=method,
        key=(name, float(epsilon), float(delta), d),
    )


def audit_release(
    name: str,
    release: str,
    *,
    epsilon: float,
    delta: float,
    samples: int = DEFAULT_SAMPLES,
    seed: int = 0,
    noise_factor: float = 1.0,
    d: int = DEFAULT_D,
    check_samples: int = CHECK_SAMPLES,
    method: str = "auto",
) -> dict:
    """Audit one release of ``name`` (run at ``(epsilon, delta)``) against its own share.

    The claim audited is the release's nominal ``(epsilon_i, delta_i)``
    (e.g. ``(epsilon/2, delta/2)`` for SSP's ``XtX``); for the GDP algorithms
    these shares are nominal only (their guarantee is the composed one), so
    use :func:`audit_algorithm` for them.  Other arguments as there.
    """
    d = check_positive_int(d, "d", minimum=2)
    releases = claimed_releases(name, epsilon=epsilon, delta=delta, d=d)
    chosen = [r for r in releases if r.name == release]
    if not chosen:
        check_choice(release, f"release of {name}", [r.name for r in releases])
    r = chosen[0]
    out = _run(
        name,
        releases,
        only=release,
        claimed_epsilon=float(r.epsilon),
        claimed_delta=float(r.delta),
        samples=samples,
        seed=seed,
        noise_factor=noise_factor,
        d=d,
        check_samples=check_samples,
        method=method,
        key=(name, release, float(epsilon), float(delta), d),
    )
    out["release"] = release
    return out
