"""Side inputs on a cluster: the files a pipeline names besides its input (blocklists, model
files and their cards, word lists, a tokenizer, DSIR's target, a mixture file, the benchmarks
decontamination indexes, a saved exact-dedup filter to dedup against).

A stage builds itself on whichever node runs its task, so a path that exists only on the
driver's machine (``sample_data/blocklist``, resolved against the driver's working
directory, or a job's temporary copy of ``--working-dir``, which sits at another path on
every node) is a node-local assumption. On a cluster the driver copies each local side
input into the output's file system (``OUT/_work/side/<hash>/<name>``, the place every node
already writes) and the run's configuration names that copy; a worker building a map stage
downloads the copies it names into its own cache (:func:`localize`), so each node reads
them from the output file system (the shipped defaults it reads from its own install).
The copy keeps the file's folder name, its name and the files beside it with the same
stem (a model's ``.json`` card), so blocklist categories and model cards read as before. A
local glob is expanded on the driver: in a list, each match becomes an entry; as a
``{name: glob}`` value, the matches are copied into one folder (a folder is one benchmark).
"""

from __future__ import annotations

import copy
import glob
import hashlib
import json
import os
import posixpath
from pathlib import Path

from datacurate.formats import storage
from datacurate.phases import layout

SIDE_DIR = layout.SIDE


def _get(obj, dotted: str):
    for part in dotted.split("."):
        obj = getattr(obj, part, None)
    return obj


def _set(obj, dotted: str, value) -> None:
    *head, last = dotted.split(".")
    for part in head:
        obj = getattr(obj, part)
    setattr(obj, last, value)


def _fields(spec, local: bool = False) -> tuple[str, ...]:
    """The dotted config fields naming a stage's side inputs, as its class declares them
    (``Stage.side_inputs``; ``local``: ``local_side_inputs``, read as local paths only)."""
    from datacurate.registry import STAGES

    cls = STAGES.get(spec.name)
    return () if cls is None else (cls.local_side_inputs if local else cls.side_inputs)


def _each(specs, local: bool = False):
    for spec in specs:
        for dotted in _fields(spec, local):
            value = _get(spec.config, dotted)
            if value:
                yield spec, dotted, value


def _files(p: Path) -> list[tuple[Path, str]]:
    """(file, path under the copy's folder) of a side input: a folder's files, or a file and its same-stem siblings."""
    if p.is_dir():
        return [(f, "/".join((p.name,) + f.relative_to(p).parts)) for f in sorted(p.rglob("*")) if f.is_file()]
    return [(f, f"{p.parent.name or '_'}/{f.name}") for f in sorted(p.parent.iterdir())
            if f.is_file() and (f == p or f.name.startswith(p.stem + "."))]


def _put(files: list[tuple[Path, str]], root: str, origin: dict[str, str] | None = None) -> str:
    """Copy ``files`` ((file, path under the copy)) under ``root``/<their content's hash>; that
    folder's URL. Its ``origin.json`` maps each path under the copy to the file it came from
    (and ``origin``'s extra entries: a copied folder's own path), for reports to name."""
    h = hashlib.sha256()
    for f, rel in files:
        h.update(rel.encode() + b"\0" + hashlib.sha256(f.read_bytes()).digest())
    base = storage.join(root, h.hexdigest()[:16])  # by content: a node's cached copy is never stale
    for f, rel in files:
        dst = storage.join(base, *rel.split("/"))
        if not storage.is_remote(dst):  # an output on a shared file system
            os.makedirs(os.path.dirname(dst), exist_ok=True)
        storage.put_file(str(f), dst)
    names = {rel: str(f) for f, rel in files} | (origin or {})
    storage.write_text(storage.join(base, layout.ORIGIN), json.dumps(names, indent=1, sort_keys=True))
    return base


def _upload(local: str, root: str) -> str:
    """Copy a local side input under ``root``/<its content's hash>; its URL there."""
    p = Path(local).resolve()
    base = _put(_files(p), root, {p.name: str(p)} if p.is_dir() else None)
    return storage.join(base, p.name) if p.is_dir() else storage.join(base, p.parent.name or "_", p.name)


def _upload_glob(pattern: str, root: str, many: bool) -> list[str] | str | None:
    """A local glob's matches copied under ``root``: one URL per file (``many``: an entry of a
    list), or one folder holding every match under its own name (a ``{name: glob}`` value:
    a folder reads as one benchmark); None when nothing matches (the stage's own error)."""
    matches = sorted(Path(m).resolve() for m in glob.glob(pattern, recursive=True) if os.path.isfile(m))
    if not matches:
        return None
    if many:
        return [_upload(str(m), root) for m in matches]
    names = [m.name for m in matches]
    if len(set(names)) < len(names):  # a**/ glob over folders with equal file names: keep one file each
        return [_upload(str(m), root) for m in matches]
    return storage.join(_put([(m, f"_glob/{m.name}") for m in matches], root, {"_glob": pattern}), "_glob")


def stage_side_inputs(stages: list, work: str) -> list[str]:
    """Copy the local side inputs named by ``stages`` (StageSpecs, changed in place) into
    ``work``/side and point the configuration at the copies; the URLs written."""
    root, done = storage.join(work, SIDE_DIR), []

    def one(v, many: bool):
        if not isinstance(v, str) or storage.is_remote(v):
            return v
        if os.path.exists(v):
            v = _upload(v, root)
        elif glob.has_magic(v):
            staged = _upload_glob(v, root, many)
            if staged is None:
                return v  # matches nothing: the stage's own one-line error
            v = staged
        else:
            return v  # a missing path: the stage's own one-line error
        done.extend(v if isinstance(v, list) else [v])
        return v

    for spec, dotted, value in list(_each(stages)):
        if isinstance(value, dict):  # {name: path}
            new = {k: one(v, False) for k, v in value.items()}
        elif isinstance(value, (list, tuple)):
            new = []
            for v in value:
                r = one(v, True)
                new.extend(r if isinstance(r, list) else [r])
        else:
            new = one(value, False)
            new = new[0] if isinstance(new, list) and len(new) == 1 else new
        _set(spec.config, dotted, new)
    return done


def _local_tree(url: str) -> str:
    """A local folder holding the files under ``url``, in this node's cache (the URL names
    content, so a file already there is the right one; :func:`storage.get_file` renames a
    finished download into place: two workers of one node may fetch at once)."""
    target = os.path.join(storage.cache_root(), "side", storage.url_key(url))
    for f in storage.walk_files(url):
        dst = os.path.join(target, *posixpath.relpath(f, url).split("/"))
        if not os.path.isfile(dst):
            storage.get_file(f, dst)
    return target


def localize(specs: list) -> list:
    """StageSpecs whose staged side inputs (``OUT/_work/side/...`` URLs) that stage code
    reads as local paths name this node's downloaded copies instead (a copy of ``specs``)."""
    if not any(storage.is_remote(v) if isinstance(v, str) else any(map(storage.is_remote, v))
               for _, _, v in _each(specs, local=True)):
        return list(specs)
    out = []
    for spec in specs:
        spec = copy.deepcopy(spec)
        for dotted in _fields(spec, local=True):
            value = _get(spec.config, dotted)
            if not value:
                continue
            many = isinstance(value, (list, tuple))
            new = [_local(v) for v in (value if many else [value])]
            _set(spec.config, dotted, new if many else new[0])
        out.append(spec)
    return out


def _local(url: str) -> str:
    """The local path of a staged side input: its ``side/<hash>`` folder downloaded, joined
    with the rest of the URL (so the folder and file names are the uploaded ones)."""
    if not storage.is_remote(url):
        return url
    head, sep, rest = url.partition(f"/{SIDE_DIR}/")
    key, _, tail = rest.partition("/")
    if not sep or not key:
        return storage.local_copy(url)
    local_root = _local_tree(f"{head}/{SIDE_DIR}/{key}")
    return os.path.join(local_root, *tail.split("/"))
