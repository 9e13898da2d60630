"""Each input block of a seed alone still gives the right class, less confidently, and says what to send."""

from __future__ import annotations

import pytest

from tests.conftest import CORPUS
from triage.pipeline import triage

BLOCKS = [
    ("seed-000-blit-kernels-device-libs-missing", "hip.log", "device-libs-missing"),
    ("seed-000-blit-kernels-device-libs-missing", "coredump.txt", "device-libs-missing"),
    ("seed-002-hipmoduleload-access-violation-windows", "crash-stack.txt", "code-object-load-fault"),
    ("seed-003-getdevicekernel-null-gfx906-only-kernel", "stack.txt", "no-code-object"),
]


@pytest.mark.parametrize("case,block,klass", BLOCKS, ids=[f"{c[:8]}-{b}" for c, b, _ in BLOCKS])
def test_block_alone(case: str, block: str, klass: str) -> None:
    whole = triage([str(CORPUS / case)]).top
    alone = triage([str(CORPUS / case / block)]).top
    assert alone.klass == klass
    assert alone.confidence < whole.confidence
    assert alone.ask_for, "thinner evidence comes with a list of what to send"
