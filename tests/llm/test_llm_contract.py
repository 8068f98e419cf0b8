"""The LLMClient contract suite (promptevolver.testing.contracts) on every client we ship: the
scripted fake, the simulated judge, the OpenAI client against a local server, the cache."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from promptevolver.llm import CachedLLM, OpenAIClient, ScriptedLLM, SimulatedJudgeLLM
from promptevolver.llm._base import LLMRequest
from promptevolver.testing import LocalOpenAIServer
from promptevolver.testing.contracts import LLMClientContract

KEY = "sk-contract-9f8e7d6c5b4a"


def echo(request: LLMRequest) -> str:
    return "echo " + request.messages[-1].content


class _Echoes(LLMClientContract):
    def expected_text(self, request: LLMRequest) -> str | None:
        return echo(request)


class TestScriptedLLM(_Echoes):
    def make_client(self) -> ScriptedLLM:
        return ScriptedLLM(handler=echo)


class TestSimulatedJudgeLLM(LLMClientContract):
    """It answers prompts it does not know with an error object: the order is not checked."""

    @pytest.fixture(autouse=True)
    def _dataset(self, ac_dataset: Any) -> None:
        self.dataset = ac_dataset

    def make_client(self) -> SimulatedJudgeLLM:
        return SimulatedJudgeLLM(dataset=self.dataset, random_seed=0)


class TestOpenAIClient(_Echoes):
    """Real HTTP against the local OpenAI-compatible server."""

    secrets = (KEY,)

    @pytest.fixture(autouse=True)
    def _server(self) -> Iterator[None]:
        with LocalOpenAIServer(lambda body: "echo " + body["messages"][-1]["content"]) as server:
            self.server = server
            yield

    def make_client(self) -> OpenAIClient:
        return OpenAIClient(model="m", base_url=self.server.base_url, api_key=KEY, max_concurrency=4)


class TestCachedLLM(_Echoes):
    @pytest.fixture(autouse=True)
    def _folder(self, tmp_path: Path) -> None:
        self.folder, self.made = tmp_path, 0

    def make_client(self) -> CachedLLM:
        self.made += 1  # a fresh cache file per client: no answer is replayed across clients
        return CachedLLM(inner=ScriptedLLM(handler=echo), path=self.folder / f"c{self.made}.sqlite")


class _Broken(LLMClientContract):
    """A client that breaks the contract, to show the suite can fail."""

    def make_client(self) -> ScriptedLLM:
        return ScriptedLLM(handler=lambda request: "same answer")

    def expected_text(self, request: LLMRequest) -> str | None:
        return echo(request)


def test_the_suite_fails_a_client_that_answers_out_of_turn() -> None:
    with pytest.raises(AssertionError, match="answer 0 is 'same answer'"):
        _Broken().test_answers_are_completions_in_request_order()


def test_the_suite_refuses_to_run_without_a_client() -> None:
    with pytest.raises(NotImplementedError, match="make_client"):
        LLMClientContract().test_is_an_llm_client()
