"""The examples stage: candidates with teaching examples verified like any other, kept only
where they win; ``strategy: examples``; the result's example store; evaluate with it."""

from __future__ import annotations

import asyncio
import json

import pytest
from pydantic import ValidationError

from promptevolver import AspectCritic, BinaryMetricLoss, GeneticConfig, GeneticOptimizer
from promptevolver.config._models import RunConfig
from promptevolver.errors import CheckpointError
from promptevolver.judge._prompts import rendered_examples, split_rendered
from promptevolver.llm import ScriptedLLM
from promptevolver.llm._base import LLMRequest
from promptevolver.rundir import load_examples
from promptevolver.runs._evaluate import score_instructions
from promptevolver.runs._outcome import stage_line

from ..helpers import PROMPT, make_dataset

DEFINITION = "Is the answer right?"


def _llm(ds, *, examples_help: bool, requests: list | None = None) -> ScriptedLLM:
    """The recorded verdict without examples; with examples the human's (``examples_help``)
    or the opposite of it. Meta calls: a rewrite that changes nothing the judge reads."""
    index = {json.dumps(s.metric_input, sort_keys=True): i for i, s in enumerate(ds)}
    labels = [int(y) for y in ds.labels()]
    originals = [int(s.prompts[PROMPT].prompt_output["verdict"]) for s in ds]

    def handler(request: LLMRequest) -> str:
        if requests is not None:
            requests.append(request)
        rendered = split_rendered(request.messages)
        if rendered is None:
            if request.operation == "feedback":
                return json.dumps({"feedback": [{"lesson": "be careful", "explains": [1]}]})
            return json.dumps({"instruction": f"careful {request.sample_index}"})
        position = index[json.dumps(rendered[1], sort_keys=True)]
        if rendered_examples(request.messages):
            verdict = labels[position] if examples_help else 1 - labels[position]
        else:
            verdict = originals[position]
        return json.dumps({"reason": "r", "verdict": verdict})

    return ScriptedLLM(handler=handler)


def _optimize(ds, llm, run_dir=None, resume=False, **config):
    metric = AspectCritic(name=ds.name, definition=DEFINITION, prompt_name=PROMPT)
    opt = GeneticOptimizer(metric=metric, llm=llm)
    return opt.optimize(ds, BinaryMetricLoss(), {"random_seed": 3, **config}, run_dir=run_dir, resume=resume)


@pytest.fixture(scope="module")
def ds():
    return make_dataset(80, 30)


def test_strategy_examples_makes_no_meta_call_and_keeps_examples_that_win(ds, tmp_path):
    llm = _llm(ds, examples_help=True)
    result = _optimize(ds, llm, tmp_path, strategy="examples", examples={"policy": "retrieval", "k": 3})
    assert result.usage["llm_calls"]["meta"] == 0
    assert result.stages["distill"]["ran"] is False
    assert result.best_instructions == result.seed_instructions
    assert result.example_policy == "retrieval" and result.produced_by == "examples"
    assert result.scores["best"]["validation"] > result.scores["seed"]["validation"]
    tried = result.stages["examples"]["tried"]
    assert [row["policy"] for row in tried] == ["retrieval"] and tried[0]["p_better"] >= 0.7
    # the store: the train pool during the run; every annotated sample once the choice is made
    store = result.example_store()
    usable = [p for p, y in enumerate(ds.labels()) if y is not None]
    assert store is not None and sorted(store.positions) == usable
    validation = result.split.get("validation_positions") or []
    assert validation and result.examples["pool_during_the_run"] == len(usable) - len(validation)
    shown = result.examples_for(ds.samples[0].metric_input)
    assert len(shown) == 3 and ds.samples[0] not in shown
    # prompt tokens per judge call: in usage and per stage; examples make the calls longer
    per_call = result.usage["prompt_tokens_per_call"]["judge"]
    stages = result.stages
    assert (
        stages["examples"]["prompt_tokens_per_judge_call"] > stages["verify"]["prompt_tokens_per_judge_call"]
    )
    assert per_call > 0
    assert "the result comes from the examples stage" in stage_line(result)
    result.to_json(tmp_path / "result.json")
    on_disk = json.loads((tmp_path / "result.json").read_text())
    assert on_disk["examples"]["policy"] == "retrieval"
    assert on_disk["examples"]["store"]["positions"] == store.positions


def test_examples_that_hurt_are_not_kept(ds):
    result = _optimize(ds, _llm(ds, examples_help=False), strategy="examples")
    assert result.example_policy == "none" and result.examples_for(ds.samples[0].metric_input) == []
    assert {row["policy"] for row in result.stages["examples"]["tried"]} == {"static", "retrieval"}
    assert result.best_id == 0
    assert result.usage["llm_calls"]["meta"] == 0 and result.stages["cross_fit"]["ran"] is False


def test_policy_none_judges_no_example_and_the_default_tries_both(ds):
    requests: list = []
    none = _optimize(ds, _llm(ds, examples_help=True, requests=requests), examples={"policy": "none"})
    assert not any(rendered_examples(r.messages) for r in requests)
    assert none.example_policy == "none" and none.stages["examples"]["tried"] == []
    auto = _optimize(ds, _llm(ds, examples_help=True), refit_below=0)  # held out (small data: test_refit)
    assert auto.example_policy in ("static", "retrieval")
    assert auto.usage["llm_calls"]["meta"] > 0  # the distillation ran first
    base = auto.stages["examples"]["base"]
    assert next(c for c in auto.lineage if c["id"] == auto.best_id)["parents"] == [base]


def test_strategy_genetic_ignores_examples(ds):
    requests: list = []
    _optimize(
        ds,
        _llm(ds, examples_help=True, requests=requests),
        strategy="genetic",
        generations=1,
        population_size=2,
    )
    assert not any(rendered_examples(r.messages) for r in requests)


def test_resume_after_the_examples_stage_repeats_no_call(ds, tmp_path):
    llm = _llm(ds, examples_help=True)
    first = _optimize(ds, llm, tmp_path, strategy="examples")
    calls = llm.usage.total_calls
    metric = AspectCritic(name=ds.name, definition=DEFINITION, prompt_name=PROMPT)
    again = GeneticOptimizer(metric=metric, llm=llm).optimize(
        ds, BinaryMetricLoss(), {"random_seed": 3, "strategy": "examples"}, run_dir=tmp_path, resume=True
    )
    assert llm.usage.total_calls == calls
    assert again.example_policy == first.example_policy and again.best_id == first.best_id


def test_a_checkpoint_written_before_examples_had_a_similarity_resumes(ds, tmp_path):
    llm = _llm(ds, examples_help=True)
    first = _optimize(ds, llm, tmp_path, strategy="examples")
    path = tmp_path / "checkpoint.json"
    data = json.loads(path.read_text())
    assert data["config"]["examples"]["similarity"] == "tfidf"
    for key in ("similarity", "embeddings"):  # as the version before embeddings wrote it
        del data["config"]["examples"][key]
    path.write_text(json.dumps(data))
    calls = llm.usage.total_calls
    again = _optimize(ds, llm, tmp_path, strategy="examples", resume=True)
    assert llm.usage.total_calls == calls and again.best_id == first.best_id
    data["config"]["examples"]["k"] = 2  # a real difference is still refused
    path.write_text(json.dumps(data))
    with pytest.raises(CheckpointError, match="examples"):
        _optimize(ds, llm, tmp_path, strategy="examples", resume=True)


def test_the_examples_key_is_checked():
    with pytest.raises(ValidationError, match="examples.polic"):
        GeneticConfig.model_validate({"examples": {"polic": "none"}})
    with pytest.raises(ValidationError):
        GeneticConfig.model_validate({"examples": {"policy": "dynamic"}})
    with pytest.raises(ValidationError):
        GeneticConfig.model_validate({"examples": {"k": 0}})


def test_evaluate_judges_with_the_result_examples(ds, tmp_path):
    result = _optimize(
        ds, _llm(ds, examples_help=True), strategy="examples", examples={"policy": "retrieval"}
    )
    result.to_json(tmp_path / "result.json")
    block = load_examples(tmp_path)
    assert block["policy"] == "retrieval"
    path = tmp_path / "annotations.json"
    ds.to_json(path)
    config = RunConfig.model_validate(
        {
            "metric": {"name": ds.name, "definition": DEFINITION},
            "dataset": str(path),
            "llm": {"provider": "fake"},
        }
    )
    instructions = json.loads((tmp_path / "result.json").read_text())["best_instructions"]
    with_examples = asyncio.run(score_instructions(config, instructions, dataset=ds, examples=block))
    plain = asyncio.run(score_instructions(config, instructions, dataset=ds))
    assert (
        with_examples.usage["prompt_tokens_per_call"]["judge"]
        > plain.usage["prompt_tokens_per_call"]["judge"]
    )
    assert load_examples(tmp_path / "result.json") == block
    (tmp_path / "plain.json").write_text(json.dumps(instructions))
    assert load_examples(tmp_path / "plain.json") == {"policy": "none"}


class _NoExamples(AspectCritic):
    """A judge whose ajudge takes no examples (as a Ragas metric object or a user's judge)."""

    async def ajudge(self, inputs, *, llm=None, instructions=None, sample_index=0, temperature=None):
        return await super().ajudge(
            inputs, llm=llm, instructions=instructions, sample_index=sample_index, temperature=temperature
        )


def test_a_judge_that_cannot_show_examples_is_judged_without_and_the_run_says_why(ds):
    requests: list = []
    metric = _NoExamples(name=ds.name, definition=DEFINITION, prompt_name=PROMPT)
    result = GeneticOptimizer(metric=metric, llm=_llm(ds, examples_help=True, requests=requests)).optimize(
        ds, BinaryMetricLoss(), {"random_seed": 3, "strategy": "examples"}
    )
    assert not any(rendered_examples(r.messages) for r in requests)
    assert result.example_policy == "none" and result.stages["examples"]["tried"] == []
    assert "cannot show examples" in result.stages["examples"]["why"]


def test_an_ensemble_shows_every_judge_the_same_examples(ds):
    """A JudgeEnsemble of an AspectCritic takes part in the examples stage: each of its judges'
    calls carries the examples, and the stage keeps them where they win."""
    from promptevolver import JudgeEnsemble

    requests: list = []
    llm = _llm(ds, examples_help=True, requests=requests)
    critic = AspectCritic(name=ds.name, definition=DEFINITION, prompt_name=PROMPT)
    ensemble = JudgeEnsemble(critic, num_judges=3)
    result = GeneticOptimizer(metric=ensemble, llm=llm).optimize(
        ds, BinaryMetricLoss(), {"random_seed": 3, "strategy": "examples"}
    )
    assert result.stages["examples"]["tried"], result.stages["examples"].get("why")
    assert result.example_policy in ("static", "retrieval")
    shown = [r for r in requests if split_rendered(r.messages) is not None and rendered_examples(r.messages)]
    indices = {r.sample_index % 3 for r in shown}
    assert indices == {0, 1, 2}  # every judge of the ensemble was shown examples


class _NoExamples(AspectCritic):
    """A user's judge whose ajudge takes no examples."""

    async def ajudge(self, inputs, *, llm=None, instructions=None, sample_index=0, temperature=None):  # type: ignore[override]
        return await super().ajudge(
            inputs, llm=llm, instructions=instructions, sample_index=sample_index, temperature=temperature
        )


def test_an_ensemble_of_a_judge_without_examples_refuses_them():
    from promptevolver import JudgeEnsemble

    ensemble = JudgeEnsemble(_NoExamples(name="plain", definition=DEFINITION), num_judges=2)
    assert not ensemble.shows_examples()
    with pytest.raises(TypeError, match="cannot show teaching examples"):
        asyncio.run(ensemble.ajudge({"user_input": "q", "response": "r"}, examples=[object()]))  # type: ignore[list-item]
