"""Datasets: source -> checksum -> recipe -> canonical numeric table.

A dataset is a name and an *entry*: a mapping that says where the raw table
comes from and how to turn it into a design matrix ``X`` (float64, n x d) and
a response ``y`` (float64, n).  The same keys are used in the configuration
(``datasets:``) and by :data:`DEFAULT_DATASETS`.

The package has one module per step:

- :mod:`dpreg.data.entries` -- the keys, their defaults, :func:`validate_entry`;
- :mod:`dpreg.data.sources` and :mod:`dpreg.data.download` -- :func:`fetch_raw`:
  the raw table from a path, the mirror, UCI or a URL, checksums checked;
- :mod:`dpreg.data.recipe` -- :func:`apply_recipe`: numeric features and a target;
- :mod:`dpreg.data.synthetic` -- generated datasets with a known ``theta*``;
- :mod:`dpreg.data.prepared` -- :func:`prepare_dataset` (atomic Parquet + JSON
  output), :func:`read_prepared`, :func:`prepared_shape`, :func:`iter_prepared`.

Sources, in the order they are tried:

1. ``path`` -- a local CSV (or archive) file, or a folder in the mirror
   layout (``data.csv`` + ``metadata.json``).  Always used when given.
2. the offline mirror ``mirror_dir/<name>/`` -- used when it exists (unless
   ``refresh: true``), after its ``data.csv`` is checked against
   ``mirror_dir/SHA256SUMS``.  A mismatch is an error: a corrupted mirror is
   never used, and never silently replaced by a download.
3. ``uci_id`` -- downloaded through :func:`ucimlrepo.fetch_ucirepo`, keeping
   the variable roles the UCI API reports.
4. ``url`` -- downloaded with :mod:`urllib`; it must be pinned by ``sha256``
   (without it the run stops and prints the downloaded file's hash).

A download must finish within ``download_deadline`` seconds (whole transfer)
and deliver the length its ``Content-Length`` header announces.

Entry keys (:data:`DATASET_KEYS`)
---------------------------------
==================  =========================================================
key                 meaning
==================  =========================================================
uci_id              UCI Machine Learning Repository id (int).
url                 http(s) address of a data file; needs ``sha256``.
format              ``csv`` | ``whitespace`` | ``zip`` | ``tgz``; default from
                    the file suffix (``.zip``, ``.tgz``/``.tar.gz``, else
                    ``csv``).  Files need a header row with distinct names; a
                    member of an archive is comma-separated if its first line
                    holds a comma, otherwise whitespace-separated.
member              file inside a zip/tgz archive (may be omitted when the
                    archive holds one file).
path                local data file, or folder with ``data.csv`` +
                    ``metadata.json`` (the mirror layout); relative to the
                    working directory.
synthetic           generated data with a known theta* instead of a file:
                    ``{design, n, d, noise, seed, theta, condition}`` (see
                    :mod:`dpreg.data.synthetic`); no other key but
                    ``description``.
sha256              expected SHA-256 of the downloaded file (url, uci_id: the
                    CSV that the UCI API points to) or of the local file
                    (path; ``data.csv`` for a folder).  Not applied to the
                    mirror, which SHA256SUMS pins.
refresh             ``true``: download (uci_id/url) even if the mirror or the
                    download cache holds the dataset.
download_deadline   seconds the whole download may take (default 600).
download_max_bytes  largest download accepted, in bytes (default 1 GiB).
target              target column; default the single column with role Target.
target_transform    ``none`` (default) | ``log`` (needs y > 0) | ``log1p``
                    (needs y > -1).
set_values          data row (1 = the row after the header) -> {column:
                    value}: corrections of single cells of the raw table,
                    applied first.
recode              column -> {value: new value}: a value map (e.g. text
                    categories to codes), applied after ``set_values``; every
                    value named must occur in the column.
drop                columns removed.
include             columns used as features although their role is not
                    Feature (ID, Other and other Target columns are dropped
                    otherwise).
dates               column -> parts, from year, month, day, weekday
                    (Monday = 0), dayofyear, hour, minute, second; the column
                    is replaced by numeric columns ``<column>_<part>`` at its
                    position.  A column of times of day (``HH:MM`` or
                    ``HH:MM:SS``) has the parts hour, minute, second.
missing             ``error`` (default) | ``drop_rows`` | ``zero`` (fill NaN
                    with 0, as Wang 2018 did).  Infinite values are always
                    an error.
description         free text, copied into the provenance sidecar.
==================  =========================================================

Exactly one of ``uci_id``, ``url``, ``path``, ``synthetic`` is required, except for a
dataset held by the mirror, which may have none (mirror only) or a
``uci_id``/``url`` used when the mirror is absent or ``refresh`` is set.
Variable roles come from ``metadata.json`` (mirror, folder) or from the UCI
API; columns without a role (plain CSV files, url downloads) are features.
"""

from __future__ import annotations

from dpreg.data.entries import (
    DATASET_KEYS,
    DATE_PARTS,
    DEFAULT_DATASETS,
    DEFAULT_DOWNLOAD_DEADLINE,
    validate_entry,
)
from dpreg.data.prepared import (
    ROW_GROUP_ROWS,
    iter_prepared,
    prepare_dataset,
    prepared_shape,
    read_prepared,
    read_prepared_meta,
)
from dpreg.data.recipe import PreparedDataset, apply_recipe
from dpreg.data.sources import RawDataset, fetch_raw

__all__ = [
    "DATASET_KEYS",
    "DATE_PARTS",
    "DEFAULT_DATASETS",
    "DEFAULT_DOWNLOAD_DEADLINE",
    "ROW_GROUP_ROWS",
    "PreparedDataset",
    "RawDataset",
    "apply_recipe",
    "fetch_raw",
    "iter_prepared",
    "prepare_dataset",
    "prepared_shape",
    "read_prepared",
    "read_prepared_meta",
    "validate_entry",
]
