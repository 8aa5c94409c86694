"""The run journal under ``OUT/_work``: what is done, so that ``--resume`` skips it.

One small JSON file per finished unit of work, written atomically by whoever finished
it (a worker for a task, the driver for a phase): ``<kind>/<key>.json``. Kinds used by
the engine: ``s<k>`` (map tasks of segment k, value = the task's stats), ``g<k>`` (the
global stage opening segment k, value = its metrics), ``g<k>-<phase>`` (per-file tasks
of a global stage's phase, value = the task's result), ``run`` (the config hash, the
curation report, the swap). Every unit's outputs are written before its entry, and
outputs are named by their content's position in the input, so a unit that ran twice
(a crash between its outputs and its entry) wrote the same files twice.
"""

from __future__ import annotations

import json
import os


class Journal:
    def __init__(self, root: str):
        self.root = root

    def _path(self, kind: str, key: str) -> str:
        return os.path.join(self.root, kind, f"{key}.json")

    def record(self, kind: str, key: str, value) -> None:
        path = self._path(kind, key)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        tmp = f"{path}.tmp{os.getpid()}"
        with open(tmp, "w") as f:
            json.dump(value, f)
        os.replace(tmp, path)

    def get(self, kind: str, key: str, default=None):
        try:
            with open(self._path(kind, key)) as f:
                return json.load(f)
        except FileNotFoundError:
            return default

    def entries(self, kind: str) -> dict:
        d = os.path.join(self.root, kind)
        if not os.path.isdir(d):
            return {}
        out = {}
        for name in sorted(os.listdir(d)):
            if name.endswith(".json"):
                with open(os.path.join(d, name)) as f:
                    out[name[:-5]] = json.load(f)
        return out
