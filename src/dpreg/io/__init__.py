"""The table contract every layer reads and writes: columns, dtypes and atomic files.

- :mod:`~dpreg.io.tables` -- the columns and dtypes of the trial, summary and
  claims tables, atomic writers, summary/claims/JSON files;
- :mod:`~dpreg.io.trials` -- trial files (Parquet or CSV) and their row selection.

At the bottom with :mod:`dpreg._validation` and :mod:`dpreg.seeding`: it
imports no other part of dpreg.
"""
