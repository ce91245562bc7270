"""dpreg.report.browser: the data it writes, and the page in a real (headless) chromium.

The tests marked ``browser`` drive Debian's chromium through its chromedriver
with Selenium (``apt-get install chromium chromium-driver``; ``.ci/run``
installs them).  Selenium Manager is never asked to download a browser or a
driver: the Service and the binary are the Debian ones.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pandas as pd
import pytest
from matplotlib.colors import to_hex

from dpreg import DPRegError
from dpreg.report.browser import browser_data, browser_main, build_browser, plotly_js
from dpreg.report.leaderboard import leaderboard
from dpreg.report.lines import algorithm_label, algorithm_style

REPO = Path(__file__).resolve().parents[2]
EXPECTED = REPO / ".test" / "expected"
CHROMIUM = Path("/usr/bin/chromium")
CHROMEDRIVER = Path("/usr/bin/chromedriver")
SHOT = Path("/tmp/browser_shot.png")


def suite_like() -> pd.DataFrame:
    """A tiny suite table (3 datasets, 3 methods, 2 epsilons) for the leaderboard tab."""
    rows = []
    for e in (0.1, 1.0):
        for i, ds in enumerate(["a", "b", "c"]):
            for alg, err in (("adassp", 1.0), ("ssp", 2.0 + i), ("adassp-wang", 0.8)):
                rows.append(
                    {"dataset": ds, "variant": "wang", "algorithm": alg, "epsilon": e}
                    | {"mse_median": err / e, "mse_mean": err / e}
                )
    return pd.DataFrame(rows)


def read_data(out: Path) -> dict:
    text = (out / "data.js").read_text(encoding="utf-8")
    prefix = "window.DPREG_DATA = "
    assert text.startswith(prefix) and text.rstrip().endswith(";")
    return json.loads(text[len(prefix) :].rstrip().rstrip(";"))


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    """The browser over the tiny run's expected tables, claims and a small leaderboard."""
    root = tmp_path_factory.mktemp("site")
    board = root / "leaderboard.csv"
    leaderboard(suite_like()).to_csv(board, index=False)
    out = root / "browser"
    build_browser(
        out,
        {
            "adassp-noise": EXPECTED / "adassp-noise.csv",
            "clipping": EXPECTED / "clipping.csv",
        },
        claims=EXPECTED / "claims.csv",
        leaderboard=board,
        links=[("provenance", "../provenance.json"), ("audit", "../audit/audit.md")],
        titles={"adassp-noise": "AdaSSP: Wang's code vs the fixed noise levels"},
        require_checksum=False,  # .test/expected/ is committed (checked by git), no sidecars
    )
    return out


# --------------------------------------------------------------------------
# what is written
# --------------------------------------------------------------------------
def test_site_files_plotly_once_and_small_page(site):
    assert sorted(p.name for p in site.iterdir()) == ["data.js", "index.html", "plotly.min.js"]
    assert (site / "plotly.min.js").read_bytes() == plotly_js().read_bytes()
    page = (site / "index.html").read_text(encoding="utf-8")
    # plotly.js is referenced once, not inlined (it is ~4.8 MB)
    assert page.count('src="plotly.min.js"') == 1 and page.count('src="data.js"') == 1
    assert len(page.encode()) < 50_000


def test_data_holds_the_table_values_styles_and_ledger(site):
    data = read_data(site)
    table = pd.read_csv(EXPECTED / "adassp-noise.csv")
    cols = data["experiments"]["adassp-noise"]["columns"]
    assert cols["mse_median"] == pytest.approx(table["mse_median"].tolist())
    assert cols["trials"] == table["trials"].tolist()
    # the ledger; non-private rows have none (NaN in the table, null in the page)
    assert cols["eps_exact"] == [
        None if pd.isna(v) else pytest.approx(v) for v in table["eps_exact"]
    ]
    assert None in cols["eps_exact"] and cols["eps_exact"][0] is not None
    first = table["releases"].iloc[0]
    assert cols["releases"][0] == first.replace(";", "<br>")
    assert data["experiments"]["adassp-noise"]["title"].startswith("AdaSSP: Wang's code")
    for name, entry in data["algorithms"].items():
        colour, _, _ = algorithm_style(name)
        assert entry["color"] == to_hex(colour) and entry["label"] == algorithm_label(name)
    assert [t["id"] for t in data["tables"]] == ["leaderboard", "claims"]
    claims = pd.read_csv(EXPECTED / "claims.csv")
    assert len(data["tables"][1]["rows"]) == len(claims)
    assert data["links"][0] == {"text": "provenance", "href": "../provenance.json"}


def test_missing_values_become_null():
    table = pd.DataFrame(
        {
            "dataset": ["a"],
            "variant": ["v"],
            "algorithm": ["adassp"],
            "epsilon": [1.0],
            "mse_median": [float("nan")],
            "mse_mean": [0.5],
        }
    )
    data = browser_data({"x": table})
    cols = data["experiments"]["x"]["columns"]
    assert cols["mse_median"] == [None] and cols["eps_exact"] == [None]
    json.dumps(data, allow_nan=False)  # strict JSON: no NaN token


def test_bad_inputs_name_what_is_wrong(tmp_path, capsys):
    with pytest.raises(DPRegError, match="lacks columns \\['mse_median', 'mse_mean'\\]"):
        browser_data(
            {"x": pd.DataFrame({"dataset": [], "variant": [], "algorithm": [], "epsilon": []})}
        )
    with pytest.raises(DPRegError, match="at least one summary table"):
        browser_data({})
    argv = [str(EXPECTED / "clipping.csv"), "--out", str(tmp_path), "--link", "nohref"]
    assert browser_main(argv) == 2
    assert "--link takes NAME=VALUE, got 'nohref'" in capsys.readouterr().err


def test_main_names_experiments_after_the_files(tmp_path):
    assert browser_main([str(EXPECTED / "clipping.csv"), "--out", str(tmp_path / "b")]) == 0
    assert list(read_data(tmp_path / "b")["experiments"]) == ["clipping"]


# --------------------------------------------------------------------------
# the page in a real browser
# --------------------------------------------------------------------------
@pytest.fixture(scope="module")
def driver():
    missing = [str(p) for p in (CHROMIUM, CHROMEDRIVER) if not p.exists()]
    if missing:
        pytest.fail(
            f"the browser test needs Debian's chromium and its driver ({', '.join(missing)} "
            "missing): apt-get install -y chromium chromium-driver (as .ci/run does)"
        )
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for flag in (
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--window-size=1400,1000",
    ):
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    drv = webdriver.Chrome(service=Service(str(CHROMEDRIVER)), options=options)
    yield drv
    drv.quit()


def plotted(drv) -> list[dict]:
    return drv.execute_script(
        "const p = document.getElementById('plot');"
        "return (p.data || []).map(t => ({algorithm: t.meta.algorithm, dataset: t.meta.dataset,"
        " n: t.x.length, custom: t.customdata[0]}));"
    )


@pytest.mark.browser
def test_page_in_chromium(site, driver, tmp_path):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    driver.get((site / "index.html").as_uri())
    WebDriverWait(driver, 20).until(lambda d: len(plotted(d)) > 0)
    errors = [e for e in driver.get_log("browser") if e["level"] in ("SEVERE", "WARNING")]
    assert errors == [], errors

    # adassp-noise on its first dataset (airfoil): one series per algorithm of the table
    table = pd.read_csv(EXPECTED / "adassp-noise.csv")
    series = plotted(driver)
    assert sorted(s["algorithm"] for s in series) == sorted(table["algorithm"].unique())
    assert {s["dataset"] for s in series} == {"airfoil"}
    assert all(s["n"] == table["epsilon"].nunique() for s in series)
    # the hover data of a point: interval, trials, ledger and releases of that row
    first = table[(table["dataset"] == "airfoil") & (table["algorithm"] == series[0]["algorithm"])]
    row = first.sort_values("epsilon").iloc[0]
    lo, hi, trials, failed, eps_exact = series[0]["custom"][:5]
    assert (float(lo), float(hi)) == pytest.approx((row["mse_median_lo"], row["mse_median_hi"]))
    assert int(trials) == row["trials"] and int(failed) == row["failed"]
    assert float(eps_exact) == pytest.approx(row["eps_exact"])

    # switching one algorithm off removes its series, and only its
    driver.find_element(By.ID, "algorithm-adassp").click()
    WebDriverWait(driver, 10).until(lambda d: "adassp" not in {s["algorithm"] for s in plotted(d)})
    assert len(plotted(driver)) == len(series) - 1
    # a second dataset doubles the series
    driver.find_element(By.ID, "dataset-concrete").click()
    WebDriverWait(driver, 10).until(lambda d: len(plotted(d)) == 2 * (len(series) - 1))

    # sortable tables: a click on a header sorts by that column, a second reverses
    header = driver.find_element(
        By.XPATH, "//table[@id='table-leaderboard']//th[text()='avg_rank']"
    )
    col = [th.text for th in driver.find_elements(By.CSS_SELECTOR, "#table-leaderboard th")].index(
        "avg_rank"
    )

    def column() -> list[float]:
        cells = driver.find_elements(By.CSS_SELECTOR, f"#table-leaderboard td:nth-child({col + 1})")
        return [float(c.text) for c in cells]

    header.click()
    assert column() == sorted(column()) and len(column()) == 2 * 3
    header.click()
    assert column() == sorted(column(), reverse=True)
    claims_rows = driver.find_elements(By.CSS_SELECTOR, "#table-claims tbody tr")
    assert len(claims_rows) == len(pd.read_csv(EXPECTED / "claims.csv"))

    links = {
        a.text: a.get_attribute("href") for a in driver.find_elements(By.CSS_SELECTOR, "#links a")
    }
    assert links["provenance"].endswith("/provenance.json") and links["audit"].endswith(
        "/audit/audit.md"
    )

    errors = [e for e in driver.get_log("browser") if e["level"] in ("SEVERE", "WARNING")]
    assert errors == [], errors
    driver.execute_script("window.scrollTo(0, 0)")
    shot = tmp_path / "browser.png"
    assert driver.save_screenshot(str(shot))
    assert shot.stat().st_size > 20_000  # a rendered page, not a blank one
    shutil.copyfile(shot, SHOT)  # for a person to look at
