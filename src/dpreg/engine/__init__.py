"""The engine: folds x partitions x repeats x epsilon x algorithms -> trial rows.

- :mod:`~dpreg.engine.sweep` -- one (dataset, variant plan) from a row source
  (:func:`~dpreg.engine.sweep.sweep_source`, :func:`~dpreg.engine.sweep.sweep_arrays`);
- :mod:`~dpreg.engine.blocks` -- one (fold, algorithm) block of trials, scored
  and assembled into the tidy table;
- :mod:`~dpreg.engine.private_runs` -- the runs of private pre-processing;
- :mod:`~dpreg.engine.sources` -- prepared tables streamed in chunks, and
  :func:`~dpreg.engine.sources.sweep_dataset` (what the workflow's jobs call);
- :mod:`~dpreg.engine.run_ledger` -- the ledger by algorithm name: trial
  columns and the ``provenance.json`` record of a configuration.
"""
