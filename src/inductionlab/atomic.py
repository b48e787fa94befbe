"""Atomic output: write to a temporary sibling, then rename into place.

A job killed half-way leaves only a ``.tmp-*`` file or folder, never a file
with the final name, so nothing incomplete looks finished.
"""
from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from pathlib import Path


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def _publish(tmp: Path, path: Path, mode: int) -> None:
    """Give ``tmp`` the permissions of a normally created file, then rename it to ``path``."""
    os.chmod(tmp, mode & ~_umask())
    os.replace(tmp, path)


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike, suffix: str = ""):
    """Yield a temporary path next to ``path``; rename it to ``path`` on success.

    ``suffix`` is appended to the temporary name (``np.savez`` insists on ``.npz``).
    """
    path = Path(path)
    if path.is_dir():
        raise IsADirectoryError(f"{path}: is a directory, so the file cannot be written there; "
                                "remove it and run again")
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".tmp-{path.name}.", suffix=suffix, dir=path.parent)
    os.close(fd)
    tmp = Path(tmp)
    try:
        yield tmp
        _publish(tmp, path, 0o666)
    finally:
        if tmp.exists():
            tmp.unlink()


@contextlib.contextmanager
def atomic_dir(path: str | os.PathLike):
    """Yield a temporary folder next to ``path``; it replaces ``path`` on success."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".tmp-{path.name}.", dir=path.parent))
    try:
        yield tmp
        if path.exists():
            shutil.rmtree(path)
        _publish(tmp, path, 0o777)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp)


def write_text(path, text: str) -> None:
    with atomic_path(path) as tmp:
        tmp.write_text(text)


def write_csv(path, frame) -> None:
    """Write a pandas frame as CSV atomically."""
    with atomic_path(path) as tmp:
        frame.to_csv(tmp, index=False)
