"""Fit the confidence weights (signatures/_weights.yaml) on the design part of the real-world corpus.

    python3 tools/fit_weights.py [--check] [--folds 5] [--jobs N]

Every (case, candidate signature) pair of the DESIGN part is one example: its inputs are the
conditions that held, its answer whether the signature's class is right for the case (the
label, or a class it accepts). The signatures' own test examples join with half the weight
(a must-match example says its signature is right; a must-not-match one that it is wrong), so
that conditions no real case exercises keep a sensible weight. The model
(triage/match/confidence.py) is a logistic regression on the hand-set prior with one L2-
penalised correction per condition; the penalty is chosen by cross-validation grouped by
thread. Held-out cases are never read. ``--check`` fits and prints without writing.
"""

from __future__ import annotations

import argparse
import hashlib
import sys
from collections import defaultdict
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from triage.corpus.labels import case_folders, held_out, read_label, read_seen  # noqa: E402
from triage.match.confidence import Weights, as_yaml, logit, prior  # noqa: E402

FOLDER = ROOT / "signatures"
LAMBDAS = (0.1, 0.3, 1.0, 3.0, 10.0, 30.0)
EXAMPLE_WEIGHT = 0.5
BANDS = ((0.2, 0.45), (0.45, 0.6), (0.6, 0.8), (0.8, 1.01))

Row = tuple[str, str, dict[str, tuple[float, float, bool]], int, float]  # group, signature, held, y, weight


def _candidates(paths: list[str], text: str | None = None) -> list[tuple[str, str, dict]]:
    """(signature id, class, held conditions) of every candidate for the inputs (paths, or a text)."""
    from triage.ingest import read_inputs
    from triage.match import load
    from triage.match.engine import candidates, held
    from triage.model import Artifact
    from triage.pipeline import analyze

    db = load(FOLDER)
    if text is None:
        artifacts, warnings = read_inputs(paths)
    else:
        artifacts, warnings = [Artifact(name="example", text=text, size=len(text))], []
    case = analyze(artifacts, db, FOLDER, warnings).case
    return [(sig.id, sig.klass, held(sig, hits)) for sig, hits in candidates(case, db)]


def _case_rows(folder: str) -> list[Row]:
    label = read_label(Path(folder))
    return [(label.thread, sig, conds, int(label.right(klass)), 1.0) for sig, klass, conds in _candidates([folder])]


def _example_rows(item: tuple[str, str, str, str]) -> list[Row]:
    sig_id, klass, kind, text = item
    rows = []
    for sig, cand_class, conds in _candidates([], text):
        if kind == "match":
            rows.append(("examples", sig, conds, int(cand_class == klass), EXAMPLE_WEIGHT))
        elif sig == sig_id:
            rows.append(("examples", sig, conds, 0, EXAMPLE_WEIGHT))
    return rows


def collect(jobs: int | None) -> tuple[list[Row], int]:
    from triage.match import load
    from triage.match.examples import ExampleError, example_text

    corpus = ROOT / "corpus" / "realworld"
    seen = read_seen(corpus)
    design = [str(f) for f in case_folders(corpus) if not held_out(read_label(f).source, seen)]
    examples = []
    for sig in load(FOLDER).signatures:
        for kind in ("match", "no_match"):
            for example in sig.tests.get(kind) or []:
                try:
                    examples.append((sig.id, sig.klass, kind, example_text(example, sig.path)))
                except ExampleError:
                    continue
    with ProcessPoolExecutor(jobs) as pool:
        rows = [r for chunk in pool.map(_case_rows, design, chunksize=4) for r in chunk]
        rows += [r for chunk in pool.map(_example_rows, examples, chunksize=8) for r in chunk]
    return rows, len(design)


def design_matrix(rows: list[Row]) -> tuple[np.ndarray, list[tuple[str, str]]]:
    """Columns: 1, logit(prior), then one per (signature, condition) that held somewhere."""
    keys = sorted({(sig, c) for _, sig, conds, _, _ in rows for c in conds})
    column = {k: i + 2 for i, k in enumerate(keys)}
    x = np.zeros((len(rows), len(keys) + 2))
    for i, (_, sig, conds, _, _) in enumerate(rows):
        x[i, 0] = 1.0
        x[i, 1] = logit(prior(list(conds.values())))
        for c, (_, factor, _) in conds.items():
            x[i, column[(sig, c)]] = factor
    return x, keys


def fit(x: np.ndarray, y: np.ndarray, w: np.ndarray, lam: float, corrections: bool = True) -> np.ndarray:
    """Penalised logistic regression by Newton's method; the intercept and slope get a token penalty."""
    n = x.shape[1] if corrections else 2
    x = x[:, :n]
    beta = np.zeros(n)
    beta[1] = 1.0  # start from the prior itself
    penalty = np.full(n, lam)
    penalty[:2] = 1e-3
    for _ in range(50):
        p = 1 / (1 + np.exp(-np.clip(x @ beta, -40, 40)))
        grad = x.T @ (w * (p - y)) + penalty * (beta - np.r_[0.0, 1.0, np.zeros(n - 2)])
        hess = (x * (w * p * (1 - p))[:, None]).T @ x + np.diag(penalty)
        step = np.linalg.solve(hess, grad)
        beta -= step
        if np.max(np.abs(step)) < 1e-8:
            break
    return beta


def predict(x: np.ndarray, beta: np.ndarray) -> np.ndarray:
    return 1 / (1 + np.exp(-np.clip(x[:, :len(beta)] @ beta, -40, 40)))


def log_loss(p: np.ndarray, y: np.ndarray) -> float:
    p = np.clip(p, 1e-6, 1 - 1e-6)
    return float(-np.mean(y * np.log(p) + (1 - y) * np.log(1 - p)))


def cross_validate(x: np.ndarray, y: np.ndarray, w: np.ndarray, groups: list[str], folds: int) -> dict:
    """Out-of-fold predictions on the corpus rows, per model; examples always train, never validate."""
    threads = sorted({g for g in groups if g != "examples"})
    fold_of = {t: int(hashlib.sha256(t.encode()).hexdigest(), 16) % folds for t in threads}
    corpus = np.array([g != "examples" for g in groups])
    models = {"prior": None, "calibrated prior": ("calib", 0.0)} | {f"fitted, lambda {lam}": ("full", lam) for lam in LAMBDAS}
    out: dict[str, np.ndarray] = {name: np.zeros(len(y)) for name in models}
    for k in range(folds):
        valid = np.array([g != "examples" and fold_of[g] == k for g in groups])
        train = ~valid
        for name, spec in models.items():
            if spec is None:
                out[name][valid] = predict(x[valid], np.array([0.0, 1.0]))
            else:
                kind, lam = spec
                beta = fit(x[train], y[train], w[train], lam if kind == "full" else 1.0, corrections=kind == "full")
                out[name][valid] = predict(x[valid], beta)
    return {name: (log_loss(p[corpus], y[corpus]), p[corpus]) for name, p in out.items()}


def bands(p: np.ndarray, y: np.ndarray) -> str:
    parts = []
    for low, high in BANDS:
        inside = (p >= low) & (p < high)
        n = int(inside.sum())
        parts.append(f"{low:.2f}-{min(high, 1):.2f}: {n}, " + (f"{100 * y[inside].mean():.0f}% right (mean {100 * p[inside].mean():.0f}%)" if n else "-"))
    return ";  ".join(parts)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="fit and print, do not write the weights file")
    parser.add_argument("--folds", type=int, default=5)
    parser.add_argument("--jobs", type=int, default=None)
    args = parser.parse_args()
    rows, cases = collect(args.jobs)
    x, keys = design_matrix(rows)
    y = np.array([r[3] for r in rows], dtype=float)
    w = np.array([r[4] for r in rows])
    groups = [r[0] for r in rows]
    print(f"{cases} design cases, {sum(g != 'examples' for g in groups)} candidates from them, "
          f"{sum(g == 'examples' for g in groups)} from signature examples; {len(keys)} conditions seen")
    results = cross_validate(x, y, w, groups, args.folds)
    corpus_y = y[np.array([g != "examples" for g in groups])]
    print(f"\ncross-validated on the design cases ({args.folds} folds by thread): log loss, then calibration")
    for name, (loss, p) in results.items():
        print(f"  {name:<24} {loss:.4f}   {bands(p, corpus_y)}")
    fitted = {name: loss for name, (loss, _) in results.items() if name.startswith("fitted")}
    best = min(fitted, key=fitted.get)
    lam = float(best.rsplit(" ", 1)[1])
    beta = fit(x, y, w, lam)
    deltas: dict[str, dict[str, float]] = defaultdict(dict)
    for (sig, cond), value in zip(keys, beta[2:]):
        deltas[sig][cond] = float(value)
    weights = Weights(float(beta[0]), float(beta[1]), dict(deltas), True)
    about = {"fitted_on": {"design_cases": cases, "candidates": int(sum(g != "examples" for g in groups)),
                           "example_candidates": int(sum(g == "examples" for g in groups))},
             "lambda": lam,
             "cross_validated_log_loss": {name: round(loss, 4) for name, (loss, _) in results.items()}}
    print(f"\nchosen: lambda {lam}; intercept {beta[0]:.3f}, slope {beta[1]:.3f}; "
          f"{sum(abs(b) >= 0.005 for b in beta[2:])} conditions corrected")
    if not args.check:
        (FOLDER / "_weights.yaml").write_text(as_yaml(weights, about), encoding="utf-8")
        print(f"wrote {FOLDER / '_weights.yaml'}")
    return 0 if np.isfinite(beta).all() else 1


if __name__ == "__main__":
    sys.exit(main())
