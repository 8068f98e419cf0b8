"""Configuration: the strict run and optimizer models (:mod:`._models`), ``--set`` overrides
(:mod:`._overrides`) and turning a config into objects (:mod:`._build`, imported on its own)."""

from promptevolver.config._models import *  # noqa: F403 - the models are this package's API
from promptevolver.config._models import __all__ as _models_all

__all__ = list(_models_all)
