"""Operational failures as one line: what failed, on which path, and what to do next.

A full disk, a denied permission, an input that vanished or an object store that stopped
answering reach the driver in many wrappers (Ray's ``RayTaskError``, Ray Data's errors,
chained ``raise ... from``) and with or without a path. :func:`explain` finds the
operating-system error underneath and says it in one line; :class:`RunStopped` carries
that line out of a run that had started (its outputs are journaled: ``--resume``
continues), and the CLI prints it instead of a traceback (exit code
:data:`EXIT_STOPPED`; the traceback goes to a log file the line names, or to stderr
with ``--debug``). :class:`Interrupted` is the same for SIGINT and SIGTERM: the work that
was going on (:func:`doing`) goes into the line. This module imports nothing of datacurate.
"""

from __future__ import annotations

import contextlib
import errno as _errno
import inspect

EXIT_STOPPED = 3  # a run that stopped part-way: fix the cause, then --resume

_WHAT = {
    _errno.ENOSPC: ("no space left on device", "free some space, then "),
    _errno.EDQUOT: ("disk quota exceeded", "free some space, then "),
    _errno.EACCES: ("permission denied", "fix the permissions, then "),
    _errno.EPERM: ("operation not permitted", "fix the permissions, then "),
    _errno.EROFS: ("read-only file system", "make it writable, then "),
    _errno.ENOENT: ("no such file or directory (it vanished during the run)", "put it back, then "),
    _errno.EIO: ("input/output error", ""),
}


class Explained(Exception):
    """An operational error already said in one line where it happened (a worker): Ray's
    and Ray Data's wrappers re-raise an ``OSError`` with their own message and lose its
    path; this one they rebuild from its text (``type(e)(text + more)``), whose first
    line is the explanation."""

    @property
    def line(self) -> str:
        return str(self.args[0]).splitlines()[0] if self.args else ""

    @property
    def todo(self) -> str:
        return next((todo for what, todo in _WHAT.values() if what in self.line), "")


def guarded(fn, /, *args, **kwargs):
    """``fn(*args, **kwargs)`` in a worker, its operational errors raised as :class:`Explained`
    (also those of the batches it yields, when it is a generator). ``fn`` is positional-only:
    the work it wraps may take a keyword named ``fn`` (the per-file tasks of
    :meth:`datacurate.phases.context.Context.map_files` do)."""
    try:
        out = fn(*args, **kwargs)
    except OSError as e:
        raise _explained(e) from e
    return _guard_iter(out) if inspect.isgenerator(out) else out


def _guard_iter(gen):
    try:
        yield from gen
    except OSError as e:
        raise _explained(e) from e


def _explained(e: OSError) -> BaseException:
    found = explain(e)
    return Explained(found[0]) if found else e


class RunStopped(Exception):
    """A run that had started stopped on an operational error (one line, ``--resume`` hint)."""

    exit_code = EXIT_STOPPED


def causes(e: BaseException):
    """``e`` and what it wraps: Ray's task-error ``cause``, ``__cause__``, and the
    ``__context__`` of Ray's own errors (an error of ours raised while handling another is
    not explained by that other one)."""
    seen, todo = set(), [e]
    while todo:
        x = todo.pop(0)
        if x is None or id(x) in seen:
            continue
        seen.add(id(x))
        yield x
        todo += [getattr(x, "cause", None), x.__cause__]
        if _from_ray(x):
            todo.append(x.__context__)


def _os_error(e: BaseException) -> OSError | None:
    """The first operating-system error in ``e``'s chain (a storage error counts: it is one)."""
    found = [x for x in causes(e) if isinstance(x, OSError)]
    ours = [x for x in found if not _from_ray(x)]  # not Ray's wrapper of it (a RayTaskError(OSError))
    named = [x for x in ours if x.filename]
    return (named or ours or found or [None])[0]


def _from_ray(x: BaseException) -> bool:
    return any(c.__module__.split(".")[0] == "ray" for c in type(x).__mro__)


def _is_storage(x: BaseException) -> bool:
    return type(x).__name__ == "StorageError"


def _errno_of(e: OSError) -> int | None:
    if e.errno:
        return e.errno
    text = str(e)
    for code in _WHAT:  # Arrow's errors carry the number in the text: "[errno 28] No space left ..."
        if f"errno {code}]" in text.lower():
            return code
    return None


def explain(e: BaseException) -> tuple[str, str] | None:
    """(one line naming the path and the cause, what to do before ``--resume``) for an
    operational error anywhere in ``e``'s chain; None when there is none (a bug: let it show)."""
    for x in causes(e):
        if isinstance(x, Explained):
            return x.line, x.todo
    err = _os_error(e)
    if err is None:
        return None
    if _is_storage(err):  # already one line naming the URL (datacurate.formats.storage.describe)
        return " ".join(str(err).split()), ""
    code = _errno_of(err)
    what, todo = _WHAT.get(code, (None, ""))
    if what is None:
        what = err.strerror or " ".join(str(err).split())[:200]
    path = err.filename or _path_in(str(err))
    return (f"{path}: {what}" if path else what), todo


def is_operational(e: BaseException) -> bool:
    """Whether ``e`` is the machine's or the storage's failure (an errno, a storage error, one
    already explained), not the data's: such an error stops the run (``--resume`` after the
    fix), where a record's own failure becomes that record's reject."""
    if isinstance(e, MemoryError):
        return True
    for x in causes(e):
        if isinstance(x, Explained) or _is_storage(x):
            return True
        # FileNotFoundError, PermissionError, ConnectionError ... or an errno; Arrow says a
        # file's damage with a plain OSError ("Couldn't deserialize thrift", "Corrupt ... data")
        if isinstance(x, OSError) and (type(x) is not OSError or _errno_of(x) is not None):
            return True
    return False


def _path_in(text: str) -> str | None:
    """A path quoted in an error's text (Arrow: "Failed to open local file '/x/y'")."""
    import re

    m = re.search(r"'(/[^']+)'", text) or re.search(r"\b(s3://\S+)", text)
    return m.group(1) if m else None


def stopped(e: BaseException, command: str = "run") -> BaseException:
    """A :class:`RunStopped` for an operational error in a run that had started, else ``e``."""
    found = explain(e)
    if found is None:
        return e
    line, todo = found
    return RunStopped(f"{line}; the {command} stopped: {todo}run again with --resume to continue")


class Interrupted(KeyboardInterrupt):
    """SIGINT or SIGTERM while a command worked (raised by the CLI's signal handler): what
    it had finished is journaled or checkpointed; the CLI says so in one line and exits
    with 128 + the signal number (130, 143). A ``KeyboardInterrupt``, so that the code it
    passes through (Ray Data's iterators shut their executor down on one) treats it as Ctrl-C."""

    last: int | None = None  # the signal of the latest one raised (Ray may swallow it: :func:`as_interrupted`)

    def __init__(self, signum: int, during: str | None):
        super().__init__(signum, during)
        self.signum, self.during = signum, during
        Interrupted.last = signum

    @property
    def exit_code(self) -> int:
        return 128 + self.signum


def as_interrupted(e: KeyboardInterrupt) -> Interrupted:
    """``e`` as the CLI's :class:`Interrupted`. Ray's blocking calls (``ray.wait``, ``ray.get``)
    check for signals inside their C++ loop, catch the handler's Interrupted there and raise a
    plain ``KeyboardInterrupt`` of their own (Ray 2.60, ``_raylet.check_signals``): the same
    signal, the work in progress named again."""
    if isinstance(e, Interrupted):
        return e
    return Interrupted(Interrupted.last or 2, now_doing())  # 2: SIGINT (a real Ctrl-C the handler never saw)


_DOING: list[str] = []  # what the driver is doing now, outermost first (one driver thread names it)


@contextlib.contextmanager
def doing(what: str):
    """Name the work inside the block for the interrupt line (``interrupted during WHAT``)."""
    _DOING.append(what)
    try:
        yield
    finally:
        _DOING.pop()


def now_doing() -> str | None:
    """The work in progress, outermost first (``arm sample_recipe: near_dedup``); None when none was named."""
    return ": ".join(_DOING) or None
