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
import posixpath

from datacurate.formats import storage


class Journal:
    """Entries are small files (objects on S3: one PUT each, visible whole), so the
    journal of a run whose OUT is ``s3://`` lives in the bucket and any node can resume it."""

    def __init__(self, root: str):
        self.root = root

    def _path(self, kind: str, key: str) -> str:
        return storage.join(self.root, kind, f"{key}.json")

    def record(self, kind: str, key: str, value) -> None:
        storage.write_text(self._path(kind, key), json.dumps(value))

    def get(self, kind: str, key: str, default=None):
        try:
            return json.loads(storage.read_text(self._path(kind, key)))
        except FileNotFoundError:
            return default

    def entries(self, kind: str) -> dict:
        return {posixpath.basename(f)[:-5]: json.loads(storage.read_text(f))
                for f in storage.list_files(storage.join(self.root, kind), ".json")}
