"""The one package that imports Ray (the "ray" import contract in pyproject.toml): cluster
(start / join Ray), supervise (the CLI's lost-cluster watch, no Ray import), data + context
(a global stage's primitives on Ray), segments (map work), train (Ray Train), jobs (whole
runs as Ray tasks). Nothing is imported here: importing the supervisor loads no Ray."""
