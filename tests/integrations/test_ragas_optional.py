"""The Ragas integration is optional: importing it never imports Ragas, and using it without Ragas
fails with the install command (both hold whether Ragas is installed or not)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest


def _python(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)


def test_importing_the_integration_does_not_import_ragas():
    out = _python("import sys, promptevolver.integrations.ragas as r; print('ragas' in sys.modules)")
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "False"


def test_using_it_without_ragas_names_the_extra_to_install():
    blocked = (
        "import sys; sys.modules['ragas'] = None; sys.modules['ragas.metrics'] = None\n"
        "from promptevolver.integrations.ragas import RagasMetric\n"
        "RagasMetric(object())"
    )
    out = _python(blocked)
    assert out.returncode == 1
    assert 'ImportError: the Ragas integration needs Ragas: pip install "promptevolver[ragas]"' in out.stderr


class _Prompt:
    def __init__(self, instruction: str) -> None:
        self.instruction = instruction


class _StandIn:
    """What write_back touches of a Ragas metric: get_prompts and set_prompts."""

    def __init__(self) -> None:
        self.prompts = {"single_turn_aspect_critic_prompt": _Prompt("seed")}

    def get_prompts(self):
        return dict(self.prompts)

    def set_prompts(self, **prompts):
        self.prompts.update(prompts)


@pytest.mark.parametrize("form", ["dir", "dir-str", "result", "best"])
def test_write_back_takes_a_run_directory_or_result_path(tmp_path, form):
    """write_back(critic, "runs/pol") iterated the string as prompt names (KeyError '/', 'c', ...)."""
    from promptevolver.integrations.ragas import write_back

    best = {"single_turn_aspect_critic_prompt": "the optimized instruction"}
    (tmp_path / "result.json").write_text(
        json.dumps(
            {
                "format_version": 2,
                "metric": "m",
                "seed_instructions": {},
                "best_instructions": best,
                "scores": {},
            }
        )
    )
    (tmp_path / "best_instructions.json").write_text(json.dumps(best))
    given = {
        "dir": tmp_path,
        "dir-str": str(tmp_path),
        "result": tmp_path / "result.json",
        "best": str(tmp_path / "best_instructions.json"),
    }[form]
    metric = write_back(_StandIn(), given)
    assert metric.prompts["single_turn_aspect_critic_prompt"].instruction == "the optimized instruction"


@pytest.mark.parametrize("given", [42, ["single_turn_aspect_critic_prompt"], None])
def test_write_back_refuses_what_is_neither_instructions_nor_a_path(given):
    from promptevolver.integrations.ragas import write_back

    metric = _StandIn()
    with pytest.raises(
        TypeError, match="mapping of prompt name to instruction .* or the path of a run directory"
    ):
        write_back(metric, given)
    assert metric.prompts["single_turn_aspect_critic_prompt"].instruction == "seed"


def test_a_missing_run_path_is_one_error_naming_it(tmp_path):
    from promptevolver import ConfigError
    from promptevolver.integrations.ragas import write_back

    with pytest.raises(ConfigError, match="nothere: instructions file not found"):
        write_back(_StandIn(), tmp_path / "nothere")


def test_our_judges_take_a_run_path_too(tmp_path):
    from promptevolver import AspectCritic

    (tmp_path / "best_instructions.json").write_text(json.dumps({"single_turn_aspect_critic_prompt": "new"}))
    critic = AspectCritic(name="m", definition="d")
    critic.set_instructions(str(tmp_path))
    assert critic.get_instructions() == {"single_turn_aspect_critic_prompt": "new"}
    with pytest.raises(TypeError, match="mapping of prompt name"):
        critic.set_instructions(7)  # type: ignore[arg-type]
