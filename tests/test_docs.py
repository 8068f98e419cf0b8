"""The README and docs/ stay usable: links resolve, the index is complete, the snippets a new user
pastes load, and CI runs the README's test command verbatim."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml

from promptevolver import SingleMetricAnnotation
from promptevolver.config._models import load_run_config

from .conftest import ROOT

DOCS = ROOT / "docs"
PAGES = [ROOT / "README.md", *sorted(DOCS.glob("*.md"))]
LINK = re.compile(r"\]\(([^)\s]+)\)")
CODE = re.compile(r"^```.*?^```", flags=re.MULTILINE | re.DOTALL)


def _slug(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def _anchors(page: Path) -> set[str]:
    text = CODE.sub("", page.read_text(encoding="utf-8"))
    return {_slug(m) for m in re.findall(r"^#+ (.+)$", text, flags=re.MULTILINE)}


def _section(page: Path, heading: str) -> str:
    text = page.read_text(encoding="utf-8")
    start = text.index(heading) + len(heading)
    end = re.search(r"^## ", text[start:], flags=re.MULTILINE)
    return text[start : start + end.start()] if end else text[start:]


def _blocks(text: str, language: str) -> list[str]:
    return re.findall(rf"^```{language}\n(.*?)^```", text, flags=re.MULTILINE | re.DOTALL)


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_resolves(page: Path) -> None:
    broken = []
    for target in LINK.findall(CODE.sub("", page.read_text(encoding="utf-8"))):
        if re.match(r"[a-z]+:", target):  # https:, mailto:
            continue
        path, _, anchor = target.partition("#")
        resolved = (page.parent / path).resolve() if path else page
        if not resolved.exists() or (
            anchor and resolved.suffix == ".md" and anchor not in _anchors(resolved)
        ):
            broken.append(target)
    assert not broken, f"{page.relative_to(ROOT)}: broken links {broken}"


def test_the_docs_index_lists_every_docs_file() -> None:
    index = (DOCS / "README.md").read_text(encoding="utf-8")
    linked = set(LINK.findall(index))
    missing = [p.name for p in DOCS.glob("*.md") if p.name != "README.md" and p.name not in linked]
    assert not missing, f"docs/README.md does not list {missing}"


def test_ci_runs_the_readme_test_command_verbatim() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    command = next(b for b in _blocks(readme, "bash") if "pytest" in b).strip()
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    marker = ci.index("# --- the README's test command, verbatim ---")
    assert ci[marker + 1] == command


def test_the_five_minute_annotation_file_and_config_load(tmp_path: Path) -> None:
    section = _section(ROOT / "README.md", "## Your own annotations and model, in five minutes")
    [annotations] = _blocks(section, "json")
    [config] = _blocks(section, "yaml")
    (tmp_path / "my_annotations.json").write_text(annotations, encoding="utf-8")
    (tmp_path / "my_judge.yaml").write_text(config, encoding="utf-8")
    run = load_run_config(tmp_path / "my_judge.yaml")
    name = yaml.safe_load(config)["metric"]["name"]
    dataset = SingleMetricAnnotation.from_json(tmp_path / "my_annotations.json", metric_name=name)
    assert len(dataset) == len(json.loads(annotations)[name]) and run.llm.provider == "openai"
    [sample] = dataset.samples
    assert sample.human_label(binary=True) == 0.0  # rejected verdict 1: the human says 0
    assert sample.expected_output("single_turn_aspect_critic_prompt") == {
        "reason": "The response names Lyon where the reference says Paris.",
        "verdict": 0,
    }


def test_the_local_model_commands_can_be_pasted_as_they_are() -> None:
    """A server started in the background is waited for before anything talks to it; Ollama's
    server runs before ``ollama pull``; the llama.cpp build is the portable one CI makes."""
    page = (DOCS / "local-models.md").read_text(encoding="utf-8")
    blocks = _blocks(page, "bash")
    for block in blocks:
        lines = [line for line in block.splitlines() if line.strip()]
        for i, line in enumerate(lines):
            if re.search(r"&(\s*#.*)?$", line) and not line.rstrip().endswith("&&"):
                assert "curl" in lines[i + 1] and "break" in lines[i + 1], f"nothing waits after: {line}"
        if "ollama pull" in block:
            assert block.index("ollama serve") < block.index("ollama pull")
    ci = (ROOT / ".ci" / "llama_server.sh").read_text(encoding="utf-8")
    cmake_args = re.search(r'^LLAMA_CMAKE_ARGS="(.+)"$', ci, flags=re.MULTILINE)
    version = re.search(r'^LLAMA_CPP_VERSION="(.+)"$', ci, flags=re.MULTILINE)
    assert cmake_args and version
    [llama] = [b for b in blocks if "llama_cpp.server" in b]
    assert f'CMAKE_ARGS="{cmake_args.group(1)}"' in llama
    assert f"llama-cpp-python[server]=={version.group(1)}" in llama
    assert "-DGGML_NATIVE=OFF" in cmake_args.group(1) and "AMX_INT8=OFF" in cmake_args.group(1)


def test_the_layout_page_names_every_module_and_every_path_it_names_exists() -> None:
    """docs/layout.md is the map of the source tree: each module of src/promptevolver appears in it
    by name, and every `dir/file.py` path it gives exists."""
    text = (ROOT / "docs" / "layout.md").read_text(encoding="utf-8")
    src = ROOT / "src" / "promptevolver"
    missing = [
        str(f.relative_to(src))
        for f in sorted(src.rglob("*.py"))
        if f.name != "__init__.py" and not re.search(rf"(?<!\w){re.escape(f.stem)}(?!\w)", text)
    ]
    assert missing == [], f"docs/layout.md does not name {missing}"
    files = [f.relative_to(src).as_posix() for f in src.rglob("*.py")]
    prose = {"_name.py", "_legacy.py"}  # the naming rule, and the module that is gone
    named = set(re.findall(r"`([\w/]+\.py)`", text)) - prose
    stale = sorted(
        p for p in named if not (ROOT / p).exists() and not any(f == p or f.endswith("/" + p) for f in files)
    )
    assert stale == [], f"docs/layout.md names paths that do not exist: {stale}"


def test_the_readme_s_sample_output_is_what_its_first_command_prints(tmp_path: Path) -> None:
    """The README shows what `promptevolver optimize configs/answer_correctness.yaml` prints (on the
    simulated LLM, deterministic): every line of that block is the command's own, word for word, so
    a change to the run's figures cannot leave the README behind."""
    import subprocess
    import sys

    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    start = readme.index("\nanswer_correctness: accuracy") + 1
    block = readme[start : readme.index("```", start)]
    out = subprocess.run(
        [sys.executable, "-m", "promptevolver.cli", "optimize", "configs/answer_correctness.yaml"]
        + ["--output", str(tmp_path / "run")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
        check=True,
    ).stdout.splitlines()
    shown = [line for line in block.strip().splitlines() if line.strip()]
    assert shown == out[: len(shown)]
