"""Config coercion of command-line values (``--set KEY=VALUE``)."""

import pytest

from cnet.models.config import coerce_fields
from cnet.models.pct.pathx import PCRPathXConfig


def test_a_number_given_for_a_text_field_becomes_text():
    assert coerce_fields(PCRPathXConfig, {"screen_after": 2}, "pcr-pathx") == {"screen_after": "2"}
    assert PCRPathXConfig(**coerce_fields(PCRPathXConfig, {"screen_after": 2}, "x")).screen_blocks() == (2,)


@pytest.mark.parametrize("value", [True, 2.5, [3, 5]])
def test_other_values_for_a_text_field_are_refused(value):
    with pytest.raises(ValueError, match="pcr-pathx: field 'screen_after' expects str"):
        coerce_fields(PCRPathXConfig, {"screen_after": value}, "pcr-pathx")
