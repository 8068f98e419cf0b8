"""Optional integrations with other libraries, each imported only when used.

* :mod:`promptevolver.integrations.ragas` — optimize a ``ragas.metrics`` ``AspectCritic`` or
  ``SimpleCriteriaScore`` object through its prompts and write the best instructions back
  (``pip install "promptevolver[ragas]"``).
"""
