"""Synthetic datasets with a known answer: a ``synthetic:`` source.

An entry ``synthetic: {design, n, d, noise, seed, theta, condition}`` declares
a linear model ``y = X theta* + noise * e`` with ``e ~ N(0, 1)`` and rows of
``X`` drawn independently from one of three designs:

- ``gaussian``: ``x ~ N(0, I_d)``;
- ``heavy-tailed``: independent Student-t coordinates with 3 degrees of
  freedom, divided by ``sqrt(3)`` (unit variance; the fourth moment is
  infinite, so the extremes grow with ``n``);
- ``ill-conditioned``: ``x ~ N(0, Sigma)`` with ``Sigma = Q diag(s) Q^T``,
  ``Q`` a random orthogonal matrix (Haar, QR of a Gaussian matrix with the
  signs of ``R``'s diagonal fixed; Mezzadri 2007) and ``s`` log-spaced from 1
  down to ``1 / condition`` (so ``cond(Sigma) = condition``, default 1e4).

``theta*`` is the entry's ``theta`` (a list of ``d`` numbers) or, when
absent, drawn uniformly on the unit sphere, so that the signal variance of
the Gaussian design is 1 and ``noise`` is the noise-to-signal standard
deviation ratio.  Every draw comes from ``SeedSequence([seed,
id(dataset name), id("synthetic")])`` (:func:`dpreg.seeding.seed_sequence`):
``theta*`` first, then ``Q`` (ill-conditioned only), then the rows in chunks of
:data:`CHUNK_ROWS`, so the table depends only on the entry and the name.

The prepared table holds columns ``x1 .. xd`` and ``y``; ``theta*`` is in
exactly these coordinates (no recipe step applies) and is recorded in the
prepared JSON sidecar as ``theta_star``.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from typing import Any

import numpy as np

from dpreg._validation import DPRegError
from dpreg.seeding import seed_sequence

__all__ = [
    "CHUNK_ROWS",
    "DESIGNS",
    "SYNTHETIC_KEYS",
    "check_synthetic",
    "synthetic_chunks",
    "synthetic_theta",
]

#: The designs a ``synthetic`` entry may ask for.
DESIGNS: tuple[str, ...] = ("gaussian", "heavy-tailed", "ill-conditioned")

#: Keys of a ``synthetic`` mapping with a one-line meaning each.
SYNTHETIC_KEYS: Mapping[str, str] = {
    "design": "gaussian | heavy-tailed | ill-conditioned",
    "n": "number of rows (>= 20)",
    "d": "number of features (>= 1)",
    "noise": "standard deviation of the Gaussian noise added to X theta* (>= 0)",
    "seed": "integer >= 0; with the dataset name it fixes every draw",
    "theta": "optional: theta* as a list of d numbers (default: uniform on the unit sphere)",
    "condition": "ill-conditioned only: condition number of the covariance (> 1, default 1e4)",
}

#: Rows drawn per chunk (the same chunking always, so the rows do not depend on memory).
CHUNK_ROWS = 65536

#: Degrees of freedom of the heavy-tailed design's Student-t coordinates.
T_DOF = 3

_DEFAULT_CONDITION = 1.0e4


def fail(name: str, message: str) -> DPRegError:
    """The error for dataset ``name`` (the same form as :func:`dpreg.data.entries.fail`)."""
    return DPRegError(f"dataset {name!r}: {message}")


def _int(name: str, key: str, value: object, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise fail(name, f"synthetic.{key} must be an integer >= {minimum}, got {value!r}")
    return int(value)


def _number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def check_synthetic(name: str, spec: object) -> dict[str, Any]:
    """A ``synthetic`` mapping checked and normalised (every key present).

    Raises
    ------
    DPRegError
        Naming the dataset, the key, the value and what is allowed.
    """
    if not isinstance(spec, Mapping):
        raise fail(
            name, f"synthetic must be a mapping of {', '.join(SYNTHETIC_KEYS)}, got {spec!r}"
        )
    unknown = [k for k in spec if k not in SYNTHETIC_KEYS]
    if unknown:
        raise fail(
            name, f"synthetic has unknown key {unknown[0]!r}; allowed: {', '.join(SYNTHETIC_KEYS)}"
        )
    missing = [k for k in ("design", "n", "d", "noise", "seed") if k not in spec]
    if missing:
        raise fail(name, f"synthetic needs {', '.join(missing)} (keys: design, n, d, noise, seed)")
    design = spec["design"]
    if design not in DESIGNS:
        raise fail(name, f"synthetic.design is {design!r}; allowed: {', '.join(DESIGNS)}")
    out: dict[str, Any] = {
        "design": design,
        "n": _int(name, "n", spec["n"], 20),
        "d": _int(name, "d", spec["d"], 1),
        "seed": _int(name, "seed", spec["seed"], 0),
    }
    noise = spec["noise"]
    if not _number(noise) or noise < 0:
        raise fail(name, f"synthetic.noise must be a finite number >= 0, got {noise!r}")
    out["noise"] = float(noise)
    theta = spec.get("theta")
    if theta is not None:
        if (
            not isinstance(theta, list | tuple)
            or len(theta) != out["d"]
            or not all(_number(t) for t in theta)
        ):
            raise fail(
                name,
                f"synthetic.theta must be a list of d = {out['d']} finite numbers, got {theta!r}",
            )
        theta = [float(t) for t in theta]
    out["theta"] = theta
    cond = spec.get("condition")
    if cond is not None and design != "ill-conditioned":
        raise fail(name, f"synthetic.condition applies to design ill-conditioned, not {design!r}")
    if design == "ill-conditioned":
        cond = _DEFAULT_CONDITION if cond is None else cond
        if not _number(cond) or cond <= 1:
            raise fail(name, f"synthetic.condition must be a number > 1, got {cond!r}")
        cond = float(cond)
    out["condition"] = cond
    return out


def _rng(name: str, spec: Mapping[str, Any]) -> np.random.Generator:
    return np.random.default_rng(seed_sequence(spec["seed"], name, "synthetic"))


def _draw_theta(rng: np.random.Generator, spec: Mapping[str, Any]) -> np.ndarray:
    theta = rng.standard_normal(spec["d"])  # drawn always: the stream does not depend on theta
    if spec["theta"] is not None:
        return np.asarray(spec["theta"], dtype=np.float64)
    return theta / np.linalg.norm(theta)


def synthetic_theta(name: str, spec: Mapping[str, Any]) -> np.ndarray:
    """``theta*`` of a checked ``synthetic`` mapping (the first draw of its stream)."""
    return _draw_theta(_rng(name, spec), spec)


def _haar(rng: np.random.Generator, d: int) -> np.ndarray:
    """A Haar-random orthogonal matrix (QR with R's diagonal made positive; Mezzadri 2007)."""
    q, r = np.linalg.qr(rng.standard_normal((d, d)))
    return q * np.where(np.diag(r) < 0, -1.0, 1.0)


def synthetic_chunks(
    name: str, spec: Mapping[str, Any]
) -> tuple[np.ndarray, Iterator[tuple[np.ndarray, np.ndarray]]]:
    """``(theta*, chunks)``: the rows as ``(X, y)`` chunks of at most :data:`CHUNK_ROWS`.

    ``spec`` is checked by :func:`check_synthetic`.  The chunks concatenated
    are the ``n`` rows of the dataset, the same for the same name and entry.
    """
    rng = _rng(name, spec)
    theta = _draw_theta(rng, spec)
    d, n, design = spec["d"], spec["n"], spec["design"]
    root = None
    if design == "ill-conditioned":
        # Sigma^(1/2) = Q diag(sqrt(s)) Q^T with s from 1 to 1/condition: cond(Sigma) = condition
        s = np.logspace(0.0, -math.log10(spec["condition"]), d) if d > 1 else np.ones(1)
        q = _haar(rng, d)
        root = (q * np.sqrt(s)) @ q.T

    def chunks() -> Iterator[tuple[np.ndarray, np.ndarray]]:
        for lo in range(0, n, CHUNK_ROWS):
            m = min(CHUNK_ROWS, n - lo)
            if design == "heavy-tailed":
                X = rng.standard_t(T_DOF, size=(m, d)) / math.sqrt(T_DOF / (T_DOF - 2))
            else:
                X = rng.standard_normal((m, d))
                if root is not None:
                    X = X @ root
            y = X @ theta + spec["noise"] * rng.standard_normal(m)
            yield X, y

    return theta, chunks()
