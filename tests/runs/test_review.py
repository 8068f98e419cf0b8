"""``promptevolver review``: the queue, its writes, who gets in, two pages on one file, the CLI.

The server runs in this process (a thread) and is spoken to over real HTTP with ``http.client``;
the page in a real browser is tests/runs/test_review_browser.py."""

from __future__ import annotations

import http.client
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from promptevolver import rundir
from promptevolver.annotations import SingleMetricAnnotation
from promptevolver.cli import main
from promptevolver.config._build import load_dataset
from promptevolver.runs._review import ReviewServer, page_html
from promptevolver.runs._review_queue import (
    ReviewConflict,
    ReviewError,
    ReviewQueue,
    build_queue,
    fits,
    page_labels,
)

from ..conftest import AC_FILE

METRIC = "answer_correctness"
PROMPT = "single_turn_aspect_critic_prompt"


# --- helpers -------------------------------------------------------------------------------------


@pytest.fixture
def ac_copy(tmp_path: Path) -> Path:
    """A copy of the bundled answer_correctness annotations (18 samples, binary)."""
    path = tmp_path / "ac.json"
    shutil.copy(AC_FILE, path)
    return path


class Client:
    """Requests to a running :class:`ReviewServer` over HTTP, token presented unless told."""

    def __init__(self, server: ReviewServer) -> None:
        self.server = server

    def call(
        self,
        method: str,
        path: str,
        body: Any = None,
        *,
        token: str | None = "header",
        headers: dict[str, str] | None = None,
        raw: bytes | None = None,
    ) -> tuple[int, Any]:
        conn = http.client.HTTPConnection("127.0.0.1", self.server.port, timeout=30)
        sent = {"Host": f"127.0.0.1:{self.server.port}"}
        if token == "header":
            sent["X-Review-Token"] = self.server.token
        elif token == "query":
            path += ("&" if "?" in path else "?") + f"token={self.server.token}"
        elif token is not None:
            sent["X-Review-Token"] = token
        data = raw if raw is not None else (None if body is None else json.dumps(body).encode())
        if data is not None:
            sent["Content-Type"] = "application/json"
        sent.update(headers or {})
        conn.request(method, path, body=data, headers=sent)
        resp = conn.getresponse()
        payload = resp.read()
        conn.close()
        kind = resp.getheader("Content-Type") or ""
        return resp.status, json.loads(payload) if kind.startswith("application/json") else payload.decode()

    def items(self) -> list[dict[str, Any]]:
        return self.call("GET", "/api/items")[1]["items"]

    def label(self, item_id: str, verdict: Any, reason: str | None = None, **headers: str) -> tuple[int, Any]:
        body = {"verdict": verdict, "reason": reason, "annotator": "ana"}
        return self.call("POST", f"/api/items/{item_id}/label", body, headers=headers)


@pytest.fixture
def serve() -> Iterator[Any]:
    """Start a ReviewServer for a queue in a thread; stopped after the test."""
    servers: list[ReviewServer] = []

    def start(queue: ReviewQueue) -> Client:
        server = ReviewServer(queue)
        threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
        servers.append(server)
        return Client(server)

    yield start
    for server in servers:
        server.shutdown()
        server.server_close()


def _loaded(path: Path) -> SingleMetricAnnotation:
    return SingleMetricAnnotation.from_json(str(path), metric_name=METRIC)


# --- the queue and its writes ------------------------------------------------------------------


def test_a_label_is_in_the_file_in_ragas_format_the_moment_it_is_given(ac_copy):
    queue = build_queue(ac_copy)
    assert queue.scale.kind == "binary" and len(queue.items) == 18
    item = queue.items[3]
    flipped = 1.0 - item.judge["verdict"]
    queue.label(
        item.id, {"verdict": flipped, "reason": "The response names the wrong year.", "annotator": "ana"}
    )
    loaded = _loaded(ac_copy)
    sample = loaded.samples[item.position]
    assert sample.human_label(binary=True) == flipped and sample.is_accepted is False
    assert sample.prompts[PROMPT].edited_output["reason"] == "The response names the wrong year."
    assert sample["annotator"] == "ana"
    assert item.label["value"] == flipped and item.label["annotator"] == "ana"
    again = build_queue(ac_copy)  # a restart reads it back under the same id
    assert again.item(item.id).label == item.label


def test_labels_the_metric_cannot_hold_are_refused_and_nothing_is_written(ac_copy):
    queue = build_queue(ac_copy)
    before = ac_copy.read_bytes()
    item = queue.items[0].id
    for body, message in [
        ({"verdict": 0.5, "annotator": "ana"}, "not a label of this metric; labels: 0 (no), 1 (yes)"),
        ({"verdict": True, "annotator": "ana"}, "not a label"),
        ({"verdict": "1", "annotator": "ana"}, "not a label"),
        ({"verdict": 1}, "annotator must be a name"),
        ({"verdict": 1, "annotator": "ana", "score": 3}, "unknown field(s) ['score']"),
        ([1], "must be a JSON object"),
    ]:
        with pytest.raises(
            ReviewError, match=message.replace("(", r"\(").replace(")", r"\)").replace("[", r"\[")
        ):
            queue.label(item, body)
    with pytest.raises(ReviewError, match="no item 'nope'") as exc:
        queue.label("nope", {"verdict": 1, "annotator": "ana"})
    assert exc.value.status == 404
    assert ac_copy.read_bytes() == before


def test_a_failed_write_leaves_the_file_and_the_queue_as_they_were(ac_copy):
    queue = build_queue(ac_copy)
    before = ac_copy.read_bytes()
    item = queue.items[0]
    label = dict(item.label or {})

    def full_disk(path: Path, text: str) -> None:
        raise OSError(28, "No space left on device")

    queue.write = full_disk
    with pytest.raises(OSError, match="No space"):
        queue.label(item.id, {"verdict": 1.0 - item.judge["verdict"], "annotator": "ana"})
    assert ac_copy.read_bytes() == before and item.label == label
    assert queue.document.samples[item.position] == json.loads(before)[METRIC][item.position]


def test_a_file_changed_by_another_program_is_not_overwritten(ac_copy):
    queue = build_queue(ac_copy)
    data = json.loads(ac_copy.read_text())
    data[METRIC][0]["note"] = "edited by hand"
    ac_copy.write_text(json.dumps(data))
    with pytest.raises(ReviewConflict, match="changed by another program"):
        queue.label(queue.items[1].id, {"verdict": 1, "annotator": "ana"})
    assert json.loads(ac_copy.read_text())[METRIC][0]["note"] == "edited by hand"


def test_agreement_so_far_is_read_from_the_labels_beside_the_base_rate(ac_copy):
    queue = build_queue(ac_copy)
    status = queue.status()
    data = load_dataset_of(ac_copy)
    human = data.labels()
    judged = [s.metric_output for s in data.samples]
    accuracy = sum(h == j for h, j in zip(human, judged)) / len(human)
    judge = status["agreement"]["judge"]
    assert judge["n"] == 18 and judge["accuracy"] == pytest.approx(accuracy)
    top = max(set(human), key=human.count)
    assert judge["base_rate"] == {"label": top, "share": pytest.approx(human.count(top) / 18)}
    assert status["progress"] == {"labelled": 18, "reviewed": 0, "total": 18}
    item = next(i for i in queue.items if i.judge["verdict"] == i.label["value"])
    queue.label(item.id, {"verdict": 1.0 - item.judge["verdict"], "annotator": "ana"})  # a disagreement more
    after = queue.status()["agreement"]["judge"]
    assert after["accuracy"] == pytest.approx(accuracy - 1 / 18)
    assert queue.status()["progress"]["reviewed"] == 1


def load_dataset_of(path: Path) -> SingleMetricAnnotation:
    return _loaded(path)


def test_a_pool_starts_a_new_file_and_a_restart_resumes_at_the_first_unlabelled(tmp_path):
    pool = tmp_path / "to_annotate.jsonl"
    rows = [
        {
            "metric_input": {"user_input": f"q{i}", "response": f"r{i}"},
            "rank": i + 1,
            "why": f"reason {i}",
            "verdicts": {"the chosen (candidate 3)": float(i % 2), "the seed": 1.0},
            "reason": f"judge says {i}",
        }
        for i in range(5)
    ]
    pool.write_text("".join(json.dumps(r) + "\n" for r in reversed(rows)))  # rank order is restored
    labels = tmp_path / "labels.json"
    queue = build_queue(labels, pool=pool, metric_name="m")
    assert [i.rank for i in queue.items] == [1, 2, 3, 4, 5] and not labels.exists()
    assert queue.items[0].why == "reason 0" and queue.items[1].judge["reason"] == "judge says 1"
    assert queue.resume_id() == queue.items[0].id
    queue.label(queue.items[0].id, {"verdict": 0, "annotator": "ana"})
    queue.label(queue.items[1].id, {"verdict": 0, "reason": "not so", "annotator": "ana"})
    loaded = SingleMetricAnnotation.from_json(str(labels))
    assert loaded.labels() == [0.0, 0.0] and [s.metric_output for s in loaded.samples] == [0.0, 1.0]
    again = build_queue(labels, pool=pool)
    assert [i.id for i in again.items] == [i.id for i in queue.items]
    assert [i.label is not None for i in again.items] == [True, True, False, False, False]
    assert again.resume_id() == again.items[2].id


def test_a_plain_pool_without_a_judge_verdict_takes_the_human_verdict_as_target(tmp_path):
    pool = tmp_path / "traces.jsonl"
    pool.write_text(json.dumps({"user_input": "q", "response": "r"}) + "\n")
    labels = tmp_path / "new.json"
    queue = build_queue(labels, pool=pool)
    assert queue.items[0].judge is None and queue.document.metric == "new"
    queue.label(queue.items[0].id, {"verdict": 1, "annotator": "ana"})
    assert SingleMetricAnnotation.from_json(str(labels)).labels() == [1.0]


def test_a_rubric_file_offers_its_levels_and_writes_scores(tmp_path):
    samples = [
        {
            "metric_input": {"user_input": f"q{i}", "response": "r"},
            "metric_output": float(v),
            "is_accepted": True,
            "prompts": {
                "single_turn_simple_criteria_prompt": {
                    "prompt_input": {},
                    "prompt_output": {"reason": "ok", "score": v},
                }
            },
        }
        for i, v in enumerate([1, 3, 5, 2])
    ]
    path = tmp_path / "rubric.json"
    path.write_text(json.dumps({"helpfulness": samples}))
    queue = build_queue(path)
    labels = page_labels(queue.scale)
    assert labels["kind"] == "numeric" and labels["step"] == 1
    assert [(c["value"], c["key"]) for c in labels["choices"]] == [(v, str(v)) for v in (1, 2, 3, 4, 5)]
    queue.label(queue.items[1].id, {"verdict": 4, "reason": "better than that", "annotator": "ana"})
    loaded = SingleMetricAnnotation.from_json(str(path), kind="numeric")
    assert loaded.labels() == [1.0, 4.0, 5.0, 2.0] and loaded.samples[1].target == 4
    status = queue.status()["agreement"]["judge"]
    assert status["n"] == 4 and status["exact"] == pytest.approx(0.75) and status["within_one"] == 1.0


def test_a_pool_given_as_the_file_says_what_to_type(tmp_path, capsys):
    pool = tmp_path / "to_annotate.jsonl"
    pool.write_text(json.dumps({"metric_input": {"user_input": "q"}, "why": "w", "verdicts": {}}) + "\n")
    assert main(["review", str(pool)]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"promptevolver review LABELS.json --pool {pool}" in err
    assert not rundir.file_lock_path(pool).exists()


def test_a_missing_file_without_a_pool_is_one_clear_error(tmp_path, capsys):
    assert main(["review", str(tmp_path / "nothere.json")]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "nothere.json: file not found (give --pool" in err


# --- with a run --------------------------------------------------------------------------------


def test_with_a_run_the_chosen_judge_is_shown_and_decides_the_labels(improved, tmp_path):
    data = load_dataset(rundir.read_config(improved))
    path = tmp_path / "annotations.json"
    path.write_text(
        json.dumps({data.name: [s.model_dump(mode="json", exclude_unset=True) for s in data.samples]})
    )
    queue = build_queue(path, run=improved)
    assert queue.run == improved and queue.simulated and "simulated LLM" in (queue.llm or "")
    assert all(i.chosen is not None and i.chosen["verdict"] in (0.0, 1.0) for i in queue.items)
    status = queue.status()
    assert status["agreement"]["chosen"]["n"] == len(data)
    assert status["simulated"] is True


def test_with_a_run_a_plain_pool_comes_in_suggest_order_with_its_why(improved, tmp_path):
    data = load_dataset(rundir.read_config(improved))
    pool = tmp_path / "traces.jsonl"
    pool.write_text("".join(json.dumps(s.metric_input) + "\n" for s in data.samples[:8]))
    queue = build_queue(tmp_path / "labels.json", run=improved, pool=pool)
    assert [i.rank for i in queue.items] == list(range(1, 9))
    assert all(i.why and i.judge and i.judge["verdict"] in (0.0, 1.0) for i in queue.items)
    assert ", by suggest" in queue.items[0].judge["source"]
    assert queue.simulated  # suggest asked the simulated LLM (the run's)


# --- who gets in ---------------------------------------------------------------------------------


def test_the_token_is_needed_for_every_request(ac_copy, serve):
    client = serve(build_queue(ac_copy))
    for path in ("/", "/api/status", "/api/items"):
        assert client.call("GET", path, token=None)[0] == 403
        assert client.call("GET", path, token="wrong")[0] == 403
        assert client.call("GET", path, token="query")[0] == 200
    status, page = client.call("GET", "/", token="query")
    assert "<title>promptevolver review</title>" in page
    item = client.items()[0]["id"]
    assert (
        client.call("POST", f"/api/items/{item}/label", {"verdict": 1, "annotator": "x"}, token=None)[0]
        == 403
    )
    assert client.server.url == f"http://127.0.0.1:{client.server.port}/?token={client.server.token}"
    assert len(client.server.token) >= 40


def test_writes_from_another_origin_or_host_are_refused(ac_copy, serve):
    client = serve(build_queue(ac_copy))
    item = client.items()[0]
    flipped = 1 - item["judge"]["verdict"]
    before = ac_copy.read_bytes()
    origin = f"http://127.0.0.1:{client.server.port}"
    for headers in (
        {"Origin": "http://evil.example"},
        {"Origin": "null"},
        {"Sec-Fetch-Site": "cross-site"},
        {"Sec-Fetch-Site": "same-site"},
        {"Host": "evil.example"},
        {"Host": f"attacker.example:{client.server.port}"},
    ):
        status, body = client.label(item["id"], flipped, **headers)
        assert status == 403 and body["error"].startswith("refused"), headers
    status, _ = client.call(
        "POST",
        f"/api/items/{item['id']}/label",
        raw=b'{"verdict": 0, "annotator": "x"}',
        headers={"Content-Type": "text/plain"},
    )
    assert status == 415  # a cross-site form cannot send JSON without a preflight
    assert client.call("OPTIONS", f"/api/items/{item['id']}/label")[0] == 405
    assert ac_copy.read_bytes() == before
    status, body = client.label(item["id"], flipped, Origin=origin, **{"Sec-Fetch-Site": "same-origin"})
    assert status == 200 and body["item"]["label"]["value"] == flipped


def test_responses_forbid_other_scripts_frames_and_referrers(ac_copy, serve):
    client = serve(build_queue(ac_copy))
    conn = http.client.HTTPConnection("127.0.0.1", client.server.port, timeout=10)
    conn.request("GET", f"/?token={client.server.token}", headers={"Host": f"127.0.0.1:{client.server.port}"})
    resp = conn.getresponse()
    resp.read()
    csp = resp.getheader("Content-Security-Policy")
    assert "script-src 'sha256-" in csp and "'unsafe-inline'" not in csp and "frame-ancestors 'none'" in csp
    assert resp.getheader("Referrer-Policy") == "no-referrer" and resp.getheader("X-Frame-Options") == "DENY"
    conn.close()


def test_the_page_writes_sample_text_as_text_only():
    page = page_html()
    assert "innerHTML" not in page and "insertAdjacentHTML" not in page and "document.write" not in page
    assert page.count("<script>") == 1 and "textContent" in page


def test_the_server_listens_on_127_0_0_1_only(ac_copy, serve):
    client = serve(build_queue(ac_copy))
    assert client.server.server_address[0] == "127.0.0.1"


# --- two pages, one file -----------------------------------------------------------------------


def test_two_pages_cannot_both_write_the_second_is_read_only_until_it_takes_over(ac_copy, serve):
    client = serve(build_queue(ac_copy))
    items = client.items()
    first, second = "page-one-0001", "page-two-0002"
    assert client.call("POST", "/api/session", {"page": first})[1] == {"writer": True}
    assert client.call("POST", "/api/session", {"page": second})[1] == {"writer": False}
    status, body = client.label(items[0]["id"], 1, **{"X-Review-Page": second})
    assert status == 409 and body["read_only"] is True
    assert client.label(items[0]["id"], 0)[0] == 409  # a script naming no page: a page writes
    assert client.label(items[0]["id"], 1, **{"X-Review-Page": first})[0] == 200
    assert client.call("POST", "/api/session", {"page": second, "take_over": True})[1] == {"writer": True}
    assert client.label(items[1]["id"], 1, **{"X-Review-Page": first})[0] == 409
    assert client.label(items[1]["id"], 1, **{"X-Review-Page": second})[0] == 200


def test_a_second_review_of_the_same_file_is_refused_naming_the_first(ac_copy, capsys):
    with rundir.locked_file(ac_copy, use="reviewed"):
        assert main(["review", str(ac_copy)]) == 1
    err = capsys.readouterr().err
    assert f"{ac_copy} is being reviewed by another promptevolver process (pid {os.getpid()}" in err


# --- the command ---------------------------------------------------------------------------------


def _start(*args: str, cwd: Path) -> tuple[subprocess.Popen[str], str]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "promptevolver", "review", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=cwd,
    )
    assert proc.stdout is not None
    return proc, proc.stdout.readline().strip()


def _post(url: str, path: str, body: dict[str, Any]) -> int:
    port = int(url.split(":")[2].split("/")[0])
    token = url.split("token=")[1]
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    conn.request(
        "POST",
        path,
        body=json.dumps(body),
        headers={"X-Review-Token": token, "Content-Type": "application/json", "Host": f"127.0.0.1:{port}"},
    )
    status = conn.getresponse().status
    conn.close()
    return status


def test_the_command_prints_its_url_first_and_a_sigkill_loses_no_label(ac_copy, tmp_path):
    proc, url = _start(str(ac_copy), "--port", "0", cwd=tmp_path)
    try:
        assert url.startswith("http://127.0.0.1:") and "/?token=" in url
        ids = [i["id"] for i in _get_items(url)]
        for n, item in enumerate(ids[:5]):
            assert _post(url, f"/api/items/{item}/label", {"verdict": n % 2, "annotator": "ana"}) == 200
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        assert proc.stdout is not None and proc.stderr is not None
        proc.stdout.close()
        proc.stderr.close()
    loaded = _loaded(ac_copy)
    assert [s.human_label(binary=True) for s in loaded.samples[:5]] == [0.0, 1.0, 0.0, 1.0, 0.0]
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]
    proc, url = _start(str(ac_copy), cwd=tmp_path)  # the killed one's lock is taken over
    try:
        status = _get(url, "/api/status")
        assert status["progress"]["reviewed"] == 5 and status["resume"] == ids[5]
    finally:
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=30)
    assert proc.returncode == 0 and "stopped; 18 of 18 items labelled" in err
    assert not rundir.file_lock_path(ac_copy).exists()


def _get(url: str, path: str) -> Any:
    port = int(url.split(":")[2].split("/")[0])
    token = url.split("token=")[1]
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    conn.request("GET", path, headers={"X-Review-Token": token, "Host": f"127.0.0.1:{port}"})
    data = json.loads(conn.getresponse().read())
    conn.close()
    return data


def _get_items(url: str) -> list[dict[str, Any]]:
    deadline = time.monotonic() + 30
    while True:
        try:
            return _get(url, "/api/items")["items"]
        except ConnectionError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)


def test_the_page_offers_the_label_space_of_every_scale_with_a_key_each():
    from promptevolver.annotations import LabelChoice, LabelScale

    binary = page_labels(LabelScale("binary"))
    assert [(c["value"], c["name"], c["key"]) for c in binary["choices"]] == [
        (1.0, "yes", "1"),
        (0.0, "no", "0"),
    ]
    pairwise = LabelScale(
        "nominal", choices=(LabelChoice(1, "a"), LabelChoice(0, "b"), LabelChoice(0.5, "tie"))
    )
    assert [(c["name"], c["key"]) for c in page_labels(pairwise)["choices"]] == [
        ("a", "1"),
        ("b", "2"),
        ("tie", "3"),
    ]
    assert fits(pairwise, 0.5) and not fits(pairwise, 0.25)
    wide = LabelScale("numeric", 0.0, 100.0, discrete=True)
    assert page_labels(wide)["choices"] == [] and page_labels(wide)["step"] == 1
    assert fits(wide, 42) and not fits(wide, 42.5) and not fits(wide, 101)
    free = LabelScale("numeric", 0.0, 1.0)
    assert (
        fits(free, 0.25) and not fits(free, True) and not fits(free, "0.5") and not fits(free, float("nan"))
    )
