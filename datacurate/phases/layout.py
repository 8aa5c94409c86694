"""Where a run keeps its work, named in one place.

A run writes into its staging root ``OUT/_work/run`` (:func:`staging`) and moves what it
made into OUT once curation is complete. Under a root (the staging root, or the OUT of a
stage run on one table) the work lives in ``_work``:

    <root>/_work/journal      what is done (--resume skips it; :mod:`.journal`)
    <root>/_work/s<k>         segment k's kept parts: the input of segment k+1's global stage
    <root>/_work/d<k>         the decisions of segment k's global stage, one file per part
    <root>/_work/<name><k>    scratch a global stage of segment k asks for (``Context.scratch``)

``OUT/_work`` goes when the run ends (unless ``output.keep_work``).
"""

from __future__ import annotations

from datacurate import storage

WORK = "_work"
STAGING = f"{WORK}/run"


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
