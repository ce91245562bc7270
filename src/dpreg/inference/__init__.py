"""Inference on trial tables: design bootstrap, intervals and claims.

- :mod:`~dpreg.inference.bootstrap` -- the resampling design (folds, then
  repeats within folds) and its replicates;
- :mod:`~dpreg.inference.medians` -- medians of every replicate without a sort each;
- :mod:`~dpreg.inference.intervals` -- intervals of every cell and paired ratios;
- :mod:`~dpreg.inference.bands` -- simultaneous bands over epsilon of a curve of ratios;
- :mod:`~dpreg.inference.claims` -- claims checked, and the descriptive verdict of a point;
- :mod:`~dpreg.inference.registry` -- the claims file, its registration record and a
  claim's status (confirmatory or exploratory);
- :mod:`~dpreg.inference.pooled` -- one decision per claim: pooled effect, dataset
  bootstrap, Holm, margin and TOST;
- :mod:`~dpreg.inference.evaluation` -- claims evaluated on trial files
  (the rows of ``claims.csv``).
"""
