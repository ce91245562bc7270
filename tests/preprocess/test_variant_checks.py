"""A variant option that would be ignored is refused, naming what it needs."""

from __future__ import annotations

import pytest

from dpreg._validation import DPRegError
from dpreg.preprocess.spec import VariantSpec


def test_clip_test_without_clip_sigma_is_refused():
    with pytest.raises(DPRegError, match="'clip_test'.*needs 'clip_sigma'"):
        VariantSpec.from_dict({"clip_test": True}, "v")


def test_clip_test_with_clip_sigma_is_accepted():
    spec = VariantSpec.from_dict({"clip_test": True, "clip_sigma": 3.0}, "v")
    assert spec.clip_test and spec.clip_sigma == 3.0
