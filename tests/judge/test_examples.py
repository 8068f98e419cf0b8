"""Teaching examples: rendering, the store's two policies, the simulated judge's response, the
evaluator's memo key."""

from __future__ import annotations

import asyncio
import json

import pytest

from promptevolver import AspectCritic
from promptevolver.annotations import SingleMetricAnnotation
from promptevolver.evaluation._evaluator import EXAMPLES_KEY, Evaluator, candidate_key
from promptevolver.judge._examples import ExampleStore
from promptevolver.judge._prompts import rendered_examples, split_rendered
from promptevolver.judge._rubric import RubricJudge
from promptevolver.llm._base import LLMRequest
from promptevolver.simulation import SimulatedJudgeLLM, SyntheticSpec, generate
from promptevolver.simulation._criteria import sample_key

from ..helpers import PROMPT, make_dataset, rule_llm


def _sample(i: int, text: str, *, label: int, original: int, reason: str | None = None) -> dict:
    edited = {"reason": reason, "verdict": label} if reason else None
    return {
        "metric_input": {"user_input": f"question {i}", "response": text},
        "metric_output": label,
        "is_accepted": True,
        "prompts": {
            PROMPT: {
                "prompt_input": {},
                "prompt_output": {"reason": "orig", "verdict": original},
                "edited_output": edited,
            }
        },
    }


def test_examples_are_rendered_as_user_assistant_pairs_before_the_judged_input():
    ds = make_dataset(6, 3)
    metric = AspectCritic(name="toy", definition="Is it right?", prompt_name=PROMPT)
    prompt = metric.get_prompts()[PROMPT]
    shown = metric.demonstrations([ds.samples[0], ds.samples[4]])
    messages = prompt.render(metric.prompt_inputs(ds.samples[5].metric_input), shown)
    assert [m.role for m in messages] == ["system", "user", "assistant", "user", "assistant", "user"]
    # the label first, then the human's reason (edited) — or no reason when none was written
    assert json.loads(messages[2].content) == {"verdict": 0, "reason": "fix0"}
    assert list(json.loads(messages[2].content)) == ["verdict", "reason"]
    assert json.loads(messages[4].content) == {"verdict": 0, "reason": "orig"}  # accepted: its output
    instruction, inputs = split_rendered(messages)
    assert inputs == metric.prompt_inputs(ds.samples[5].metric_input)
    assert instruction == prompt.instruction
    assert rendered_examples(messages) == shown
    plain = prompt.render(inputs)
    assert len(plain) == 2 and rendered_examples(plain) == []


def test_a_rejected_example_shows_the_corrected_verdict_and_a_rubric_its_score():
    ds = make_dataset(10, 2, rejected=2)
    metric = AspectCritic(name="toy", definition="Is it right?", prompt_name=PROMPT)
    ((_, output),) = metric.demonstrations([ds.samples[2]])  # rejected, no edit: the label only
    assert output == {"verdict": int(ds.labels()[2])}
    rubric = RubricJudge(name="toy", definition="How good?", score_range=(1, 5))
    sample = SingleMetricAnnotation.model_validate(
        {
            "name": "toy",
            "samples": [
                {
                    "metric_input": {"user_input": "q", "response": "a"},
                    "metric_output": 4,
                    "is_accepted": True,
                }
            ],
        }
    ).samples[0]
    assert rubric.demonstrations([sample])[0][1] == {"score": 4}


def _store_dataset() -> SingleMetricAnnotation:
    texts = [
        "the bridge is long and made of red steel",  # 0
        "the bridge is long and made of grey steel",  # 1
        "a cat sleeps on the warm windowsill",  # 2
        "the river runs fast under the old bridge",  # 3
        "purple zebras dance quietly",  # 4
    ]
    samples = [_sample(i, t, label=i % 2, original=i % 2) for i, t in enumerate(texts)]
    return SingleMetricAnnotation.model_validate({"name": "toy", "samples": samples})


def test_retrieval_shows_the_k_most_similar_most_similar_last_never_the_judged_text():
    ds = _store_dataset()
    store = ExampleStore(ds.samples, [10, 11, 12, 13, 14], k=2)
    query = ds.samples[0].metric_input
    assert store.positions_for("retrieval", query) == [13, 11]  # 1 is the closest: last
    assert 10 not in store.positions_for("retrieval", query)  # its own text is never shown
    other = {"user_input": "question 0", "response": "the bridge is long and made of red steel"}
    assert store.positions_for("retrieval", other) == store.positions_for("retrieval", query)
    strict = ExampleStore(ds.samples, [10, 11, 12, 13, 14], k=2, min_similarity=0.5)
    assert strict.positions_for("retrieval", query) == [11]
    assert store.examples_for("none", query) == []
    with pytest.raises(ValueError, match="unknown example policy"):
        store.indices_for("dynamic", query)


def test_static_takes_one_medoid_of_each_largest_group_of_corrections():
    reasons = ["the year is wrong"] * 3 + ["the tone is rude and informal"] * 2 + ["it misses the unit"]
    samples = [
        _sample(i, f"response number {i}", label=0, original=1, reason=r) for i, r in enumerate(reasons)
    ] + [_sample(9, "an agreeing response", label=1, original=1)]
    ds = SingleMetricAnnotation.model_validate({"name": "toy", "samples": samples})
    store = ExampleStore(ds.samples, list(range(7)), k=2, corrections=range(6))
    assert len(store.static) == 2
    assert store.static[0] in (0, 1, 2) and store.static[1] in (3, 4)
    assert store.positions_for("static", {"response": "anything"}) == store.static
    again = ExampleStore.from_dict(json.loads(json.dumps(store.to_dict())))
    assert again.static == store.static and again.positions == store.positions
    assert again.positions_for("retrieval", ds.samples[0].metric_input) == store.positions_for(
        "retrieval", ds.samples[0].metric_input
    )


@pytest.mark.parametrize("kwargs", [{"k": 0}, {"min_similarity": 1.5}])
def test_the_store_refuses_bad_settings(kwargs):
    ds = _store_dataset()
    with pytest.raises(ValueError):
        ExampleStore(ds.samples, range(5), **kwargs)


# --- the simulated judge ----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def world():
    ds = generate(SyntheticSpec(n_samples=200, random_seed=1))
    return ds, SimulatedJudgeLLM(dataset=ds, random_seed=3, noise=0.0)


def _ask(llm, metric, ds, position, examples, index=0):
    prompt = metric.get_prompts()[metric.prompt_name]
    messages = prompt.render(metric.prompt_inputs(ds.samples[position].metric_input), examples)
    return json.loads(llm.answer(LLMRequest(messages=messages, sample_index=index)))["verdict"]


def _taught(llm, ds):
    """(judged position, demos sharing a generic criterion with it) for corrections."""
    out = []
    keys = [sample_key(ds.samples[p].metric_input) for p in range(len(ds))]
    for p, key in enumerate(keys):
        truth = llm.world.samples.get(key)
        if truth is None or not truth.disagrees:
            continue
        generic = {c for c in truth.criteria if llm.world.criteria[c].kind == "generic"}
        mates = [q for q, k in enumerate(keys) if k != key and generic & set(llm.world.samples[k].criteria)]
        if len(mates) >= 3:
            out.append((p, mates[:3]))
    return out


def test_teaching_examples_move_the_simulated_judge_to_the_human_verdict(world):
    ds, llm = world
    metric = AspectCritic(name=ds.name, definition="Is the response correct?")
    cases = _taught(llm, ds)
    assert len(cases) >= 10
    labels = ds.labels()
    plain = sum(_ask(llm, metric, ds, p, []) == labels[p] for p, _ in cases)
    taught = sum(
        _ask(llm, metric, ds, p, metric.demonstrations([ds.samples[q] for q in mates])) == labels[p]
        for p, mates in cases
    )
    assert plain == 0  # uncovered corrections: the recorded verdict, wrong
    assert taught >= 0.8 * len(cases)  # 1 - 0.4^3 = 0.94 expected
    # shown with the opposite verdicts, the same examples teach nothing
    flipped = 0
    for p, mates in cases:
        shown = metric.demonstrations([ds.samples[q] for q in mates])
        shown = [(inputs, {**out, "verdict": 1 - out["verdict"]}) for inputs, out in shown]
        flipped += _ask(llm, metric, ds, p, shown) == labels[p]
    assert flipped == 0


def test_a_prompt_without_examples_is_answered_as_before(world):
    ds, llm = world
    metric = AspectCritic(name=ds.name, definition="Is the response correct?")
    prompt = metric.get_prompts()[metric.prompt_name]
    for p in range(40):
        messages = prompt.render(metric.prompt_inputs(ds.samples[p].metric_input))
        instruction, inputs = split_rendered(messages)
        assert llm.answer(LLMRequest(messages=messages)) == llm._judge(instruction, inputs, 0)


# --- the evaluator ----------------------------------------------------------------------------------


def test_the_memo_key_holds_the_example_policy_and_instruction_only_keys_are_unchanged():
    assert candidate_key({"p": "a  b"}) == (("p", "a b"),)
    assert candidate_key({"p": "a"}, "retrieval k=3") == ((EXAMPLES_KEY, "retrieval k=3"), ("p", "a"))
    ds = make_dataset(12, 4)
    llm = rule_llm(ds, lambda instruction, position: int(ds.labels()[position]))
    store = ExampleStore([ds.samples[p] for p in range(6)], range(6), k=2)
    metric = AspectCritic(name="toy", definition="Is it right?", prompt_name=PROMPT)
    evaluator = Evaluator(metric=metric, llm=llm, dataset=ds, max_concurrency=4, examples=store)
    instructions = metric.get_instructions()
    asyncio.run(evaluator.evaluate(instructions, range(6, 12)))
    asyncio.run(evaluator.evaluate(instructions, range(6, 12), "retrieval"))
    asyncio.run(evaluator.evaluate(instructions, range(6, 12), "retrieval"))  # memoised
    assert llm.usage.judge_calls == 12  # 6 without examples, 6 with: two keys
    assert evaluator.lookup(instructions, 6, "retrieval") is not None
    key, judgement = next((k, j) for k, j in evaluator.memo_items() if EXAMPLES_KEY in dict(k[0]))
    restored = Evaluator(metric=metric, llm=llm, dataset=ds, max_concurrency=4, examples=store)
    restored.remember(dict(key[0]), key[1], judgement)
    assert restored.lookup(instructions, key[1], "retrieval") == judgement
    assert restored.lookup(instructions, key[1]) is None


# -- issue 31, item 11: the static set's grouping is linear in memory -----------------------------


def _reasons(n: int, seed: int) -> list[str]:
    import numpy as np

    rng = np.random.default_rng(seed)
    words = "the answer is wrong because it misses the date name number unit reference claim part".split()
    return [" ".join(rng.choice(words, size=int(rng.integers(2, 9)))) for _ in range(n)]


def _dense_medoids(texts: list[str], k: int) -> list[int]:
    """The grouping as written before issue 31: the whole n x n similarity matrix at once."""
    import numpy as np
    from sklearn.feature_extraction.text import TfidfVectorizer

    from promptevolver.judge._examples import GROUP_SIMILARITY

    matrix = TfidfVectorizer(sublinear_tf=True).fit_transform(texts)
    sims = np.asarray((matrix @ matrix.T).todense())
    left, out = set(range(len(texts))), []
    while left and len(out) < k:
        ids = sorted(left)
        sub = sims[np.ix_(ids, ids)]
        j = ids[int(np.argmax((sub >= GROUP_SIMILARITY).sum(axis=1) + sub.mean(axis=1) * 1e-3))]
        out.append(j)
        left -= {ids[t] for t in np.nonzero(sims[j, ids] >= GROUP_SIMILARITY)[0]} | {j}
    return out


@pytest.mark.parametrize("seed", range(6))
def test_the_static_set_computed_in_blocks_is_the_whole_matrix_one(seed):
    import numpy as np

    n = int(np.random.default_rng(seed).integers(5, 700))
    texts = _reasons(n, seed)
    store = ExampleStore.__new__(ExampleStore)
    store.k, store.prompt_name, store.samples, store._texts = 3, None, [], texts
    store._reason = lambda sample: ""  # type: ignore[method-assign]
    store.samples = list(range(n))  # type: ignore[assignment]
    assert store._most_corrected(list(range(n))) == _dense_medoids(texts, 3)


def test_grouping_corrections_takes_memory_linear_in_their_number():
    """A 6,000-correction run held a dense 6,000 x 6,000 matrix (288 MB, most of the 574 MiB peak
    at 20,000 annotations); four times the corrections now take about four times the memory."""
    import tracemalloc

    def peak(n: int) -> int:
        store = ExampleStore.__new__(ExampleStore)
        store.k, store.prompt_name, store._texts = 3, None, _reasons(n, 1)
        store.samples = list(range(n))  # type: ignore[assignment]
        store._reason = lambda sample: ""  # type: ignore[method-assign]
        tracemalloc.start()
        store._most_corrected(list(range(n)))
        top = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        return top

    small, large = peak(1_000), peak(4_000)
    assert large < 6 * small  # quadratic would be 16 times
