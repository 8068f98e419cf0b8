"""Configuration: the strict run and optimizer models (:mod:`._models`), ``--set`` overrides
(:mod:`._overrides`), matching the judge's prompt to the file's (:mod:`._prompt_match`) and
turning a config into objects (:mod:`._build`: its names load on first use, as it sits above the
optimizer)."""

from typing import TYPE_CHECKING

from promptevolver._lazy import lazy_package
from promptevolver.config._models import *  # noqa: F403 - the models are this package's API
from promptevolver.config._models import __all__ as _models_all

if TYPE_CHECKING:
    from promptevolver.config._build import build_judge as build_judge
    from promptevolver.config._build import build_llm as build_llm
    from promptevolver.config._build import build_loss as build_loss
    from promptevolver.config._build import build_metric as build_metric
    from promptevolver.config._build import build_run_parts as build_run_parts
    from promptevolver.config._build import check_dataset_found as check_dataset_found
    from promptevolver.config._build import load_dataset as load_dataset
    from promptevolver.config._build import resolve_prompt as resolve_prompt
    from promptevolver.config._overrides import OverrideError as OverrideError
    from promptevolver.config._overrides import apply_overrides as apply_overrides
    from promptevolver.config._prompt_match import match_prompt as match_prompt

__getattr__, _lazy_all = lazy_package(
    __name__,
    {
        "promptevolver.config._build": "*",
        "promptevolver.config._overrides": ["OverrideError", "apply_overrides"],
        "promptevolver.config._prompt_match": ["match_prompt"],
    },
)
__all__ = sorted([*_models_all, *_lazy_all])
