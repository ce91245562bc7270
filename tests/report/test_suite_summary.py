"""The suite summary: ratios to the tight AdaSSP, datasets as units."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from dpreg import DPRegError
from dpreg.algorithms import ALGORITHMS
from dpreg.report import suite


def suite_table(reference="adassp-tight", k=6, seed=0):
    """k datasets; each method's mean MSE = the reference's x a known factor x noise."""
    rng = np.random.default_rng(seed)
    factors = {a: 1.5 ** (j % 5 - 2) for j, a in enumerate((*suite.WANG_CODE, *suite.CORRECTED))}
    rows = []
    for ds in range(k):
        for eps in (0.1, 1.0):
            base = float(rng.uniform(0.01, 0.1))
            algs = {reference: base, "ridge": base / 2, "trivial": base * 3}
            algs |= {a: base * f * float(np.exp(rng.normal(0, 0.2))) for a, f in factors.items()}
            for a, m in algs.items():
                rows.append(
                    dict(dataset=f"d{ds}", variant="wang", algorithm=a, epsilon=eps,
                         mse_mean=m, mse_mean_lo=m * 0.9, mse_mean_hi=m * 1.1)
                )  # fmt: skip
    return pd.DataFrame(rows)


def test_geometric_mean_and_t_interval_over_datasets():
    table = suite_table()
    summ = suite.ratio_summary(table, level=0.9).set_index(["algorithm", "epsilon"])
    assert (summ["reference"] == "adassp-tight").all() and (summ["datasets"] == 6).all()
    ref = table[table["algorithm"] == "adassp-tight"].set_index(["dataset", "epsilon"])["mse_mean"]
    one = table[(table["algorithm"] == "objpert") & (table["epsilon"] == 1.0)]
    logs = np.log(
        one["mse_mean"].to_numpy()
        / ref.loc[list(zip(one["dataset"], one["epsilon"], strict=True))].to_numpy()
    )
    lo, hi = stats.t.interval(0.9, len(logs) - 1, loc=logs.mean(), scale=stats.sem(logs))
    row = summ.loc[("objpert", 1.0)]
    assert row["ratio"] == pytest.approx(np.exp(logs.mean()), rel=1e-12)
    assert (row["ratio_lo"], row["ratio_hi"]) == pytest.approx((np.exp(lo), np.exp(hi)), rel=1e-12)
    assert row["below"] == int((logs < 0).sum())


def test_reference_falls_back_to_the_fixed_adassp():
    table = suite_table(reference="adassp")
    assert suite.summary_reference(table) == "adassp"
    assert "adassp" not in set(suite.ratio_summary(table)["algorithm"])
    both = pd.concat([table, suite_table(reference="adassp-tight")])
    assert suite.summary_reference(both[both["algorithm"] != "ssp"]) == "adassp-tight"
    with pytest.raises(DPRegError, match="none of the summary's references adassp-tight, adassp"):
        suite.summary_reference(table[table["algorithm"] != "adassp"])


def test_summary_figure_is_a_dot_plot_in_registry_styles(tmp_path):
    table = suite_table()
    fig = suite.plot_summary(table, out_png=tmp_path / "s.png", out_pdf=tmp_path / "s.pdf")
    assert (tmp_path / "s.png").stat().st_size > 0
    axes = fig.axes
    assert [ax.get_title() for ax in axes] == ["ε = 0.1", "ε = 1"]
    rows = [t.get_text() for t in axes[0].get_yticklabels()]
    assert len(rows) == len(suite.WANG_CODE) + len(suite.CORRECTED)  # one row per method
    assert "AdaSSP (tight)" in axes[0].get_xlabel() and axes[0].get_xscale() == "log"
    # a vertical line at 1; each method's marker is its registry marker and colour
    assert any(list(ln.get_xdata()) == [1.0, 1.0] for ln in axes[0].lines)
    objpert = ALGORITHMS["objpert"].style
    marks = [
        ln
        for ln in axes[1].lines
        if ln.get_marker() == objpert.marker and ln.get_color() == objpert.color
    ]
    summ = suite.ratio_summary(table).set_index(["algorithm", "epsilon"])
    assert marks and marks[0].get_xdata()[0] == pytest.approx(summ.loc[("objpert", 1.0), "ratio"])
