"""Inference on trial tables: design bootstrap, intervals and claims.

- :mod:`~dpreg.inference.bootstrap` -- the resampling design (folds, then
  repeats within folds) and its replicates;
- :mod:`~dpreg.inference.medians` -- medians of every replicate without a sort each;
- :mod:`~dpreg.inference.intervals` -- intervals of every cell and paired ratios;
- :mod:`~dpreg.inference.claims` -- claims of a configuration and the verdict rule;
- :mod:`~dpreg.inference.evaluation` -- claims evaluated on trial files
  (the rows of ``claims.csv``).
"""
