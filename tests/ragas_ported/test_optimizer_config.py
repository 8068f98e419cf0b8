# Ported from Ragas 0.4.3, tests/unit/test_optimizer_config.py
# (https://github.com/vibrantlabsai/ragas, tag v0.4.3, commit 4ecab384fda829ca50bec3f07cc49589d756e172).
# Copyright the Ragas authors; licensed under the Apache License, Version 2.0
# (http://www.apache.org/licenses/LICENSE-2.0). Changed: a skip mark naming what it needs.
# Test body is Ragas'.

import pytest

pytestmark = pytest.mark.skip(
    reason="needs ragas.config (InstructionConfig, DemonstrationConfig) and Ragas' fake LLM and "
    "embedding fixtures: Ragas' metric-side optimizer configuration; promptevolver's optimizer "
    "takes its options as a config dict (GeneticConfig) and its clients as arguments"
)


def test_load_config(fake_llm, fake_embedding):
    from ragas.config import DemonstrationConfig, InstructionConfig

    inst_config = InstructionConfig(llm=fake_llm)
    demo_config = DemonstrationConfig(embedding=fake_embedding)
    assert inst_config.llm == fake_llm
    assert demo_config.embedding == fake_embedding
