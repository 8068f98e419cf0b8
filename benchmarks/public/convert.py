"""Convert public human-labelled pairwise judge data to Ragas' annotation format, with no LLM call:
the recorded judge's verdict and reason beside the humans' labels.

* **PandaLM** (WeOpenML/PandaLM, Apache-2.0): ``data/testset-v1.json`` (999 pairs, three annotators
  each: 1 = response 1 better, 2 = response 2 better, 0 = tie) and
  ``data/gpt-3.5-turbo-testset-v1.json`` (gpt-3.5-turbo's recorded verdict ``1`` / ``2`` / ``Tie``,
  or an unparsed answer, and its reason). Two files:

  - ``pandalm_pairwise.json``: the verdict a / b / tie (values 1 / 0 / 0.5: the preference for
    response a, :data:`promptevolver.annotations._labels.PAIRWISE`); ``target`` the annotators'
    majority, ``annotator_labels`` each one's; ``metric_output`` the recorded verdict (NaN where
    gpt-3.5-turbo's answer named none: a failed judge call, as Ragas records one);
  - with ``--binary FILE`` (not bundled: :func:`binary_of` makes it from the first): "is response a
    better" (1 / 0) on the pairs whose majority is not a tie; the recorded judge's tie counts as
    "not a".

* **LLMBar** (princeton-nlp/LLMBar, MIT): the 419 pairs of ``Dataset/LLMBar`` (Natural and the four
  Adversarial sets), the expert ``label`` (1 or 2: the output that follows the instruction), and
  ChatGPT's recorded CoT verdicts (``evaluators/ChatGPT/CoT/result.json``) in both presentation
  orders: ``llmbar_pairwise.json`` holds the order a-first as ``metric_output`` and the other as
  ``metric_output_swapped`` (in the same a / b terms), binary ("is response a better").
  ``--both-orders FILE`` also writes the 833 (pair, order) rows with a verdict as separate
  samples, the second order with its responses swapped (a long-text file for timing the
  simulated LLM; not bundled).

Run from the repository root on clones of the two repositories::

    python -m benchmarks.public.convert --pandalm ../PandaLM --llmbar ../LLMBar

It writes into ``benchmarks/data/`` (``--out DIR`` elsewhere) and prints each file's size. The
reference figures of these files are tested in ``tests/evaluation/test_public_reference.py``.
"""

from __future__ import annotations

import argparse
import json
import math
from collections import Counter
from pathlib import Path
from typing import Any

PANDALM_CODES = {1: 1.0, 2: 0.0, 0: 0.5}
PANDALM_JUDGE = {"1": 1.0, "2": 0.0, "Tie": 0.5}
VERDICT_NAMES = {1.0: "a", 0.0: "b", 0.5: "tie"}
PROMPT = "pairwise_comparison_prompt"
LLMBAR_SETS = (
    "Natural",
    "Adversarial/Neighbor",
    "Adversarial/GPTInst",
    "Adversarial/GPTOut",
    "Adversarial/Manual",
)


def _question(instruction: str, given: str) -> str:
    return f"{instruction}\n\n{given}" if given.strip() else instruction


def _text(value: Any) -> str:
    """A response as text (PandaLM's file holds a few answers "True" as the JSON value true)."""
    return value if isinstance(value, str) else json.dumps(value).capitalize()


def _trace(verdict: float, reason: str) -> dict[str, Any]:
    output: dict[str, Any] = {"reason": reason}
    if not math.isnan(verdict):
        output["verdict"] = VERDICT_NAMES[verdict]
    return {PROMPT: {"prompt_input": {}, "prompt_output": output}}


def _majority(votes: list[float]) -> float | None:
    (top, count), *rest = Counter(votes).most_common(2) + [(None, 0)]
    return top if count > rest[0][1] else None


def pandalm(root: Path) -> list[dict[str, Any]]:
    """The 3-way samples of a PandaLM clone at ``root``."""
    items = json.loads((root / "data" / "testset-v1.json").read_text(encoding="utf-8"))
    judged = {j["idx"]: j for j in json.loads((root / "data" / "gpt-3.5-turbo-testset-v1.json").read_text())}
    three = []
    for item in items:
        judge = judged[item["idx"]]
        votes = {f"annotator{k}": PANDALM_CODES[item[f"annotator{k}"]] for k in (1, 2, 3)}
        majority = _majority(list(votes.values()))
        verdict = PANDALM_JUDGE.get(judge["gpt_result"], math.nan)
        three.append(
            {
                "id": f"pandalm-{item['idx']}",
                "metric_input": {
                    "user_input": _question(item["instruction"], item.get("input", "")),
                    "response_a": _text(item["response1"]),
                    "response_b": _text(item["response2"]),
                },
                "metric_output": verdict,
                "is_accepted": verdict == majority,
                "target": majority,
                "annotator_labels": votes,
                "prompts": _trace(verdict, judge["gpt_reason"]),
            }
        )
    return three


def binary_of(three: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """ "Is response a better" (1 / 0) samples of 3-way ones, on the pairs whose majority is no tie;
    a recorded or an annotator's tie counts as "not a"."""
    binary = []
    for sample in three:
        majority, verdict = sample["target"], sample["metric_output"]
        if majority is None or majority == 0.5:
            continue
        a_better = math.nan if math.isnan(verdict) else float(verdict == 1.0)
        reason = sample["prompts"][PROMPT]["prompt_output"]["reason"]
        binary.append(
            {
                **sample,
                "metric_output": a_better,
                "is_accepted": a_better == float(majority == 1.0),
                "target": float(majority == 1.0),
                "annotator_labels": {k: float(v == 1.0) for k, v in sample["annotator_labels"].items()},
                "prompts": _trace(a_better, reason),
            }
        )
    return binary


def _winner(value: Any) -> float:
    return {"1": 1.0, "2": 0.0, 1: 1.0, 2: 0.0}.get(value, math.nan)


def llmbar(root: Path) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(one sample per pair with both orders' verdicts, one sample per (pair, order) with a
    verdict) of an LLMBar clone at ``root``."""
    pairs, rows = [], []
    for subset in LLMBAR_SETS:
        folder = root / "Dataset" / "LLMBar" / subset
        results = json.loads((folder / "evaluators" / "ChatGPT" / "CoT" / "result.json").read_text())
        for n, item in enumerate(results):
            orders = {k: v for r in item["results"] for k, v in r.items()}
            first, second = orders.get("swap = False", {}), orders.get("swap = True", {})
            label = _winner(item["label"])
            verdict, swapped = _winner(first.get("winner")), _winner(second.get("winner"))
            question, a, b = item["input"], item["output_1"], item["output_2"]
            sample = {
                "id": f"llmbar-{subset.lower().replace('/', '-')}-{n}",
                "subset": subset,
                "metric_input": {"user_input": question, "response_a": a, "response_b": b},
                "metric_output": verdict,
                "metric_output_swapped": None if math.isnan(swapped) else swapped,
                "is_accepted": verdict == label,
                "target": label,
                "prompts": _trace(verdict, (first.get("completion") or [""])[0]),
            }
            pairs.append(sample)
            if not math.isnan(verdict):
                rows.append({k: v for k, v in sample.items() if k != "metric_output_swapped"})
            if not math.isnan(swapped):  # shown b first: the same pair with its responses swapped
                rows.append(
                    {
                        "id": f"{sample['id']}-swapped",
                        "subset": subset,
                        "metric_input": {"user_input": question, "response_a": b, "response_b": a},
                        "metric_output": 1.0 - swapped,
                        "is_accepted": swapped == label,
                        "target": 1.0 - label,
                        "prompts": _trace(1.0 - swapped, (second.get("completion") or [""])[0]),
                    }
                )
    return pairs, rows


def _write(path: Path, name: str, samples: list[dict[str, Any]]) -> None:
    path.write_text(
        json.dumps({name: samples}, ensure_ascii=False, separators=(",", ":")) + "\n", encoding="utf-8"
    )
    print(f"{path}: {len(samples)} samples, {path.stat().st_size / 1e6:.2f} MB")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pandalm", type=Path, help="a clone of github.com/WeOpenML/PandaLM")
    parser.add_argument("--llmbar", type=Path, help="a clone of github.com/princeton-nlp/LLMBar")
    parser.add_argument("--out", type=Path, default=Path("benchmarks/data"), help="output folder")
    parser.add_argument("--both-orders", type=Path, metavar="FILE", help="also write LLMBar's 833 order rows")
    parser.add_argument("--binary", type=Path, metavar="FILE", help="also write PandaLM's 'is a better' file")
    args = parser.parse_args(argv)
    if args.pandalm is not None:
        three = pandalm(args.pandalm)
        _write(args.out / "pandalm_pairwise.json", "pandalm", three)
        if args.binary is not None:
            _write(args.binary, "pandalm", binary_of(three))
    if args.llmbar is not None:
        pairs, rows = llmbar(args.llmbar)
        _write(args.out / "llmbar_pairwise.json", "llmbar", pairs)
        if args.both_orders is not None:
            _write(args.both_orders, "llmbar", rows)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
