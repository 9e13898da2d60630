"""One triaged case -> one row of plain values, and many rows -> a typed DataFrame.

``COLUMNS`` is the table's contract (README "Corpus analysis"): names are stable, and each
has a pandas dtype so a notebook can group and filter without conversions: categoricals for
classes and other few-valued labels, versions as categoricals ordered by version (7.2 < 7.16, in
the DataFrame and in parquet), nullable integers (an address as UInt64), strings, a date.
"""

from __future__ import annotations

import re
from operator import itemgetter
from typing import TYPE_CHECKING, Any

from triage.corpus.stackhash import frames, stack_hash
from triage.match.templates import key_lines
from triage.pipeline import Result

if TYPE_CHECKING:
    import pandas

# name -> pandas dtype. "list" columns hold Python lists (list<string> in parquet); "version" columns are
# categoricals ordered by version_key.
COLUMNS: dict[str, str] = {
    "case": "string",                 # the case's id: its folder or file name (see corpus.cases)
    "path": "string",
    "signature": "category",          # top diagnosis id ("unknown" when nothing matched)
    "class": "category",              # top diagnosis class (../TAXONOMY classes, or "unknown")
    "confidence": "float64",
    "second_signature": "category",   # the runner-up candidate, if any
    "second_confidence": "float64",
    "gfx_arch": "category",
    "gpu_name": "string",
    "os": "category",
    "os_name": "string",
    "kernel": "version",
    "driver": "version",
    "hip_version": "version",         # the HIP runtime the failing process used (often bundled)
    "hip_version_system": "version",  # the system ROCm's HIP
    "hip_runtime": "category",        # bundled | system
    "rocm_version_system": "version",
    "app_version": "string",          # the engine's version when one is named, else the application's (parsers/appinfo.py)
    "program": "string",
    "signal": "category",
    "exception_code": "category",
    "fault_module": "string",
    "fault_offset": "Int64",
    "fault_symbol": "string",
    "fault_address": "UInt64",        # unsigned: a kernel address does not fit a signed 64-bit integer
    "stack_hash": "string",
    "stack_frames": "list",           # the normalized frames the hash is made of
    "key_lines": "list",              # unknown cases only: the lines with error words, one per template
    "warnings": "Int64",
    "artifacts": "Int64",
    "input_bytes": "Int64",
    "date": "datetime64[ns]",         # the label's `date:`, else the day of the input's timestamps (parsers/timestamps.py)
    "expected_class": "category",     # the label in expected.yaml, when the case has one
    "expected_signature": "category",
    "label_gfx_arch": "category",     # what the label says of the case, for facts the logs may lack
    "label_gpu_name": "string",
    "label_os": "category",
    "label_rocm": "version",
    "error": "string",                # why the case could not be triaged (then class is missing)
    "tool_version": "category",
    "signatures_version": "category",
}


def row(result: Result) -> dict[str, Any]:
    """The values of one case that depend on its content and the database (not on where it lies)."""
    case = result.case
    facts = case.flat_facts()
    top = result.top
    second = next((d for d in result.diagnoses[1:] if d.id != "unknown"), None)
    fault = case.fault
    names = frames(case)
    return {
        "signature": top.id,
        "class": top.klass,
        "confidence": float(top.confidence),
        "second_signature": second.id if second else None,
        "second_confidence": float(second.confidence) if second else None,
        **{name: facts.get(name) for name in (
            "gfx_arch", "gpu_name", "os", "os_name", "kernel", "driver", "hip_version", "hip_version_system",
            "hip_runtime", "rocm_version_system", "app_version", "program")},
        "signal": (fault.signal if fault else None) or facts.get("signal"),
        "exception_code": (fault.code if fault else None) or facts.get("exception_code"),
        "fault_module": fault.module if fault else None,
        "fault_offset": fault.offset if fault else None,
        "fault_symbol": fault.symbol if fault else None,
        "fault_address": fault.address if fault else None,
        "stack_hash": stack_hash(names),
        "stack_frames": names,
        "key_lines": key_lines(case) if top.klass == "unknown" else [],
        "warnings": len(case.warnings),
        "artifacts": len(case.artifacts),
        "input_bytes": sum(a.size for a in case.artifacts),
        "date": facts.get("date"),  # a label's date, when the case has one, wins (corpus/run.py)
        "tool_version": result.versions.get("tool"),
        "signatures_version": result.versions.get("signatures"),
    }


def frame(rows: list[dict[str, Any]]) -> "pandas.DataFrame":
    """Rows -> a DataFrame with every column of ``COLUMNS``, in that order and with that dtype.

    Built column by column with each dtype given, so pandas infers nothing (100,000 rows in
    well under a second).
    """
    import gc

    import pandas as pd

    names = list(COLUMNS)
    collecting = gc.isenabled()
    gc.disable()  # millions of new references, no cycles: the collector would only rescan them
    try:
        # One C-level pass over the rows per column: cheaper than transposing tuples of every row.
        try:
            cells = [list(map(itemgetter(name), rows)) for name in names]
        except KeyError:  # rows without some columns (an unreadable case, a hand-made row)
            empty = dict.fromkeys(names)
            rows = [{**empty, **r} for r in rows]
            cells = [list(map(itemgetter(name), rows)) for name in names]
        return pd.DataFrame({name: _column(values, COLUMNS[name]) for name, values in zip(names, cells)})
    finally:
        if collecting:
            gc.enable()


def typed(table: "pandas.DataFrame") -> "pandas.DataFrame":
    """Give each known column its dtype, adding missing ones (after reading a parquet or CSV table)."""
    import pandas as pd

    return pd.DataFrame({name: _column(table[name].tolist() if name in table else [None] * len(table), dtype)
                         for name, dtype in COLUMNS.items()}, index=table.index)


def _column(values: list[Any], dtype: str) -> Any:
    """One column's values (None, NaN or NA for missing) as an array of ``dtype``; pandas converts in C."""
    import numpy as np
    import pandas as pd

    if dtype == "list":
        return [v if type(v) is list else _as_list(v) for v in values]
    if dtype == "version":
        return _versions(values)
    if dtype == "UInt64":
        return pd.array([_unsigned(v) for v in values], dtype="UInt64")
    if dtype in ("float64", "Int64"):  # numbers, or their text from a CSV
        numbers = pd.to_numeric(pd.Series(values, dtype="object"), errors="coerce")
        return numbers.astype(dtype).array if dtype == "Int64" else numbers.to_numpy(dtype="float64", na_value=np.nan)
    if dtype.startswith("datetime"):
        return pd.to_datetime(pd.Series(values, dtype="object"), errors="coerce").astype(dtype).array
    if dtype == "category":
        codes, uniques = pd.factorize(np.asarray(values, dtype=object), sort=True)
        try:
            return pd.Categorical.from_codes(codes, dtype=pd.CategoricalDtype(pd.Index(uniques, dtype="string")))
        except (TypeError, ValueError):  # values that are not all text (a CSV's numbers)
            return pd.Categorical(pd.array(values, dtype="string"))
    if dtype == "string":
        return _strings(values)
    return pd.array(values, dtype=dtype)


_VERSION_PART = re.compile(r"\d+|\D+")


def version_key(text: str) -> tuple[tuple[int, int, str], ...]:
    """Order of version strings as people read them: numbers by value (7.2 < 7.16), other text by name."""
    return tuple((0, int(part), "") if part.isdigit() else (1, 0, part.lower()) for part in _VERSION_PART.findall(text))


def _versions(values: list[Any]) -> Any:
    """A categorical of version strings whose categories are in version order, so that sorting, min/max
    and comparisons follow versions, and parquet keeps the order."""
    import pandas as pd

    text = [None if v is None or (isinstance(v, float) and v != v) or v is pd.NA else str(v) for v in values]
    categories = sorted({v for v in text if v is not None}, key=version_key)
    return pd.Categorical(text, categories=pd.Index(categories, dtype="string"), ordered=True)


def _unsigned(value: Any) -> int | None:
    """An address: an integer, its decimal text (CSV) or hex text (``0x...``, tables written before)."""
    if isinstance(value, str):
        text = value.strip().lower()
        try:
            return int(text, 16) if text.startswith("0x") else int(text) if text else None
        except ValueError:
            return None
    if isinstance(value, (int, float)) and value == value:  # NaN is missing
        return int(value)
    return None  # None, pd.NA


def _strings(values: list[Any]) -> Any:
    """A string column: straight to Arrow when pandas keeps strings there and every value is text or None
    (several times faster than pandas' own checks), else through pandas."""
    import pandas as pd

    if pd.StringDtype().storage == "pyarrow":
        import pyarrow as pa

        try:
            return pd.arrays.ArrowStringArray(pa.array(values, type=pa.large_string()))
        except (pa.ArrowInvalid, pa.ArrowTypeError):
            pass
    return pd.array(values, dtype="string")


def _as_list(value: Any) -> list[str]:
    """A list column's cell: an array from parquet, a newline-joined string from CSV, or nothing."""
    if value is None or (isinstance(value, float) and value != value):
        return []
    if isinstance(value, str):
        return [part for part in value.split("\n") if part]
    return [str(v) for v in value]
