"""The simulated prompt engineer: the answers of :class:`~promptevolver.simulation.SimulatedJudgeLLM`
to meta calls (the operators' meta-prompts, recognised by their section headings; unknown sections
are ignored). It writes only from what the prompt shows:

* a *shown sample* is a JSON line with an ``input`` in any section; the criteria it carries are
  its world criteria plus generic criteria its shown expected reason names;
* a carried criterion is *discovered* with probability ``1 - (1 - p_discover) ** m`` (``m`` shown
  samples carry it), one hash draw per (seed, prompt, criterion) — the prompt's text alone decides,
  so the same meta-prompt gets the same answer in-process and over HTTP (where ``sample_index``
  does not travel);
* reverse engineering writes a task line plus a bullet per discovered criterion (generic first,
  most evidenced first); feedback names the discovered criteria the current instruction does not
  name, generic first, at most the number the prompt asks for (none discovered: an empty list),
  each with the ids of the shown samples carrying it when the answer format asks for
  ``explains`` (the distillation stage's lessons call);
  rewrite adds the criteria the feedback names; crossover keeps parent A's other lines and merges
  both parents' criterion lines without naming a criterion twice. Instructions are written with
  :mod:`promptevolver.simulation._writer` (at most ``max_terms`` criterion lines).

Limits: the engineer never invents a wrong criterion and never drops one; few-shot demonstrations
have no effect.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, cast

from promptevolver import judge as ops
from promptevolver.simulation import _writer as writer
from promptevolver.simulation._criteria import Criterion, World, sample_key
from promptevolver.simulation._draws import unit

__all__ = ["SimulatedEngineer", "sections"]

#: The answer to a prompt that is neither a judge call nor a known meta-prompt.
UNRECOGNISED = json.dumps({"error": "the simulated LLM does not recognise this prompt"})
_AT_MOST = re.compile(r"at most (\d+)", re.IGNORECASE)
_METRIC = re.compile(r"judge `([^`]+)`")


def sections(text: str) -> dict[str, str]:
    """``{"## Heading": body}`` of a meta-prompt: a heading is a line starting with ``## `` at the
    start or after a blank line (text before the first heading is under ``""``)."""
    out: dict[str, str] = {}
    heading, body = "", cast(list[str], [])
    for line in text.splitlines():
        if line.startswith("## ") and (not body or not body[-1].strip()):
            out.setdefault(heading, "\n".join(body).strip())
            heading, body = line.strip(), []
        else:
            body.append(line)
    out.setdefault(heading, "\n".join(body).strip())
    return out


@dataclass(frozen=True)
class SimulatedEngineer:
    """Deterministic answers to meta-prompts, written from the criteria of a world.

    Args:
        world: the criteria and samples the engineer can recognise.
        coverage: reads which criteria a text names (``writer.Coverage(world)``).
        named: criterion ids a text names (``coverage.named``, usually memoised).
        random_seed: seed of the discovery draws.
        p_discover: probability in [0, 1] that one shown sample teaches a criterion it carries.
        max_terms: most criterion lines written into one instruction.
        metric_name: the metric named in a reverse-engineered task line when the prompt names none.
    """

    world: World
    coverage: writer.Coverage
    named: Callable[[str], frozenset[str]]
    random_seed: int
    p_discover: float
    max_terms: int
    metric_name: str

    def answer(self, user: str) -> str:
        """The JSON answer to the meta-prompt ``user`` (the last user message): an instruction,
        a feedback list, or (no known section) a JSON error object; never raises."""
        parts = sections(user)
        writers: list[tuple[str, Callable[[str, dict[str, str]], str]]] = [
            (ops.FAILING_SAMPLES, self.feedback),
            (ops.FEEDBACK_TO_APPLY, self.rewrite),
            (ops.CROSSOVER_PARENT_A, self.crossover),
            (ops.EXAMPLES, self.reverse_engineer),
        ]
        for heading, write in writers:
            if heading in parts:
                return write(user, parts)
        return UNRECOGNISED

    def shown(self, parts: dict[str, str]) -> dict[str, int]:
        """Criterion id -> number of shown samples carrying it."""
        counts: dict[str, int] = {}
        for body in parts.values():
            for line in body.splitlines():
                item = _json_line(line)
                for cid in self.carried(item) if item is not None else ():
                    counts[cid] = counts.get(cid, 0) + 1
        return counts

    def carried(self, item: dict[str, Any]) -> set[str]:
        """The criteria a shown sample carries: its world criteria, plus the generic criteria its
        shown expected reason names."""
        truth = self.world.samples.get(sample_key(item["input"]))
        carried = set(truth.criteria) if truth else set()
        reason = (item.get("expected_output") or {}).get("reason")
        if isinstance(reason, str):
            carried |= {c for c in self.named(reason) if self.world.criteria[c].kind == "generic"}
        return carried

    def discover(self, user: str, parts: dict[str, str]) -> list[Criterion]:
        """Criteria learnt from the shown samples, generic first, most evidenced first."""
        prompt = " ".join(user.split())
        found = [
            (cid, m)
            for cid, m in self.shown(parts).items()
            if unit(self.random_seed, "discover", prompt, cid) < 1 - (1 - self.p_discover) ** m
        ]
        crits = self.world.criteria
        found.sort(key=lambda x: (crits[x[0]].kind != "generic", -x[1], x[0]))
        return [crits[cid] for cid, _ in found]

    def reverse_engineer(self, user: str, parts: dict[str, str]) -> str:
        """``{"instruction"}``: a task line plus the discovered criteria."""
        match = _METRIC.search(user)
        base = writer.Parsed((writer.task_line(match.group(1) if match else self.metric_name),), ())
        return json.dumps({"instruction": self._compose(base, (), self.discover(user, parts))})

    def feedback(self, user: str, parts: dict[str, str]) -> str:
        """``{"feedback"}``: discovered criteria the current instruction does not name."""
        named = self.named(parts.get(ops.CURRENT_INSTRUCTION, ""))
        wanted = [c for c in self.discover(user, parts) if c.id not in named]
        match = _AT_MOST.search(parts.get(ops.ANSWER, "") or user)
        limit = int(match.group(1)) if match else 3
        items = [
            writer.feedback_item(
                c, has_reference=self.world.has_reference, scored=self.world.scored, labels=self.world.labels
            )
            for c in wanted[:limit]
        ]
        if '"explains"' not in parts.get(ops.ANSWER, ""):
            return json.dumps({"feedback": items})
        carriers = self.carriers(parts.get(ops.FAILING_SAMPLES, ""))  # a lessons call: cite them
        cited = [sorted(carriers.get(c.id, ())) for c in wanted[:limit]]
        return json.dumps({"feedback": [{"lesson": i, "explains": ids} for i, ids in zip(items, cited)]})

    def carriers(self, body: str) -> dict[str, set[int]]:
        """Criterion id -> the ``id`` of each shown sample in ``body`` carrying it."""
        out: dict[str, set[int]] = {}
        for line in body.splitlines():
            item = _json_line(line)
            if item is None or not isinstance(item.get("id"), int):
                continue
            for cid in self.carried(item):
                out.setdefault(cid, set()).add(item["id"])
        return out

    def rewrite(self, user: str, parts: dict[str, str]) -> str:
        """``{"instruction"}``: the current instruction plus the criteria the feedback names."""
        current = parts.get(ops.CURRENT_INSTRUCTION, "")
        parsed = writer.parse(current, self.coverage)
        already = parsed.named()
        items = [line.lstrip("-*• ").strip() for line in parts.get(ops.FEEDBACK_TO_APPLY, "").splitlines()]
        added: list[Criterion] = []
        for item in items:
            for cid in sorted(self.named(item) - already - {c.id for c in added}):
                added.append(self.world.criteria[cid])
        if not added:
            return json.dumps({"instruction": current})
        return json.dumps({"instruction": self._compose(parsed, parsed.lines, added)})

    def crossover(self, user: str, parts: dict[str, str]) -> str:
        """``{"instruction"}``: parent A's other lines with both parents' criterion lines."""
        a = writer.parse(parts.get(ops.CROSSOVER_PARENT_A, ""), self.coverage)
        b = writer.parse(parts.get(ops.CROSSOVER_PARENT_B, ""), self.coverage)
        return json.dumps({"instruction": self._compose(a, a.lines + b.lines, [])})

    def _compose(self, parsed: writer.Parsed, lines: Sequence[writer.Line], added: list[Criterion]) -> str:
        return writer.compose(parsed.base, lines, added, self.world, max_criteria=self.max_terms)


def _json_line(line: str) -> dict[str, Any] | None:
    line = line.strip()
    if not line.startswith("{"):
        return None
    try:
        item = json.loads(line)
    except json.JSONDecodeError:
        return None
    if not isinstance(item, dict) or not isinstance(item.get("input"), dict):
        return None
    return item
