"""The one package that imports Ray (an import contract in pyproject.toml enforces it).

* :mod:`.cluster`: start or join Ray (``init_ray``, ``shutdown``), and a library run's
  watch on the cluster it joined;
* :mod:`.supervise`: the CLI's parent process that reports a lost cluster (no Ray import);
* :mod:`.data`: the all-to-all primitives on Ray Data (:class:`.data.Data`, actors,
  ``map_items``: one task per file);
* :mod:`.context`: ``RayContext``, what a global stage's ``run_global`` gets on Ray;
* :mod:`.segments`: map work, one Ray Data actor per CPU building its segment's stages once;
* :mod:`.train`: Ray Train around the training loop.

Nothing is imported here, so importing a sibling (the supervisor) loads no Ray.
"""
