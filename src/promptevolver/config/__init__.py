"""Configuration: the strict run and optimizer models (:mod:`.models`), ``--set`` overrides
(:mod:`.overrides`) and turning a config into objects (:mod:`.build`, imported on its own)."""

from promptevolver.config.models import *  # noqa: F403 - the models are this package's API
from promptevolver.config.models import __all__ as _models_all

__all__ = list(_models_all)
