"""dpreg.report.leaderboard: ranks, Friedman, Nemenyi and sign tests, against scipy and Demšar."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pandas as pd
import pytest
from matplotlib.image import imread
from scipy import stats

from dpreg import DPRegError
from dpreg.algorithms import ALGORITHMS
from dpreg.report.cdplot import plot_cd
from dpreg.report.leaderboard import (
    LEADERBOARD_COLUMNS,
    combine_tables,
    default_reference,
    labels,
    leaderboard,
    leaderboard_main,
    to_markdown,
)
from dpreg.report.ranking import (
    average_ranks,
    critical_difference,
    friedman,
    nemenyi_cliques,
    sign_test,
    wins_ties_losses,
)


# --------------------------------------------------------------------------
# statistics
# --------------------------------------------------------------------------
def test_ranks_average_ties_lowest_error_first():
    errors = np.array([[0.3, 0.1, 0.2, 0.1], [1.0, 2.0, 3.0, 4.0]])
    np.testing.assert_array_equal(
        average_ranks(errors), [[4.0, 1.5, 3.0, 1.5], [1.0, 2.0, 3.0, 4.0]]
    )


def test_ranks_refuse_missing_errors():
    with pytest.raises(DPRegError, match="finite N x k"):
        average_ranks(np.array([[0.1, np.nan]]))


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_friedman_matches_scipy_with_and_without_ties(seed):
    rng = np.random.default_rng(seed)
    errors = rng.normal(size=(12, 5)) + np.arange(5) * 0.4
    if seed == 2:
        errors = np.round(errors, 0)  # many tied errors: the tie correction matters
    test = friedman(average_ranks(errors))
    ref = stats.friedmanchisquare(*errors.T)
    # same formula as scipy up to floating point: 1e-10 relative
    assert test.chi2 == pytest.approx(ref.statistic, rel=1e-10)
    assert test.p == pytest.approx(ref.pvalue, rel=1e-8)
    # Iman-Davenport (Demšar 2006, eq. 2) from the same chi-square, and its F tail
    n, k = errors.shape
    f = (n - 1) * ref.statistic / (n * (k - 1) - ref.statistic)
    assert test.f == pytest.approx(f, rel=1e-10)
    assert test.f_p == pytest.approx(stats.f.sf(f, k - 1, (k - 1) * (n - 1)), rel=1e-8)
    assert (test.n, test.k) == (n, k)


def test_friedman_without_ties_is_demsars_eq1():
    # every row a permutation of 1..k: no tie correction, Demšar's eq. 1 exactly
    rng = np.random.default_rng(7)
    ranks = np.array([rng.permutation(6) + 1 for _ in range(9)], dtype=float)
    n, k = ranks.shape
    r = ranks.mean(axis=0)
    eq1 = 12 * n / (k * (k + 1)) * (np.sum(r**2) - k * (k + 1) ** 2 / 4)
    assert friedman(ranks).chi2 == pytest.approx(eq1, rel=1e-12)


def test_friedman_needs_two_datasets_and_two_methods():
    with pytest.raises(DPRegError, match="at least 2 datasets and 2 methods"):
        friedman(np.array([[1.0, 2.0]]))


@pytest.mark.parametrize(
    ("k", "q"),
    # Demšar (2006), Table 5(a): q_0.05 of the two-tailed Nemenyi test
    [
        (2, 1.960),
        (3, 2.343),
        (4, 2.569),
        (5, 2.728),
        (6, 2.850),
        (7, 2.949),
        (8, 3.031),
        (9, 3.102),
        (10, 3.164),
    ],
)
def test_critical_difference_uses_demsars_q_alpha(k, q):
    n = 14
    # the table prints 3 decimals: 1e-3 absolute on q
    assert critical_difference(k, n) / math.sqrt(k * (k + 1) / (6 * n)) == pytest.approx(
        q, abs=1e-3
    )


def test_critical_difference_demsar_example_and_bad_alpha():
    assert critical_difference(4, 14) == pytest.approx(1.25, abs=0.005)  # Demšar, Section 3.2.2
    assert critical_difference(4, 14, alpha=0.10) < critical_difference(4, 14)
    with pytest.raises(DPRegError, match="alpha must be in"):
        critical_difference(4, 14, alpha=1.5)


def test_nemenyi_cliques_are_maximal_groups_closer_than_cd():
    ranks = [1.0, 1.5, 2.4, 3.0, 4.5]
    # cd 1.5: 1.0..2.4 (3.0 - 1.0 = 2.0 >= 1.5), 1.5..3.0 (diff 1.5: not < cd -> 1.5..2.4
    # is inside the first), 2.4..3.0, 3.0..4.5 is exactly cd: not a group
    assert nemenyi_cliques(ranks, 1.5) == [(0, 2), (2, 3)]
    assert nemenyi_cliques(ranks, 10.0) == [(0, 4)]
    assert nemenyi_cliques(ranks, 0.1) == []
    # every pair inside a clique differs by less than cd; every pair not sharing one by more
    cd = 1.2
    cliques = nemenyi_cliques(ranks, cd)
    for i, j in itertools.combinations(range(len(ranks)), 2):
        together = any(a <= i and j <= b for a, b in cliques)
        assert together == (ranks[j] - ranks[i] < cd)


def test_wins_ties_losses_use_a_symmetric_ratio_margin():
    ref = np.ones(6)
    errors = np.array([0.5, 0.995, 1.0, 1.0099, 1.02, 2.0])
    assert wins_ties_losses(errors, ref, 0.01) == (1, 3, 2)
    assert wins_ties_losses(errors, ref, 0.0) == (2, 1, 3)
    with pytest.raises(DPRegError, match="margin must be >= 0"):
        wins_ties_losses(errors, ref, -0.1)


def test_sign_test_splits_or_drops_ties_as_binomtest():
    # Demšar (2006), Section 3.1.3: ties split evenly, one of an odd number dropped
    assert sign_test(10, 3, 2) == pytest.approx(stats.binomtest(11, 14, 0.5).pvalue)
    assert sign_test(10, 3, 2, "drop") == pytest.approx(stats.binomtest(10, 12, 0.5).pvalue)
    assert sign_test(0, 0, 0) == 1.0
    with pytest.raises(DPRegError, match="ties must be one of split, drop"):
        sign_test(1, 1, 1, "half")


# --------------------------------------------------------------------------
# the table
# --------------------------------------------------------------------------
def suite_table(ratios: dict[str, list[float]], eps=(0.1, 1.0)) -> pd.DataFrame:
    """A suite-like table: per dataset i, method m has error ratio[m][i] (x epsilon)."""
    rows = []
    for e in eps:
        for alg, values in ratios.items():
            for i, v in enumerate(values):
                rows.append(
                    {
                        "experiment": "wang-suite",
                        "dataset": f"d{i}",
                        "variant": "wang",
                        "algorithm": alg,
                        "epsilon": e,
                        "mse_median": v / e,
                        "mse_mean": 2 * v / e,
                    }
                )
    return pd.DataFrame(rows)


KNOWN = {
    "adassp": [1.0, 1.0, 1.0, 1.0, 1.0, 1.0],
    "ssp": [2.0, 3.0, 2.5, 1.005, 4.0, 3.0],  # loses on 5, ties (within 1%) on one
    "adassp-wang": [0.5, 0.6, 0.7, 0.8, 0.9, 0.95],  # best everywhere
    "ridge": [0.1] * 6,  # non-private: not ranked by default
}


def test_leaderboard_known_ranking_and_counts():
    board = leaderboard(suite_table(KNOWN))
    assert list(board.columns) == LEADERBOARD_COLUMNS
    cell = board[board["epsilon"] == 0.1].set_index("algorithm")
    assert list(cell.sort_values("position").index) == ["adassp-wang", "adassp", "ssp"]
    assert cell["avg_rank"].to_dict() == {"adassp-wang": 1.0, "adassp": 2.0, "ssp": 3.0}
    assert set(board["reference"]) == {"adassp"}
    assert (cell.loc["ssp", "wins"], cell.loc["ssp", "ties"], cell.loc["ssp", "losses"]) == (
        0,
        1,
        5,
    )
    assert (cell.loc["adassp-wang", ["wins", "ties", "losses"]] == [6, 0, 0]).all()
    assert pd.isna(cell.loc["adassp", "wins"]) and pd.isna(cell.loc["adassp", "sign_p"])
    assert cell.loc["ssp", "sign_p"] == pytest.approx(stats.binomtest(0, 5, 0.5).pvalue)
    assert (cell["datasets"] == 6).all() and (cell["methods"] == 3).all()
    assert cell.loc["ssp", "cd"] == pytest.approx(critical_difference(3, 6))
    # perfectly consistent ranks: chi2 = N (k - 1) (Friedman's maximum)
    assert cell.loc["ssp", "friedman_chi2"] == pytest.approx(6 * 2)
    assert "ridge" not in cell.index


def test_leaderboard_options_reference_margin_nonprivate_exclusions():
    table = suite_table({**KNOWN, "adassp-tight": [1.2] * 6})
    assert default_reference(list(table["algorithm"].unique())) == "adassp-tight"
    board = leaderboard(table, include_nonprivate=True, margin=0.0, exclude_datasets=["d0"])
    cell = board[board["epsilon"] == 1.0].set_index("algorithm")
    assert cell.loc["ridge", "position"] == 1 and (cell["datasets"] == 5).all()
    # ssp on d1..d5 against adassp-tight's 1.2: 1.005 wins, the other four lose
    assert tuple(cell.loc["ssp", ["wins", "ties", "losses"]]) == (1, 0, 4)
    ranked = leaderboard(table, reference="ssp")
    assert set(ranked["reference"]) == {"ssp"}


def test_leaderboard_drops_incomplete_datasets_per_epsilon():
    table = suite_table(KNOWN)
    table.loc[(table["dataset"] == "d1") & (table["algorithm"] == "ssp"), "mse_median"] = np.nan
    board = leaderboard(table)
    assert (board["datasets"] == 5).all()


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"statistic": "mse_q25"}, "statistic must be one of mse_median, mse_mean"),
        ({"reference": "nope"}, "reference method 'nope' is not in the table"),
        ({"ties": "half"}, "ties must be one of split, drop"),
        ({"margin": -1}, "margin must be >= 0"),
    ],
)
def test_leaderboard_bad_options_name_the_value(kwargs, message):
    with pytest.raises(DPRegError, match=message):
        leaderboard(suite_table(KNOWN), **kwargs)


def test_leaderboard_without_adassp_names_the_missing_reference():
    with pytest.raises(DPRegError, match="neither 'adassp-tight' nor 'adassp'"):
        leaderboard(suite_table({"ssp": [1, 2], "adassp-wang": [2, 1]}))


def test_labels_come_from_the_registry():
    for name, alg in ALGORITHMS.items():
        lab = labels(name)
        assert lab["label"] == alg.label
        expected = (
            "non-private" if not alg.private else "reproduction" if alg.reproduction else "private"
        )
        assert lab["kind"] == expected
        assert lab["bounds"] == ("bound-free" if alg.bound_free else "bounds given")
        tuned = bool(alg.tuned_nonprivately or alg.tuned_privately)
        assert (lab["tuning"] != "not tuned on data") == tuned
        assert lab["tuning"].startswith("tuned privately") == bool(alg.tuned_privately)
    assert labels("my-plugin")["kind"] == "unregistered"


def test_main_writes_csv_markdown_and_a_cd_figure(tmp_path):
    src = tmp_path / "suite.csv"
    suite_table(KNOWN).to_csv(src, index=False)
    out_csv, out_md, fig = tmp_path / "lb.csv", tmp_path / "lb.md", tmp_path / "fig" / "cd.png"
    argv = [str(src), "--out-csv", str(out_csv), "--out-md", str(out_md), "--figure", str(fig)]
    assert leaderboard_main([*argv, "--figure-epsilons"]) == 0  # every epsilon: 2 panels
    board = pd.read_csv(out_csv)
    assert len(board) == 2 * 3
    md = out_md.read_text(encoding="utf-8")
    assert "## wang, epsilon = 0.1" in md and "(`adassp-wang`) | 1.00 | 6/0/0 |" in md
    assert "[fig/cd.png](fig/cd.png)" in md
    image = imread(fig)
    # two panels of a 9-inch-wide figure at 150 dpi, and not blank
    assert image.shape[1] == 1350 and image.shape[0] > 300
    assert image[..., :3].std() > 0.05
    assert (tmp_path / "fig" / "cd.pdf").stat().st_size > 1000


def test_cd_figure_files_are_byte_identical_across_runs(tmp_path):
    """No creation date or producer in the files: the same board gives the same bytes."""
    src = tmp_path / "suite.csv"
    suite_table(KNOWN).to_csv(src, index=False)
    sums = []
    for run in ("a", "b"):
        fig = tmp_path / run / "cd.png"
        argv = [str(src), "--out-csv", str(tmp_path / f"{run}.csv"), "--figure", str(fig)]
        assert leaderboard_main([*argv, "--out-md", str(tmp_path / f"{run}.md")]) == 0
        sums.append((fig.read_bytes(), fig.with_suffix(".pdf").read_bytes()))
    assert b"CreationDate" not in sums[0][1]
    assert sums[0] == sums[1]


def test_main_reports_a_bad_reference_in_one_line(tmp_path, capsys):
    src = tmp_path / "suite.csv"
    suite_table(KNOWN).to_csv(src, index=False)
    argv = [str(src), "--reference", "zzz", "--out-csv", str(tmp_path / "a.csv")]
    assert leaderboard_main(argv) == 2
    assert not (tmp_path / "a.csv").exists()
    assert "dpreg leaderboard: error: reference method 'zzz'" in capsys.readouterr().err


def test_main_defaults_leave_out_the_corrected_copies(tmp_path):
    table = suite_table(KNOWN)
    copy = table[table["dataset"] == "d0"].assign(dataset="machine-fixed")
    src = tmp_path / "suite.csv"
    pd.concat([table, copy]).to_csv(src, index=False)
    out = tmp_path / "lb.csv"
    assert (
        leaderboard_main([str(src), "--out-csv", str(out), "--out-md", str(tmp_path / "a.md")]) == 0
    )
    assert set(pd.read_csv(out)["datasets"]) == {6}
    argv = [str(src), "--out-csv", str(out), "--out-md", str(tmp_path / "a.md"), "--exclude"]
    assert leaderboard_main(argv) == 0
    assert set(pd.read_csv(out)["datasets"]) == {7}


def test_cd_figure_panels_follow_the_epsilons():
    board = leaderboard(suite_table(KNOWN, eps=(0.1, 1.0, 10.0)))
    assert len(plot_cd(board).axes) == 3
    assert len(plot_cd(board, [1.0]).axes) == 1
    with pytest.raises(DPRegError, match=r"figure epsilons \[0.5\] are not in the leaderboard"):
        plot_cd(board, [0.5])


# --------------------------------------------------------------------------
# the whole suite: privacy flags, failed trials, several tables (issue 23)
# --------------------------------------------------------------------------
def test_leaderboard_flags_methods_not_private_as_claimed_per_epsilon():
    """adassp-wang's classical Gaussian is valid below epsilon = 1 only; ssp-wang is never
    (its noise is not calibrated); TukeyEM's depth step is charged over its share and its
    guarantee is replace-one; the tight AdaSSP spends exactly what it claims."""
    table = suite_table(
        {
            "adassp-tight": [1.0] * 4,
            "adassp-wang": [0.5, 0.6, 0.7, 0.8],
            "ssp-wang": [2.0, 2.0, 2.0, 2.0],
            "tukey-em": [3.0, 0.9, 3.0, 3.0],
        }
    ).assign(delta=1e-6)
    board = leaderboard(table).set_index(["epsilon", "algorithm"])
    flag = board["privacy"]
    assert flag[(0.1, "adassp-tight")] == flag[(1.0, "adassp-tight")] == "as claimed"
    assert flag[(0.1, "adassp-wang")] == "as claimed"
    assert flag[(1.0, "adassp-wang")] == "not as claimed"
    assert flag[(0.1, "ssp-wang")] == flag[(1.0, "ssp-wang")] == "not as claimed"
    assert flag[(0.1, "tukey-em")] == "not as claimed"
    assert board.loc[(0.1, "tukey-em"), "neighbouring"] == "replace-one"
    assert board.loc[(0.1, "adassp-tight"), "neighbouring"] == "add/remove"
    md = to_markdown(leaderboard(table))
    assert "| not as claimed |" in md and "replace-one" in md


def test_leaderboard_ranks_a_method_whose_trials_all_failed_last_and_keeps_the_dataset():
    """TukeyEM failing every trial on d0 (NaN statistic, failed = trials) ranks last
    there; the dataset stays (4 datasets, not 3); a missing row still drops its dataset."""
    table = suite_table(
        {"adassp-tight": [1.0] * 4, "ssp": [2.0] * 4, "tukey-em": [0.5] * 4}
    ).assign(trials=10, failed=0, delta=1e-6)
    sel = (table["dataset"] == "d0") & (table["algorithm"] == "tukey-em")
    table.loc[sel, ["mse_median", "mse_mean"]] = np.nan
    table.loc[sel, "failed"] = 10
    board = leaderboard(table)
    assert (board["datasets"] == 4).all()
    tk = board[board["algorithm"] == "tukey-em"].iloc[0]
    # ranks 1 on d1..d3 and 3 on d0
    assert tk["avg_rank"] == pytest.approx((1 + 1 + 1 + 3) / 4)
    assert tk["failed"] == pytest.approx(10 / 40)
    assert (tk["wins"], tk["losses"]) == (3, 1)
    dropped = leaderboard(table[~((table["dataset"] == "d1") & (table["algorithm"] == "ssp"))])
    assert (dropped["datasets"] == 3).all()


def test_leaderboard_combines_tables_taking_a_shared_row_from_the_first(tmp_path):
    suite = suite_table({"adassp-tight": [1.0] * 4, "ssp": [2.0, 2.0, 0.5, 2.0]})
    frontier = suite_table({"adassp-tight": [9.0] * 4, "gaussmix": [0.9, 0.9, 0.9, 3.0]})
    both = combine_tables([suite, frontier])
    assert len(both) == len(suite) + len(frontier) - 8  # adassp-tight's 4 x 2 rows once
    assert set(both[both["algorithm"] == "adassp-tight"]["mse_median"] * 0.1) <= {0.1, 1.0}
    paths = []
    for name, t in (("a", suite), ("b", frontier)):
        paths.append(tmp_path / f"{name}.csv")
        t.to_csv(paths[-1], index=False)
    out = tmp_path / "board.csv"
    assert (
        leaderboard_main(
            [*map(str, paths), "--out-csv", str(out), "--out-md", str(tmp_path / "b.md")]
        )
        == 0
    )
    board = pd.read_csv(out)
    assert set(board["algorithm"]) == {"adassp-tight", "ssp", "gaussmix"}
    gm = board[(board["algorithm"] == "gaussmix") & (board["epsilon"] == 0.1)].iloc[0]
    assert (gm["wins"], gm["losses"]) == (3, 1)  # against the first table's adassp-tight


def test_cd_figure_marks_methods_not_private_as_claimed():
    table = suite_table(
        {"adassp-tight": [1.0] * 4, "ssp-wang": [2.0] * 4, "ssp": [3.0, 3, 3, 0.5]}
    ).assign(delta=1e-6)
    fig = plot_cd(leaderboard(table), epsilons=[0.1])
    texts = [t.get_text() for ax in fig.axes for t in ax.texts]
    assert any(t.startswith("SSP (Wang's code) †") for t in texts)
    assert not any("†" in t for t in texts if t.startswith(("SSP (fixed)", "AdaSSP (tight)")))
    assert "not private as claimed" in fig.axes[0].get_title()
