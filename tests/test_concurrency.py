"""One analysis, one state: analyses running at once in threads give exactly the reports they give
one at a time (the scanners' Hyperscan scratch, the needle passes' memos and the texts they share
are each thread's own)."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from tests.conftest import CORPUS, ROOT
from triage.parsers import lines as parser_lines
from triage.pipeline import triage
from triage.report import render

REALWORLD = ROOT / "corpus" / "realworld"
# The seeds and real cases of many formats and sizes: runtime logs, kernel logs, Windows records, stacks.
CASES = sorted(p.parent for p in CORPUS.glob("*/expected.yaml")) + [REALWORLD / name for name in (
    "rocm-libraries-1132-strix-halo-llamacpp-mes-hang-reset", "windowsml-15-amdhip64_7-access-violation-migraphx",
    "rocm-pytorch-3132-windows-scaled-mm-v2-av-torch-hip-null-call", "rocm-legacy-2061-koboldai-nobinaryforgpu-rx6600",
    "amdsmi-186-mixed-rocm-versions-undefined-symbol", "neg-ollama-9018-nvidia-cuda-illegal-access-buffer-clear",
    "rocm-legacy-4021-mi300x-gfxhub0-retry-page-fault-vllm-fa", "hipblaslt-856-wsl-could-not-load-tensilelibrary-segfault",
    "llamacpp-16725-oom-compute-buffer-rocm0", "sdnext-913-segfault-libamdhip64-failed-pin-bo",
)]


def _report(path: Path) -> str:
    return render(triage([str(path)]), "json")


@pytest.mark.parametrize("engine", ["hyperscan", "python"])
def test_twenty_concurrent_analyses_give_the_serial_reports(engine: str, monkeypatch: pytest.MonkeyPatch) -> None:
    if engine == "hyperscan":
        pytest.importorskip("hyperscan", reason="the hyperscan engine needs pip install 'hip-triage[fast]'")
    monkeypatch.setenv("TRIAGE_SCANNER", engine)
    for needle_pass in (parser_lines._WHOLE, parser_lines._HEAD):
        needle_pass.reset()
    try:
        serial = {path: _report(path) for path in CASES}
        work = CASES * 4  # every case several times, in a shuffled order, 20 at once
        work = work[7:] + work[:7]
        with ThreadPoolExecutor(max_workers=20) as pool:
            reports = list(pool.map(_report, work))
        for path, report in zip(work, reports):
            assert report == serial[path], path.name
    finally:
        monkeypatch.delenv("TRIAGE_SCANNER")
        for needle_pass in (parser_lines._WHOLE, parser_lines._HEAD):
            needle_pass.reset()
