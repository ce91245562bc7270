"""The table contract every layer reads and writes: columns, dtypes and atomic files.

- :mod:`~dpreg.io.tables` -- the columns and dtypes of the trial, summary and
  claims tables, atomic writers, summary/claims/JSON files;
- :mod:`~dpreg.io.trials` -- trial files (Parquet or CSV) and their row selection;
- :mod:`~dpreg.io.atomic` -- the one atomic writer (a temporary sibling moved into
  place, with the umask's mode), also as a temporary path for writers that need one;
- :mod:`~dpreg.io.checksum` -- the ``<file>.sha256`` sidecars every reader verifies;
- :mod:`~dpreg.io.rundir` -- the run directory: writable, and one run at a time.

At the bottom with :mod:`dpreg._validation` and :mod:`dpreg.seeding`: it
imports no other part of dpreg.
"""
