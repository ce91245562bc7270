"""One decision per claim: the pooled effect, Holm, margins, TOST and registration.

The simulation test validates the whole procedure (evaluate_claims on trial
tables) against a known truth: coverage of the pooled interval and the rate
at which a null claim is decided.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from dpreg._validation import DPRegError
from dpreg.inference.claims import parse_claims
from dpreg.inference.evaluation import evaluate_claims
from dpreg.inference.pooled import (
    Pooled,
    decide,
    decision_p_value,
    holm,
    holm_adjusted,
    pool_datasets,
)
from dpreg.inference.registry import (
    attach_claims,
    claim_status,
    definition_hash,
    lock_path,
    read_registration,
    register_claims,
)

FOLDS, REPEATS, EPSILONS = 5, 4, (0.5, 5.0)


def simulated_trials(rng, *, datasets, log_effects, sd_fold=0.3, sd_noise=0.4, fail_a=0.0):
    """Trials of arms b (reference), a (effect exp(log_effects[d]) on the mean) and c (= b).

    mse = s_d exp(mu + f_k + e) with a fold effect f_k shared by the arms (the
    pairing) and independent noise e per trial and epsilon, so E[a] / E[b] =
    exp(log_effects[d]) exactly and c has b's distribution.  With ``fail_a``
    a share of a's trials fails and carries the trivial predictor's error
    (scale_d * 3, worse than every arm's typical error).
    """
    K, R, E = FOLDS, REPEATS, len(EPSILONS)
    parts = []
    for d in range(datasets):
        scale = math.exp(rng.normal(0, 0.5))
        fold = rng.normal(0, sd_fold, size=K)
        for alg, mu in (("b", 0.0), ("a", log_effects[d]), ("c", 0.0)):
            e = rng.normal(0, sd_noise, size=(E, K, R))
            # exp(e) has mean exp(sd^2 / 2) for every arm: the ratio of means is exp(mu)
            mse = scale * np.exp(mu + fold[None, :, None] + e)
            failed = np.zeros_like(mse, dtype=bool)
            if alg == "a" and fail_a:
                failed = rng.random(mse.shape) < fail_a
                mse = np.where(failed, 3.0 * scale, mse)
            parts.append(
                pd.DataFrame(
                    {
                        "dataset": f"d{d}",
                        "variant": "v",
                        "algorithm": alg,
                        "epsilon": np.repeat(EPSILONS, K * R),
                        "fold": np.tile(np.repeat(np.arange(K), R), E),
                        "repeat": np.tile(np.arange(R), E * K),
                        "mse": mse.ravel(),
                        "failed": failed.ravel(),
                    }
                )
            )
    return pd.concat(parts, ignore_index=True)


SIM_EXPERIMENT = {
    "algorithms": ["a", "b", "c"],
    "variants": ["v"],
    "claims": [
        {
            "id": "a-lower",
            "a": {"algorithm": "a"},
            "b": {"algorithm": "b"},
            "statistic": "mean",
            "expect": "lower",
        },
        {
            "id": "null",
            "a": {"algorithm": "c"},
            "b": {"algorithm": "b"},
            "statistic": "mean",
            "expect": "lower",
        },
    ],
}


def test_pooled_intervals_cover_and_a_null_claim_is_rarely_decided():
    """Coverage of the pooled effect at its nominal level; null decided in <= 5% of seeds.

    Truth: per dataset a log effect mu_d ~ N(log 0.8, 0.1^2) (datasets drawn from
    a population, the units the interval is about); the pooled estimand is
    log 0.8.  Arm c has b's distribution.  160 simulated seeds: the coverage
    estimate has binomial standard error sqrt(0.95 * 0.05 / 160) = 0.0172, so
    coverage is asserted within 3 standard errors below 0.95 (>= 0.898; the
    two-stage bootstrap counts the within-dataset variance twice and errs on the
    wide side, so coverage above 0.95 is expected).  The null claim is
    "decided" when the decision is supported or contradicted; asserted at most
    5% of seeds as the issue asks (the binomial error of a 5% rate over 160
    seeds is 0.0172; the conservative interval keeps the rate well below:
    measured 0 of 200 seeds, coverage 0.995, with 400 replicates).
    """
    seeds, n_datasets, truth = 160, 8, math.log(0.8)
    cfg = {"seed": 11, "bootstrap": {"resamples": 300}, "experiments": {"e": SIM_EXPERIMENT}}
    covered, decided = 0, 0
    for s in range(seeds):
        rng = np.random.default_rng([2026, s])
        effects = rng.normal(truth, 0.1, size=n_datasets)
        table = evaluate_claims(
            cfg, trials={"e": simulated_trials(rng, datasets=n_datasets, log_effects=effects)}
        )
        overall = table[table["scope"] == "overall"].set_index("claim")
        lo, hi = overall.loc["a-lower", ["ratio_lo", "ratio_hi"]]
        covered += bool(math.log(lo) <= truth <= math.log(hi))
        decided += overall.loc["null", "verdict"] in ("supported", "contradicted")
        assert overall.loc["a-lower", "level"] == pytest.approx(0.95)  # exploratory: unadjusted
    assert covered / seeds >= 0.95 - 3 * math.sqrt(0.95 * 0.05 / seeds), covered
    assert decided / seeds <= 0.05, decided


def test_failed_trials_are_scored_and_their_rate_reported():
    rng = np.random.default_rng(5)
    trials = simulated_trials(rng, datasets=3, log_effects=[0.0, 0.0, 0.0], fail_a=0.25)
    cfg = {"seed": 1, "bootstrap": {"resamples": 200}, "experiments": {"e": SIM_EXPERIMENT}}
    table = evaluate_claims(cfg, trials={"e": trials})
    overall = table[table["scope"] == "overall"].set_index("claim")
    share = trials.loc[trials["algorithm"] == "a", "failed"].mean()
    assert overall.loc["a-lower", "a_failed"] == pytest.approx(share)
    assert overall.loc["a-lower", "b_failed"] == 0.0
    # the failures (error 3 s_d, far above the typical s_d) count: a's pooled mean is higher
    # than b's; leaving them out would give a ratio near 1 (both arms otherwise alike)
    assert overall.loc["a-lower", "ratio"] > 1.2
    kept = trials[~trials["failed"]]
    dropped = evaluate_claims(cfg, trials={"e": kept})
    assert (
        dropped.loc[dropped["scope"] == "overall", "ratio"].iloc[0]
        < overall.loc["a-lower", "ratio"]
    )


def test_an_epsilon_independent_comparison_counts_once():
    rng = np.random.default_rng(3)
    trials = simulated_trials(rng, datasets=2, log_effects=[0.1, 0.1])
    # b and c the same at every epsilon (a non-private reference): copy epsilon 0.5's trials
    keys = ["dataset", "algorithm", "fold", "repeat"]
    first = trials[trials["epsilon"] == EPSILONS[0]].set_index(keys)["mse"]
    rows = trials["algorithm"].isin(["b", "c"])
    index = pd.MultiIndex.from_frame(trials.loc[rows, keys])
    trials.loc[rows, "mse"] = first.reindex(index).to_numpy()
    cfg = {"seed": 1, "bootstrap": {"resamples": 200}, "experiments": {"e": SIM_EXPERIMENT}}
    table = evaluate_claims(cfg, trials={"e": trials})
    null = table[table["claim"] == "null"]
    points = null[null["scope"] == "point"]
    assert len(points) == 2 and points["epsilon"].isna().all()  # one per dataset
    assert int(null.loc[null["scope"] == "overall", "points"].iloc[0]) == 2
    other = table[(table["claim"] == "a-lower") & (table["scope"] == "point")]
    assert len(other) == 2 * len(EPSILONS)


def test_holm_levels_and_adjusted_p_values_match_the_closed_form():
    p = [0.01, 0.04, 0.03, 0.005]
    level, decided = holm(p, 0.05)
    # ranks: 0.005 -> 0.05/4, 0.01 -> 0.05/3, 0.03 -> 0.05/2, 0.04 -> 0.05/1
    np.testing.assert_allclose(level, [0.05 / 3, 0.05, 0.05 / 2, 0.05 / 4])
    # 0.005 <= 0.0125 and 0.01 <= 0.0167 are decided; 0.03 > 0.025 stops the procedure
    assert decided.tolist() == [True, False, False, True]
    level, decided = holm([0.02, 0.03], 0.05)  # 0.02 <= 0.025, then 0.03 <= 0.05
    assert decided.tolist() == [True, True]
    _, decided = holm([0.03, 0.04], 0.05)  # 0.03 > 0.025 stops the procedure
    assert decided.tolist() == [False, False]
    np.testing.assert_allclose(holm_adjusted([0.01, 0.04, 0.03, 0.005]), [0.03, 0.06, 0.06, 0.02])


@pytest.mark.parametrize(
    ("lo", "hi", "expect", "margin", "want"),
    [
        (-0.3, -0.2, "lower", 0.1, "supported"),  # below -log 1.1 = -0.0953
        (-0.3, -0.05, "lower", 0.1, "inconclusive"),
        (-0.05, 0.05, "lower", 0.1, "equivalent"),  # a practical tie
        (0.2, 0.3, "lower", 0.1, "contradicted"),
        (0.2, 0.3, "higher", 0.1, "supported"),
        (-0.05, 0.05, "equal", 0.1, "supported"),  # TOST: inside the tie band
        (-0.05, 0.2, "equal", 0.1, "inconclusive"),
        (0.2, 0.3, "equal", 0.1, "contradicted"),
        (-0.01, 0.01, "lower", 0.0, "inconclusive"),
        (math.nan, 0.1, "lower", 0.0, "inconclusive"),
    ],
)
def test_decision_rule(lo, hi, expect, margin, want):
    assert decide(lo, hi, expect=expect, margin=margin) == want


def test_p_value_is_where_the_interval_starts_to_decide():
    rng = np.random.default_rng(0)
    pooled = Pooled(-0.2, rng.normal(-0.2, 0.1, size=20_000), datasets=1)
    p = decision_p_value(pooled, expect="lower", margin=0.0)
    # one dataset: plain percentile interval; it excludes 0 above when its upper
    # quantile 1 - p/2 falls below 0: p = 2 P(N(-0.2, 0.1) > 0) = 2 (1 - Phi(2)) = 0.0455
    assert p == pytest.approx(0.0455, abs=0.004)  # Monte Carlo error of 20,000 replicates
    assert decide(*pooled.interval(p * 1.05), expect="lower", margin=0.0) == "supported"
    assert decide(*pooled.interval(p * 0.95), expect="lower", margin=0.0) == "inconclusive"


def test_pooling_gives_the_mean_of_the_datasets_and_resamples_them():
    reps = [np.full(100, 0.0), np.full(100, 1.0)]
    pooled = pool_datasets([0.0, 1.0], reps, seed=1, key="k")
    assert pooled.theta == 0.5 and pooled.datasets == 2
    # a replicate averages two drawn datasets: 0, 0.5 or 1, about 1/4, 1/2, 1/4
    values, counts = np.unique(pooled.replicates, return_counts=True)
    assert values.tolist() == [0.0, 0.5, 1.0]
    assert abs(counts[1] / 100 - 0.5) < 0.2  # binomial sd 0.05 for 100 replicates


# --------------------------------------------------------------------------
# registration
# --------------------------------------------------------------------------
def _claims_file(folder, claims):
    import yaml

    path = folder / "claims.yaml"
    path.write_text(yaml.safe_dump({"e": claims}), encoding="utf-8")
    return path


def test_registration_record_and_status(tmp_path):
    exp = {k: v for k, v in SIM_EXPERIMENT.items() if k != "claims"}
    path = _claims_file(tmp_path, SIM_EXPERIMENT["claims"])
    record = register_claims(
        path, experiments={"e": exp}, seen_seeds=[7], date="2026-01-02", commit="abc"
    )
    assert read_registration(lock_path(path)) == record
    claims = parse_claims("e", {**exp, "claims": SIM_EXPERIMENT["claims"]})
    entry = record["claims"]["e/a-lower"]
    assert entry == {
        "sha256": definition_hash(claims[0]),
        "registered": "2026-01-02",
        "commit": "abc",
        "seen_seeds": [7],
    }
    assert claim_status(claims[0], record, seed=8)[0] == "confirmatory"
    assert claim_status(claims[0], record, seed=7)[0] == "exploratory"  # trials seen before
    changed = parse_claims("e", {**exp, "claims": [{**SIM_EXPERIMENT["claims"][0], "margin": 0.2}]})
    assert claim_status(changed[0], record, seed=8)[0] == "exploratory"  # definition changed
    # wording is not part of the definition; registering again keeps the first record
    worded = [
        {**SIM_EXPERIMENT["claims"][0], "statement": "new words"},
        SIM_EXPERIMENT["claims"][1],
    ]
    again = register_claims(
        _claims_file(tmp_path, worded), experiments={"e": exp}, date="2027-01-01"
    )
    assert again["claims"]["e/a-lower"]["registered"] == "2026-01-02"


def test_confirmatory_claims_are_holm_adjusted_and_carry_their_record(tmp_path):
    exp = {k: v for k, v in SIM_EXPERIMENT.items() if k != "claims"}
    path = _claims_file(tmp_path, SIM_EXPERIMENT["claims"][:1])  # only a-lower registered
    record = register_claims(path, experiments={"e": exp}, date="2026-01-02", commit="abc")
    rng = np.random.default_rng(9)
    trials = simulated_trials(rng, datasets=6, log_effects=[-0.5] * 6)
    cfg = {"seed": 2, "bootstrap": {"resamples": 300}, "experiments": {"e": SIM_EXPERIMENT}}
    table = evaluate_claims(cfg, trials={"e": trials}, registration=record)
    overall = table[table["scope"] == "overall"].set_index("claim")
    assert overall.loc["a-lower", "status"] == "confirmatory"
    assert overall.loc["a-lower", "registered"] == "2026-01-02"
    assert overall.loc["null", "status"] == "exploratory"
    assert overall.loc["a-lower", "verdict"] == "supported"
    # a family of one: Holm's level is the nominal one
    assert overall.loc["a-lower", "level"] == pytest.approx(0.95)
    # both registered: the smaller p is judged at 0.05 / 2, the other at 0.05
    both = register_claims(_claims_file(tmp_path, SIM_EXPERIMENT["claims"]), experiments={"e": exp})
    table = evaluate_claims(cfg, trials={"e": trials}, registration=both)
    levels = sorted(table.loc[table["scope"] == "overall", "level"])
    assert levels == pytest.approx([0.95, 0.975])


def test_claims_in_the_config_itself_are_refused(tmp_path):
    cfg = {"experiments": {"e": SIM_EXPERIMENT}, "claims_file": str(tmp_path / "claims.yaml")}
    with pytest.raises(DPRegError, match="experiments: e: claims: claims live in the claims file"):
        attach_claims(cfg)
    exp = {k: v for k, v in SIM_EXPERIMENT.items() if k != "claims"}
    cfg = {
        "experiments": {"e": dict(exp)},
        "claims_file": str(_claims_file(tmp_path, SIM_EXPERIMENT["claims"])),
    }
    attach_claims(cfg)
    assert [c["id"] for c in cfg["experiments"]["e"]["claims"]] == ["a-lower", "null"]
    bad = [{**SIM_EXPERIMENT["claims"][0], "expect": "smaller"}]
    cfg = {"experiments": {"e": dict(exp)}, "claims_file": str(_claims_file(tmp_path, bad))}
    with pytest.raises(DPRegError, match=r"claims.yaml: .*a-lower: expect must be one of lower"):
        attach_claims(cfg)
    with pytest.raises(DPRegError, match="claims_file: .* does not exist"):
        attach_claims({"experiments": {}, "claims_file": str(tmp_path / "none.yaml")})
