"""Registry styles, ratio figures and the experiments' figure option."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from dpreg import DPRegError
from dpreg.algorithms import ALGORITHMS
from dpreg.algorithms.registry import BUILT_IN
from dpreg.report.figures import plot_experiment
from dpreg.report.ratios import check_figure_option, draw_figure, plot_ratio, ratio_table

ROOT = Path(__file__).resolve().parents[2]
SCHEMA = ROOT / "workflow" / "schemas" / "config.schema.yaml"
INFO = {"d1": (1000, 5), "d2": (2000, 8)}
EPS = (0.1, 1.0, 10.0)


def table(algorithms, variants=("v",), failed=None, seed=0):
    """A summary table with random medians and intervals of +-10%."""
    rng = np.random.default_rng(seed)
    rows = []
    for ds in INFO:
        for v in variants:
            for a in algorithms:
                for eps in EPS:
                    med = float(rng.uniform(0.01, 0.1))
                    fails = (failed or {}).get(a, 0)
                    rows.append(
                        dict(
                            dataset=ds, variant=v, algorithm=a, epsilon=eps, trials=100,
                            failed=fails, outside_validity=False, mse_median=med,
                            mse_mean=med, mse_q25=med * 0.8, mse_q75=med * 1.2,
                            mse_median_lo=med * 0.9, mse_median_hi=med * 1.1,
                            mse_mean_lo=med * 0.9, mse_mean_hi=med * 1.1,
                        )
                    )  # fmt: skip
    return pd.DataFrame(rows)


def draw(tab, tmp_path, fn=plot_ratio, **kw):
    kw.setdefault("experiment", "e")
    kw.setdefault("dataset_info", INFO)
    return fn(tab, out_png=tmp_path / "f.png", out_pdf=tmp_path / "f.pdf", **kw)


def curves(fig):
    """Legend label -> handle of the figure's legend."""
    legend = fig.legends[0]
    return {t.get_text(): h for t, h in zip(legend.get_texts(), legend.legend_handles, strict=True)}


# --------------------------------------------------------------------------
# the registry's styles
# --------------------------------------------------------------------------
def test_registry_styles_are_unique_and_readable_in_greyscale():
    styles = {name: ALGORITHMS[name].style for name in BUILT_IN}
    assert all(s.marker for s in styles.values()), [n for n, s in styles.items() if not s.marker]
    colours = Counter(s.color for s in styles.values())
    assert [c for c, k in colours.items() if k > 1] == []
    # without colour: the (marker, line style) pair alone tells every entry apart
    shapes = Counter((s.marker, s.linestyle) for s in styles.values())
    assert [p for p, k in shapes.items() if k > 1] == []


def test_line_figure_draws_every_algorithm_in_its_registry_style(tmp_path):
    algs = ["adassp-tight", "ihm", "tukey-em", "ridge", "ols", "ridge-cv", "trivial"]
    fig = draw(table(algs), tmp_path, fn=plot_experiment, algorithms=algs)
    handles = curves(fig)
    for name in algs:
        h, style = handles[ALGORITHMS[name].label], ALGORITHMS[name].style
        assert (h.get_color(), h.get_linestyle(), h.get_marker()) == (
            style.color,
            {"-": "-", "--": "--", "-.": "-.", ":": ":"}[style.linestyle],
            style.marker,
        )


def test_no_quartile_band_around_a_mean_and_every_point_has_a_marker(tmp_path):
    algs = ["adassp", "ssp", "ridge"]
    for stat, bands in (("mean", 0), ("median", 2 * len(INFO))):
        fig = draw(table(algs), tmp_path, fn=plot_experiment, algorithms=algs, statistic=stat)
        found = [c for ax in fig.axes for c in ax.collections if "FillBetween" in type(c).__name__]
        assert len(found) == bands
        labels = [t.get_text() for t in fig.legends[0].get_texts()]
        assert ("band: interquartile range" in labels) == (stat == "median")
        drawn = [ln for ax in fig.axes for ln in ax.lines if ln.get_linestyle() != "None"]
        assert drawn and all(ln.get_marker() not in ("", "None", None) for ln in drawn)


# --------------------------------------------------------------------------
# ratio figures
# --------------------------------------------------------------------------
def test_ratio_to_a_reference_algorithm_per_variant(tmp_path):
    algs = ["adassp-tight", "ihm-tight", "tukey-em", "ridge"]
    tab = table(algs, variants=("a", "b"), failed={"tukey-em": 25})
    fig = draw(tab, tmp_path, reference="adassp-tight", algorithms=algs, variants=["a", "b"])
    main = [ax for ax in fig.axes if ax.get_ylabel() != "pass rate (1 − failed/trials)"]
    main = [ax for ax in main if ax.get_yscale() == "log"]
    assert len(main) == 2 * len(INFO)  # one row of panels per variant
    assert [ax.get_title() for ax in main[:2]] == ["d1 (n=1000, d=5) · a", "d2 (n=2000, d=8) · a"]
    ax = main[0]
    ihm = next(ln for ln in ax.lines if ln.get_color() == ALGORITHMS["ihm-tight"].style.color)
    part = tab[(tab["dataset"] == "d1") & (tab["variant"] == "a")].set_index(
        ["algorithm", "epsilon"]
    )
    want = [
        part.loc[("ihm-tight", e), "mse_median"] / part.loc[("adassp-tight", e), "mse_median"]
        for e in EPS
    ]
    np.testing.assert_allclose(ihm.get_ydata(), want, rtol=1e-12)
    assert any(ln.get_ydata()[0] == 1.0 and ln.get_ydata()[-1] == 1.0 for ln in ax.lines)
    # the reference is not a curve of its own; TukeyEM's pass rate is on the second axis
    assert ALGORITHMS["adassp-tight"].label not in curves(fig)
    twins = [a for a in fig.axes if a not in main]
    assert twins
    rate = [ln for ln in twins[0].lines if ln.get_color() == ALGORITHMS["tukey-em"].style.color]
    np.testing.assert_allclose(rate[0].get_ydata(), [0.75] * len(EPS))
    assert any("pass rate of TukeyEM" in t for t in curves(fig))


def test_ratio_to_a_reference_variant(tmp_path):
    tab = table(["adassp", "trivial"], variants=("maxnorm", "clip1", "clip2"))
    fig = draw(tab, tmp_path, reference_variant="maxnorm", variants=["maxnorm", "clip1", "clip2"])
    labels = list(curves(fig))
    lab = ALGORITHMS["adassp"].label
    assert labels[:2] == [f"{lab} · clip1", f"{lab} · clip2"]
    assert not any(ALGORITHMS["trivial"].label in t for t in labels)
    h1, h2 = curves(fig)[f"{lab} · clip1"], curves(fig)[f"{lab} · clip2"]
    assert h1.get_marker() != h2.get_marker() and h1.get_linestyle() != h2.get_linestyle()
    rel = ratio_table(tab, "mse_median", reference_variant="maxnorm")
    one = rel[
        (rel["dataset"] == "d1") & (rel["variant"] == "clip1") & (rel["algorithm"] == "adassp")
    ]
    base = tab[
        (tab["dataset"] == "d1") & (tab["variant"] == "maxnorm") & (tab["algorithm"] == "adassp")
    ]
    np.testing.assert_allclose(
        one["ratio"], one["mse_median"].to_numpy() / base["mse_median"].to_numpy()
    )
    np.testing.assert_allclose(
        one["ratio_hi"], 1.1 * one["mse_median"].to_numpy() / base["mse_median"].to_numpy()
    )


def test_off_scale_ratios_become_edge_triangles(tmp_path):
    tab = table(["adassp-tight", "tukey-em"])
    tab.loc[(tab["algorithm"] == "tukey-em") & (tab["epsilon"] == 10.0), "mse_median"] = 1e6
    fig = draw(tab, tmp_path, reference="adassp-tight")
    ax = fig.axes[0]
    assert ax.get_ylim()[1] <= 30.0 + 1e-9
    assert [ln for ln in ax.lines if ln.get_marker() == "^"]
    assert "1 off scale" in ax.get_title()


@pytest.mark.parametrize(
    ("option", "needle"),
    [
        ({"kind": "bars"}, "figure.kind must be one of lines, ratio, got 'bars'"),
        ({"kind": "ratio"}, "exactly one of figure.reference"),
        ({"kind": "ratio", "reference": "ssp"}, "figure.reference 'ssp' is not one of"),
        ({"kind": "ratio", "reference_variant": "clip9"}, "figure.reference_variant 'clip9'"),
        ({"kind": "lines", "reference": "adassp"}, "figure.kind 'lines' takes no reference"),
    ],
)
def test_bad_figure_option_is_named(option, needle):
    with pytest.raises(DPRegError, match=None) as info:
        check_figure_option(option, variants=["maxnorm"], algorithms=["adassp", "ridge"])
    assert needle in str(info.value)


def test_draw_figure_dispatches_on_the_kind(tmp_path):
    tab = table(["adassp-tight", "adassp"])
    lines = draw(tab, tmp_path, fn=draw_figure, figure=None)
    assert "ε" in lines.axes[0].get_xlabel() and lines.axes[0].get_ylabel().startswith("median")
    ratio = draw(tab, tmp_path, fn=draw_figure, figure={"kind": "ratio", "reference": "adassp"})
    assert "/ AdaSSP" in ratio.axes[0].get_ylabel()


def test_config_figure_options_pass_the_schema_and_the_check():
    from snakemake.exceptions import WorkflowError
    from snakemake.utils import validate

    cfg = yaml.safe_load((ROOT / "config" / "config.yaml").read_text())
    validate(cfg, str(SCHEMA))
    kinds = {}
    for name, exp in cfg["experiments"].items():
        kinds[name] = check_figure_option(
            exp.get("figure"), variants=exp["variants"], algorithms=exp["algorithms"]
        )
    assert kinds["modern"] == {
        "kind": "ratio",
        "reference": "adassp-tight",
        "reference_variant": None,
    }
    assert kinds["clipping"]["reference_variant"] == "maxnorm"
    bad = dict(cfg)
    bad["experiments"] = {**cfg["experiments"]}
    bad["experiments"]["modern"] = {**cfg["experiments"]["modern"], "figure": {"kind": "ratio"}}
    with pytest.raises(WorkflowError):
        validate(bad, str(SCHEMA))
    bad["experiments"]["modern"]["figure"] = {"kind": "ratio", "reference": "x", "refrence": "y"}
    with pytest.raises(WorkflowError) as info:
        validate(bad, str(SCHEMA))
    assert "refrence" in str(info.value.args[1] if len(info.value.args) > 1 else info.value)


def test_non_private_references_in_every_ridge_experiment():
    cfg = yaml.safe_load((ROOT / "config" / "config.yaml").read_text())
    for name, exp in cfg["experiments"].items():
        if "ridge" in exp["algorithms"]:
            assert "ols" in exp["algorithms"], name
            rows_ok = not any("private_stats" in cfg["variants"][v] for v in exp["variants"])
            assert ("ridge-cv" in exp["algorithms"]) == rows_ok, name


def test_ratio_figure_shades_the_simultaneous_band_behind_paired_bars(tmp_path):
    algs = ["adassp-tight", "ihm-tight", "ridge"]
    tab = table(algs)
    rel = ratio_table(tab, "mse_median", reference="adassp-tight")
    bands = rel[rel["algorithm"] == "ihm-tight"][["dataset", "variant", "algorithm", "epsilon"]]
    r = rel.loc[bands.index, "ratio"].to_numpy()
    bands = bands.assign(
        ratio=r, ratio_lo=0.95 * r, ratio_hi=1.05 * r, band_low=0.9 * r, band_high=1.1 * r
    )
    fig = draw(tab, tmp_path, reference="adassp-tight", algorithms=algs, bands=bands)
    ax = fig.axes[0]
    shaded = [c for c in ax.collections if "FillBetween" in type(c).__name__]
    assert len(shaded) == 1  # ihm's band; ridge (non-private) gets none
    path = shaded[0].get_paths()[0].vertices
    part = bands[bands["dataset"] == "d1"]
    assert np.isclose(path[:, 1].max(), part["band_high"].max())
    assert np.isclose(path[:, 1].min(), part["band_low"].min())
    # the bars are the paired intervals given with the band
    bars = [c for c in ax.collections if type(c).__name__ == "LineCollection"]
    tops = np.concatenate([[seg[:, 1].max() for seg in b.get_segments()] for b in bars])
    np.testing.assert_allclose(np.sort(tops), np.sort(part["ratio_hi"]), rtol=1e-12)
    labels = list(curves(fig))
    assert any(t.startswith("shaded: simultaneous band over ε") for t in labels)
    assert any(t.startswith("bars: paired bootstrap CI") for t in labels)
    # a line figure ignores bands
    draw_figure(tab, figure={"kind": "lines"}, experiment="e", dataset_info=INFO,
                out_png=tmp_path / "l.png", out_pdf=tmp_path / "l.pdf", bands=bands)  # fmt: skip
