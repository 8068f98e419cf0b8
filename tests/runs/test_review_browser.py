"""The review page in a real browser: Debian's ``chromium``, driven headless by Selenium through
``chromium-driver``, against ``promptevolver review`` started as a command.

Without chromium, chromedriver or selenium these tests skip, saying which is missing (.ci/run
installs the first two with apt, the test extra the third)."""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from promptevolver.annotations import SingleMetricAnnotation
from promptevolver.cli import main

from ..conftest import AC_DEFINITION, AC_FILE

BROWSER = shutil.which("chromium") or shutil.which("chromium-browser")
DRIVER = shutil.which("chromedriver")
try:
    import selenium  # noqa: F401

    SELENIUM = True
except ImportError:  # pragma: no cover - the test extra installs it
    SELENIUM = False

pytestmark = pytest.mark.skipif(
    not (BROWSER and DRIVER and SELENIUM),
    reason="needs Debian's chromium and chromium-driver (apt-get install chromium chromium-driver; .ci/run "
    "does) and selenium (the test extra): "
    + ", ".join(
        n for n, ok in (("chromium", BROWSER), ("chromedriver", DRIVER), ("selenium", SELENIUM)) if not ok
    )
    + " missing",
)

METRIC = "answer_correctness"
FLAGS = (
    "--headless --no-sandbox --disable-gpu --disable-quic --no-first-run --disable-background-networking "
    "--disable-component-update --disable-sync"
).split()


@pytest.fixture
def browser(tmp_path: Path) -> Iterator[Any]:
    """A headless chromium with a fresh profile; quit after the test."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    for flag in [*FLAGS, f"--user-data-dir={tmp_path / 'profile'}", "--window-size=1280,900"]:
        options.add_argument(flag)
    options.binary_location = str(BROWSER)
    driver = webdriver.Chrome(service=Service(executable_path=str(DRIVER)), options=options)
    driver.set_page_load_timeout(60)
    try:
        yield driver
    finally:
        driver.quit()


class Review:
    """``promptevolver review ARGS`` as a process; ``url`` is its first line."""

    def __init__(self, *args: str, cwd: Path) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "promptevolver", "review", *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd=cwd,
        )
        assert self.proc.stdout is not None
        self.url = self.proc.stdout.readline().strip()
        assert self.url.startswith("http://127.0.0.1:"), self.proc.stderr.read() if self.proc.stderr else ""

    def kill(self) -> None:
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()
        for stream in (self.proc.stdout, self.proc.stderr):
            if stream is not None:
                stream.close()


@pytest.fixture
def started(tmp_path: Path) -> Iterator[Any]:
    reviews: list[Review] = []

    def start(*args: str) -> Review:
        reviews.append(Review(*args, cwd=tmp_path))
        return reviews[-1]

    yield start
    for review in reviews:
        if review.proc.poll() is None:
            review.kill()


def _open(driver: Any, url: str) -> None:
    from selenium.webdriver.support.ui import WebDriverWait

    driver.get(url)
    WebDriverWait(driver, 30).until(lambda d: d.find_element("tag name", "body").get_attribute("data-ready"))


def _saves(driver: Any) -> int:
    return int(driver.find_element("id", "saved").get_attribute("data-count") or 0)


def _wait_saved(driver: Any, count: int) -> None:
    from selenium.webdriver.support.ui import WebDriverWait

    try:
        WebDriverWait(driver, 30).until(
            lambda d: _saves(d) >= count or "Not saved" in d.find_element("id", "saved").text
        )
    except Exception as exc:
        raise AssertionError(
            f"no save {count}: {_text(driver, 'saved')!r} at {_text(driver, 'where')!r}"
        ) from exc
    assert _saves(driver) >= count, _text(driver, "saved")


def _keys(driver: Any, *keys: str) -> None:
    from selenium.webdriver.common.action_chains import ActionChains

    ActionChains(driver).send_keys(*keys).perform()


def _text(driver: Any, element_id: str) -> str:
    return str(driver.find_element("id", element_id).text)


def _annotator(driver: Any, name: str) -> None:
    from selenium.webdriver.common.keys import Keys

    box = driver.find_element("id", "annotator")
    box.clear()
    box.send_keys(name, Keys.ESCAPE)  # Escape leaves the box: the keys act on the page again


def _samples(path: Path) -> list[dict[str, Any]]:
    return json.loads(path.read_text())[METRIC]


def _hostile_copy(tmp_path: Path) -> Path:
    """The bundled answer_correctness annotations, the first response holding markup."""
    data = json.loads(AC_FILE.read_text())
    first = data[METRIC][0]["metric_input"]
    first["response"] = (
        "<script>document.body.dataset.pwned = 'yes'</script><img src=x onerror=\"document.title='pwned'\"> "
        + first["response"]
    )
    path = tmp_path / "ac.json"
    path.write_text(json.dumps(data))
    return path


def test_label_by_click_and_by_keyboard_edit_a_reason_reload_and_find_it_all_in_the_file(
    browser, started, tmp_path
):
    from selenium.webdriver.common.keys import Keys

    path = _hostile_copy(tmp_path)
    review = started(str(path))
    _open(browser, review.url)
    # A sample holding markup shows as text, and runs nothing.
    response = browser.find_elements("css selector", "#inputs .text")[1]
    assert response.text.startswith("<script>document.body.dataset.pwned")
    assert browser.find_element("tag name", "body").get_attribute("data-pwned") is None
    assert browser.title == "promptevolver review" and not browser.find_elements(
        "css selector", "#inputs img"
    )
    _annotator(browser, "ana")
    before = _samples(path)
    judge = [s["metric_output"] for s in before]

    # 1. by click: Reject, write the corrected reason, Save
    browser.find_element("id", "reject").click()
    browser.find_element("id", "reason").send_keys("The response names the wrong city.")
    browser.find_element("id", "save").click()
    _wait_saved(browser, 1)
    assert "Item 2 of 18" in _text(browser, "where")
    # 2. by keyboard: accept
    _keys(browser, "a")
    _wait_saved(browser, 2)
    # 3. by keyboard: the other verdict by its key, with a reason written first
    _keys(browser, "e")
    browser.find_element("id", "reason").clear()  # it shows the file's reason, if any, to edit
    browser.find_element("id", "reason").send_keys("A verdict given by its key.", Keys.ESCAPE)
    _keys(browser, str(int(1 - judge[2])))
    _wait_saved(browser, 3)
    assert "Item 4 of 18" in _text(browser, "where")
    # edit the reason of the first item
    _keys(browser, "k", "k", "k")
    assert "Item 1 of 18" in _text(browser, "where")
    _keys(browser, "e")
    reason = browser.find_element("id", "reason")
    reason.clear()
    reason.send_keys("The response names Lyon where the reference says Paris.", Keys.CONTROL, Keys.ENTER)
    _wait_saved(browser, 4)
    assert "Item 1 of 18" in _text(browser, "where")  # an edit stays on its item

    browser.refresh()
    _open(browser, browser.current_url)
    assert "Item 1 of 18" in _text(browser, "where")  # the page keeps its place
    name = "no (0)" if judge[0] == 1 else "yes (1)"
    assert f"Labelled {name} (rejected) by ana" in _text(browser, "current")
    assert browser.find_element("id", "reason").get_attribute("value") == (
        "The response names Lyon where the reference says Paris."
    )
    assert "3 given on a review page" in _text(browser, "progress")

    after = _samples(path)
    prompt = "single_turn_aspect_critic_prompt"
    assert after[0]["is_accepted"] is False and after[0]["annotator"] == "ana"
    assert after[0]["prompts"][prompt]["edited_output"] == {
        "reason": "The response names Lyon where the reference says Paris.",
        "verdict": 1 - judge[0],
    }
    assert after[1]["is_accepted"] is True and after[1]["annotator"] == "ana"
    assert after[2]["is_accepted"] is False
    assert after[2]["prompts"][prompt]["edited_output"]["reason"] == "A verdict given by its key."
    assert after[3:] == before[3:]
    loaded = SingleMetricAnnotation.from_json(str(path))
    assert loaded.labels()[:3] == [1 - judge[0], judge[1], 1 - judge[2]]


def test_ten_labels_by_keyboard_survive_a_sigkill_and_optimize_runs_on_the_file(browser, started, tmp_path):
    """The issue's Done-when: a person labels 10 items with the keyboard, closes the tab, the
    server is killed with SIGKILL, the page is opened again: all 10 labels are in the file, in
    Ragas' format, and optimize runs on it."""
    from selenium.webdriver.common.keys import Keys

    data = json.loads(AC_FILE.read_text())[METRIC]
    pool = tmp_path / "to_annotate.jsonl"  # suggest's output shape: the judge's verdict and reason, ranked
    rows = [
        {
            "metric_input": s["metric_input"],
            "rank": i + 1,
            "why": f"trace {i}",
            "verdicts": {"the chosen (candidate 1)": s["metric_output"]},
            "reason": s["prompts"]["single_turn_aspect_critic_prompt"]["prompt_output"]["reason"],
        }
        for i, s in enumerate(data)
    ]
    pool.write_text("".join(json.dumps(r) + "\n" for r in rows))
    labels = tmp_path / "labels.json"
    review = started(str(labels), "--pool", str(pool), "--metric", METRIC)
    _open(browser, review.url)
    _annotator(browser, "bo")
    human = []
    for i, sample in enumerate(data[:10]):
        truth = SingleMetricAnnotation.from_json(str(AC_FILE)).labels()[i]
        if i % 3 == 2:  # reject with a reason: r, type, Ctrl+Enter
            _keys(browser, "r")
            browser.find_element("id", "reason").send_keys(f"corrected {i}", Keys.CONTROL, Keys.ENTER)
            human.append(1 - sample["metric_output"])
        elif truth == sample["metric_output"]:
            _keys(browser, "a")
            human.append(sample["metric_output"])
        else:
            _keys(browser, str(int(truth)))
            human.append(truth)
        _wait_saved(browser, i + 1)
    assert "10 of 18 labelled" in _text(browser, "progress")
    browser.get("about:blank")  # the tab is closed
    review.kill()

    again = started(str(labels), "--pool", str(pool), "--metric", METRIC)
    _open(browser, again.url)
    assert "Item 11 of 18" in _text(browser, "where")  # it resumes where the person stopped
    assert "10 of 18 labelled" in _text(browser, "progress")
    again.kill()

    written = json.loads(labels.read_text())
    assert list(written) == [METRIC] and len(written[METRIC]) == 10
    loaded = SingleMetricAnnotation.from_json(str(labels))
    assert loaded.labels() == human
    assert all(s["annotator"] == "bo" for s in written[METRIC])
    assert [s["metric_input"] for s in written[METRIC]] == [s["metric_input"] for s in data[:10]]
    rejected = [s for s in written[METRIC] if not s["is_accepted"]]
    assert rejected and all(
        "verdict" in s["prompts"]["single_turn_aspect_critic_prompt"]["edited_output"] for s in rejected
    )
    config = tmp_path / "labels.yaml"
    config.write_text(
        yaml.safe_dump(
            {
                "dataset": str(labels),
                "metric": {"name": METRIC, "definition": AC_DEFINITION},
                "optimizer": {"population_size": 3, "generations": 1},
                "random_seed": 0,
            }
        )
    )
    assert main(["optimize", str(config), "--output", str(tmp_path / "run"), "-q"]) == 0
    assert json.loads((tmp_path / "run" / "result.json").read_text())["best_instructions"]


def test_a_rubric_score_by_its_key_and_a_free_score_in_the_number_box(browser, started, tmp_path):
    prompt = "single_turn_simple_criteria_prompt"
    samples = [
        {
            "metric_input": {"user_input": f"question {i}", "response": f"answer {i}"},
            "metric_output": float(v),
            "is_accepted": True,
            "prompts": {prompt: {"prompt_input": {}, "prompt_output": {"reason": "fine", "score": v}}},
        }
        for i, v in enumerate([1, 3, 5, 2])
    ]
    path = tmp_path / "rubric.json"
    path.write_text(json.dumps({"helpfulness": samples}))
    review = started(str(path))
    _open(browser, review.url)
    _annotator(browser, "cy")
    assert [b.text for b in browser.find_elements("css selector", "#choices button")] == [
        "1 1",
        "2 2",
        "3 3",
        "4 4",
        "5 5",
    ]
    _keys(browser, "e")
    browser.find_element("id", "reason").send_keys("Answers half of it.")
    from selenium.webdriver.common.keys import Keys

    browser.find_element("id", "reason").send_keys(Keys.ESCAPE)
    _keys(browser, "4")  # item 1: the judge said 1, the person says 4
    _wait_saved(browser, 1)
    written = json.loads(path.read_text())["helpfulness"][0]
    assert written["target"] == 4 and written["is_accepted"] is False
    assert written["prompts"][prompt]["edited_output"] == {"reason": "Answers half of it.", "score": 4}
    assert "exact" in _text(browser, "judge-agreement") and "within one" in _text(browser, "judge-agreement")
    loaded = SingleMetricAnnotation.from_json(str(path), kind="numeric")
    assert loaded.labels() == [4.0, 3.0, 5.0, 2.0]
    review.kill()

    fractions = [
        {
            "metric_input": {"user_input": f"q{i}", "response": f"r{i}"},
            "metric_output": v,
            "is_accepted": True,
        }
        for i, v in enumerate([0.25, 0.5, 0.8])
    ]
    free = tmp_path / "supported.json"
    free.write_text(json.dumps({"faithfulness": fractions}))
    review = started(str(free))
    _open(browser, review.url)
    _annotator(browser, "cy")  # another port, another origin: the browser does not remember it
    assert not browser.find_elements("css selector", "#choices button")
    box = browser.find_element("id", "number")
    assert box.is_displayed() and box.get_attribute("min") == "0.25" and box.get_attribute("max") == "0.8"
    assert box.get_attribute("value") == "0.25"  # the label the file holds
    box.clear()
    box.send_keys("0.6", Keys.CONTROL, Keys.ENTER)
    _wait_saved(browser, 1)
    assert json.loads(free.read_text())["faithfulness"][0]["target"] == 0.6


def test_a_two_prompt_metric_takes_a_score_and_its_reason_and_optimize_reads_the_score(
    browser, started, tmp_path
):
    """The newcomer's case, on the page: faithfulness (statement support: a statement extractor
    and a verifier) reviewed with its run. The score and reason given are the sample's label
    (``target``, ``is_accepted``, ``human_reason``): no prompt's output is its score, and each
    prompt's own correction (the first sample's edited statements) stays as it was. A reload
    shows them; ``optimize`` on the file reads the score as the human label."""
    from selenium.webdriver.common.keys import Keys

    from promptevolver.annotations import HUMAN_REASON
    from promptevolver.config._build import load_dataset
    from promptevolver.config._models import load_run_config

    from ..conftest import DATA

    name = "faithfulness"
    path = tmp_path / "faithfulness.json"
    path.write_text(
        json.dumps({name: json.loads((DATA / "faithfulness_statements.json").read_text())[name][:24]})
    )
    config = tmp_path / "faithfulness.yaml"
    metric = {"type": "statement_support", "name": name}
    config.write_text(yaml.safe_dump({"dataset": str(path), "metric": metric, "loss": {"type": "mse"}}))
    assert main(["optimize", str(config), "--output", str(tmp_path / "run"), "-q"]) == 0
    before = json.loads(path.read_text())[name]

    review = started(str(path), "--run", str(tmp_path / "run"))
    _open(browser, review.url)
    _annotator(browser, "dee")
    assert not browser.find_elements("css selector", "#choices button")  # a score in [0, 1]
    box = browser.find_element("id", "number")
    assert (box.get_attribute("min"), box.get_attribute("max")) == ("0", "1")
    reason = "Two of the statements are not in the context."
    browser.find_element("id", "reason").clear()
    browser.find_element("id", "reason").send_keys(reason, Keys.ESCAPE)
    box.clear()
    box.send_keys("0.2", Keys.CONTROL, Keys.ENTER)
    _wait_saved(browser, 1)
    assert "Not saved" not in _text(browser, "saved")

    after = json.loads(path.read_text())[name]
    assert after[0]["target"] == 0.2 and after[0]["is_accepted"] is False
    assert after[0][HUMAN_REASON] == reason and after[0]["annotator"] == "dee"
    assert after[0]["prompts"] == before[0]["prompts"]  # the edited statements are kept
    assert after[1:] == before[1:]
    browser.refresh()
    _open(browser, browser.current_url)
    _keys(browser, "k")
    assert "Item 1 of 24" in _text(browser, "where")
    assert "Labelled 0.2 (rejected) by dee" in _text(browser, "current")
    assert browser.find_element("id", "reason").get_attribute("value") == reason
    review.kill()

    assert load_dataset(load_run_config(config)).labels()[0] == 0.2
    assert main(["optimize", str(config), "--output", str(tmp_path / "again"), "-q"]) == 0
