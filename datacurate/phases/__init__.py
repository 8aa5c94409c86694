"""What a global stage's phases run against, with no Ray: the :class:`~datacurate.phases.context.Context`
base and its in-process sibling (:mod:`~datacurate.phases.local`; the Ray one is
:mod:`datacurate.engine.ray.context`), the run's journal and the tests' fault points."""
