"""What the pipeline shows: summary tables, figures, README blocks, provenance.

- :mod:`~dpreg.report.summary` -- trial tables -> one row per cell;
- :mod:`~dpreg.report.figures` (with :mod:`~dpreg.report.lines`) -- error
  versus epsilon, one panel per dataset;
- :mod:`~dpreg.report.suite` -- the per-dataset figures of Wang's suite;
- :mod:`~dpreg.report.claims` -- the verdict block of a README and the claims
  command line; :mod:`~dpreg.report.quotes` -- numbers a README quotes, checked
  against the tables;
- :mod:`~dpreg.report.provenance` -- ``provenance.json``;
- :mod:`~dpreg.report.leaderboard` (with :mod:`~dpreg.report.ranking` and
  :mod:`~dpreg.report.cdplot`) -- average ranks, Friedman/Nemenyi and sign
  tests over Wang's suite, and the critical-difference diagram;
- :mod:`~dpreg.report.browser` -- the static results browser (plotly.js).
"""
