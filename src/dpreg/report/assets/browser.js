// dpreg results browser: error versus epsilon (Plotly) and sortable tables.
// Reads window.DPREG_DATA (data.js, written by dpreg.report.browser).
(function () {
  "use strict";
  const D = window.DPREG_DATA;
  const byId = (id) => document.getElementById(id);
  const STAT = { mse_median: "median test MSE", mse_mean: "mean test MSE" };

  function el(tag, attrs, text) {
    const node = document.createElement(tag);
    Object.entries(attrs || {}).forEach(([k, v]) => node.setAttribute(k, v));
    if (text !== undefined) node.textContent = text;
    return node;
  }

  function unique(values) {
    return Array.from(new Set(values));
  }

  function checkboxes(fieldset, kind, names, checked, labelOf) {
    fieldset.querySelectorAll("label").forEach((n) => n.remove());
    names.forEach((name) => {
      const label = el("label");
      const box = el("input", { type: "checkbox", id: kind + "-" + name, value: name });
      box.dataset.kind = kind;
      box.checked = checked(name);
      box.addEventListener("change", draw);
      label.appendChild(box);
      if (kind === "algorithm") {
        const sw = el("span", { class: "swatch" });
        sw.style.background = D.algorithms[name].color;
        label.appendChild(sw);
      }
      label.appendChild(document.createTextNode(labelOf(name)));
      fieldset.appendChild(label);
    });
  }

  function selected(kind) {
    return Array.from(document.querySelectorAll('input[data-kind="' + kind + '"]'))
      .filter((b) => b.checked)
      .map((b) => b.value);
  }

  function columns() {
    return D.experiments[byId("experiment").value].columns;
  }

  function setupExperiment() {
    const c = columns();
    const datasets = unique(c.dataset);
    const variants = unique(c.variant);
    const algorithms = unique(c.algorithm);
    checkboxes(byId("datasets"), "dataset", datasets, (n) => n === datasets[0], (n) => n);
    checkboxes(byId("algorithms"), "algorithm", algorithms, () => true, (n) => D.algorithms[n].label);
    const vs = byId("variant");
    vs.innerHTML = "";
    variants.forEach((v) => vs.appendChild(el("option", { value: v }, v)));
    byId("description").textContent = D.experiments[byId("experiment").value].title;
    draw();
  }

  function fmt(v) {
    return v === null || v === undefined ? "n/a" : String(v);
  }

  function traces() {
    const c = columns();
    const stat = byId("statistic").value;
    const variant = byId("variant").value;
    const datasets = selected("dataset");
    const algorithms = selected("algorithm");
    const several = datasets.length > 1;
    const out = [];
    datasets.forEach((ds, di) => {
      algorithms.forEach((alg) => {
        const idx = [];
        for (let i = 0; i < c.epsilon.length; i++) {
          if (c.dataset[i] === ds && c.algorithm[i] === alg && c.variant[i] === variant) idx.push(i);
        }
        if (!idx.length) return;
        idx.sort((a, b) => c.epsilon[a] - c.epsilon[b]);
        const a = D.algorithms[alg];
        const y = idx.map((i) => c[stat][i]);
        const lo = idx.map((i) => c[stat + "_lo"][i]);
        const hi = idx.map((i) => c[stat + "_hi"][i]);
        out.push({
          type: "scatter",
          mode: "lines+markers",
          name: a.label + (several ? " \u00b7 " + ds : ""),
          legendgroup: alg,
          meta: { algorithm: alg, dataset: ds },
          x: idx.map((i) => c.epsilon[i]),
          y: y,
          error_y: {
            type: "data",
            symmetric: false,
            array: hi.map((h, k) => (h === null || y[k] === null ? 0 : h - y[k])),
            arrayminus: lo.map((l, k) => (l === null || y[k] === null ? 0 : y[k] - l)),
            thickness: 1,
            width: 3,
          },
          line: { color: a.color, dash: several ? ["solid", "dot", "dash", "dashdot"][di % 4] : a.dash },
          marker: { color: a.color, symbol: a.symbol, size: 7 },
          customdata: idx.map((i) => [
            fmt(c[stat + "_lo"][i]),
            fmt(c[stat + "_hi"][i]),
            fmt(c.trials[i]),
            fmt(c.failed[i]),
            fmt(c.eps_exact[i]),
            fmt(c.delta_exact[i]),
            fmt(c.releases[i]),
            ds,
          ]),
          hovertemplate:
            "<b>" + a.label + "</b> (" + alg + ") on %{customdata[7]}<br>" +
            "\u03b5 = %{x}<br>" + STAT[stat] + " = %{y:.4g} [%{customdata[0]}, %{customdata[1]}]<br>" +
            "trials = %{customdata[2]} (failed %{customdata[3]})<br>" +
            "ledger: \u03b5_exact = %{customdata[4]}, \u03b4_exact = %{customdata[5]}<br>" +
            "releases: %{customdata[6]}<extra></extra>",
        });
      });
    });
    return out;
  }

  function draw() {
    const stat = byId("statistic").value;
    const layout = {
      xaxis: { type: "log", title: { text: "\u03b5" } },
      yaxis: { type: "log", title: { text: STAT[stat] + " (interval: bootstrap)" } },
      margin: { t: 30, r: 10 },
      hovermode: "closest",
      legend: { font: { size: 11 } },
    };
    window.Plotly.react("plot", traces(), layout, { responsive: true, displaylogo: false });
  }

  // ---- sortable tables ---------------------------------------------------
  function sortKey(v) {
    if (v === null || v === "") return [2, 0];
    const n = Number(v);
    return Number.isFinite(n) ? [0, n] : [1, String(v)];
  }

  function compare(a, b) {
    const ka = sortKey(a);
    const kb = sortKey(b);
    if (ka[0] !== kb[0]) return ka[0] - kb[0];
    return ka[1] < kb[1] ? -1 : ka[1] > kb[1] ? 1 : 0;
  }

  function renderTable(spec) {
    const section = el("section", { id: "section-" + spec.id });
    section.appendChild(el("h2", {}, spec.title));
    if (spec.note) section.appendChild(el("p", { class: "note" }, spec.note));
    const filter = el("input", { type: "search", placeholder: "filter rows", id: "filter-" + spec.id });
    section.appendChild(filter);
    const wrap = el("div", { class: "tablewrap" });
    const table = el("table", { class: "sortable", id: "table-" + spec.id });
    const head = el("tr");
    spec.columns.forEach((col) => head.appendChild(el("th", { scope: "col" }, col)));
    table.appendChild(el("thead")).appendChild(head);
    const body = table.appendChild(el("tbody"));
    let rows = spec.rows.slice();
    function fill() {
      const needle = filter.value.toLowerCase();
      body.innerHTML = "";
      rows.forEach((r) => {
        if (needle && !r.some((v) => String(v === null ? "" : v).toLowerCase().includes(needle))) return;
        const tr = el("tr");
        r.forEach((v) => tr.appendChild(el("td", {}, v === null ? "" : String(v))));
        body.appendChild(tr);
      });
    }
    head.querySelectorAll("th").forEach((th, j) => {
      th.addEventListener("click", () => {
        const asc = th.getAttribute("aria-sort") !== "ascending";
        head.querySelectorAll("th").forEach((h) => h.removeAttribute("aria-sort"));
        th.setAttribute("aria-sort", asc ? "ascending" : "descending");
        rows.sort((a, b) => (asc ? 1 : -1) * compare(a[j], b[j]));
        fill();
      });
    });
    filter.addEventListener("input", fill);
    fill();
    wrap.appendChild(table);
    section.appendChild(wrap);
    return section;
  }

  // ---- page --------------------------------------------------------------
  function init() {
    const nav = byId("links");
    D.links.forEach((l) => nav.appendChild(el("a", { href: l.href }, l.text)));
    const es = byId("experiment");
    Object.keys(D.experiments).forEach((e) => es.appendChild(el("option", { value: e }, e)));
    es.addEventListener("change", setupExperiment);
    byId("variant").addEventListener("change", draw);
    byId("statistic").addEventListener("change", draw);
    const tables = byId("tables");
    D.tables.forEach((t) => tables.appendChild(renderTable(t)));
    setupExperiment();
  }

  init();
})();
