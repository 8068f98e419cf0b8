"""How the simulated prompt engineer writes criteria, and reads them back from an instruction.

An instruction it writes is its base text followed by one block per verdict::

    <base text>
    Give verdict 0 (no) when:
    - anything the response says is wrong
    - the response says "universe is getting smaller"
    Give verdict 1 (yes) when:
    - the response shows a simplified and accurate representation

For a score (a rubric, ``World.scored``) the blocks are ``Score lower when:`` and ``Score higher
when:``: a 1-5 instruction gets no binary verdict rules. For named classes (a pairwise a / b /
tie, a classification: ``World.labels``) a block per class: ``Give verdict tie when:``.

Each bullet names one criterion with a clause chosen by the criterion's role (see
:class:`~promptevolver.simulation._criteria.Criterion`): a quote of the input (``the response says
"..."``), a relation (``the response says something instead of what the reference says``), a
predicate (``anything the response says is wrong``), a verb phrase (``the response wrongly
mentions something``) or a noun phrase (``the response shows a missing step``).

It writes what a careful person would (:func:`general`): rules worded as rules, never a quote of
one response, whose words of content are neither the task's, vague fillers such as "just" or
"saying", nor topic words of the inputs; and it never touches the base text: the seed's "Criteria
Definition" line stays as written, where it was written.

Reading an instruction back (:func:`parse`) keeps as criterion lines only the rules under a
verdict header (``Give verdict 0 (no) when:`` and its bullets, or one sentence ``Give verdict 1
when ...``), each with the verdict it was written under; every other line is base text, kept as
written even when it names a criterion, so parents written by anyone merge.

Limits: English templates; one clause per criterion; a criterion whose phrase a line merely
mentions (even negated) counts as named, as in the judge; "vague" and "topic" are word lists and
frequencies, not meaning.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from promptevolver.simulation import _phrases as ph
from promptevolver.simulation._criteria import Criterion, World

__all__ = [
    "Coverage",
    "Line",
    "Parsed",
    "clause",
    "compose",
    "feedback_item",
    "general",
    "parse",
    "task_line",
]

#: Words with no content of their own: a rule made only of them (and grammar) says nothing.
VAGUE = frozenset(
    (
        "just only also very really simply even still quite rather actually basically merely mostly "
        "generally usually thing things stuff way lot lots number numbers saying said say word words "
        "part parts kind sort bit"
    ).split()
)

_HEADER = re.compile(r"^(?:give verdict [\w'-]+\b.*\bwhen|score (?:lower|higher) when):?\s*$", re.IGNORECASE)
_BULLET = re.compile(r"^\s*(?:[-*•]|\d+[.)])\s+")


def task_line(metric_name: str) -> str:
    """The base line of an instruction written from scratch for ``metric_name``."""
    name = " ".join(metric_name.replace("-", "_").split("_")).strip() or "the criterion"
    return (
        f"Decide whether the response meets the {name} criterion for the given input: "
        f"verdict 1 (yes) if it does, 0 (no) if not."
    )


def clause(criterion: Criterion, *, has_reference: bool) -> str:
    """The clause naming ``criterion`` (it contains the criterion's phrase word for word)."""
    phrase = criterion.phrase
    if criterion.role == "quote":
        return f'the response says "{phrase}"'
    if criterion.role == "relation":
        anchor = "what the reference says" if has_reference else "what the user asked for"
        return f"the response says something {phrase} {anchor}"
    if criterion.role == "predicate":
        return f"anything the response says is {phrase}"
    if criterion.role == "verb":
        return f"the response {phrase}" + (" something" if criterion.needs_object else "")
    article = f"{criterion.article} " if criterion.article else ""
    return f"the response shows {article}{phrase}"


def header(verdict: int, *, scored: bool = False, labels: Sequence[str] = ()) -> str:
    """The line above the criteria of ``verdict``: a binary verdict, for a score (``scored``)
    its direction (0: lower, 1: higher), for named classes (``labels``, by code) its name."""
    if scored:
        return f"Score {'higher' if verdict else 'lower'} when:"
    if labels:
        return f"Give verdict {labels[verdict]} when:"
    return f"Give verdict {verdict} ({'yes' if verdict else 'no'}) when:"


def feedback_item(
    criterion: Criterion, *, has_reference: bool, scored: bool = False, labels: Sequence[str] = ()
) -> str:
    """One feedback string asking for ``criterion``."""
    lead = header(criterion.verdict, scored=scored, labels=labels)[:-1]
    return f"{lead} {clause(criterion, has_reference=has_reference)}."


def general(criterion: Criterion, world: World) -> bool:
    """Whether a careful person would write ``criterion`` as a rule: never a quote of one
    response (a name, a number, a sentence of one sample; a wording several responses share is a
    pattern, and may be), and with words of content that are not
    the task's own (``world.stop``), vague fillers (:data:`VAGUE`) or topic words of the inputs
    (``world.topic``): one for a criterion several corrections carry, two for one carried by a
    single correction (a bare word of one human's reason, "year", is no rule)."""
    if criterion.role == "quote" and criterion.kind == "specific":
        return False
    content = [
        w
        for w in ph.key_sequence(criterion.phrase)
        if w not in world.stop and w not in VAGUE and w not in world.topic and len(w) > 2
    ]
    return len(content) >= (1 if criterion.kind == "generic" else 2)


class Coverage:
    """Which criteria of a world a text names: phrase keys matched on the text's word keys."""

    def __init__(self, world: World) -> None:
        self._by_first: dict[str, list[tuple[ph.Key, str]]] = {}
        for crit in world.criteria.values():
            for trigger in crit.triggers:
                self._by_first.setdefault(trigger[0], []).append((trigger, crit.id))

    def named(self, text: str) -> frozenset[str]:
        """Ids of the criteria whose triggers occur in ``text``."""
        seq = ph.key_sequence(text)
        found = set()
        for i, word in enumerate(seq):
            for trigger, cid in self._by_first.get(word, ()):
                if tuple(seq[i : i + len(trigger)]) == trigger:
                    found.add(cid)
        return frozenset(found)


#: A criterion line: its text, the criteria it names, and the verdict it was written under.
Line = tuple[str, frozenset[str], int]


@dataclass(frozen=True)
class Parsed:
    """An instruction split into base lines and criterion lines (with the criteria each names
    and the verdict it was written under)."""

    base: tuple[str, ...]
    lines: tuple[Line, ...]

    def named(self) -> frozenset[str]:
        return frozenset(c for _, ids, _ in self.lines for c in ids)


_RULE = re.compile(r"^(?:give verdict ([01])|score (lower|higher))\b.*\bwhen\b", re.IGNORECASE)


def parse(instruction: str, coverage: Coverage) -> Parsed:
    """Base text and criterion lines of ``instruction``: a rule is a bullet under a verdict header
    or a one-sentence ``Give verdict N when ...`` (headers are dropped: rebuilt); every other line
    is base text, as written, even one that names a criterion (the seed's definition)."""
    base: list[str] = []
    lines: list[Line] = []
    under: int | None = None  # the verdict of the header above, while its bullets last
    for raw in instruction.strip().splitlines():
        line = raw.rstrip()
        stripped = line.strip()
        if _HEADER.match(stripped):
            under = _header_verdict(stripped)
            continue
        ids = coverage.named(line)
        rule = _RULE.match(stripped)
        if under is not None and _BULLET.match(line) and ids:
            lines.append((_BULLET.sub("", line).strip(), ids, under))
            continue
        if rule is not None and ids:
            lines.append((stripped, ids, _header_verdict(stripped)))
            continue
        if not (under is not None and _BULLET.match(line)):
            under = None
        if stripped or base:
            base.append(line)
    while base and not base[-1].strip():
        base.pop()
    return Parsed(tuple(base), tuple(lines))


def _header_verdict(text: str) -> int:
    """The verdict a header or rule sentence argues for: 1 for ``verdict 1`` and ``score higher``."""
    lowered = text.lower()
    return 1 if lowered.startswith(("give verdict 1", "score higher")) else 0


def compose(
    base: Sequence[str],
    lines: Iterable[Line],
    added: Iterable[Criterion],
    world: World,
    *,
    max_criteria: int,
) -> str:
    """``base`` as written, plus the criterion ``lines`` kept (in order, each under the verdict it
    was written under, skipping lines that name nothing new) plus a bullet per ``added`` criterion
    not named yet that a careful person writes (:func:`general`), grouped under a header per
    verdict; at most ``max_criteria`` criterion lines."""
    kept: list[tuple[str, int]] = []
    named: set[str] = set()
    for text, ids, verdict in lines:
        if ids - named and len(kept) < max_criteria:
            kept.append((text, verdict))
            named |= ids
    for crit in added:
        if not general(crit, world):
            continue
        if crit.id not in named and len(kept) < max_criteria:
            kept.append((clause(crit, has_reference=world.has_reference), crit.verdict))
            named.add(crit.id)
    out = list(base)
    for verdict in sorted({v for _, v in kept}):  # 0 then 1; each class of a nominal world
        bullets = [f"- {_bare(text)}" for text, v in kept if v == verdict]
        out += [header(verdict, scored=world.scored, labels=world.labels), *bullets]
    return "\n".join(out).strip()


def _bare(text: str) -> str:
    """A criterion line as a bullet clause: a sentence written as "Give verdict N when X." -> "X"."""
    match = re.match(
        r"^(?:give verdict [\w'-]+(?: \((?:yes|no)\))?|score (?:lower|higher)) when:?\s*(.*)$",
        text,
        re.IGNORECASE,
    )
    body = match.group(1) if match else text
    return body.rstrip(" .")
