"""Plug-ins (dpreg.algorithms.plugins): loading, the contract, styles and fingerprints.

Every test registers its plug-ins into the live registry and the ``restore``
fixture puts the registry back afterwards, so no test sees another's.
"""

from __future__ import annotations

import logging
import os
import re
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from dpreg._validation import DPRegError
from dpreg.algorithms import ALGORITHMS, get_algorithm, load_plugins, plugins
from dpreg.algorithms.fingerprint import code_fingerprint, code_record, source_files
from dpreg.algorithms.registry import BUILT_IN, ORIGINS
from dpreg.engine.plan import Plan
from dpreg.engine.sweep import sweep_arrays
from dpreg.report.provenance import provenance

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "plugin" / "my_method.py"


@pytest.fixture(autouse=True)
def restore(monkeypatch):
    """The registry, its origins, the loaded plug-ins and sys.modules as they were."""
    algs, origins, loaded = dict(ALGORITHMS), dict(ORIGINS), dict(plugins._LOADED)
    modules = set(sys.modules)
    monkeypatch.delenv(plugins.ENV_VAR, raising=False)
    yield
    for store, saved in ((ALGORITHMS, algs), (ORIGINS, origins), (plugins._LOADED, loaded)):
        store.clear()
        store.update(saved)
    for name in set(sys.modules) - modules:
        if name.startswith("dpreg_plugin_") or name.startswith("plug_"):
            del sys.modules[name]


#: a valid plug-in: a private Gaussian-on-X^T y method and a non-private one
GOOD = """
import numpy as np
from dpreg.algorithms.base import Algorithm, Style
from dpreg.algorithms.fits import FitResult, add_to_diagonal, draw_noise, finish
from dpreg.privacy import mechanisms as mech


def releases(ctx):
    s = mech.analytic_sigma(epsilon=ctx.epsilon, delta=ctx.delta, sensitivity=ctx.bound_x)
    return [mech.gaussian_release("Xty", sensitivity=ctx.bound_x, sigma=s,
            epsilon=ctx.epsilon, delta=ctx.delta, calibration="analytic", valid=True)]


def fit(stats, rel, opts):
    (e,) = draw_noise(opts.noise_kinds, rel, stats.d, rng=opts.rng, size=opts.size)
    A = add_to_diagonal(np.repeat(stats.xtx[None], opts.size, 0), opts.xtx_offset + 1.0)
    return finish(A, stats.xty + e, np.full(opts.size, np.nan), opts, {"Xty": stats.xty + e})


def fit_public(stats, rel, opts):
    return FitResult(np.zeros((opts.size, stats.d)), np.full(opts.size, np.nan),
                     np.zeros(opts.size, bool))


ENTRIES = [
    Algorithm("{name}", "noisy Xty", private=True, calibration="analytic",
              release_fn=releases, fit_fn=fit, noise_kinds=("vector",),
              reference="a test plug-in"{style}),
    Algorithm("{name}-zero", "zero", private=False, calibration="none",
              release_fn=lambda ctx: [], fit_fn=fit_public, reference="a test plug-in"),
]
"""


def write(tmp_path: Path, text: str, name: str = "plug_good.py") -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


def good(tmp_path: Path, name: str = "my-plug", style: str = "", file: str = "plug_good.py"):
    return write(tmp_path, GOOD.replace("{name}", name).replace("{style}", style), file)


# --------------------------------------------------------------------------
# loading
# --------------------------------------------------------------------------
def test_file_plugin_is_registered_after_the_builtins(tmp_path):
    path = good(tmp_path)
    names = load_plugins([str(path)])
    assert names == ["my-plug", "my-plug-zero"]
    assert list(ALGORITHMS)[-2:] == names  # built-ins first, then plug-ins
    assert get_algorithm("my-plug").private and not get_algorithm("my-plug-zero").private
    # loading the same file again registers nothing new (every job of a run loads it)
    assert load_plugins([str(path)]) == names
    assert list(ALGORITHMS).count("my-plug") == 1
    assert plugins.loaded_plugins() == {str(path.resolve()): names}


def test_relative_paths_are_read_from_the_working_directory(tmp_path, monkeypatch):
    good(tmp_path)
    monkeypatch.chdir(tmp_path)
    assert load_plugins(["plug_good.py"]) == ["my-plug", "my-plug-zero"]


def test_module_plugin(tmp_path, monkeypatch):
    good(tmp_path, name="mod-plug", file="plug_module.py")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert load_plugins(["plug_module"]) == ["mod-plug", "mod-plug-zero"]
    assert ORIGINS["mod-plug"] == "plug_module"


def test_entry_point_plugin(tmp_path, monkeypatch):
    """An installed distribution naming a module under the group dpreg.algorithms."""
    good(tmp_path, name="ep-plug", file="plug_ep.py")
    info = tmp_path / "plug_ep-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: plug-ep\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text("[dpreg.algorithms]\nep = plug_ep\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert "ep-plug" in plugins.load_installed()
    assert get_algorithm("ep-plug").label == "noisy Xty"


def test_environment_variable_plugin(tmp_path, monkeypatch):
    path = good(tmp_path, name="env-plug")
    monkeypatch.setenv(plugins.ENV_VAR, str(path))
    assert plugins.load_installed() == ["env-plug", "env-plug-zero"]


def test_the_example_plugin_runs_in_a_sweep():
    load_plugins([str(EXAMPLE)])
    rng = np.random.default_rng(0)
    X = rng.normal(size=(400, 3))
    y = X @ np.array([0.5, -0.3, 0.2]) + 0.1 * rng.normal(size=400)
    frame = sweep_arrays(
        X,
        y,
        seed=1,
        folds=2,
        variants={"m": {"scale": "maxnorm"}},
        epsilons=[1.0],
        delta=1e-6,
        algorithms=["adassp-skew"],
        repeats=2,
    )
    assert len(frame) == 4 and not frame["failed"].any()
    # the ledger column lists its three releases, composing to (1, 1e-6) by basic composition
    releases = frame["releases"].iloc[0]
    assert re.fullmatch(r"lambda_min:sigma=.+;XtX:sigma=.+;Xty:sigma=.+", releases)
    assert frame["eps_basic"].iloc[0] == pytest.approx(1.0)
    assert frame["delta_basic"].iloc[0] == pytest.approx(1e-6)


# --------------------------------------------------------------------------
# a plug-in that breaks the contract stops with one message naming it
# --------------------------------------------------------------------------
BROKEN = {
    "import": ("import no_such_module_anywhere\n", "importing it failed: ModuleNotFoundError"),
    "no-entries": ("X = 1\n", "defines no ENTRIES"),
    "not-an-algorithm": ("ENTRIES = ['adassp']\n", "ENTRIES[0] is str 'adassp', not a"),
    "clash": (
        GOOD.replace('"{name}"', '"adassp"').replace("{name}", "x").replace("{style}", ""),
        "entry 'adassp' clashes with the built-in algorithm of that name",
    ),
    "no-releases": (
        GOOD.replace("{name}", "p")
        .replace("{style}", "")
        .replace("    return [mech", "    return []\n    [mech"),
        "entry 'p': a private entry must declare its releases",
    ),
    "shape": (
        GOOD.replace("{name}", "p")
        .replace("{style}", "")
        .replace("np.zeros((opts.size, stats.d))", "np.zeros(stats.d)"),
        "entry 'p-zero': a fit of 2 repeats on a tiny dataset (n=400, d=3) returned theta of "
        "shape (1, 3), expected (2, 3)",  # one row (the fit's d values), not one per repeat
    ),
    "bad-name": (
        GOOD.replace("{name}", "My_Plug").replace("{style}", ""),
        "entry 'My_Plug': the name must be lower-case letters",
    ),
    "no-reference": (
        GOOD.replace("{name}", "p")
        .replace("{style}", "")
        .replace('"a test plug-in"),\n    Algorithm', '""),\n    Algorithm'),
        "entry 'p': reference is empty",
    ),
}


@pytest.mark.parametrize("case", sorted(BROKEN))
def test_a_broken_plugin_stops_with_one_message(tmp_path, case):
    text, expected = BROKEN[case]
    path = write(tmp_path, text, f"plug_{case.replace('-', '_')}.py")
    before = dict(ALGORITHMS)
    with pytest.raises(plugins.PluginError) as info:
        load_plugins([str(path)])
    message = str(info.value)
    assert message.startswith(f"plugin {path}: "), message
    assert expected in message, message
    assert "\n" not in message  # one line
    assert ALGORITHMS == before  # nothing of a broken plug-in is registered


def test_missing_file_and_unimportable_module_are_named():
    with pytest.raises(plugins.PluginError, match=r"^plugin nowhere/x\.py: no such file"):
        load_plugins(["nowhere/x.py"])
    with pytest.raises(plugins.PluginError, match=r"^plugin no_such_plugin_module: importing"):
        load_plugins(["no_such_plugin_module"])
    with pytest.raises(plugins.PluginError, match="must be a list"):
        load_plugins("my_method.py")  # type: ignore[arg-type]


def test_two_plugins_with_one_name_clash(tmp_path):
    first = good(tmp_path, name="twin", file="plug_a.py")
    second = good(tmp_path, name="twin", file="plug_b.py")
    load_plugins([str(first)])
    with pytest.raises(plugins.PluginError) as info:
        load_plugins([str(second)])
    assert str(info.value) == (
        f"plugin {second}: entry 'twin' clashes with the entry of that name from {first.resolve()}"
    )


# --------------------------------------------------------------------------
# styles
# --------------------------------------------------------------------------
def private_colours() -> list[str]:
    return [a.style.color for a in ALGORITHMS.values() if a.private]


def test_unset_style_gets_a_colour_no_private_algorithm_has(tmp_path):
    load_plugins([str(good(tmp_path, name="a-plug", file="plug_a.py"))])
    load_plugins([str(good(tmp_path, name="b-plug", file="plug_b.py"))])
    colours = private_colours()
    assert len(set(colours)) == len(colours)
    assert ALGORITHMS["a-plug"].style in plugins.PALETTE
    assert ALGORITHMS["a-plug"].style.color not in {ALGORITHMS[n].style.color for n in BUILT_IN}


def test_a_taken_colour_is_replaced_and_a_free_one_kept(tmp_path, caplog):
    taken = good(tmp_path, name="c-plug", style=', style=Style("tab:blue")', file="plug_c.py")
    free = good(
        tmp_path, name="d-plug", style=', style=Style("#123456", ":", "o")', file="plug_d.py"
    )
    with caplog.at_level(logging.WARNING, logger="dpreg.algorithms.plugins"):
        load_plugins([str(taken), str(free)])
    assert ALGORITHMS["adassp"].style.color == "tab:blue"  # the built-in keeps it
    assert ALGORITHMS["c-plug"].style.color != "tab:blue"
    assert "colour 'tab:blue' is taken" in caplog.text
    assert ALGORITHMS["d-plug"].style.color == "#123456"
    assert ALGORITHMS["d-plug"].style.linestyle == ":"
    colours = private_colours()
    assert len(set(colours)) == len(colours)


# --------------------------------------------------------------------------
# fingerprints and provenance
# --------------------------------------------------------------------------
def test_fingerprint_follows_the_plugin_file_and_only_it(tmp_path):
    path = good(tmp_path, name="fp-plug")
    load_plugins([str(path)])
    before = {n: code_fingerprint(n) for n in ("fp-plug", "fp-plug-zero", "adassp", "ssp")}
    path.write_text(path.read_text() + "\n# an edit\n")
    after = {n: code_fingerprint(n) for n in before}
    assert after["fp-plug"] != before["fp-plug"]
    assert after["fp-plug-zero"] != before["fp-plug-zero"]  # the same file
    assert after["adassp"] == before["adassp"] and after["ssp"] == before["ssp"]
    # the file's content counts, not its path: the defining module is labelled "<plugin>"
    assert list(source_files("fp-plug")) == ["<plugin>"]


def test_fingerprint_covers_the_family_modules_imported():
    files = source_files("adassp")
    assert list(files)[0] == "dpreg.algorithms.adassp"
    assert "dpreg.algorithms.ssp" in files  # AdaSSP's releases come from the SSP family
    assert "dpreg.algorithms.base" not in files and "dpreg.algorithms.fits" not in files
    # entries of one module share its print; a family with fewer modules has another
    assert code_fingerprint("adassp") == code_fingerprint("adassp-wang")
    assert code_fingerprint("adassp") != code_fingerprint("ssp")
    with pytest.raises(DPRegError, match="unknown algorithm"):
        code_fingerprint("adasp")


def test_example_record_names_the_plugin_file(monkeypatch):
    monkeypatch.chdir(EXAMPLE.parent)
    load_plugins(["my_method.py"])
    record = code_record("adassp-skew")
    assert record["plugin_file"] == "my_method.py" and "module" not in record
    assert record["modules"] == ["<plugin>", "dpreg.algorithms.adassp", "dpreg.algorithms.ssp"]


def test_provenance_records_code_git_and_required_packages(tmp_path):
    load_plugins([str(EXAMPLE)])
    config = {"experiments": {"e": {"algorithms": ["adassp-skew", "diffprivlib"]}}}
    record = provenance(config=config, metas={})
    assert set(record["algorithms"]) == {"adassp-skew", "diffprivlib"}
    assert record["algorithms"]["adassp-skew"]["fingerprint"] == code_fingerprint("adassp-skew")
    assert "diffprivlib" in record["packages"]  # from the entry's requires
    git = record["git"]  # the tests run from a checkout
    assert re.fullmatch(r"[0-9a-f]{40}", git["commit"]) and isinstance(git["dirty"], bool)


# --------------------------------------------------------------------------
# downstream: the planner, the sweep's skip of a missing optional package
# --------------------------------------------------------------------------
def plan_config(plugins_list: list[str]) -> dict:
    return {
        "seed": 1,
        "delta": 1e-6,
        "rho": 0.05,
        "xtx_offset": 1.0,
        "epsilons": [1.0],
        "cv": {"folds": 2, "repeats": 2},
        "mirror": "no-mirror",
        "memory_budget_mb": 256,
        "plugins": plugins_list,
        "datasets": {"a": {"path": "a.csv"}},
        "variants": {"v": {"scale": "maxnorm"}},
        "experiments": {
            "e": {
                "algorithms": ["adassp-skew", "adassp", "tukey-em"],
                "variants": ["v"],
                "datasets": "all",
            }
        },
    }


def test_plan_loads_the_config_plugins_and_fingerprints_each_sweep():
    plan = Plan.from_config(plan_config([str(EXAMPLE)]))
    assert plan.algorithms("e") == ["adassp-skew", "adassp", "tukey-em"]
    stats = plan.sweep_code("a", "stats")
    assert sorted(stats) == ["adassp", "adassp-skew"]  # tukey-em runs in the rows shard
    assert stats["adassp-skew"] == code_fingerprint("adassp-skew")
    assert list(plan.sweep_code("a", "rows")) == ["tukey-em"]


def test_plan_names_a_broken_plugin(tmp_path):
    path = write(tmp_path, "X = 1\n", "plug_empty.py")
    with pytest.raises(DPRegError) as info:
        Plan.from_config(plan_config([str(path)]))
    assert str(info.value) == (
        f"plugin {path}: defines no ENTRIES (a list of dpreg.algorithms.base.Algorithm)"
    )


def test_entry_with_a_missing_package_is_skipped_by_the_sweep(monkeypatch, caplog):
    import dataclasses

    entry = dataclasses.replace(
        ALGORITHMS["diffprivlib"], requires=("dpreg_no_such_package",), install_hint="pip it"
    )
    monkeypatch.setitem(ALGORITHMS, "diffprivlib", entry)
    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 2))
    with caplog.at_level(logging.WARNING, logger="dpreg.engine.sweep"):
        frame = sweep_arrays(
            X,
            X[:, 0],
            seed=1,
            folds=2,
            dataset="toy",
            variants={"m": {"scale": "maxnorm"}},
            epsilons=[1.0],
            delta=1e-6,
            algorithms=["diffprivlib", "adassp"],
            repeats=1,
        )
    assert set(frame["algorithm"]) == {"adassp"}
    assert "toy: diffprivlib needs dpreg_no_such_package, which is not installed" in caplog.text
    assert "(pip it to include it)" in caplog.text


def test_no_module_but_the_wrapper_names_diffprivlib():
    src = REPO / "src" / "dpreg"
    naming = sorted(
        str(p.relative_to(src))
        for p in src.rglob("*.py")
        if "diffprivlib" in p.read_text(encoding="utf-8")
    )
    assert naming == [os.path.join("algorithms", "peers.py")]


# --------------------------------------------------------------------------
# diffprivlib as an ordinary entry: the same trials as the former peer path
# --------------------------------------------------------------------------
def test_library_seeds_of_a_fresh_generator_are_its_seed_sequence_words():
    from dpreg.algorithms.peers import library_seeds

    ss = np.random.SeedSequence(12345)
    rng = np.random.default_rng(ss)
    first = library_seeds(rng, 4)
    np.testing.assert_array_equal(first, ss.generate_state(4))
    # the generator moved on: a second call gives other seeds, not the same again
    assert not np.array_equal(library_seeds(rng, 4), first)
    # prefix-stable in the number of repeats
    np.testing.assert_array_equal(
        library_seeds(np.random.default_rng(ss), 2), ss.generate_state(4)[:2]
    )


def test_diffprivlib_trials_equal_the_former_peer_fits():
    """The former sweep fitted diffprivlib with seeds ``seed_sequence(seed, dataset, variant,
    fold, "diffprivlib", eps).generate_state(R)``; the entry reproduces those fits exactly."""
    from dpreg.algorithms.peers import fit_diffprivlib
    from dpreg.preprocess import ArraySource, VariantSpec, fold_rows, fold_statistics
    from dpreg.seeding import seed_sequence

    rng = np.random.default_rng(3)
    X = rng.normal(size=(240, 3))
    y = X @ np.array([0.4, -0.2, 0.1]) + 0.1 * rng.normal(size=240)
    variant = {"stats": "train", "scale": "maxnorm"}
    frame = sweep_arrays(
        X,
        y,
        dataset="toy",
        seed=9,
        folds=2,
        variants={"m": variant},
        epsilons=[1.0],
        delta=1e-6,
        algorithms=["diffprivlib"],
        repeats=3,
    )
    assert set(frame["calibration"]) == {"external"}  # as in provenance's ledger
    from dpreg.engine.sweep import CHUNK_ROWS, assign_folds

    fold = assign_folds(240, 2, seed=9, dataset="toy")
    source = ArraySource(X, y, fold, chunk_rows=CHUNK_ROWS)
    fd = next(iter(fold_statistics(source, VariantSpec.from_dict(variant, "m"), folds=2)))
    Xtr, ytr = fold_rows(source, fd)
    seeds = seed_sequence(9, "toy", "m", fd.fold, "diffprivlib", 1.0).generate_state(3)
    theta = fit_diffprivlib(Xtr, ytr, epsilon=1.0, seeds=seeds)
    mse = fd.test.sse(theta) / fd.test.m
    got = frame[frame["fold"] == fd.fold].sort_values("repeat")["mse"].to_numpy()
    np.testing.assert_allclose(got, mse, rtol=1e-12)
