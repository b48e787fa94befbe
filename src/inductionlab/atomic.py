"""Atomic output: write to a temporary sibling, then rename into place.

A job killed half-way leaves only a ``.tmp-*`` file or folder, never a file
with the final name, so nothing incomplete looks finished; the next write of the same
file removes it. A write that fails (a full disk, a quota) is one error naming the file.
"""
from __future__ import annotations

import contextlib
import errno
import os
import shutil
import stat
import tempfile
from pathlib import Path

from . import records


class WriteFailed(OSError):
    """A file could not be written; the message names it and says what to do."""


# errno values of a write that ran out of room or permission
_WRITE_ERRORS = {errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EIO, errno.EROFS}
# torch.save reports a short write as a RuntimeError of its zip writer
_TORCH_WRITE_ERRORS = ("PytorchStreamWriter", "inline_container", "unexpected pos", "file write failed")


def _write_failure(path: Path, err: BaseException) -> WriteFailed | None:
    """The one-line error for ``err`` raised while writing ``path``; None if it is not a
    failed write."""
    if isinstance(err, OSError) and err.errno in _WRITE_ERRORS:
        reason = err.strerror or str(err)
    elif isinstance(err, RuntimeError) and any(m in str(err) for m in _TORCH_WRITE_ERRORS):
        reason = "the write stopped short"
    else:
        return None
    try:
        free = f"; {shutil.disk_usage(path.parent).free / 2**20:.0f} MiB free there"
    except OSError:
        free = ""
    return WriteFailed(f"{path}: could not be written ({reason}{free}); nothing was published. "
                       "Free disk space (or raise the quota) and run again")


def remove_leftovers(path: Path) -> list[Path]:
    """Remove the temporary files or folders a killed write of ``path`` left beside it
    (``.tmp-<name>.*``); returns them. Only one job writes a given file at a time."""
    removed = []
    for stale in path.parent.glob(f".tmp-{path.name}.*"):
        shutil.rmtree(stale, ignore_errors=True) if stale.is_dir() else stale.unlink(missing_ok=True)
        removed.append(stale)
    return removed


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def _publish(tmp: Path, path: Path, mode: int) -> None:
    """Give ``tmp`` the permissions of a normally created file, then rename it to ``path``."""
    os.chmod(tmp, mode & ~_umask())
    os.replace(tmp, path)


# ---------------------------------------------------------------- records
# Every file written here gets a record beside it, ``.<name>.sha256`` (inductionlab.records):
# its SHA-256 and size, what wrote it, for which model, seed and spec, from which inputs; the
# one reading module (inductionlab.core.loading) checks a file against its record.


def _write_record(tmp: Path, path: Path, identity=None) -> None:
    """Write the record of ``tmp``, about to become ``path`` (itself written atomically)."""
    record = records.record_path(path)
    _refuse_non_regular(record)
    fd, scratch = tempfile.mkstemp(prefix=f".tmp-{record.name}.", dir=path.parent)
    with os.fdopen(fd, "w") as f:
        f.write(records.write_record(tmp, path, identity))
    _publish(Path(scratch), record, 0o666)


class NotOurs(OSError):
    """The target of a write is not a regular file (a device, a FIFO, a link, a folder):
    nothing is written over it."""


def _prepare_folder(path: Path) -> None:
    """Create the folder ``path`` is written in; a part of the way that is a file, or a
    folder that may not be written, is one line naming it (no errno)."""
    above = next((p for p in reversed(path.parents) if p.exists() and not p.is_dir()), None)
    if above is not None:
        raise NotOurs(f"{path}: cannot be written, {above} is a file, not a folder; give "
                      "another path, or move that file away")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise WriteFailed(f"{path}: its folder {path.parent} cannot be made "
                          f"({err.strerror or err}); give another path") from None
    if not os.access(path.parent, os.W_OK | os.X_OK):
        raise WriteFailed(f"{path}: its folder {path.parent} may not be written (permission "
                          "denied); give another path, or change the folder's permissions")


def _refuse_non_regular(path: Path, folder: bool = False) -> None:
    """Refuse to write over anything at ``path`` but a regular file (a folder, for a folder
    output): a symbolic link, a device, a FIFO or a socket stays as it is."""
    try:
        info = os.lstat(path)
    except (FileNotFoundError, NotADirectoryError):
        return
    kind = ("a symbolic link" if stat.S_ISLNK(info.st_mode) else
            "a directory" if stat.S_ISDIR(info.st_mode) else
            "a regular file" if stat.S_ISREG(info.st_mode) else
            "a device" if stat.S_ISCHR(info.st_mode) or stat.S_ISBLK(info.st_mode) else
            "a FIFO" if stat.S_ISFIFO(info.st_mode) else
            "a socket" if stat.S_ISSOCK(info.st_mode) else "not a regular file")
    wanted = "a directory" if folder else "a regular file"
    if kind != wanted:
        raise NotOurs(f"{path}: is {kind}, not {wanted} the workflow wrote, so nothing was "
                      f"written there; remove it (or write elsewhere) and run again")


@contextlib.contextmanager
def _replacing(path: Path, tmp: Path, publish, discard):
    """The body of an atomic write: yield ``tmp``; when the body is done, ``publish()`` it
    as ``path``. A failure to write is one message naming ``path`` (:func:`_write_failure`);
    whatever happens, ``tmp`` is not left behind (``discard(tmp)``)."""
    try:
        yield tmp
        publish()
    except (OSError, RuntimeError) as err:
        failed = _write_failure(path, err)
        if failed is None:
            raise
        raise failed from None
    finally:
        if tmp.exists():
            discard(tmp)


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike, suffix: str = "", identity=None):
    """Yield a temporary path next to ``path``; rename it to ``path`` on success.

    ``suffix`` is appended to the temporary name (``np.savez`` insists on ``.npz``).
    ``identity``: the model, seed and spec the file belongs to
    (:class:`inductionlab.records.Identity`), when the writer knows it; by default, that of
    the command's inputs. Anything at ``path`` but a regular file is left as it is
    (:class:`NotOurs`).
    """
    path = Path(path)
    _refuse_non_regular(path)
    _prepare_folder(path)
    remove_leftovers(path)
    remove_leftovers(records.record_path(path))
    fd, tmp = tempfile.mkstemp(prefix=f".tmp-{path.name}.", suffix=suffix, dir=path.parent)
    os.close(fd)
    tmp = Path(tmp)

    def publish():
        _refuse_non_regular(path)
        _write_record(tmp, path, identity)
        _publish(tmp, path, 0o666)

    with _replacing(path, tmp, publish, Path.unlink):
        yield tmp


@contextlib.contextmanager
def atomic_dir(path: str | os.PathLike):
    """Yield a temporary folder next to ``path``; it replaces ``path`` on success."""
    path = Path(path)
    _refuse_non_regular(path, folder=True)
    _prepare_folder(path)
    remove_leftovers(path)
    tmp = Path(tempfile.mkdtemp(prefix=f".tmp-{path.name}.", dir=path.parent))

    def publish():
        if path.exists():
            shutil.rmtree(path)
        _publish(tmp, path, 0o777)

    with _replacing(path, tmp, publish, shutil.rmtree):
        yield tmp


def write_text(path, text: str) -> None:
    with atomic_path(path) as tmp:
        tmp.write_text(text)


def write_csv(path, frame) -> None:
    """Write a pandas frame as CSV atomically."""
    with atomic_path(path) as tmp:
        frame.to_csv(tmp, index=False)
