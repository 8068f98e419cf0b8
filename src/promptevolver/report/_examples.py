"""The report's section on teaching examples (``docs/examples.md``): which examples the chosen
judge is shown, and what they cost.

* the policy kept and why (each policy the examples stage tried: its Δ against the judge without
  examples and the probability it is better);
* prompt tokens per judge call, for the run and per stage (examples make calls longer);
* under ``static``, the set every input is shown; under ``retrieval``, its settings and, for a
  few validation samples, the examples retrieved for each (the most similar last, as shown);
* the changes made since the run (``promptevolver examples``: incremental memory).

A figure the run did not record is ``n/a``.
"""

from __future__ import annotations

from typing import Any

from promptevolver.judge import ExampleStore
from promptevolver.optimizers import ExamplesRecord, Stages
from promptevolver.report._data import RunFacts
from promptevolver.report._render import Para, Section, Table

__all__ = ["examples_section"]

#: Validation samples whose retrieved examples the report lists.
RETRIEVED_SHOWN = 5


def _f(value: Any, digits: int = 3) -> str:
    return "n/a" if value is None else f"{value:.{digits}f}"


def _short(text: Any, limit: int = 120) -> str:
    words = " ".join(str(text or "").split())
    return words if len(words) <= limit else words[: limit - 1].rsplit(" ", 1)[0] + "…"


def examples_section(facts: RunFacts) -> Section | None:
    """The section (module docstring); None when the run considered no example and its judge
    shows none (``strategy: genetic``, ``examples: {policy: none}``)."""
    result = facts.result
    block = result.get("examples") or {}
    stage = Stages.from_dict(result.get("stages")).examples
    if stage is None and block.get("policy", "none") == "none":
        return None
    policy = block.get("policy", "none")
    blocks: list[Any] = [Para(_kept(policy, stage)), _tokens(result)]
    if stage is not None and stage.tried:
        rows = [
            [
                f"#{t['id']}",
                t["policy"],
                "n/a" if t.get("delta") is None else f"{t['delta']:+.3f}",
                _f(t.get("p_better"), 2),
                "yes" if t.get("eligible") else "no",
            ]
            for t in stage.tried
        ]
        blocks.append(Table(["candidate", "policy", "Δ vs no examples", "P(better)", "eligible"], rows))
    if policy != "none" and isinstance(block.get("store"), dict):
        store = ExampleStore.from_dict(block["store"])
        blocks += _static(store) if policy == "static" else _retrieved(facts, store)
    if block.get("updates"):
        blocks.append(_updates(block["updates"]))
    return Section("Teaching examples", blocks)


def _kept(policy: str, stage: ExamplesRecord | None) -> str:
    why = (stage.why if stage is not None else None) or "the examples stage did not run"
    if policy == "none":
        return f"The chosen judge is shown no teaching example: {why}."
    return f"The chosen judge is shown teaching examples, policy {policy}: {why}."


def _tokens(result: dict[str, Any]) -> Table:
    """Prompt tokens per judge call: the run's, then each stage's."""
    per_call = ((result.get("usage") or {}).get("prompt_tokens_per_call") or {}).get("judge")
    rows = [["the whole run", _f(per_call, 1)]]
    for st in Stages.from_dict(result.get("stages")):
        if st.cost.judge_calls:
            rows.append([st.name, _f(st.cost.prompt_tokens_per_judge_call, 1)])
    return Table(["judge calls of", "prompt tokens per judge call"], rows)


def _static(store: ExampleStore) -> list[Any]:
    shown = store.indices_for("static", {})
    rows = [_example_row(store, i) for i in shown]
    intro = Para(f"Every input is shown the same {len(shown)} examples (the most corrected), in this order.")
    return [intro, Table(["example", "user input", "response", "human", "reason"], rows)]


def _example_row(store: ExampleStore, i: int) -> list[str]:
    sample = store.samples[i]
    label = sample.human_label(binary=store.binary)
    expected = sample.expected_output(store.prompt_name or "") if store.prompt_name else None
    return [
        f"#{store.positions[i]}",
        _short(sample.metric_input.get("user_input")),
        _short(sample.metric_input.get("response")),
        "n/a" if label is None else f"{label:g}",
        _short((expected or {}).get("reason"), 200) or "—",
    ]


def _retrieved(facts: RunFacts, store: ExampleStore) -> list[Any]:
    record = store.similarity_record()
    url = record.get("base_url") or "the default URL"
    compared = (
        "TF-IDF cosine"
        if record["kind"] == "tfidf"
        else f"cosine of embeddings by {record.get('model')!r} at {url}"
    )
    fallback = record.get("fallback")
    gave_up = (
        f" Embeddings were asked for but failed; TF-IDF as asked: {fallback.get('cause')}."
        if fallback
        else ""
    )
    intro = Para(
        f"Per input, the {store.k} most similar annotated samples ({compared} of user_input and "
        f"response, at least {store.min_similarity:g}; never the judged sample itself); the most "
        f"similar is shown last. The result's store holds {len(store)} samples (every annotated one: "
        "what the judge is shown from now on)." + gave_up
    )
    if store.similarity == "embeddings":  # a report makes no call: the examples would need the endpoint
        return [
            intro,
            Para("The retrieved examples per sample: n/a (embeddings are not recomputed for a report)."),
        ]
    validation = facts.positions.get("validation") or []
    if facts.dataset is None or not validation:
        return [intro, Para("The retrieved examples per sample: n/a (the run's annotations cannot be read).")]
    during = int((facts.result.get("examples") or {}).get("pool_during_the_run") or len(store))
    verified = _first(store, during)
    rows = []
    for p in validation[:RETRIEVED_SHOWN]:
        inputs = facts.dataset.samples[p].metric_input
        rows.append(
            [f"#{p}", _short(inputs.get("user_input")), _shown(verified, inputs), _shown(store, inputs)]
        )
    caption = (
        f"The first {len(rows)} validation samples and the examples (human label) they are shown: during "
        f"the verification (from the {during} train samples) and by the result's store."
    )
    headers = ["judged sample", "user input", "shown in the verification", "shown by the result"]
    return [intro, Table(headers, rows, caption=caption)]


def _first(store: ExampleStore, n: int) -> ExampleStore:
    """The store of the first ``n`` pool samples (the run's pool: the held-out samples come
    after it, :meth:`ExampleStore.extended`)."""
    if n >= len(store):
        return store
    return ExampleStore(
        store.samples[:n],
        store.positions[:n],
        k=store.k,
        min_similarity=store.min_similarity,
        binary=store.binary,
        prompt_name=store.prompt_name,
        static=[i for i in store.static if i < n],
        **store.similarity_arguments(),
    )


def _shown(store: ExampleStore, inputs: Any) -> str:
    picked = store.indices_for("retrieval", inputs)
    return (
        ", ".join(f"#{store.positions[i]} ({_label(store, i)})" for i in picked)
        or "none (none similar enough)"
    )


def _label(store: ExampleStore, i: int) -> str:
    label = store.samples[i].human_label(binary=store.binary)
    return "n/a" if label is None else f"{label:g}"


def _updates(updates: list[dict[str, Any]]) -> Table:
    rows = []
    for u in updates:
        held = u.get("held_out") or {}
        figure = held.get("figure")
        before = (held.get("before") or {}).get(figure) if figure else None
        after = (held.get("after") or {}).get(figure) if figure else None
        rows.append(
            [
                f"+{u.get('added', 0)} / -{len(u.get('removed', []))}",
                f"{u.get('pool_before', 'n/a')} → {u.get('pool_after', 'n/a')}",
                f"{figure or 'n/a'} {_f(before)} → {_f(after)} (n = {held.get('n', 'n/a')})",
                str(u.get("judge_calls", "n/a")),
            ]
        )
    caption = (
        "Changes to the example store since the run (promptevolver examples), re-verified on validation."
    )
    return Table(["added / removed", "pool", "held-out", "judge calls"], rows, caption=caption)
