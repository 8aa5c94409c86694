"""Where a run keeps its work, named in one place.

A run writes into its staging root ``OUT/_work/run`` (:func:`staging`) and moves what it
made into OUT once curation is complete. Under a root (the staging root, or the OUT of a
stage run on one table) the work lives in ``_work``:

    <root>/_work/journal      what is done (--resume skips it; :mod:`.journal`)
    <root>/_work/s<k>         segment k's kept parts: the input of segment k+1's global stage
    <root>/_work/d<k>         the decisions of segment k's global stage, one file per part
    <root>/_work/<name><k>    scratch a global stage of segment k asks for (``Context.scratch``)
    OUT/_work/side/<hash>     a cluster run's copy of a local side input (engine/side.py), with
                              ``origin.json``: each copied file's path as the user named it

``OUT/_work`` goes when the run ends (unless ``output.keep_work``), by :func:`clear_work`,
atomically: once it has begun, ``OUT/_work`` no longer holds the journal of an unfinished
run, so a ``--resume`` after a crash in the clean-up finds the complete run and says so
(before, the tree was deleted in no particular order, and a resume could find half a
journal and move a partial staging area over the finished outputs).
"""

from __future__ import annotations

import os

from datacurate.formats import storage
from datacurate.phases import faults

WORK = "_work"
STAGING = f"{WORK}/run"
TRASH = f"{WORK}.deleting"  # OUT/_work renamed there, then deleted
SIDE = "side"
ORIGIN = "origin.json"
_ORIGINS: dict[str, dict] = {}


def work(root: str) -> str:
    return storage.join(root, WORK)


def staging(out: str) -> str:
    return storage.join(out, STAGING)


def journal(root: str) -> str:
    return storage.join(root, WORK, "journal")


def parts(root: str, segment: int) -> str:
    return storage.join(root, WORK, f"s{segment}")


def decisions(root: str, segment: int) -> str:
    return storage.join(root, WORK, f"d{segment}")


def scratch(root: str, name: str, segment: int) -> str:
    return storage.join(root, WORK, f"{name}{segment}")


def side_origin(path: str) -> str:
    """The user's path of a staged side input (a file under ``OUT/_work/side/<hash>/``, per
    that folder's ``origin.json``), so that reports name what the user gave; any other path
    as it is."""
    head, sep, rest = path.partition(f"/{WORK}/{SIDE}/")
    key, _, tail = rest.partition("/")
    if not sep or not key or not tail:
        return path
    base = storage.join(f"{head}/{WORK}/{SIDE}", key)
    if base not in _ORIGINS:
        import json

        try:
            _ORIGINS[base] = json.loads(storage.read_text(storage.join(base, ORIGIN)))
        except Exception:  # noqa: BLE001 - a copy staged before origin.json existed: its own name
            _ORIGINS[base] = {}
    return _ORIGINS[base].get(tail, path)


def trash(root: str) -> str:
    return storage.join(root, TRASH)


def clear_work(root: str) -> None:
    """Remove ``root/_work``, atomically as far as a resume can tell. Locally: rename it to
    ``_work.deleting`` (one ``rename``), then delete that file by file, a fault point
    (``run:cleanup``) after the rename and after each file. On S3, which has no rename:
    first the journal's ``run/config`` entry (one object: without it the tree is no
    unfinished run), then the prefix. A leftover ``_work.deleting`` goes too."""
    work, gone = storage.join(root, WORK), trash(root)
    if storage.is_remote(root):
        storage.delete(storage.join(journal(staging(root)), "run", "config.json"))
        storage.delete(work)
        return
    work, gone = storage.local_path(work), storage.local_path(gone)
    if os.path.isdir(work):
        if os.path.isdir(gone):  # an earlier clean-up's leftover
            storage.delete(gone)
        os.replace(work, gone)
    if not os.path.isdir(gone):
        return
    faults.point("run", "cleanup")
    for d, dirs, files in os.walk(gone, topdown=False):
        for name in files + [x for x in dirs if os.path.islink(os.path.join(d, x))]:
            os.remove(os.path.join(d, name))
            faults.point("run", "cleanup")
        os.rmdir(d)
