"""Against a real model: what a user relies on when pointing promptevolver at a local server.

Runs when ``PROMPTEVOLVER_REAL_LLM_BASE_URL`` names an OpenAI-compatible server (``.ci/run`` starts
llama-cpp-python serving SmolLM2-135M-Instruct with ``.ci/llama_server.sh``); skipped otherwise.
``PROMPTEVOLVER_REAL_LLM_MODEL`` is the model name (default ``smollm2``) and
``PROMPTEVOLVER_REAL_LLM_MODE`` the structured-output mode negotiation must end in (default
``json_object``, llama.cpp's). Each test records its figures with ``record_property`` (shown in
JUnit XML) and prints them (``pytest -s``).

A server answers one request at a time and a tiny model is slow (seconds per judge call on two
busy cores), so the selection is small: ~40 judge and ~10 meta calls in all.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest
import yaml

from promptevolver import AspectCritic, SingleMetricAnnotation
from promptevolver.judge._protocol import Judgement
from promptevolver.llm.openai import OpenAIClient
from promptevolver.optimizers.operators import _meta_prompts as ops

from ..conftest import AC_DEFINITION, AC_FILE, ROOT

BASE_URL = os.environ.get("PROMPTEVOLVER_REAL_LLM_BASE_URL")
MODEL = os.environ.get("PROMPTEVOLVER_REAL_LLM_MODEL", "smollm2")
EXPECTED_MODE = os.environ.get("PROMPTEVOLVER_REAL_LLM_MODE", "json_object")
#: A fake key that must never show up in any output (local servers ignore keys).
KEY = "sk-real-llm-SECRET-7f3a9c1e5b2d4f60"

pytestmark = [
    pytest.mark.real_llm,
    pytest.mark.skipif(
        not BASE_URL,
        reason="no real LLM server: set PROMPTEVOLVER_REAL_LLM_BASE_URL (.ci/llama_server.sh starts one)",
    ),
]

Record = Callable[[str, object], None]


def client(**kwargs: Any) -> OpenAIClient:
    # One request at a time is what a llama.cpp server serves anyway; a long timeout because a
    # queued request waits for the ones ahead of it.
    options: dict[str, Any] = {
        "model": MODEL,
        "base_url": BASE_URL,
        "api_key": KEY,
        "timeout_s": 300.0,
        "max_concurrency": 2,
        "retry_initial_s": 0.5,
    }
    return OpenAIClient(**{**options, **kwargs})


def judge_all(
    llm: OpenAIClient, dataset: SingleMetricAnnotation, positions: Sequence[int]
) -> list[Judgement]:
    metric = AspectCritic(name="answer_correctness", definition=AC_DEFINITION)

    async def main() -> list[Judgement]:
        async with llm:
            await llm.preflight()
            return list(
                await asyncio.gather(
                    *(metric.ajudge(dataset.samples[p].metric_input, llm=llm) for p in positions)
                )
            )

    return asyncio.run(main())


def test_negotiation_ends_in_the_servers_mode(record_property: Record) -> None:
    llm = client()
    dataset = SingleMetricAnnotation.from_json(AC_FILE)
    [judged] = judge_all(llm, dataset, [0])
    record_property("structured_output", llm.negotiation.to_dict())
    print(f"negotiation: {llm.negotiation.to_dict()}")
    assert llm.structured_output_mode == EXPECTED_MODE and llm.negotiation.confirmed
    assert llm.usage.retries == 0  # a refused mode is not retried
    assert judged.failed or judged.score in (0.0, 1.0)


def test_the_judge_answers_at_least_90_percent_of_evaluations(record_property: Record) -> None:
    llm = client()
    dataset = SingleMetricAnnotation.from_json(AC_FILE)
    positions = [i for i, label in enumerate(dataset.labels()) if label is not None]
    judged = judge_all(llm, dataset, positions)
    parsed = sum(not j.failed for j in judged)
    share = parsed / len(judged)
    errors = sorted({str(j.error)[:120] for j in judged if j.failed})
    record_property("judge_parsed", f"{parsed}/{len(judged)}")
    print(
        f"judge evaluations parsed: {parsed}/{len(judged)} ({share:.0%}) in mode {llm.structured_output_mode}"
    )
    assert share >= 0.9, f"only {parsed}/{len(judged)} judge answers parsed; errors: {errors}"
    assert all(j.score in (0.0, 1.0) for j in judged if not j.failed)


def test_junk_meta_answers_are_rejected_not_crashes(record_property: Record) -> None:
    llm = client(meta_max_tokens=200)
    seed = AspectCritic(name="answer_correctness", definition=AC_DEFINITION).get_instructions()
    instruction = next(iter(seed.values()))
    wrong = ops.Example(
        inputs={"user_input": "What is the capital of France?", "reference": "Paris", "response": "Lyon"},
        expected={"verdict": 0, "reason": "Lyon is not the capital of France."},
        judged={"verdict": 1, "reason": "The response names a French city."},
    )
    right = ops.Example(
        inputs={"user_input": "2+2?", "reference": "4", "response": "four"}, expected={"verdict": 1}
    )

    async def main() -> dict[str, ops.OperatorOutcome]:
        async with llm:
            return {
                "reverse_engineer": await ops.reverse_engineer(
                    llm,
                    metric_name="answer_correctness",
                    examples=[wrong, right],
                    temperature=0.0,
                    sample_index=0,
                ),
                "feedback": await ops.feedback(
                    llm,
                    instruction=instruction,
                    failures=[wrong],
                    max_feedbacks=3,
                    temperature=0.0,
                    sample_index=0,
                ),
                "rewrite": await ops.rewrite(
                    llm,
                    instruction=instruction,
                    feedback_items=["Compare the response with the reference, not with general knowledge."],
                    temperature=0.0,
                    sample_index=0,
                ),
                "crossover": await ops.crossover(
                    llm,
                    parent_a=instruction,
                    parent_b="Answer 1 only when the response states the same fact as the reference.",
                    temperature=0.0,
                    sample_index=0,
                ),
            }

    outcomes = asyncio.run(main())
    summary = {op: out.rejected or "accepted" for op, out in outcomes.items()}
    record_property("meta_outcomes", summary)
    print(f"meta outcomes: {summary}")
    assert llm.usage.meta_calls == 4 and llm.usage.failures == 0
    for out in outcomes.values():
        if out.rejected is None:  # an accepted answer is a usable instruction or feedback list
            assert (isinstance(out.value, str) and out.value.strip()) or (
                isinstance(out.value, list) and out.value
            )
        else:
            assert out.value is None and out.rejected.strip()


def test_optimize_end_to_end_completes_or_stops_clearly(tmp_path: Path, record_property: Record) -> None:
    raw = yaml.safe_load((ROOT / "configs" / "answer_correctness.yaml").read_text())
    raw["dataset"] = str(AC_FILE)
    raw["llm"] = {
        "provider": "openai",
        "model": MODEL,
        "base_url": BASE_URL,
        "api_key_env": "PE_REAL_LLM_KEY",
        "cache": str(tmp_path / "cache.sqlite"),
        "max_concurrency": 2,
        "timeout_s": 300,
        "meta_max_tokens": 256,
        "context_tokens": 4096,  # the server's --n_ctx (.ci/llama_server.sh)
    }
    raw["optimizer"].update(population_size=2, generations=1)
    config = tmp_path / "run.yaml"
    config.write_text(yaml.safe_dump(raw))
    out_dir = tmp_path / "run"
    env = {**os.environ, "PE_REAL_LLM_KEY": KEY}
    cli = [sys.executable, "-m", "promptevolver.cli", "optimize", str(config), "--output", str(out_dir)]
    done = subprocess.run(cli, env=env, capture_output=True, text=True, timeout=1800, check=False)
    print(f"exit {done.returncode}\nstdout:\n{done.stdout}\nstderr:\n{done.stderr}")
    record_property("optimize_exit", done.returncode)
    assert KEY not in done.stdout + done.stderr
    assert "Traceback" not in done.stderr
    if done.returncode != 0:  # the failure policy stopped the run: one clear line, exit 1
        assert done.returncode == 1
        errors = [line for line in done.stderr.splitlines() if line.startswith("promptevolver: error: ")]
        assert len(errors) == 1, done.stderr
    else:
        result = json.loads((out_dir / "result.json").read_text())
        usage = result["usage"]
        record_property("optimize_usage", json.dumps(usage["calls_by_operation"]))
        print(f"scores {result['scores']}; rejected meta outputs {result['operator_stats']['rejected']}")
        assert usage["llm_calls"]["judge"] > 0 and result["stop_reason"]
        assert sum(result["operator_stats"]["rejected"].values()) <= usage["llm_calls"]["meta"]
    for path in [p for p in tmp_path.rglob("*") if p.is_file()]:
        assert KEY.encode() not in path.read_bytes(), f"the API key leaked into {path}"
