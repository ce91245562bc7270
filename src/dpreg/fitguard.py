"""Numeric failures of a registry entry at extreme budgets, as one :class:`DPRegError`.

At an epsilon far outside the range the pipeline accepts (the schema's
``epsilons``: 1e-6 to 1000), a calibration or a fit can fail deep inside
its arithmetic (a division by zero, ``math.log`` of 0, an overflow turned
into an error by a warnings filter).  :func:`numeric_guard` turns such a
failure into one message naming the algorithm, the budget and the range
where every registry entry calibrates, instead of a traceback.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from dpreg._validation import DPRegError

__all__ = ["EPSILON_RANGE", "numeric_guard"]

#: The epsilons the pipeline accepts (``epsilons`` in workflow/schemas/config.schema.yaml,
#: checked equal by tests/test_hostile_inputs.py).
EPSILON_RANGE = (1e-6, 1000.0)


@contextlib.contextmanager
def numeric_guard(algorithm: str, epsilon: float, delta: float) -> Iterator[None]:
    """Re-raise an arithmetic failure inside the block as a :class:`DPRegError`.

    Catches :class:`ArithmeticError` (``ZeroDivisionError``, ``OverflowError``,
    ``FloatingPointError``), a :class:`ValueError` that is not already a
    :class:`DPRegError` (``math domain error``) and a :class:`RuntimeWarning`
    raised as an error by a warnings filter.  A :class:`DPRegError` at an
    epsilon above :data:`EPSILON_RANGE` is re-raised naming the epsilon the
    user set (a calibration may name only its share of it).
    """
    low, high = EPSILON_RANGE
    try:
        yield
    except DPRegError as err:
        if epsilon <= high:  # below the range the calibrations' messages say "too small"
            raise
        # above it a calibration's message may name only a share of the budget
        # (epsilon / k), or call it too small: say which budget the user set
        raise DPRegError(
            f"{algorithm} at epsilon={epsilon:g}, outside the range {low:g} to {high:g} "
            f"the pipeline accepts: {err}"
        ) from None
    except (ArithmeticError, ValueError, RuntimeWarning) as err:
        raise DPRegError(
            f"{algorithm} cannot be calibrated or fitted at epsilon={epsilon:g}, "
            f"delta={delta:g} ({type(err).__name__}: {err}); use an epsilon between "
            f"{low:g} and {high:g}, the range the pipeline accepts"
        ) from None
