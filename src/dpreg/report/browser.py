"""The results browser: a static site opened from disk, no server.

:func:`build_browser` writes into one folder

- ``index.html`` -- the page: pick an experiment, dataset(s), variant and
  algorithms (checkboxes); test MSE against epsilon on log-log axes with the
  summary tables' bootstrap intervals as error bars, drawn by plotly.js; the
  hover shows the values, the trial count and the privacy ledger of the
  point (``eps_exact``, ``delta_exact``, the releases); the claims and the
  leaderboard as tables sorted by a click on a header; links to provenance,
  the audit and the results README.  Its own JavaScript and CSS
  (``dpreg/report/assets/``) are inlined;
- ``data.js`` -- the tables, as ``window.DPREG_DATA`` (a script, since a page
  opened from ``file://`` may not fetch JSON);
- ``plotly.min.js`` -- plotly.js, copied once from the ``plotly`` package
  (a dependency of dpreg).

Labels, colours, line styles and markers of the algorithms come from the
registry (:func:`dpreg.report.lines.algorithm_style`), as in every figure.
"""

from __future__ import annotations

import argparse
import json
import math
import shutil
import sys
from collections.abc import Mapping, Sequence
from importlib import resources
from pathlib import Path
from typing import Any

import pandas as pd
from matplotlib.colors import to_hex

from dpreg._validation import DPRegError
from dpreg.io.tables import read_claims, read_table, write_text_atomic
from dpreg.report.lines import algorithm_label, algorithm_style, is_reference

__all__ = ["PLOT_COLUMNS", "browser_data", "browser_main", "build_browser", "plotly_js"]

#: Columns of a summary table the plot reads (a missing ledger column is left empty).
PLOT_COLUMNS = [
    "dataset",
    "variant",
    "algorithm",
    "epsilon",
    "trials",
    "failed",
    "mse_median",
    "mse_median_lo",
    "mse_median_hi",
    "mse_mean",
    "mse_mean_lo",
    "mse_mean_hi",
    "eps_exact",
    "delta_exact",
    "releases",
]
_REQUIRED = ["dataset", "variant", "algorithm", "epsilon", "mse_median", "mse_mean"]

#: matplotlib marker -> plotly symbol (every point gets a marker)
_SYMBOLS = {
    "o": "circle",
    "s": "square",
    "^": "triangle-up",
    "v": "triangle-down",
    "<": "triangle-left",
    ">": "triangle-right",
    "D": "diamond",
    "d": "diamond-tall",
    "x": "x",
    "X": "x",
    "+": "cross",
    "P": "cross",
    "*": "star",
    "p": "pentagon",
    "h": "hexagon",
    "H": "hexagon2",
    "8": "octagon",
}
_DASHES = {"-": "solid", "--": "dash", ":": "dot", "-.": "dashdot", "solid": "solid"}

#: columns of leaderboard.csv shown in the page, in this order
_LEADERBOARD_SHOWN = [
    "variant",
    "epsilon",
    "position",
    "algorithm",
    "label",
    "avg_rank",
    "wins",
    "ties",
    "losses",
    "sign_p",
    "kind",
    "bounds",
    "tuning",
    "neighbouring",
    "datasets",
    "cd",
    "friedman_p",
    "reference",
]


def plotly_js() -> Path:
    """plotly.js as the ``plotly`` package ships it (``plotly.min.js``)."""
    try:
        import plotly
    except ImportError:
        raise DPRegError(
            "the results browser needs plotly.js from the plotly package: "
            "pip install -c requirements/lock.txt plotly"
        ) from None
    path = Path(plotly.__file__).parent / "package_data" / "plotly.min.js"
    if not path.is_file():
        raise DPRegError(f"plotly {plotly.__version__} ships no {path}; reinstall plotly")
    return path


def _plain(value: Any) -> Any:
    """JSON value of a table cell: NaN/NA -> null, numpy scalars -> Python."""
    if value is None or value is pd.NA:
        return None
    if hasattr(value, "item"):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def _algorithm_entry(name: str) -> dict[str, str]:
    colour, linestyle, marker = algorithm_style(name)
    return {
        "label": algorithm_label(name),
        "color": to_hex(colour),
        "dash": _DASHES.get(linestyle, "dash") if isinstance(linestyle, str) else "dash",
        "symbol": _SYMBOLS.get(marker, "circle"),
        "kind": "non-private" if is_reference(name) else "private",
    }


def _experiment(table: pd.DataFrame, name: str) -> dict[str, Any]:
    missing = [c for c in _REQUIRED if c not in table]
    if missing:
        raise DPRegError(f"table of experiment {name!r} lacks columns {missing}")
    cols = {}
    for col in PLOT_COLUMNS:
        values = table[col] if col in table else pd.Series([None] * len(table))
        cols[col] = [_plain(v) for v in values]
    cols["releases"] = [
        r.replace(";", "<br>") if isinstance(r, str) else r for r in cols["releases"]
    ]
    return {"title": name, "columns": cols}


def _table_spec(frame: pd.DataFrame, ident: str, title: str, note: str = "") -> dict[str, Any]:
    return {
        "id": ident,
        "title": title,
        "note": note,
        "columns": [str(c) for c in frame.columns],
        "rows": [[_plain(v) for v in row] for row in frame.itertuples(index=False)],
    }


def browser_data(
    tables: Mapping[str, pd.DataFrame],
    *,
    claims: pd.DataFrame | None = None,
    leaderboard: pd.DataFrame | None = None,
    links: Sequence[tuple[str, str]] = (),
    titles: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """What ``data.js`` holds: experiments (columns of the plot), algorithm styles, tables, links."""
    if not tables:
        raise DPRegError("the results browser needs at least one summary table")
    experiments = {}
    for name, table in tables.items():
        experiments[name] = _experiment(table, name)
        if titles and titles.get(name):
            experiments[name]["title"] = titles[name]
    algorithms = sorted({a for t in tables.values() for a in t["algorithm"].astype(str)})
    specs = []
    if leaderboard is not None:
        shown = [c for c in _LEADERBOARD_SHOWN if c in leaderboard]
        specs.append(
            _table_spec(
                leaderboard[shown],
                "leaderboard",
                "Leaderboard over Wang's suite",
                "Average rank over datasets per epsilon (1 = best), wins/ties/losses against "
                "the reference with a two-sided sign test (leaderboard.md explains the tests).",
            )
        )
    if claims is not None:
        specs.append(
            _table_spec(
                claims,
                "claims",
                "Claims and their verdicts",
                "One row per claim, dataset and epsilon, and an overall row per claim "
                "(type 'overall' in the filter to see only those).",
            )
        )
    return {
        "experiments": experiments,
        "algorithms": {a: _algorithm_entry(a) for a in algorithms},
        "tables": specs,
        "links": [{"text": text, "href": href} for text, href in links],
    }


def _page(data_file: str, title: str, note: str) -> str:
    assets = resources.files("dpreg.report") / "assets"
    html = (assets / "browser.html").read_text(encoding="utf-8")
    for key, value in (
        ("__CSS__", (assets / "browser.css").read_text(encoding="utf-8")),
        ("__JS__", (assets / "browser.js").read_text(encoding="utf-8")),
        ("__TITLE__", title),
        ("__NOTE__", note),
        ("__DATA__", data_file),
    ):
        html = html.replace(key, value)
    return html


def build_browser(
    out_dir: str | Path,
    tables: Mapping[str, str | Path],
    *,
    claims: str | Path | None = None,
    leaderboard: str | Path | None = None,
    links: Sequence[tuple[str, str]] = (),
    titles: Mapping[str, str] | None = None,
    title: str = "dpreg results browser",
    require_checksum: bool = True,
) -> Path:
    """Write ``index.html``, ``data.js`` and ``plotly.min.js`` into ``out_dir``; return the page.

    ``tables`` maps an experiment id to its summary table; ``links`` are
    (text, href) pairs, hrefs relative to ``out_dir``.  ``require_checksum=False``
    (the command line, on committed tables that git checks) accepts tables
    without a checksum sidecar; one that has a sidecar must match it.
    """
    frames = {
        name: read_table(path, require_checksum=require_checksum) for name, path in tables.items()
    }
    data = browser_data(
        frames,
        claims=(
            read_claims(claims, require_checksum=require_checksum) if claims is not None else None
        ),
        leaderboard=pd.read_csv(leaderboard) if leaderboard is not None else None,
        links=links,
        titles=titles,
    )
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    js = "window.DPREG_DATA = " + json.dumps(data, allow_nan=False, separators=(",", ":")) + ";\n"
    write_text_atomic(out / "data.js", js)
    shutil.copyfile(plotly_js(), out / "plotly.min.js")
    note = (
        "Error bars: the summary tables' bootstrap intervals. Hover a point for its trial count "
        "and privacy ledger. Experiments: " + ", ".join(frames) + "."
    )
    page = out / "index.html"
    write_text_atomic(page, _page("data.js", title, note))
    return page


def _pairs(values: Sequence[str], flag: str) -> list[tuple[str, str]]:
    out = []
    for item in values:
        key, sep, value = item.partition("=")
        if not sep or not key or not value:
            raise DPRegError(f"{flag} takes NAME=VALUE, got {item!r}")
        out.append((key, value))
    return out


def browser_main(argv: Sequence[str] | None = None) -> int:
    """The ``dpreg browser`` command: summary tables (and claims, leaderboard) -> the site.

    ``argv`` as on the command line (``--help`` lists the options); returns
    the exit code, 0 on success (an error exits with 2 and one message).
    """
    parser = argparse.ArgumentParser(
        prog="dpreg browser",
        description="Write the static results browser (index.html, data.js, plotly.min.js).",
    )
    parser.add_argument(
        "tables", nargs="+", help="summary tables; the experiment id is the file name's stem"
    )
    parser.add_argument("--out", default="results/browser", help="folder to write into")
    parser.add_argument("--claims", help="claims.csv")
    parser.add_argument("--leaderboard", help="leaderboard.csv")
    parser.add_argument(
        "--link", action="append", default=[], help="TEXT=HREF (href relative to --out)"
    )
    args = parser.parse_args(argv)
    try:
        tables = {Path(t).stem: t for t in args.tables}
        links = _pairs(args.link, "--link")
        # committed tables are checked by git: a sidecar is verified when present
        page = build_browser(
            args.out,
            tables,
            claims=args.claims,
            leaderboard=args.leaderboard,
            links=links,
            require_checksum=False,
        )
    except (DPRegError, OSError) as err:
        print(f"dpreg browser: error: {err}", file=sys.stderr)
        return 2
    print(page)
    return 0
