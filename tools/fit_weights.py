"""Fit the confidence weights (signatures/_weights.yaml) on the design part of the real-world corpus.

    python3 tools/fit_weights.py [--check] [--folds 5] [--jobs N]

Every DESIGN case the tool answers (its top candidate at or above the threshold) is one example:
its inputs are the answer's evidence score, its lead over the runner-up and the conditions that
held; its outcome whether the answer's class is right (the label, or a class it accepts). The
signatures' own must-match examples join with half the weight, so that conditions no real case
exercises are not left to chance. So does each answered case matched again without the signature that
answered it: the signatures were written from these cases, so nearly every design answer is right, while
a user's failure that no signature knows is answered, if at all, by the nearest one; that answer, right or
wrong, is what a signature's confidence must also hold on (the next user's log is like the case without
its own signature, not like the case). The real outputs of tests/fixtures/failure-wordings (users' posts from
other threads than the corpus's, each labelled) join the same way, answered without the signature that answers them,
with half the weight: they are many more failures no signature was written for than the design part holds. The
model (triage/match/confidence.py) is a logistic regression with the score's logit as an offset and one L2-penalised
correction per condition; the penalty is chosen by cross-validation grouped by thread. Held-out cases are never read.
``--check`` fits and prints without writing.
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

from triage.corpus.labels import design_labels, read_label, thread_key  # noqa: E402
from triage.match.confidence import Weights, as_yaml, features  # noqa: E402

FOLDER = ROOT / "signatures"
LAMBDAS = (0.1, 0.3, 1.0, 3.0, 10.0, 30.0)
EXAMPLE_WEIGHT = 0.5
ABLATED = "without its signature:"  # the group of a case's row matched without the signature that answered it
ABLATED_WEIGHT = 0.5
FIXTURES = ROOT / "tests" / "fixtures" / "failure-wordings"
FIXTURE = "fixture:"  # after ABLATED, the group of a row from a real output of tests/fixtures/failure-wordings
FIXTURE_WEIGHT = 0.5
BANDS = ((0.0, 0.45), (0.45, 0.6), (0.6, 0.8), (0.8, 1.01))

Row = tuple[str, str, dict[str, tuple[float, float, bool]], float, int, float]  # group, signature, held, runner-up, y, weight


def _answer(paths: list[str], text: str | None = None, without: str | None = None) -> tuple[str, str, dict, float] | None:
    """The answer to the inputs (paths, or a text), by the database ``without`` one signature if given: signature
    id, class, held conditions, runner-up's score; None when the tool answers unknown."""
    from triage.ingest import read_inputs
    from triage.match import load
    from triage.match.engine import candidates, held, rank
    from triage.model import Artifact
    from triage.pipeline import analyze

    db = load(FOLDER)
    if without is not None:
        db = db.without([without])
    if text is None:
        artifacts, warnings = read_inputs(paths)
    else:
        artifacts, warnings = [Artifact(name="example", text=text, size=len(text))], []
    case = analyze(artifacts, db, FOLDER, warnings).case
    ranked = rank(candidates(case, db), db.threshold)
    if not ranked or round(ranked[0][2], 2) < db.threshold:
        return None
    sig, hits, _ = ranked[0]
    return sig.id, sig.klass, held(sig, hits), ranked[1][2] if len(ranked) > 1 else 0.0


def _case_rows(folder: str) -> list[Row]:
    label = read_label(Path(folder))
    answer = _answer([folder])
    if answer is None:
        return []
    sig, klass, conds, runner_up = answer
    rows = [(label.thread, sig, conds, runner_up, int(label.right(klass)), 1.0)]
    again = _answer([folder], without=sig)
    if again is not None:
        sig, klass, conds, runner_up = again
        rows.append((ABLATED + label.thread, sig, conds, runner_up, int(label.right(klass)), ABLATED_WEIGHT))
    return rows


def _fixture_rows(item: tuple[str, str, str]) -> list[Row]:
    """A real output users posted (tests/fixtures/failure-wordings) answered without the signature that answers it:
    an answer to a failure no signature was written for, from another thread than the design cases. (With its
    signature it is answered right by construction: the tests hold every fixture to its class, so that row would only
    lift every confidence.)"""
    name, klass, source = item
    text = (FIXTURES / name).read_text(encoding="utf-8")
    answer = _answer([], text)
    if answer is None:
        return []
    again = _answer([], text, without=answer[0])
    if again is None:
        return []
    sig, got, conds, runner_up = again
    return [(ABLATED + FIXTURE + thread_key(source), sig, conds, runner_up, int(got == klass), FIXTURE_WEIGHT)]


def _fixtures() -> list[tuple[str, str, str]]:
    """(file, class, thread link) of every indexed real output."""
    rows = []
    for line in (FIXTURES / "index.tsv").read_text(encoding="utf-8").splitlines():
        if line.strip() and not line.startswith("#"):
            name, klass, source = line.split("\t")
            rows.append((name, klass, source))
    return rows


def _example_rows(item: tuple[str, str, str]) -> list[Row]:
    """A must-match example answered with its signature's class is right; with another class, wrong."""
    sig_id, klass, text = item
    answer = _answer([], text)
    if answer is None:
        return []
    sig, cand_class, conds, runner_up = answer
    return [(f"example:{sig_id}", sig, conds, runner_up, int(cand_class == klass), EXAMPLE_WEIGHT)]


def collect(jobs: int | None) -> tuple[list[Row], int]:
    from triage.match import load
    from triage.match.examples import ExampleError, example_text

    corpus = ROOT / "corpus" / "realworld"
    design = [str(label.folder) for label in design_labels(corpus)]
    examples = []
    for sig in load(FOLDER).signatures:
        for example in sig.tests.get("match") or []:
            try:
                examples.append((sig.id, sig.klass, example_text(example, sig.path)))
            except ExampleError:
                continue
    with ProcessPoolExecutor(jobs) as pool:
        rows = [r for chunk in pool.map(_case_rows, design, chunksize=4) for r in chunk]
        rows += [r for chunk in pool.map(_example_rows, examples, chunksize=8) for r in chunk]
        if FIXTURES.is_dir():  # a source tree's tests; an installed package has none
            rows += [r for chunk in pool.map(_fixture_rows, _fixtures(), chunksize=16) for r in chunk]
    return rows, len(design)


def design_matrix(rows: list[Row]) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """The offset (logit of the answer's score) and the columns: the lead over the runner-up, then one
    per signature (how reliable its answers are) and one per signature/condition that held in some answer."""
    keys = sorted({sig for _, sig, *_ in rows} | {key for _, sig, conds, runner_up, _, _ in rows
                                                  for key in features(sig, conds, runner_up)[2]})
    column = {k: i + 1 for i, k in enumerate(keys)}
    offset = np.zeros(len(rows))
    x = np.zeros((len(rows), len(keys) + 1))
    for i, (_, sig, conds, runner_up, _, _) in enumerate(rows):
        first, lead, factors = features(sig, conds, runner_up)
        offset[i], x[i, 0] = first, lead
        x[i, column[sig]] = 1.0
        for key, factor in factors.items():
            x[i, column[key]] = factor
    return offset, x, keys


def fit(offset: np.ndarray, x: np.ndarray, y: np.ndarray, w: np.ndarray, lam: float, corrections: bool = True) -> np.ndarray:
    """Penalised logistic regression by Newton's method, the score's logit as an offset. Every weight is
    pulled to 0 (the score itself) with the penalty ``lam``: a signature or condition moves its answers'
    confidence only as far as the number of real answers it gave supports; there is no common intercept,
    which would lift every answer at once by the design part's own success (its signatures were written
    from it). ``corrections`` False fits the lead only."""
    n = x.shape[1] if corrections else 1
    x = x[:, :n]
    beta = np.zeros(n)
    penalty = np.full(n, lam)
    for _ in range(100):
        p = 1 / (1 + np.exp(-np.clip(offset + x @ beta, -40, 40)))
        grad = x.T @ (w * (p - y)) + penalty * beta
        hess = (x * (w * p * (1 - p))[:, None]).T @ x + np.diag(penalty)
        step = np.linalg.solve(hess, grad)
        beta -= step
        if np.max(np.abs(step)) < 1e-8:
            break
    return beta


def predict(offset: np.ndarray, x: np.ndarray, beta: np.ndarray) -> np.ndarray:
    return 1 / (1 + np.exp(-np.clip(offset + x[:, :len(beta)] @ beta, -40, 40)))


def log_loss(p: np.ndarray, y: np.ndarray) -> float:
    p = np.clip(p, 1e-6, 1 - 1e-6)
    return float(-np.mean(y * np.log(p) + (1 - y) * np.log(1 - p)))


def cross_validate(offset: np.ndarray, x: np.ndarray, y: np.ndarray, w: np.ndarray, groups: list[str],
                   folds: int) -> dict:
    """Out-of-fold predictions, per model, on the answered cases and on their answers without the signature that
    answered (the penalty is chosen on both: the second are how a signature fares on failures it was not written
    for); examples always train, never validate."""
    fold_of = {t: int(hashlib.sha256(t.encode()).hexdigest(), 16) % folds
               for t in {g.removeprefix(ABLATED) for g in groups} if not t.startswith("example:")}
    fold = np.array([fold_of.get(g.removeprefix(ABLATED), -1) for g in groups])
    validated = fold >= 0
    models = {"score": None, "score and lead": ("calib", 0.0)} | {
        f"fitted, lambda {lam}": ("full", lam) for lam in LAMBDAS}
    out: dict[str, np.ndarray] = {name: np.zeros(len(y)) for name in models}
    for k in range(folds):
        valid, train = fold == k, fold != k
        for name, spec in models.items():
            if spec is None:
                out[name][valid] = predict(offset[valid], x[valid], np.zeros(0))
            else:
                kind, lam = spec
                beta = fit(offset[train], x[train], y[train], w[train], lam if kind == "full" else 1.0,
                           corrections=kind == "full")
                out[name][valid] = predict(offset[valid], x[valid], beta)
    return {name: (log_loss(p[validated], y[validated]), p) for name, p in out.items()}


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
    offset, x, keys = design_matrix(rows)
    y = np.array([r[4] for r in rows], dtype=float)
    w = np.array([r[5] for r in rows])
    groups = [r[0] for r in rows]
    kinds = {
        "design": np.array([not g.startswith(("example:", ABLATED)) for g in groups]),
        "design, again": np.array([g.startswith(ABLATED) and not g.startswith(ABLATED + FIXTURE) for g in groups]),
        "fixtures, again": np.array([g.startswith(ABLATED + FIXTURE) for g in groups]),
    }
    counts = {kind: int(mask.sum()) for kind, mask in kinds.items()}
    right = {kind: int(y[mask].sum()) for kind, mask in kinds.items()}
    examples = sum(g.startswith("example:") for g in groups)
    print(f"{cases} design cases, {counts['design']} of them answered ({counts['design, again']} again without the "
          f"signature that answered, {right['design, again']} of those right); {counts['fixtures, again']} real outputs "
          f"of tests/fixtures answered without the signature that answers them ({right['fixtures, again']} of those "
          f"right); {examples} answered signature examples; {len(keys)} conditions seen")
    results = cross_validate(offset, x, y, w, groups, args.folds)
    print(f"\ncross-validated ({args.folds} folds by thread): log loss on all, then calibration on the answered design "
          "cases, on their answers without the signature that answered, and on the real outputs of tests/fixtures "
          "without theirs")
    for name, (loss, p) in results.items():
        for at, (kind, mask) in enumerate(kinds.items()):
            print(f"  {name if not at else '':<24} {f'{loss:.4f}' if not at else '':6}   {kind:<16} {bands(p[mask], y[mask])}")
    fitted = {name: loss for name, (loss, _) in results.items() if name.startswith("fitted")}
    best = min(fitted, key=fitted.get)
    lam = float(best.rsplit(" ", 1)[1])
    beta = fit(offset, x, y, w, lam)
    deltas: dict[str, dict[str, float]] = defaultdict(dict)
    for key, value in zip(keys, beta[1:]):
        sig, _, cond = key.partition("/")
        deltas[sig][cond or "*"] = float(value)  # "*": the signature's own weight
    weights = Weights(0.0, float(beta[0]), dict(deltas), True)
    about = {"fitted_on": {"design_cases": cases, "answered": counts["design"],
                           "answered_without_their_signature": counts["design, again"],
                           "fixtures_answered_without_their_signature": counts["fixtures, again"], "examples": examples},
             "lambda": lam,
             "cross_validated_log_loss": {name: round(loss, 4) for name, (loss, _) in results.items()}}
    print(f"\nchosen: lambda {lam}; lead {beta[0]:.3f}; {sum(abs(b) >= 0.005 for b in beta[1:])} weights moved from 0")
    if not args.check:
        (FOLDER / "_weights.yaml").write_text(as_yaml(weights, about), encoding="utf-8")
        print(f"wrote {FOLDER / '_weights.yaml'}")
    return 0 if np.isfinite(beta).all() else 1


if __name__ == "__main__":
    sys.exit(main())
