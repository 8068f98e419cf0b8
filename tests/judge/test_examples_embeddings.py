"""Retrieval by embeddings (``optimizer.examples.similarity: embeddings``) through a local
OpenAI-compatible ``/v1/embeddings`` endpoint: it picks the nearest by the model's vectors (not
by shared words), the store records its similarity and retrieves the same way when read back,
a run embeds before any judge call, a dead endpoint stops it in one line (or falls back to
TF-IDF only when asked), and no secret reaches the result."""

from __future__ import annotations

import asyncio
import json
import re
import warnings

import pytest
from pydantic import ValidationError

from promptevolver import AspectCritic, BinaryMetricLoss, GeneticConfig, GeneticOptimizer
from promptevolver.annotations._models import SampleAnnotation
from promptevolver.errors import ConfigError, PermanentLLMError
from promptevolver.judge._examples import ExampleStore, prepare_store
from promptevolver.judge._prompts import rendered_examples, split_rendered
from promptevolver.llm import ScriptedLLM
from promptevolver.llm._base import LLMRequest
from promptevolver.llm.openai import OpenAIEmbeddings
from promptevolver.testing._openai_server import LocalOpenAIServer

from ..helpers import PROMPT, make_dataset

KEY_ENV = "PE_TEST_EMBEDDINGS_KEY"
KEY = "sk-embeddings-secret-42"
#: A toy embedding model that knows synonyms: each concept is one coordinate.
CONCEPTS = {"car": 0, "automobile": 0, "banana": 1, "apple": 1, "price": 2, "cost": 2}


def concept_vector(text: str) -> list[float]:
    vector = [0.0, 0.0, 0.0, 0.01]  # the last: no text is the zero vector
    for word in re.findall(r"\w+", text.lower()):
        if word in CONCEPTS:
            vector[CONCEPTS[word]] += 1.0
    return vector


def _sample(user_input: str, response: str, label: int = 1) -> SampleAnnotation:
    return SampleAnnotation.model_validate(
        {
            "metric_input": {"user_input": user_input, "response": response},
            "metric_output": label,
            "is_accepted": True,
            "prompts": {PROMPT: {"prompt_input": {}, "prompt_output": {"reason": "r", "verdict": label}}},
        }
    )


POOL = [_sample("automobile cost", "fine"), _sample("banana price today", "fine today")]
QUERY = {"user_input": "car price today", "response": "today"}


@pytest.fixture
def server():
    with LocalOpenAIServer(lambda _body: "unused", embed=concept_vector) as s:
        yield s


def _embedder(server, **kwargs) -> OpenAIEmbeddings:
    return OpenAIEmbeddings(
        model="concepts", base_url=server.base_url, api_key=KEY, retry_initial_s=0.0, **kwargs
    )


def test_embeddings_retrieve_the_nearest_by_meaning_where_tfidf_matches_words(server):
    tfidf = ExampleStore(POOL, [0, 1], k=1)
    embedded = ExampleStore(POOL, [0, 1], k=1, embedder=_embedder(server))
    assert tfidf.positions_for("retrieval", QUERY) == [1]  # shares "price" and "today"
    assert embedded.positions_for("retrieval", QUERY) == [0]  # car ~ automobile, price ~ cost
    assert embedded.similarity == "embeddings" and tfidf.similarity == "tfidf"
    # never the judged sample itself, and min_similarity holds for cosines of embeddings
    assert embedded.positions_for("retrieval", POOL[0].metric_input) == [1]
    strict = ExampleStore(POOL, [0, 1], k=2, min_similarity=0.9, embedder=_embedder(server))
    assert strict.positions_for("retrieval", QUERY) == [0]


def test_the_store_embeds_each_text_once(server):
    store = ExampleStore(POOL, [0, 1], k=1, embedder=_embedder(server))
    asyncio.run(store.prepare([QUERY]))
    calls = len(server.requests)
    for _ in range(3):
        store.positions_for("retrieval", QUERY)
        store.extended([_sample("apple cost", "x")], [2]).positions_for("retrieval", QUERY)
    assert len(server.requests) == calls + 1  # only the added sample's text was new


def test_the_store_records_its_similarity_and_retrieves_the_same_when_read_back(
    server, tmp_path, monkeypatch
):
    monkeypatch.setenv(KEY_ENV, KEY)
    config = GeneticConfig.model_validate(
        {
            "examples": {
                "policy": "retrieval",
                "similarity": "embeddings",
                "embeddings": {
                    "model": "concepts",
                    "base_url": server.base_url,
                    "api_key_env": KEY_ENV,
                    "cache": str(tmp_path / "vectors.sqlite"),
                },
            }
        }
    )
    assert config.examples.embeddings is not None
    store = ExampleStore(POOL, [0, 1], k=1, embedder=config.examples.embeddings.build())
    data = json.loads(json.dumps(store.to_dict()))
    assert data["similarity"]["kind"] == "embeddings" and data["similarity"]["model"] == "concepts"
    assert data["similarity"]["api_key_env"] == KEY_ENV and KEY not in json.dumps(data)
    back = ExampleStore.from_dict(data)
    assert back.similarity == "embeddings" and back.positions_for("retrieval", QUERY) == [0]
    # without the key the read-back store says what it needs, at its first retrieval
    monkeypatch.delenv(KEY_ENV)
    needs_key = ExampleStore.from_dict(data)
    assert needs_key.positions_for("static", {}) == []  # no call, no key needed
    with pytest.raises(ConfigError, match=KEY_ENV):
        needs_key.positions_for("retrieval", QUERY)
    # a record without similarity (before 0.4) is TF-IDF
    old = {k: v for k, v in data.items() if k != "similarity"}
    assert ExampleStore.from_dict(old).positions_for("retrieval", QUERY) == [1]


def test_a_secret_in_the_url_is_masked_in_the_record_and_refused_when_read_back(server, monkeypatch):
    monkeypatch.setenv(KEY_ENV, KEY)
    config = GeneticConfig.model_validate(
        {
            "examples": {
                "similarity": "embeddings",
                "embeddings": {
                    "model": "m",
                    "base_url": server.base_url + "?api-key=URLSECRET",
                    "api_key_env": KEY_ENV,
                },
            }
        }
    )
    dumped = json.dumps(config.model_dump(mode="json"))
    assert "URLSECRET" not in dumped and "api-key=***" in dumped
    assert config.examples.embeddings is not None
    record = {"kind": "embeddings", **config.examples.embeddings.record()}
    with pytest.raises(ConfigError, match="secret removed"):
        ExampleStore.from_dict({**ExampleStore(POOL, [0, 1]).to_dict(), "similarity": record}).embedder()


def test_a_finished_store_with_a_dead_endpoint_stops_in_one_line(server):
    store = ExampleStore(POOL, [0, 1], k=1, embedder=_embedder(server, max_attempts=2))
    store.embedder().sleep = lambda _s: None  # type: ignore[union-attr]
    server.stop()
    with pytest.raises(PermanentLLMError) as caught:
        asyncio.run(prepare_store(store, [QUERY]))
    assert "connection refused" in str(caught.value).lower() and "\n" not in str(caught.value)
    assert KEY not in str(caught.value)


def test_the_config_takes_embeddings_only_with_their_similarity():
    with pytest.raises(ValidationError, match="needs 'embeddings"):
        GeneticConfig.model_validate({"examples": {"similarity": "embeddings"}})
    with pytest.raises(ValidationError, match="similarity is 'tfidf'"):
        GeneticConfig.model_validate({"examples": {"embeddings": {"model": "m"}}})
    with pytest.raises(ValidationError, match="examples.embeddings.modle"):
        GeneticConfig.model_validate({"examples": {"similarity": "embeddings", "embeddings": {"modle": "m"}}})


# -- a whole run (Python API) -------------------------------------------------------------------


def _judge(ds, requests: list) -> ScriptedLLM:
    """The recorded verdict without examples; the human's with examples (examples help)."""
    index = {json.dumps(s.metric_input, sort_keys=True): i for i, s in enumerate(ds)}
    labels = [int(y) for y in ds.labels()]
    originals = [int(s.prompts[PROMPT].prompt_output["verdict"]) for s in ds]

    def handler(request: LLMRequest) -> str:
        requests.append(request)
        rendered = split_rendered(request.messages)
        assert rendered is not None
        position = index[json.dumps(rendered[1], sort_keys=True)]
        verdict = labels[position] if rendered_examples(request.messages) else originals[position]
        return json.dumps({"reason": "r", "verdict": verdict})

    return ScriptedLLM(handler=handler)


def _run(ds, llm, embeddings: dict, run_dir=None):
    metric = AspectCritic(name=ds.name, definition="Is the answer right?", prompt_name=PROMPT)
    config = {
        "random_seed": 3,
        "strategy": "examples",
        "examples": {"policy": "retrieval", "k": 3, "similarity": "embeddings", "embeddings": embeddings},
    }
    return GeneticOptimizer(metric=metric, llm=llm).optimize(ds, BinaryMetricLoss(), config, run_dir=run_dir)


@pytest.fixture(scope="module")
def ds():
    return make_dataset(40, 14)


def test_a_run_embeds_once_before_judging_records_it_and_a_rerun_hits_the_cache(ds, tmp_path, monkeypatch):
    monkeypatch.setenv(KEY_ENV, KEY)
    with LocalOpenAIServer(lambda _body: "unused") as server:
        settings = {
            "model": "bow",
            "base_url": server.base_url,
            "api_key_env": KEY_ENV,
            "cache": str(tmp_path / "vectors.sqlite"),
            "batch_size": 16,
        }
        requests: list = []
        result = _run(ds, _judge(ds, requests), settings, run_dir=tmp_path / "run")
        embedded = [t for r in server.requests for t in r["input"]]
        assert len(embedded) == len(set(embedded)) == len(ds.samples)  # every sample once
        assert result.usage["llm_calls"]["meta"] == 0
        stage = result.stages["examples"]
        assert stage["similarity"]["kind"] == "embeddings" and stage["embeddings"]["calls"] == len(
            server.requests
        )
        assert stage["embeddings"]["texts"] == len(ds.samples) and stage["embeddings"]["failures"] == 0
        assert result.example_policy == "retrieval"
        assert result.examples["store"]["similarity"]["model"] == "bow"
        shown = result.examples_for(ds.samples[0].metric_input)  # the read-back store, through the cache
        assert len(shown) == 3 and ds.samples[0] not in shown
        on_disk = "".join(p.read_text(errors="replace") for p in (tmp_path / "run").rglob("*") if p.is_file())
        assert KEY not in on_disk
        calls = len(server.requests)
        again = _run(ds, _judge(ds, []), settings)
        assert len(server.requests) == calls  # the cache file answered every text
        assert again.stages["examples"]["embeddings"]["calls"] == 0
        assert again.best_id == result.best_id and again.scores == result.scores


def test_a_dead_endpoint_stops_the_run_before_any_judge_call(ds, monkeypatch):
    monkeypatch.setenv(KEY_ENV, KEY)
    server = LocalOpenAIServer(lambda _body: "").start()
    url = server.base_url
    server.stop()
    requests: list = []
    llm = _judge(ds, requests)
    with pytest.raises(PermanentLLMError) as caught:
        _run(
            ds,
            llm,
            {"model": "bow", "base_url": url, "api_key_env": KEY_ENV, "cache": None, "max_attempts": 1},
        )
    message = str(caught.value)
    assert "optimizer.examples.similarity is 'embeddings'" in message and "on_failure: tfidf" in message
    assert "connection refused" in message.lower() and "\n" not in message and KEY not in message
    assert requests == [] and llm.usage.total_calls == 0


def test_tfidf_replaces_a_dead_endpoint_only_when_asked_and_the_result_says_so(ds, monkeypatch):
    monkeypatch.setenv(KEY_ENV, KEY)
    server = LocalOpenAIServer(lambda _body: "").start()
    url = server.base_url
    server.stop()
    settings = {"model": "bow", "base_url": url, "api_key_env": KEY_ENV, "cache": None, "max_attempts": 1}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = _run(ds, _judge(ds, []), {**settings, "on_failure": "tfidf"})
    assert any("TF-IDF" in str(w.message) for w in caught)
    similarity = result.stages["examples"]["similarity"]
    assert similarity["kind"] == "tfidf" and "connection refused" in similarity["fallback"]["cause"].lower()
    assert similarity["fallback"]["from"]["model"] == "bow"
    assert result.examples["store"]["similarity"]["kind"] == "tfidf"
    assert len(result.examples_for(ds.samples[0].metric_input)) == 3


def test_evaluate_retrieves_with_the_run_similarity_and_a_dead_endpoint_stops_it(ds, tmp_path, monkeypatch):
    from promptevolver.config._models import RunConfig
    from promptevolver.rundir import load_examples
    from promptevolver.runs._evaluate import score_instructions

    monkeypatch.setenv(KEY_ENV, KEY)
    server = LocalOpenAIServer(lambda _body: "unused").start()
    settings = {"model": "bow", "base_url": server.base_url, "api_key_env": KEY_ENV, "cache": None}
    result = _run(ds, _judge(ds, []), {**settings, "max_attempts": 1})
    result.to_json(tmp_path / "result.json")
    block = load_examples(tmp_path)
    assert block["policy"] == "retrieval" and block["store"]["similarity"]["kind"] == "embeddings"
    ds.to_json(tmp_path / "annotations.json")
    config = RunConfig.model_validate(
        {
            "metric": {"name": ds.name, "definition": "Is the answer right?"},
            "dataset": str(tmp_path / "annotations.json"),
            "llm": {"provider": "fake"},
        }
    )
    sent = len(server.requests)
    card = asyncio.run(score_instructions(config, result.best_instructions, dataset=ds, examples=block))
    assert len(server.requests) > sent  # a new process's store embeds (no cache file here)
    assert card.usage["llm_calls"]["judge"] == len(ds.samples)
    server.stop()
    with pytest.raises(PermanentLLMError, match="retrieves by embeddings"):
        asyncio.run(score_instructions(config, result.best_instructions, dataset=ds, examples=block))
