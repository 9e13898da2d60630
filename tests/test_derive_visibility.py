"""visible_devices_select_none: ROCr's list applied first, HIP's (or CUDA's) indices then counting only what it kept."""

from __future__ import annotations

import pytest

from tests.conftest import derived_case, fact_values


@pytest.mark.parametrize(("text", "expected"), [
    # one GPU kept by ROCr, HIP's index 1 names a second: nothing left
    ('$ ROCR_VISIBLE_DEVICES=1 HIP_VISIBLE_DEVICES=1 python -c "import torch"', ["yes"]),
    ('$ ROCR_VISIBLE_DEVICES=1 CUDA_VISIBLE_DEVICES=1 python -c "import torch"', ["yes"]),
    # HIP's index 0 is the GPU ROCr kept, whatever its own number
    ('$ ROCR_VISIBLE_DEVICES=1 HIP_VISIBLE_DEVICES=0 python -c "import torch"', ["no"]),
    ('$ ROCR_VISIBLE_DEVICES=0,1 CUDA_VISIBLE_DEVICES=1 python -c "import torch"', ["no"]),
    # a UUID in ROCr's list counts as one GPU
    ("msg=subprocess environment=\"[HIP_VISIBLE_DEVICES=1 ROCR_VISIBLE_DEVICES=GPU-7685bd29c5086f3d]\"", ["yes"]),
    # HIP's own variable wins over CUDA's on one line
    ('$ ROCR_VISIBLE_DEVICES=1 HIP_VISIBLE_DEVICES=0 CUDA_VISIBLE_DEVICES=3 ./app', ["no"]),
    # each set once, on lines of their own
    ("$ export ROCR_VISIBLE_DEVICES=0\n$ export HIP_VISIBLE_DEVICES=2\n$ ./app", ["yes"]),
    # one variable alone, or a HIP list that is not indexes: no verdict
    ('$ ROCR_VISIBLE_DEVICES=1 python -c "import torch"', []),
    ('$ ROCR_VISIBLE_DEVICES=0 HIP_VISIBLE_DEVICES=GPU-12ab python -c "import torch"', []),
])
def test_the_pair_is_compared(text: str, expected: list[str]) -> None:
    assert fact_values(derived_case(text), "visible_devices_select_none") == expected


def test_one_pair_selecting_nothing_decides_among_several_commands() -> None:
    text = ('> ROCR_VISIBLE_DEVICES=1 CUDA_VISIBLE_DEVICES=0 python -c "import torch"\n'
            '> ROCR_VISIBLE_DEVICES=1 CUDA_VISIBLE_DEVICES=1 python -c "import torch"\n')
    assert fact_values(derived_case(text), "visible_devices_select_none") == ["yes"]
