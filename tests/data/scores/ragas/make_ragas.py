"""Make the Ragas fixtures: run ragas.evaluate with non-LLM metrics only (no model is called)
on the six cases of ../pydoc_cases.py and save the result's DataFrame as Ragas users do.

    python make_ragas.py [FOLDER]   # with ragas installed (see README.md for the versions)

Writes into FOLDER (default: this file's folder):
  result.csv        df.to_csv(path)                                   (index column, text keys)
  result.jsonl      df.to_json(path, orient="records", lines=True)    (text keys)
  result-ids.csv    the same DataFrame with a query_id column first, to_csv(path, index=False)
  result-ids.jsonl  the same, to_json(path, orient="records", lines=True)
and prints ragas' own per-case scores (EvaluationResult.scores) and its summary.
result-0.2.15.csv is result.csv of this script run with ragas 0.2.15 into another folder
(that version has no IDBasedContextRecall and no *_context_ids sample fields).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

os.environ["RAGAS_DO_NOT_TRACK"] = "true"  # no analytics

HERE = Path(__file__).resolve().parent
OUT = Path(sys.argv[1]).resolve() if len(sys.argv) > 1 else HERE
sys.path.insert(0, str(HERE.parent))

import ragas
import ragas.metrics
from pydoc_cases import cases
from ragas import EvaluationDataset, evaluate
from ragas.metrics import (
    BleuScore,
    ExactMatch,
    NonLLMContextPrecisionWithReference,
    NonLLMContextRecall,
    NonLLMStringSimilarity,
    RougeScore,
    StringPresence,
)
from ragas.metrics._string import DistanceMeasure

CASES = cases()
dataset = EvaluationDataset.from_list([
    {"user_input": c["question"], "response": c["answer"], "reference": c["reference"],
     "retrieved_contexts": c["retrieved"], "reference_contexts": c["reference_contexts"],
     "retrieved_context_ids": c["retrieved_ids"], "reference_context_ids": c["reference_ids"]}
    for c in CASES])
metrics = [
    ExactMatch(), StringPresence(), NonLLMStringSimilarity(),
    NonLLMStringSimilarity(name="String similarity (Jaro-Winkler)",
                           distance_measure=DistanceMeasure.JARO_WINKLER),
    BleuScore(), RougeScore(),
    NonLLMContextRecall(), NonLLMContextPrecisionWithReference(),
]
if hasattr(ragas.metrics, "IDBasedContextRecall"):  # from ragas 0.3 on
    metrics.append(ragas.metrics.IDBasedContextRecall())
# raise_exceptions=False (ragas' default): a metric that fails on a case gives NaN for it.
result = evaluate(dataset, metrics=metrics, raise_exceptions=False, show_progress=False)

print("ragas", ragas.__version__)
print(result)
for case, scores in zip(CASES, result.scores):
    print(case["id"], {name: repr(value) for name, value in scores.items()})

df = result.to_pandas()
df.to_csv(OUT / "result.csv")
df.to_json(OUT / "result.jsonl", orient="records", lines=True)
df.insert(0, "query_id", [c["id"] for c in CASES])
df.to_csv(OUT / "result-ids.csv", index=False)
df.to_json(OUT / "result-ids.jsonl", orient="records", lines=True)
