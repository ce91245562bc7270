"""Linear-regression algorithms, batched over noise repeats.

Each algorithm is one entry (:class:`~dpreg.algorithms.base.Algorithm`) of
a family module; :data:`ALGORITHMS` holds them all by config name.  See
:mod:`dpreg.algorithms.base` for the contract an entry fulfils.

Families: :mod:`~dpreg.algorithms.baselines` (trivial, OLS, ridge),
:mod:`~dpreg.algorithms.ssp`, :mod:`~dpreg.algorithms.adassp`,
:mod:`~dpreg.algorithms.functional`, and the modules added beside them;
plug-ins outside the package join them (:mod:`~dpreg.algorithms.plugins`:
``DPREG_PLUGINS`` and the ``dpreg.algorithms`` entry points are loaded here).
"""

from dpreg.algorithms.base import Algorithm, Style
from dpreg.algorithms.fits import (
    FitOptions,
    FitResult,
    PendingSolve,
    ReleaseContext,
    draw_noise,
    solve_batched,
)
from dpreg.algorithms.plugins import PluginError, load_installed, load_plugins
from dpreg.algorithms.registry import ALGORITHMS, get_algorithm, private_algorithms

__all__ = [
    "ALGORITHMS",
    "Algorithm",
    "FitOptions",
    "FitResult",
    "PendingSolve",
    "PluginError",
    "ReleaseContext",
    "Style",
    "draw_noise",
    "get_algorithm",
    "load_plugins",
    "private_algorithms",
    "solve_batched",
]

load_installed()  # DPREG_PLUGINS and installed entry points, after the built-ins
