"""The simulated world's hidden criteria, mined from the human corrections of an annotation set.

A sample's **human label** is the dataset's (``SingleMetricAnnotation.labels``); its **original
verdict** and **original reason** are the judge prompt's ``prompt_output``. A sample *disagrees*
when the two verdicts differ. Its **correction** is what the human said the judge missed:

* its edited reason (``edited_output.reason``), when it differs from the original reason — on a
  disagreeing sample or on an agreeing one (a reason-level correction);
* else, for a rejected sample, its response text (the judge's reason was marked wrong, so what
  decides is in the input).

Candidate phrases of a correction are 1-4 word runs of it (:func:`phrases.candidates`) that the
sample's original reason does not already contain (the judge applied those). A phrase is a *fact*
of a sample when its input text contains it (a name, a number's subject, a quoted word).

* **Generic criteria**: a phrase of edited reasons that is not a fact in at least two of them,
  or a phrase of at least two rejected samples' responses that mostly occurs in disagreeing
  samples' responses, and that is in at most half of all corrections. Its *carriers* are the
  corrections containing it; phrases with the same carriers are one criterion (its triggers). A
  generic criterion is kept when a disagreeing sample carries it (agreeing carriers are
  *evidence*: showing them can teach it).
* **Specific criteria**: every disagreeing sample with a correction also carries the phrase of its
  correction that no other correction has, ranked by TF-IDF (``TfidfVectorizer`` over the
  corrections' candidate phrases; ties to the longer, then the earlier phrase).

A criterion's verdict is the human label its disagreeing carriers mostly have. How a writer puts
it in a sentence (``role``) is read from the words around its occurrences; see
:mod:`promptevolver.simulation._writer`.

Limits: phrases stand for meaning (a paraphrase is another phrase); a correction's phrase that is
generic in wording but one-off in fact ("the year") may group unrelated samples; inconsistent
labels give inconsistent criteria.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from sklearn.feature_extraction.text import TfidfVectorizer

from promptevolver.annotations import LabelChoice, LabelScale, SingleMetricAnnotation, sample_key
from promptevolver.simulation import _phrases as ph
from promptevolver.simulation._draws import unit

__all__ = [
    "JUDGE_WORDS",
    "Criterion",
    "Truth",
    "World",
    "mine_world",
    "sample_key",
]

#: Words of any judge's task and of the writer's own sentences: never a criterion on their own.
JUDGE_WORDS = frozenset(
    (
        "response responses answer answers question user input output reference verdict reason judge "
        "provided provides provide correct correctly accurate accurately information criteria criterion "
        "evaluate instruction assistant sample give says something anything show shows yes meets rule "
        "decide considered"
    ).split()
)

Role = Literal["quote", "relation", "predicate", "verb", "noun"]
_COPULA = frozenset("is are was were be been being seems seem".split())
_SUBJECT = frozenset("it response answer assistant they reply".split())
_ARTICLES = frozenset(("a", "an", "the"))
_PREPOSITIONS = frozenset("of to for with about than from on in into at by as over under".split())


@dataclass(frozen=True)
class Criterion:
    """One hidden criterion.

    Attributes:
        id: ``g<n>`` (generic) or ``s<n>`` (specific).
        kind: ``generic`` (shared by several corrections) or ``specific`` (one sample).
        phrase: the words a writer puts in an instruction (whole words of the corrections).
        triggers: keys any of which, found in an instruction, names the criterion.
        verdict: the human verdict the criterion argues for (0 or 1).
        role: how the phrase sits in a sentence (quote, relation, predicate, verb, noun).
        article: "a"/"an"/"the" before a noun phrase, else "".
        needs_object: a verb phrase that the corrections continue ("mentions" + something).
        samples: keys of the samples carrying it.
    """

    id: str
    kind: Literal["generic", "specific"]
    phrase: str
    triggers: tuple[ph.Key, ...]
    verdict: int
    role: Role
    article: str
    needs_object: bool
    samples: tuple[str, ...]


@dataclass(frozen=True)
class Truth:
    """What the world knows of one sample (aliases share one)."""

    original: int
    label: int
    original_reason: str
    edited_reason: str | None
    criteria: tuple[str, ...] = ()

    @property
    def disagrees(self) -> bool:
        return self.original != self.label


@dataclass(frozen=True)
class World:
    """Samples by :func:`sample_key`, criteria by id, and what the writer needs to know."""

    samples: dict[str, Truth]
    criteria: dict[str, Criterion]
    has_reference: bool
    stop: frozenset[str] = field(default=frozenset())
    #: The criteria move a score (a rubric): verdict 0 means "score lower", 1 "score higher".
    scored: bool = False
    #: Named classes (a pairwise a / b / tie, a classification; a pairwise b / a without ties):
    #: the name of each verdict code; empty for yes / no verdicts and scores.
    labels: tuple[str, ...] = ()
    #: Topic words: keys in the inputs of over a third of the samples (at least 3), what the
    #: samples are about rather than how they are judged (a writer's rule never rests on one).
    topic: frozenset[str] = field(default=frozenset())

    def generic(self) -> list[Criterion]:
        return [c for c in self.criteria.values() if c.kind == "generic"]


@dataclass
class _Row:
    key: str
    original: int
    label: int
    original_reason: str
    edited: str | None
    input_text: str
    response_text: str
    source: Literal["edit", "input"] | None = None
    phrases: dict[ph.Key, list[tuple[str, ...]]] = field(default_factory=dict)
    facts: set[ph.Key] = field(default_factory=set)

    @property
    def disagrees(self) -> bool:
        return self.original != self.label


def mine_world(
    dataset: SingleMetricAnnotation,
    *,
    prompt_name: str,
    max_share: float = 0.5,
    scale: LabelScale | None = None,
) -> World:
    """The world of ``dataset``: its samples' truths and the criteria mined from corrections.

    Args:
        dataset: the annotations (labels as :meth:`SingleMetricAnnotation.labels` gives them).
        prompt_name: the judge prompt whose ``prompt_output`` is the original verdict.
        max_share: a phrase in more than this share of corrections is the task itself, not a
            criterion (applied from 4 corrections on).
        scale: the metric's labels; a nominal scale (named classes) makes verdicts the classes'
            codes (their order in the label space) and names them (``World.labels``). A recorded
            verdict may be a number or a label's name; a sample whose judge recorded none (its
            call failed) gets a class drawn from its key.
    """
    words = ph.CLOSED_CLASS | JUDGE_WORDS | frozenset(dataset.name.lower().replace("-", "_").split("_"))
    stop = words | frozenset(ph.normalize_word(w) for w in words)
    space = scale.label_space() if scale is not None and scale.kind != "numeric" else None
    nominal = scale is not None and scale.kind == "nominal"
    rows = _rows(dataset, prompt_name, _Codes(space or (), nominal=nominal))
    for row in rows.values():
        _correct(row, stop)
    corrections = [r for r in rows.values() if r.source is not None]
    generic = _generic(corrections, rows, max_share)
    criteria: dict[str, Criterion] = {}
    carried: dict[str, list[str]] = defaultdict(list)
    for n, (keys, carriers) in enumerate(generic):
        crit = _criterion(f"g{n}", "generic", keys, [rows[k] for k in carriers], rows)
        criteria[crit.id] = crit
        for k in carriers:
            carried[k].append(crit.id)
    generic_keys = {k for keys, _ in generic for k in keys}
    for n, (row, key) in enumerate(_specific(corrections, generic_keys)):
        crit = _criterion(f"s{n}", "specific", (key,), [row], rows)
        criteria[crit.id] = crit
        carried[row.key].append(crit.id)
    samples = {
        k: Truth(r.original, r.label, r.original_reason, r.edited, tuple(carried.get(k, ())))
        for k, r in rows.items()
    }
    has_reference = sum(bool(s.metric_input.get("reference")) for s in dataset.samples) * 2 >= len(dataset)
    names = tuple(c.name for c in space or ())  # by code: a binary space is sorted by value (0, 1)
    labels = names if nominal or (space and names != ("no", "yes")) else ()
    return World(samples, criteria, has_reference, stop, labels=labels, topic=_topic(rows.values(), stop))


def _topic(rows: Sequence[_Row] | Any, stop: frozenset[str]) -> frozenset[str]:
    """Keys in the input text of over a third of the samples (at least 3 of them)."""
    rows = list(rows)
    counts: Counter[str] = Counter()
    for row in rows:
        counts.update(set(ph.key_sequence(row.input_text)) - stop)
    floor = max(3, len(rows) / 3)
    return frozenset(k for k, n in counts.items() if n > floor)


class _Codes:
    """Verdict codes of recorded outputs and labels: the number itself (0 / 1), or for named
    classes the class's position in the label space; a label's name reads as its value."""

    def __init__(self, space: Sequence[LabelChoice], *, nominal: bool) -> None:
        self.by_name = {c.name: c.value for c in space}
        self.by_value = {c.value: k for k, c in enumerate(space)} if nominal else None
        self.classes = len(space) if nominal else 2

    def __call__(self, value: object, key: str) -> int:
        if isinstance(value, str):
            value = self.by_name.get(value)
        if not isinstance(value, int | float) or value != value:  # none recorded (NaN: a failed call)
            return int(unit(0, "no recorded verdict", key) * self.classes)
        if self.by_value is not None:
            return self.by_value.get(float(value), 0)
        return int(round(value))


def _rows(dataset: SingleMetricAnnotation, prompt_name: str, code: _Codes) -> dict[str, _Row]:
    rows: dict[str, _Row] = {}
    for sample, label in zip(dataset.samples, dataset.labels()):
        prompt = sample.prompts.get(prompt_name)
        output = (prompt.prompt_output if prompt else None) or {}
        key = sample_key(sample.metric_input)
        original = code(output.get("verdict", output.get("label", sample.metric_output)), key)
        edited = ((prompt.edited_output if prompt else None) or {}).get("reason")
        inputs = sample.metric_input
        texts = [str(v) for _, v in sorted(inputs.items()) if isinstance(v, str)]
        response = str(inputs.get("response") or inputs.get("user_input") or " ".join(texts))
        row = _Row(
            key=key,
            original=original,
            label=original if label is None else code(label, key),
            original_reason=str(output.get("reason", "")),
            edited=str(edited) if edited else None,
            input_text=" \n ".join(texts),
            response_text=response,
        )
        if not sample.is_accepted:
            row.source = "input"
        first = rows.get(key)
        if first is None:
            rows[key] = row
        elif first.edited is None and row.edited is not None:  # an alias: the first label stays
            first.edited = row.edited
    return rows


def _correct(row: _Row, stop: frozenset[str]) -> None:
    said = ph.key_sequence(row.original_reason)
    if row.edited and ph.key_sequence(row.edited) != said:
        row.source, text = "edit", row.edited
    elif row.source == "input" or (row.disagrees and row.edited is None):
        row.source, text = "input", row.response_text
    else:
        row.source = None
        return
    longest = 6 if row.source == "input" else 4
    found = ph.candidates(text, stop=stop, max_words=longest)
    in_reason = _runs(said, longest)  # a set: a scan of the reason per phrase was quadratic
    row.phrases = {k: occ for k, occ in found.items() if k not in in_reason}
    if row.source == "input":
        row.facts = set(row.phrases)
    else:
        in_inputs = _runs(ph.key_sequence(row.input_text), longest)
        row.facts = {k for k in row.phrases if k in in_inputs}


def _runs(sequence: ph.Key, longest: int) -> set[ph.Key]:
    """Every contiguous run of 1..``longest`` words of ``sequence`` (``k in _runs(s, n)`` is
    ``ph.contains(s, k)`` for keys of at most ``longest`` words)."""
    return {tuple(sequence[i : i + n]) for n in range(1, longest + 1) for i in range(len(sequence) - n + 1)}


def _generic(
    corrections: Sequence[_Row], rows: Mapping[str, _Row], max_share: float
) -> list[tuple[tuple[ph.Key, ...], tuple[str, ...]]]:
    """(trigger keys, carrier sample keys) of each generic criterion, in a stable order."""
    seeds: Counter[ph.Key] = Counter()
    inputs: Counter[ph.Key] = Counter()
    for row in corrections:
        for key in row.phrases:
            if row.source == "edit" and key not in row.facts:
                seeds[key] += 1
            elif row.source == "input":
                inputs[key] += 1
    wanted = [key for key, count in inputs.items() if count >= 2]
    having = _occurrences(wanted, {r.key: ph.key_sequence(r.response_text) for r in rows.values()})
    for key in wanted:
        if sum(rows[k].disagrees for k in having[key]) * 2 > len(having[key]):  # marks disagreement
            seeds[key] += inputs[key]
    limit = max(2, int(max_share * len(corrections))) if len(corrections) >= 4 else len(corrections)
    carried_by: dict[ph.Key, list[str]] = defaultdict(list)  # key -> corrections holding it, in order
    for row in corrections:
        for key in row.phrases:
            carried_by[key].append(row.key)
    by_carriers: dict[tuple[str, ...], list[ph.Key]] = defaultdict(list)
    for key, count in seeds.items():
        carriers = tuple(carried_by[key])
        if count >= 2 and len(carriers) <= limit and any(rows[k].disagrees for k in carriers):
            by_carriers[carriers].append(key)
    maximal = _maximal(list(by_carriers))
    groups = [(tuple(sorted(by_carriers[c], key=lambda k: (-len(k), k))), c) for c in maximal]
    return sorted(groups, key=lambda g: (-len(g[1]), g[0]))


def _maximal(groups: Sequence[tuple[str, ...]]) -> list[tuple[str, ...]]:
    """The groups no other group strictly contains, in their order (a superset holds the group's
    first member, so only those are compared: not every pair)."""
    sets = [frozenset(g) for g in groups]
    holding: dict[str, list[int]] = defaultdict(list)
    for i, members in enumerate(sets):
        for member in members:
            holding[member].append(i)
    return [
        g
        for g, members in zip(groups, sets)
        if not any(members < sets[j] for j in holding[g[0]] if len(sets[j]) > len(members))
    ]


def _occurrences(keys: Sequence[ph.Key], texts: Mapping[str, ph.Key]) -> dict[ph.Key, list[str]]:
    """Key -> the texts (by sample key, in order) holding it as a contiguous run: one pass over
    each text per key length, so linear in the text size (a scan per key was quadratic: 833
    long samples took minutes)."""
    found: dict[ph.Key, list[str]] = {key: [] for key in keys}
    lengths = sorted({len(key) for key in keys if key})
    for name, seq in texts.items():
        seen: set[ph.Key] = set()
        for n in lengths:
            for i in range(len(seq) - n + 1):
                run = tuple(seq[i : i + n])
                if run in found and run not in seen:
                    seen.add(run)
                    found[run].append(name)
    return found


def _holds_any(key: ph.Key, runs: set[ph.Key], lengths: Sequence[int]) -> bool:
    """Whether some contiguous run of ``key`` is one of ``runs`` (whose lengths are ``lengths``)."""
    return any(tuple(key[i : i + n]) in runs for n in lengths for i in range(len(key) - n + 1))


def _specific(corrections: Sequence[_Row], generic_keys: set[ph.Key]) -> list[tuple[_Row, ph.Key]]:
    docs = [[" ".join(k) for k, occ in r.phrases.items() for _ in occ] for r in corrections]
    if not any(docs):
        return []
    vectorizer = TfidfVectorizer(analyzer=lambda doc: doc, lowercase=False)
    matrix = vectorizer.fit_transform(docs).tocsr()
    vocab = vectorizer.get_feature_names_out()
    df = Counter(k for r in corrections for k in r.phrases)
    lengths = sorted({len(g) for g in generic_keys if g})
    out = []
    for i, row in enumerate(corrections):
        if not row.disagrees:
            continue
        start, end = matrix.indptr[i], matrix.indptr[i + 1]
        weights = {
            tuple(str(vocab[j]).split()): float(w)
            for j, w in zip(matrix.indices[start:end], matrix.data[start:end])
        }
        order = {k: n for n, k in enumerate(row.phrases)}
        unique = [k for k in row.phrases if df[k] == 1 and not _holds_any(k, generic_keys, lengths)]
        if unique:
            best = min(
                unique, key=lambda k: (k not in row.facts, -weights.get(k, 0.0), *_density(k, row), order[k])
            )
            out.append((row, best))
    return out


def _density(key: ph.Key, row: _Row) -> tuple[int, int]:
    """(minus content words, grammar words) of a phrase's first occurrence: fuller phrases first;
    a quote from the input: longer first."""
    words = row.phrases[key][0][1:-2]
    if row.source == "input":
        return -len(words), 0
    content = sum(w.lower() not in ph.CLOSED_CLASS and k not in JUDGE_WORDS for w, k in zip(words, key))
    return -content, len(words) - content


def _criterion(
    cid: str,
    kind: Literal["generic", "specific"],
    keys: tuple[ph.Key, ...],
    carriers: Sequence[_Row],
    rows: Mapping[str, _Row],
) -> Criterion:
    display = max(keys, key=lambda k: _display_rank(k, carriers))
    occurrences = [o for r in carriers for o in r.phrases[display]]
    words = Counter(o[1:-2] for o in occurrences).most_common(1)[0][0]  # the commonest surface form
    words = ph.proper_case(words, [t for r in carriers for t in (r.edited or "", r.input_text)])
    words, occurrences = _extend(words, occurrences)
    disagreeing = [r.label for r in carriers if r.disagrees] or [r.label for r in carriers]
    verdict = Counter(disagreeing).most_common(1)[0][0]
    quote = all(r.source == "input" for r in carriers) or (
        kind == "specific" and display in carriers[0].facts
    )
    role, article, needs_object = _role(words, occurrences, quote=quote)
    return Criterion(
        id=cid,
        kind=kind,
        phrase=" ".join(words),
        triggers=keys,
        verdict=int(verdict),
        role=role,
        article=article,
        needs_object=needs_object,
        samples=tuple(r.key for r in carriers),
    )


def _display_rank(key: ph.Key, carriers: Sequence[_Row]) -> tuple[int, int, int, int]:
    """Most carriers where it is no fact, most occurrences, fewest grammar words, then longest."""
    grammar = sum(k in ph.CLOSED_CLASS for k in key)
    return (
        sum(key not in r.facts for r in carriers),
        sum(len(r.phrases[key]) for r in carriers),
        -grammar,
        len(key),
    )


def _extend(
    words: tuple[str, ...], occurrences: list[tuple[str, ...]]
) -> tuple[tuple[str, ...], list[tuple[str, ...]]]:
    """A phrase followed by the same grammar words everywhere (at least two occurrences) keeps
    them: "instead" -> "instead of", "contradicts" -> "contradicts the reference"."""
    if len(occurrences) < 2:
        return words, occurrences
    follow = {o[-2:] for o in occurrences}
    if len(follow) == 1:
        nxt = next(iter(follow))
        if nxt[0] in _ARTICLES and nxt[1] in JUDGE_WORDS:
            return (*words, *nxt), [(*o[:-2], *nxt, "", "") for o in occurrences]
    after = {o[-2] for o in occurrences}
    if len(after) == 1 and (word := next(iter(after))) in _PREPOSITIONS:
        return (*words, word), [(*o[:-2], word, o[-1], "") for o in occurrences]
    return words, occurrences


def _role(
    words: tuple[str, ...], occurrences: list[tuple[str, ...]], *, quote: bool
) -> tuple[Role, str, bool]:
    if quote:
        return "quote", "", False
    if words[-1] in _PREPOSITIONS:
        return "relation", "", False
    before = Counter(o[0] for o in occurrences).most_common(1)[0][0]
    continued = sum(o[-2] != "" for o in occurrences) * 2 > len(occurrences)
    if before in _COPULA:
        return "predicate", "", False
    if before in _SUBJECT:
        return "verb", "", continued
    # "the wrong <year, city, ...>": a modifier whose noun varies reads as a predicate
    followed = sum(o[-2] != "" and o[-2].lower() not in ph.CLOSED_CLASS for o in occurrences)
    if followed * 2 > len(occurrences):
        return "predicate", "", False
    return "noun", before if before in _ARTICLES else "", False
