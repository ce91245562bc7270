"""Privacy: noise calibrations and draws, accounting, and the ledger of releases.

- :mod:`~dpreg.privacy.accounting` -- what mechanisms cost: basic and exact
  (Gaussian DP) composition, calibration to a target (epsilon, delta);
- :mod:`~dpreg.privacy.mechanisms` -- :class:`~dpreg.privacy.mechanisms.Release`
  (one noisy release and its calibration), the calibrations and the noise draws;
- :mod:`~dpreg.privacy.ledger` -- a run's releases written down (trial-table
  columns, provenance records).

Below the algorithms: nothing here knows which algorithm makes which release.
"""
