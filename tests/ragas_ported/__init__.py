"""Ragas 0.4.3's own tests for the modules a switcher's code touches, ported by changing imports
only (each file names its source, Ragas' copyright and the Apache-2.0 licence): the annotation
schema (``ragas/dataset_schema.py``), the losses (Ragas has no tests of ``ragas/losses.py``; its
optimizer tests use ``MSELoss``) and the optimizers (``ragas/optimizers/``: its DSPy optimizer
and adapter, and ``ragas.config``). A case needing what promptevolver does not have skips naming
it: multi-turn samples, DSPy, ``ragas.config``. docs/ragas.md tells the results."""
