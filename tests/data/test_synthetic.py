"""Synthetic datasets (dpreg.data.synthetic): deterministic tables with a known theta*."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from dpreg._validation import DPRegError
from dpreg.data import prepare_dataset, read_prepared, read_prepared_meta, validate_entry
from dpreg.data.synthetic import CHUNK_ROWS, check_synthetic, synthetic_chunks


def _prepare(tmp_path, name, spec, tag="a"):
    table, meta = tmp_path / f"{tag}.parquet", tmp_path / f"{tag}.json"
    prepare_dataset(name, {"synthetic": spec}, mirror_dir=None, out_table=table, out_meta=meta)
    X, y, features, target = read_prepared(table)
    return X, y, read_prepared_meta(meta), table


def _gauss(**kw):
    return {"design": "gaussian", "n": 400, "d": 4, "noise": 0.1, "seed": 7, **kw}


def test_same_entry_and_name_give_the_same_table_other_name_or_seed_another(tmp_path):
    X1, y1, m1, t1 = _prepare(tmp_path, "g", _gauss(), "a")
    X2, y2, m2, t2 = _prepare(tmp_path, "g", _gauss(), "b")
    assert t1.read_bytes() == t2.read_bytes()
    assert m1["sha256"] == m2["sha256"]
    X3, _, m3, _ = _prepare(tmp_path, "h", _gauss(), "c")  # the name keys the stream
    X4, _, m4, _ = _prepare(tmp_path, "g", _gauss(seed=8), "d")
    assert not np.array_equal(X1, X3) and not np.array_equal(X1, X4)
    assert m1["theta_star"] != m3["theta_star"]


def test_sidecar_records_theta_star_in_the_table_coordinates(tmp_path):
    # noise 0: the table is exactly y = X theta*, so least squares returns theta*
    X, y, meta, _ = _prepare(tmp_path, "g", _gauss(noise=0.0))
    theta = np.asarray(meta["theta_star"])
    assert meta["source"] == "synthetic" and meta["features"] == ["x1", "x2", "x3", "x4"]
    assert meta["target"] == "y" and (meta["n"], meta["d"]) == X.shape == (400, 4)
    assert math.isclose(np.linalg.norm(theta), 1.0, rel_tol=1e-12)  # unit sphere by default
    fit = np.linalg.lstsq(X, y, rcond=None)[0]
    np.testing.assert_allclose(fit, theta, rtol=0, atol=1e-12)


def test_given_theta_is_used(tmp_path):
    X, y, meta, _ = _prepare(tmp_path, "g", _gauss(noise=0.0, theta=[1, -2, 0, 0.5]))
    assert meta["theta_star"] == [1.0, -2.0, 0.0, 0.5]
    np.testing.assert_allclose(y, X @ np.array([1, -2, 0, 0.5]), atol=1e-12)


def test_noise_has_the_declared_sd(tmp_path):
    X, y, meta, _ = _prepare(tmp_path, "g", _gauss(n=20000, noise=0.3))
    resid = y - X @ np.asarray(meta["theta_star"])
    # sd of a sample sd of 20000 normals is 0.3 / sqrt(2 * 20000) = 0.0015; 0.01 is > 6 of them
    assert abs(resid.std() - 0.3) < 0.01


def test_heavy_tailed_has_unit_variance_and_heavy_tails():
    spec = check_synthetic(
        "t", {"design": "heavy-tailed", "n": 100000, "d": 3, "noise": 0, "seed": 1}
    )
    _, chunks = synthetic_chunks("t", spec)
    X = np.vstack([c[0] for c in chunks])
    assert X.shape == (100000, 3)  # more rows than one chunk: chunks concatenate
    # t(3)/sqrt(3) has variance 1 but infinite fourth moment: the sample variance
    # converges slowly, so 0.25 is wide; the kurtosis of a normal is 3, here far above
    assert np.all(np.abs(X.var(axis=0) - 1.0) < 0.25)
    kurt = ((X - X.mean(0)) ** 4).mean(0) / X.var(0) ** 2
    assert np.all(kurt > 6)
    g = check_synthetic("t", {"design": "gaussian", "n": 100000, "d": 3, "noise": 0, "seed": 1})
    Xg = next(synthetic_chunks("t", g)[1])[0]
    kg = ((Xg - Xg.mean(0)) ** 4).mean(0) / Xg.var(0) ** 2
    assert np.all(np.abs(kg - 3) < 0.2)  # sd of the sample kurtosis: sqrt(24 / 65536) = 0.02


def test_ill_conditioned_covariance_has_the_declared_condition_number():
    spec = check_synthetic(
        "c",
        {"design": "ill-conditioned", "n": 200000, "d": 5, "noise": 0, "seed": 3, "condition": 1e3},
    )
    X = np.vstack([c[0] for c in synthetic_chunks("c", spec)[1]])
    assert X.shape[0] == 200000 > CHUNK_ROWS
    eig = np.linalg.eigvalsh(np.cov(X.T))
    # eigenvalues of the sample covariance within a few % at n = 200000 (relative sd
    # of each about sqrt(2 / n) = 0.3%); 10% on the ratio of two of them is wide
    assert abs(eig[-1] / eig[0] / 1e3 - 1) < 0.1
    assert abs(eig[-1] - 1) < 0.05
    # the covariance is not diagonal: the eigenvectors are a random rotation
    C = np.cov(X.T)
    assert np.abs(C - np.diag(np.diag(C))).max() > 0.05


def test_default_condition_is_1e4():
    spec = validate_entry(
        "c", {"synthetic": {"design": "ill-conditioned", "n": 50, "d": 3, "noise": 0, "seed": 0}}
    )
    assert spec["synthetic"]["condition"] == 1e4


@pytest.mark.parametrize(
    "entry, pattern",
    [
        (
            {"synthetic": _gauss(design="uniform")},
            r"synthetic.design is 'uniform'; allowed: gaussian",
        ),
        ({"synthetic": _gauss(n=10)}, r"synthetic.n must be an integer >= 20, got 10"),
        ({"synthetic": _gauss(d=True)}, r"synthetic.d must be an integer >= 1"),
        ({"synthetic": _gauss(noise=-1)}, r"synthetic.noise must be a finite number >= 0"),
        ({"synthetic": _gauss(noise="1e4")}, r"synthetic.noise must be a finite number >= 0"),
        ({"synthetic": _gauss(theta=[1, 2])}, r"synthetic.theta must be a list of d = 4"),
        ({"synthetic": _gauss(condition=10)}, r"condition applies to design ill-conditioned"),
        ({"synthetic": _gauss(rows=3)}, r"unknown key 'rows'; allowed: design, n, d"),
        ({"synthetic": {"design": "gaussian"}}, r"synthetic needs n, d, noise, seed"),
        ({"synthetic": [1]}, r"synthetic must be a mapping"),
        (
            {"synthetic": {**_gauss(design="ill-conditioned"), "condition": 1}},
            r"synthetic.condition must be a number > 1",
        ),
        ({"synthetic": _gauss(), "path": "x.csv"}, r"exactly one of uci_id, url, path, synthetic"),
        (
            {"synthetic": _gauss(), "target": "y"},
            r"takes only synthetic and description; remove target",
        ),
    ],
)
def test_bad_synthetic_entries_are_explained(entry, pattern):
    with pytest.raises(DPRegError, match=pattern) as info:
        validate_entry("syn", entry)
    assert "dataset 'syn'" in str(info.value)


def test_synthetic_entry_needs_no_mirror(tmp_path):
    e = validate_entry("syn", {"synthetic": _gauss(), "description": "x"}, mirror_dir=tmp_path)
    assert e["synthetic"]["design"] == "gaussian" and e["description"] == "x"


def test_large_table_is_written_in_row_groups(tmp_path):
    import pyarrow.parquet as pq

    X, y, meta, table = _prepare(tmp_path, "big", _gauss(n=CHUNK_ROWS + 10, d=2))
    assert X.shape == (CHUNK_ROWS + 10, 2)
    assert pq.ParquetFile(table).num_row_groups == 2
    assert json.loads(json.dumps(meta))["synthetic"]["n"] == CHUNK_ROWS + 10
