"""dpreg.inference.bootstrap and dpreg.inference.claims: design bootstrap, paired ratios, verdicts, README block."""

from __future__ import annotations

import math
import re
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from dpreg import DPRegError
from dpreg.inference.bootstrap import DesignBootstrap, expanded_alpha, resample_counts
from dpreg.inference.claims import parse_claims, point_verdicts
from dpreg.inference.evaluation import evaluate_claims
from dpreg.inference.intervals import bootstrap_intervals, paired_ratios
from dpreg.io.checksum import write_checksum
from dpreg.io.tables import CLAIM_COLUMNS, read_claims, write_claims
from dpreg.report.claims import main, readme_block, render_markdown, replace_readme_block

ROOT = Path(__file__).resolve().parents[2]


def design(mse: np.ndarray, *, dataset="d", variant="v", algorithm="x", epsilon=1.0):
    """Trial rows of one cell from an array ``mse[fold, repeat]``."""
    K, R = mse.shape
    f, r = np.indices((K, R)).reshape(2, -1)
    return pd.DataFrame(
        {
            "dataset": dataset,
            "variant": variant,
            "algorithm": algorithm,
            "epsilon": epsilon,
            "partition": 0,
            "fold": f,
            "repeat": r,
            "mse": mse.ravel(),
            "failed": ~np.isfinite(mse.ravel()),
        }
    )


# --------------------------------------------------------------------------
# the resampling design
# --------------------------------------------------------------------------
def test_resample_counts_follow_the_nested_design():
    K, R, B = 4, 3, 50
    C = resample_counts(K, R, B, seed=7, dataset="d")
    assert C.shape == (B, K * R)
    np.testing.assert_array_equal(C.sum(axis=1), K * R)
    # every drawn fold contributes exactly R trials: per-fold totals are multiples of R
    per_fold = C.reshape(B, K, R).sum(axis=2)
    np.testing.assert_array_equal(per_fold % R, 0)
    # deterministic, keyed by name, and prefix-stable in B
    np.testing.assert_array_equal(C, resample_counts(K, R, B, seed=7, dataset="d"))
    np.testing.assert_array_equal(C[:20], resample_counts(K, R, 20, seed=7, dataset="d"))
    assert not np.array_equal(C, resample_counts(K, R, B, seed=7, dataset="e"))
    assert not np.array_equal(C, resample_counts(K, R, B, seed=8, dataset="d"))


def test_one_partition_draws_the_two_stage_replicates_of_before():
    """partitions = 1 keeps the two-stage design's streams and layout: the counts
    equal those drawn as before partitions existed (folds, then repeats)."""
    from dpreg.seeding import seed_sequence

    K, R, B, seed = 5, 4, 60, 11
    f_rng = np.random.default_rng(seed_sequence(seed, "bootstrap", "d", "folds", K))
    r_rng = np.random.default_rng(seed_sequence(seed, "bootstrap", "d", "repeats", K, R))
    fold_pick = f_rng.integers(0, K, size=(B, K))
    rep_pick = r_rng.integers(0, R, size=(B, K, R))
    want = np.zeros((B, K * R))
    for b in range(B):
        for j in range(K):
            for r in rep_pick[b, j]:
                want[b, fold_pick[b, j] * R + r] += 1
    np.testing.assert_array_equal(resample_counts(K, R, B, seed=seed, dataset="d"), want)
    np.testing.assert_array_equal(
        resample_counts(K, R, B, seed=seed, dataset="d", partitions=1), want
    )


def test_resample_counts_follow_the_three_stage_design():
    P, K, R, B = 5, 4, 3, 400
    C = resample_counts(K, R, B, seed=7, dataset="d", partitions=P)
    assert C.shape == (B, P * K * R)
    np.testing.assert_array_equal(C.sum(axis=1), P * K * R)
    # each drawn partition contributes K R trials, each drawn fold R trials
    per_partition = C.reshape(B, P, K * R).sum(axis=2)
    np.testing.assert_array_equal(per_partition % (K * R), 0)
    np.testing.assert_array_equal(C.reshape(B, P * K, R).sum(axis=2) % R, 0)
    # partitions are resampled: some replicates leave a partition out
    assert (per_partition == 0).any(axis=1).mean() > 0.5  # P(some left out) = 1 - 5!/5^5 = 0.96
    # prefix-stable in B
    np.testing.assert_array_equal(
        C[:50], resample_counts(K, R, 50, seed=7, dataset="d", partitions=P)
    )


def test_replicate_statistics_match_explicit_resamples():
    rng = np.random.default_rng(0)
    mse = rng.lognormal(size=(3, 4))
    mse[1, 2] = np.nan  # a failed trial is left out of the replicate
    boot = DesignBootstrap(design(mse), seed=1, resamples=40)
    flat = mse.ravel()
    for stat, fn in (("mean", np.mean), ("median", np.median)):
        est, reps = boot.statistic(stat)
        assert est[0] == pytest.approx(fn(flat[np.isfinite(flat)]))
        for b in range(40):
            sample = np.repeat(flat, boot.counts[b].astype(int))
            expected = fn(sample[np.isfinite(sample)])
            assert reps[b, 0] == pytest.approx(expected, rel=1e-12)


def test_replicate_medians_match_explicit_resamples_across_blocks():
    """The blocked median search equals the median of every explicit resample.

    K R = 180 trials span several search blocks, so the lower and upper middle
    fall in different blocks in some replicates; cells with ties, with failed
    trials, with a single usable trial and with none are included.
    """
    rng = np.random.default_rng(3)
    K, R, B = 6, 30, 300
    cells = []
    for i, share_failed in enumerate((0.0, 0.2, 0.9)):
        mse = rng.lognormal(size=(K, 1)) * rng.lognormal(sigma=0.5, size=(K, R))
        mse[rng.random((K, R)) < share_failed] = np.nan
        cells.append(design(mse, algorithm=f"a{i}"))
    ties = np.round(rng.uniform(0, 3, size=(K, R)))  # four distinct values only
    cells.append(design(ties, algorithm="ties"))
    single = np.full((K, R), np.nan)
    single[2, 5] = 0.7
    cells.append(design(single, algorithm="single"))
    cells.append(design(np.full((K, R), np.nan), algorithm="none"))
    boot = DesignBootstrap(pd.concat(cells, ignore_index=True), seed=5, resamples=B)
    _, reps = boot.statistic("median")
    assert reps.shape == (B, len(cells))
    for g in range(len(cells)):
        values = boot.values[g]
        for b in range(B):
            sample = np.repeat(values, boot.counts[b].astype(int))
            sample = sample[np.isfinite(sample)]
            if len(sample) == 0:
                assert np.isnan(reps[b, g])
            else:  # both average the same two middle values; 1e-12 allows for rounding
                assert reps[b, g] == pytest.approx(np.median(sample), rel=1e-12)
    assert np.isnan(reps[:, boot.index_of("v", "none", 1.0)]).all()


def test_expanded_alpha_values():
    # n = 10 at 95%: Phi(-sqrt(10/9) * t_{9, 0.975}) = Phi(-2.3846) ~= 0.00855 per tail
    assert expanded_alpha(0.95, 10) / 2 == pytest.approx(0.00855, abs=2e-5)
    # the expansion vanishes as n grows
    assert expanded_alpha(0.95, 10_000) == pytest.approx(0.05, rel=2e-3)
    assert expanded_alpha(0.9, 1) == pytest.approx(0.1)
    # the same numbers as Hesterberg's formula through scipy.stats' distributions
    from scipy import stats

    for level, n in ((0.95, 10), (0.9, 3), (0.99, 25)):
        t = stats.t.isf((1 - level) / 2, n - 1)
        expected = 2 * stats.norm.sf(math.sqrt(n / (n - 1)) * t)
        assert expanded_alpha(level, n) == pytest.approx(expected, rel=1e-13)


def test_bootstrap_covers_a_known_mean():
    """Coverage of the 95% interval over 400 synthetic designs (K = 10, R = 10).

    y = 1 + a_fold + e with sd(a) = 0.5, sd(e) = 2: the DP regime, where the
    noise term dominates.  The scheme is designed to be conservative there
    (module docstring: measured 0.98 with 300 designs), so the coverage must
    reach the nominal 0.95 up to three binomial standard errors of the
    estimate, sqrt(0.95 * 0.05 / 400) = 0.011; and the intervals must not be
    uselessly wide: at most 1.6x the exact normal interval (measured 1.4x).
    """
    M, K, R = 400, 10, 10
    rng = np.random.default_rng(2024)
    y = 1.0 + rng.normal(0, 0.5, (M, K, 1)) + rng.normal(0, 2.0, (M, K, R))
    frame = pd.concat([design(y[m], dataset=f"s{m}") for m in range(M)], ignore_index=True)
    ci = bootstrap_intervals(frame, seed=3, level=0.95, resamples=2000)
    assert len(ci) == M
    cover = ((ci["mse_mean_lo"] <= 1) & (ci["mse_mean_hi"] >= 1)).mean()
    assert cover >= 0.95 - 3 * math.sqrt(0.95 * 0.05 / M)
    # the median of a symmetric design is its mean
    cover_median = ((ci["mse_median_lo"] <= 1) & (ci["mse_median_hi"] >= 1)).mean()
    assert cover_median >= 0.95 - 3 * math.sqrt(0.95 * 0.05 / M)
    exact_se = math.sqrt(0.5**2 / K + 2.0**2 / (K * R))
    width = (ci["mse_mean_hi"] - ci["mse_mean_lo"]).mean()
    assert width <= 1.6 * 2 * 1.959964 * exact_se


def test_intervals_are_deterministic_and_independent_of_other_cells():
    rng = np.random.default_rng(5)
    a = design(rng.lognormal(size=(5, 6)), algorithm="a")
    b = design(rng.lognormal(size=(5, 6)), algorithm="b")
    both = bootstrap_intervals(pd.concat([a, b]), seed=9, resamples=300)
    alone = bootstrap_intervals(a, seed=9, resamples=300)
    pd.testing.assert_frame_equal(both.iloc[:1].reset_index(drop=True), alone)
    again = bootstrap_intervals(
        pd.concat([b, a]).sample(frac=1, random_state=1), seed=9, resamples=300
    )
    pd.testing.assert_frame_equal(both, again)
    assert not both.equals(bootstrap_intervals(pd.concat([a, b]), seed=10, resamples=300))


def test_cells_with_different_repeat_counts():
    rng = np.random.default_rng(1)
    many = design(rng.lognormal(size=(4, 8)), algorithm="a")
    few = design(rng.lognormal(size=(4, 3)), algorithm="b")
    ci = bootstrap_intervals(pd.concat([many, few]), seed=2, resamples=200)
    alone = bootstrap_intervals(few, seed=2, resamples=200)
    pd.testing.assert_frame_equal(ci.iloc[1:].reset_index(drop=True), alone)


def test_all_failed_cell_has_nan_interval():
    mse = np.full((3, 2), np.nan)
    ci = bootstrap_intervals(design(mse), seed=1, resamples=50)
    assert ci[["mse_mean_lo", "mse_median_hi"]].isna().all().all()


def test_duplicate_trials_rejected():
    frame = design(np.ones((2, 2)))
    with pytest.raises(DPRegError, match="more than once"):
        DesignBootstrap(pd.concat([frame, frame.iloc[:1]]), seed=1, resamples=10)


def test_missing_bootstrap_column_is_named():
    with pytest.raises(DPRegError, match="fold"):
        bootstrap_intervals(design(np.ones((2, 2))).drop(columns=["fold"]), seed=1)


# --------------------------------------------------------------------------
# paired ratios and verdicts
# --------------------------------------------------------------------------
def test_pairing_removes_the_shared_fold_effect():
    """Two cells sharing a large fold effect: the paired ratio interval is narrow.

    b = fold effect + small noise, a = 0.9 * b (same folds and repeats): the
    ratio is exactly 0.9 in every replicate, so its interval is [0.9, 0.9],
    although each cell's own interval is wide.
    """
    rng = np.random.default_rng(3)
    base = np.exp(rng.normal(0, 1.0, (10, 1)) + rng.normal(0, 0.1, (10, 6)))
    trials = pd.concat([design(base, algorithm="b"), design(0.9 * base, algorithm="a")])
    out = paired_ratios(
        trials, ("v", "a"), ("v", "b"), [1.0], statistic="mean", seed=1, resamples=300
    )
    row = out.iloc[0]
    assert row["ratio"] == pytest.approx(0.9)
    assert row["ratio_lo"] == pytest.approx(0.9) and row["ratio_hi"] == pytest.approx(0.9)
    own = bootstrap_intervals(trials, seed=1, resamples=300).set_index("algorithm")
    assert own.loc["b", "mse_mean_hi"] / own.loc["b", "mse_mean_lo"] > 1.5


@pytest.mark.parametrize(
    ("lo", "hi", "expect", "margin", "verdict"),
    [
        (0.5, 0.9, "lower", 0.0, "supported"),
        (0.9, 1.1, "lower", 0.0, "inconclusive"),
        (1.0, 1.3, "lower", 0.0, "contradicted"),
        (0.85, 0.95, "lower", 0.1, "inconclusive"),  # below 1 but not below 1/1.1
        (1.2, 1.5, "higher", 0.1, "supported"),
        (0.7, 0.95, "higher", 0.0, "contradicted"),
        (0.95, 1.05, "equal", 0.1, "supported"),
        (0.95, 1.2, "equal", 0.1, "inconclusive"),
        (1.2, 1.4, "equal", 0.1, "contradicted"),
        (math.nan, math.nan, "lower", 0.0, "inconclusive"),
    ],
)
def test_point_verdicts(lo, hi, expect, margin, verdict):
    assert (
        point_verdicts(np.array([lo]), np.array([hi]), expect=expect, margin=margin)[0] == verdict
    )


def synthetic_sweep_trials():
    """Trials of three cells on two datasets with known orderings.

    ``good`` has 0.6x the error of ``base`` (a clear gain), ``same`` equals
    ``base`` up to 1% noise, per (fold, repeat); fold effects are shared.
    """
    rng = np.random.default_rng(11)
    parts = []
    for ds in ("d1", "d2"):
        for eps in (0.1, 1.0):
            base = np.exp(rng.normal(0, 0.5, (10, 1)) + rng.normal(0, 0.3, (10, 8))) / eps
            for alg, mse in (
                ("base", base),
                ("good", 0.6 * base * np.exp(rng.normal(0, 0.05, base.shape))),
                ("same", base * np.exp(rng.normal(0, 0.01, base.shape))),
            ):
                parts.append(design(mse, dataset=ds, algorithm=alg, epsilon=eps))
    return pd.concat(parts, ignore_index=True)


EXPERIMENT = {
    "algorithms": ["base", "good", "same"],
    "variants": ["v"],
    "claims": [
        {
            "id": "good-lower",
            "a": {"algorithm": "good"},
            "b": {"algorithm": "base"},
            "expect": "lower",
        },
        {
            "id": "good-higher",
            "a": {"algorithm": "good"},
            "b": {"algorithm": "base"},
            "expect": "higher",
        },
        {
            "id": "same-equal",
            "a": {"algorithm": "same"},
            "b": {"algorithm": "base"},
            "expect": "equal",
            "margin": 0.1,
            "statistic": "mean",
            "source": "thesis",
            "statement": "no difference",
        },
        # equal within 1e-4 cannot be shown with 10 folds: inconclusive
        {
            "id": "same-tight",
            "a": {"algorithm": "same"},
            "b": {"algorithm": "base"},
            "expect": "equal",
            "margin": 1e-4,
        },
        {
            "id": "only-d2",
            "a": {"algorithm": "good"},
            "b": {"algorithm": "base"},
            "expect": "lower",
            "datasets": ["d2"],
            "epsilons": [0.5, 5],
        },
    ],
}


def test_verdicts_on_a_synthetic_table(tmp_path):
    cfg = {"seed": 4, "bootstrap": {"resamples": 400}, "experiments": {"e": EXPERIMENT}}
    table = evaluate_claims(cfg, trials={"e": synthetic_sweep_trials()})
    assert list(table.columns) == CLAIM_COLUMNS
    overall = table[table["scope"] == "overall"].set_index("claim")
    assert overall.loc["good-lower", "verdict"] == "supported"
    assert overall.loc["good-lower", "supported"] == 4
    assert overall.loc["good-higher", "verdict"] == "contradicted"
    assert overall.loc["same-equal", "verdict"] == "supported"
    assert overall.loc["same-tight", "verdict"] == "inconclusive"
    assert overall.loc["only-d2", "points"] == 1
    pts = table[(table["claim"] == "good-lower") & (table["scope"] == "point")]
    assert list(zip(pts["dataset"], pts["epsilon"], strict=True)) == [
        ("d1", 0.1),
        ("d1", 1.0),
        ("d2", 0.1),
        ("d2", 1.0),
    ]
    assert pts["ratio"].between(0.55, 0.65).all()
    assert (pts["ratio_lo"] <= pts["ratio"]).all() and (pts["ratio"] <= pts["ratio_hi"]).all()
    # written atomically and read back equal; deterministic bytes
    a, b = tmp_path / "a.csv", tmp_path / "b.csv"
    write_claims(table, a)
    write_claims(evaluate_claims(cfg, trials={"e": synthetic_sweep_trials()}), b)
    assert a.read_bytes() == b.read_bytes()
    back = read_claims(a)
    assert list(back["verdict"]) == list(table["verdict"])


def test_claim_spec_errors_name_the_key():
    exp = {"algorithms": ["x", "y"], "variants": ["v", "w"]}
    bad = [
        (
            {"id": "c", "a": {"algorithm": "x", "variant": "v"}, "expect": "lower", "typo": 1},
            "typo",
        ),
        (
            {
                "id": "c",
                "a": {"algorithm": "z", "variant": "v"},
                "b": {"algorithm": "x"},
                "expect": "lower",
            },
            "'z'",
        ),
        (
            {"id": "c", "a": {"algorithm": "x"}, "b": {"algorithm": "y"}, "expect": "lower"},
            "variant",
        ),
        (
            {
                "id": "c",
                "a": {"algorithm": "x", "variant": "v"},
                "b": {"algorithm": "y"},
                "expect": "less",
            },
            "expect",
        ),
        (
            {
                "id": "c",
                "a": {"algorithm": "x", "variant": "v"},
                "b": {"variant": "v"},
                "expect": "lower",
            },
            "same",
        ),
        (
            {
                "id": "c",
                "a": {"algorithm": "x", "variant": "v"},
                "b": {"algorithm": "y"},
                "expect": "lower",
                "epsilons": [2, 1],
            },
            "epsilons",
        ),
    ]
    for spec, needle in bad:
        with pytest.raises(DPRegError, match=needle) as err:
            parse_claims("e", {**exp, "claims": [spec]})
        assert "experiments: e" in str(err.value)


# --------------------------------------------------------------------------
# README block
# --------------------------------------------------------------------------
def _numbers(text: str) -> list[float]:
    return [float(x) for x in re.findall(r"(?<![\w.])\d+(?:\.\d+)?(?:e[-+]?\d+)?", text)]


def test_markdown_quotes_only_numbers_from_the_table():
    cfg = {"seed": 4, "bootstrap": {"resamples": 300}, "experiments": {"e": EXPERIMENT}}
    table = evaluate_claims(cfg, trials={"e": synthetic_sweep_trials()})
    text = render_markdown(table)
    overall = table[table["scope"] == "overall"]
    for row in overall.itertuples(index=False):
        line = next(x for x in text.splitlines() if x.startswith(f"| {row.claim} |"))
        assert f"**{row.verdict}**" in line
        assert f"{row.supported} / {row.contradicted} / {row.inconclusive} of {row.points}" in line
        assert f"{row.ratio:.3g} [{row.ratio_lo:.3g}, {row.ratio_hi:.3g}] ({row.level:.4g})" in line
        assert f"| {row.status} |" in line
    allowed = set()
    for col in (
        "epsilon",
        "margin",
        "ratio",
        "ratio_lo",
        "ratio_hi",
        "level",
        "resamples",
        "points",
        "supported",
        "contradicted",
        "inconclusive",
        "datasets",
        "a_failed",
        "b_failed",
    ):
        for v in table[col].dropna():
            allowed |= {float(f"{v:.3g}"), float(v), float(f"{v:g}"), float(f"{v:.0%}".rstrip("%"))}
    allowed |= {1.0, 2.0}  # the digits in claim ids like "only-d2" and dataset names d1, d2
    stray = [x for x in _numbers(text.replace("d1", "").replace("d2", "")) if x not in allowed]
    assert not stray, stray


def test_readme_block_replaced_in_place_and_checked(tmp_path):
    cfg = {"seed": 4, "bootstrap": {"resamples": 200}, "experiments": {"e": EXPERIMENT}}
    table = evaluate_claims(cfg, trials={"e": synthetic_sweep_trials()})
    claims_path, readme = tmp_path / "claims.csv", tmp_path / "README.md"
    write_claims(table, claims_path)
    readme.write_text("# Results\n\nintro\n", encoding="utf-8")
    assert main(["readme", "--claims", str(claims_path), "--readme", str(readme)]) == 0
    first = readme.read_text(encoding="utf-8")
    assert first.startswith("# Results\n\nintro\n")
    source, block = readme_block(first)
    assert source == str(claims_path)
    expected = render_markdown(read_claims(claims_path), table=f"tables/{claims_path.name}")
    assert block == expected.rstrip("\n")
    edited = first.replace("intro", "intro, edited") + "\ntail\n"
    readme.write_text(edited, encoding="utf-8")
    main(["readme", "--claims", str(claims_path), "--readme", str(readme)])
    second = readme.read_text(encoding="utf-8")
    assert "intro, edited" in second and second.endswith("tail\n")
    assert second.count("claims:begin") == 1
    assert replace_readme_block(second, block, source=source) == second


def test_committed_readme_blocks_match_their_claims_tables():
    """Every generated verdict block under results/ is what its claims table renders to.

    The begin marker names the table (relative to the repository root); a
    README whose block names no table, or a missing table, fails.
    """
    for readme in sorted((ROOT / "results").rglob("README.md")):
        found = readme_block(readme.read_text(encoding="utf-8"))
        if found is None:
            continue
        source, block = found
        assert source, f"{readme}: the claims block does not name its table"
        table = ROOT / source
        assert table.exists(), f"{readme}: {source} does not exist"
        # a committed table may lack its sidecar (git checks it); one that has it must match
        claims = read_claims(table, require_checksum=False)
        rendered = render_markdown(claims, table=f"tables/{table.name}")
        assert block == rendered.rstrip("\n"), (
            f"{readme}: regenerate with python -m dpreg.report.claims readme --claims {source} "
            f"--readme {readme.relative_to(ROOT)}"
        )


def _write_cli_config(folder, cfg):
    """c.yaml without the claims, and the claims in claims.yaml (named by claims_file)."""
    import yaml

    experiments = {
        e: {k: v for k, v in x.items() if k != "claims"} for e, x in cfg["experiments"].items()
    }
    claims = {e: x["claims"] for e, x in cfg["experiments"].items() if x.get("claims")}
    (folder / "claims.yaml").write_text(yaml.safe_dump(claims), encoding="utf-8")
    plain = {**cfg, "experiments": experiments, "claims_file": str(folder / "claims.yaml")}
    (folder / "c.yaml").write_text(yaml.safe_dump(plain), encoding="utf-8")


def test_cli_evaluate_reads_trial_files(tmp_path):
    from dpreg.io.trials import write_trials

    trials = synthetic_sweep_trials()
    (tmp_path / "trials" / "e").mkdir(parents=True)
    for ds, part in trials.groupby("dataset"):
        write_trials(part, tmp_path / "trials" / "e" / f"{ds}.csv.gz")

    cfg = {"seed": 4, "bootstrap": {"resamples": 200}, "experiments": {"e": EXPERIMENT}}
    _write_cli_config(tmp_path, cfg)
    out = tmp_path / "claims.csv"
    rc = main(
        [
            "evaluate",
            "--config",
            str(tmp_path / "c.yaml"),
            "--trials",
            str(tmp_path / "trials"),
            "--out",
            str(out),
        ]
    )
    assert rc == 0
    direct = evaluate_claims(cfg, trials={"e": trials})
    pd.testing.assert_frame_equal(
        read_claims(out)[["claim", "verdict"]], direct[["claim", "verdict"]]
    )


def test_sweep_trials_give_intervals_around_the_table_statistics():
    """End to end on a real (small) sweep: each interval contains its point estimate."""
    from dpreg.engine.sweep import sweep_arrays
    from dpreg.report.summary import summarise

    rng = np.random.default_rng(0)
    X = rng.normal(size=(400, 3))
    y = X @ np.array([1.0, -0.5, 0.2]) + rng.normal(0, 0.5, 400)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        trials = sweep_arrays(
            X,
            y,
            dataset="syn",
            seed=1,
            folds=5,
            variants={"m": {"stats": "train"}},
            algorithms=["adassp", "ridge"],
            epsilons=[0.1, 1.0],
            delta=1e-6,
            repeats=6,
        )
    table = summarise(trials, experiment="e", seed=1, resamples=300)
    for stat in ("mean", "median"):
        assert (table[f"mse_{stat}_lo"] <= table[f"mse_{stat}"] * (1 + 1e-12)).all()
        assert (table[f"mse_{stat}"] <= table[f"mse_{stat}_hi"] * (1 + 1e-12)).all()


def test_cli_reads_shared_parquet_layout_and_keeps_experiment_datasets(tmp_path):

    from dpreg.io.trials import write_trials

    trials = synthetic_sweep_trials()
    for ds, part in trials.groupby("dataset"):
        (tmp_path / "trials" / ds).mkdir(parents=True)
        write_trials(part, tmp_path / "trials" / ds / "stats.parquet")
    exp = {**EXPERIMENT, "datasets": ["d2"], "claims": EXPERIMENT["claims"][:1]}
    cfg = {"seed": 4, "bootstrap": {"resamples": 200}, "experiments": {"e": exp}}
    _write_cli_config(tmp_path, cfg)
    out = tmp_path / "claims.csv"
    argv = ["evaluate", "--config", str(tmp_path / "c.yaml"), "--trials", str(tmp_path / "trials")]
    assert main([*argv, "--out", str(out)]) == 0
    table = read_claims(out)
    assert set(table.loc[table["scope"] == "point", "dataset"]) == {"d2"}
    assert int(table.loc[table["scope"] == "overall", "points"].iloc[0]) == 2


def test_a_claims_result_does_not_depend_on_the_other_claims():
    cfg = {"seed": 4, "bootstrap": {"resamples": 300}, "experiments": {"e": EXPERIMENT}}
    every = evaluate_claims(cfg, trials={"e": synthetic_sweep_trials()})
    alone_exp = {**EXPERIMENT, "claims": [EXPERIMENT["claims"][2]]}
    alone = evaluate_claims(
        {**cfg, "experiments": {"e": alone_exp}}, trials={"e": synthetic_sweep_trials()}
    )
    pick = every[every["claim"] == "same-equal"].reset_index(drop=True)
    pd.testing.assert_frame_equal(pick, alone)


def test_readme_numbers_are_checked_against_the_tables(tmp_path):
    from dpreg.report.quotes import quoted_numbers, table_values, unverified_numbers

    table = tmp_path / "t.csv"
    table.write_text(
        "algorithm,mse_mean,releases\nridge,0.05321,XtX:sigma=16.5047@(0.333,1e-06)\n"
        "trivial,0.1033,none\nssp,3.21e-06,none\n",
        encoding="utf-8",
    )
    write_checksum(table)  # check-readme reads only tables whose checksum matches
    values = table_values([table])
    text = (
        "ridge 0.0532 and trivial 0.1033; sigma 16.5; tiny 3.21·10⁻⁶, short 3.2·10⁻⁶; "
        "typo 0.0533; made up 7.77; too short to check 0.5 and 22%; "
        "`code 9.999` and\n```\n1.234\n```\n"
        "<!-- claims:begin source=x -->\n| 4.56 |\n<!-- claims:end -->\n"
    )
    written = [w for w, _, _ in quoted_numbers(text)]
    assert written == ["0.0532", "0.1033", "16.5", "3.21·10⁻⁶", "0.0533", "7.77"]
    assert unverified_numbers(text, values) == ["0.0533", "7.77"]
    assert (
        main(
            [
                "check-readme",
                "--readme",
                str(_write(tmp_path / "R.md", "0.1033 ok")),
                "--tables",
                str(tmp_path),
                "--provenance",
                str(tmp_path / "none.json"),
            ]
        )
        == 0
    )
    assert (
        main(
            [
                "check-readme",
                "--readme",
                str(_write(tmp_path / "R.md", "7.77 bad")),
                "--tables",
                str(tmp_path),
                "--provenance",
                str(tmp_path / "none.json"),
            ]
        )
        == 1
    )


def _write(path, text):
    path.write_text(text, encoding="utf-8")
    return path


def test_committed_results_readme_quotes_only_table_numbers():
    """Every number (3+ significant digits) of results/README.md is in a table or the provenance.

    Run ``python -m dpreg.report.claims check-readme`` to list the offending numbers.
    """
    from dpreg.report.quotes import table_values, unverified_numbers

    results = ROOT / "results"
    sources = sorted((results / "tables").glob("*.csv")) + [results / "provenance.json"]
    text = (results / "README.md").read_text(encoding="utf-8")
    assert unverified_numbers(text, table_values([p for p in sources if p.exists()])) == []
