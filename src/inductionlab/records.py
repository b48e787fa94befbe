"""What a file is: the record written beside every file the project writes.

Every file written atomically (:mod:`inductionlab.atomic`) gets a record beside it,
``.<name>.sha256``: a small JSON object with the file's SHA-256 and size, what wrote it
(the command), for which model and seed and from which spec (the SHA-256 of the spec
document), the SHA-256 of every file the writer read, and every model the file covers
(``covers``: each model, seed and spec digest it was made from, its own and those its
inputs cover; a stacked table names every model and seed whose rows it holds). A reader
(:mod:`inductionlab.core.loading`) checks a file against its record before use:

- the bytes are the ones written (not cut short, damaged or edited since);
- a file in a model's result folder, ``results/<model>/seed<N>/``, is that model's and
  seed's (a file copied over from another seed or model is refused, naming both);
- a file under ``results/`` is of this run: every model it covers was made from the spec
  that model's ``results/<model>/seed<N>/spec.json`` holds now (the one training wrote
  from the config), so a file of another run or spec of the same model and seed, a stacked
  table among them, is refused, naming the spec.json it differs from;
- a command about one model reads only that model's files, but for those it reads as
  another model's on purpose (:class:`another_model`: a training run's reference);
- a file under a ``results/`` folder with no record, or with a record that is not a small
  regular file, is not one the workflow wrote, and is refused. A file given by hand is read
  from outside ``results/``.

A record catches accidents and mix-ups, not forgery: whoever can write a file can
write its record.
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import stat
from dataclasses import dataclass
from pathlib import Path

RECORD_FORMAT = "inductionlab record 2"
# the records of earlier versions, which name no model a file covers
EARLIER_FORMATS = ("inductionlab record 1",)
MAX_RECORD_BYTES = 1 << 20  # a record names its inputs: a few hundred bytes each
RESULTS = "results"
_SEED_FOLDER = re.compile(r"^seed(\d+)$")


class RecordProblem(ValueError):
    """A file's record is missing, unreadable or says the file is another one."""


class Mismatch(RecordProblem):
    """Files given to one command belong to different models, seeds or specs."""


@dataclass(frozen=True)
class Identity:
    """The model, seed and spec a file belongs to."""

    model: str
    seed: int
    spec: str  # SHA-256 of the spec document (canonical JSON)

    def words(self) -> str:
        return f"{self.model} seed {self.seed}"

    def to_dict(self) -> dict:
        return {"model": self.model, "seed": self.seed, "spec": self.spec}


def record_path(path) -> Path:
    """Where the record of ``path`` is kept: ``.<name>.sha256`` beside it."""
    path = Path(path)
    return path.with_name(f".{path.name}.sha256")


def sha256(path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def spec_identity(document: dict) -> Identity:
    """The identity of a spec document (a ``spec.json``'s content)."""
    text = json.dumps(document, sort_keys=True, separators=(",", ":"))
    return Identity(str(document["variant"]), int(document["seed"]),
                    hashlib.sha256(text.encode()).hexdigest())


def under_results(path) -> bool:
    """Whether ``path`` lies in a folder named ``results`` (the workflow's own files)."""
    return RESULTS in Path(os.path.abspath(path)).parts[:-1]


def folder_identity(path) -> tuple[str, int] | None:
    """``(model, seed)`` when ``path`` lies in a model's result folder,
    ``results/<model>/seed<N>/``; else None."""
    parts = Path(os.path.abspath(path)).parts[:-1]
    for i in range(len(parts) - 2):
        if parts[i] == RESULTS:
            match = _SEED_FOLDER.match(parts[i + 2])
            if match:
                return parts[i + 1], int(match.group(1))
    return None


# ---------------------------------------------------------------- what one command read
# A command (inductionlab.stages.commands) runs inside ``recording(writer)``: every file
# its readers check is noted with its digest and identity, and every record it writes names
# them. Outside a command (a library call), records name no writer and no inputs.

@dataclass
class _Recording:
    writer: str | None = None
    one_model: bool = False
    inputs: dict | None = None  # path -> (sha256, Identity | None, covers: tuple[Identity, ...])
    another: bool = False  # reading another model's file on purpose (another_model)


_NOW = _Recording()


class recording:
    """Context of one command: ``writer`` (its name); ``one_model``: the command is about
    one model and seed, so every input that belongs to one must belong to the same."""

    def __init__(self, writer: str, one_model: bool = False):
        self.state = _Recording(writer, one_model, {})

    def __enter__(self):
        global _NOW
        self.previous, _NOW = _NOW, self.state
        return self

    def __exit__(self, *exc):
        global _NOW
        _NOW = self.previous
        return False


class another_model:
    """Context in which a command about one model reads another model's file on purpose
    (a clamped training run's reference model): the file is checked as any other and
    noted as an input, and the models it covers are covered by what the command writes,
    but its model neither clashes with the command's model nor becomes the identity of
    what it writes."""

    def __enter__(self):
        self.previous, _NOW.another = _NOW.another, True
        return self

    def __exit__(self, *exc):
        _NOW.another = self.previous
        return False


def note_input(path, digest: str, identity: Identity | None, covers=()) -> None:
    """Note that the running command read ``path`` (``covers``: the models its record says
    it covers); a command about one model that reads files of two models or seeds is
    refused, naming both."""
    if _NOW.inputs is None:
        return
    if _NOW.another:
        identity = None
    if identity is not None:
        clash = _other_model_input(path, identity.model, identity.seed, identity.spec)
        if clash:
            other, known = clash
            same = (known.model, known.seed) == (identity.model, identity.seed)
            raise Mismatch(f"is a file of {identity.words()}" + (" from another spec" if same else "")
                           + f", but {other} is of {known.words()}; this command reads the "
                           "files of one model and seed")
    _NOW.inputs[str(path)] = (digest, identity, tuple(covers))


def _other_model_input(path, model: str, seed: int, spec: str | None = None):
    """In a command about one model, the first other input, ``(path, identity)``, that is
    not of ``model`` and ``seed`` (and of ``spec``, when given); None when all are."""
    if _NOW.inputs is None or not _NOW.one_model:
        return None
    for other, (_, known, _) in _NOW.inputs.items():
        if known is not None and other != str(path) and (
                (known.model, known.seed) != (model, seed) or spec not in (None, known.spec)):
            return other, known
    return None


def _identities() -> list[Identity]:
    found = [] if _NOW.inputs is None else [i for _, i, _ in _NOW.inputs.values() if i is not None]
    return list(dict.fromkeys(found))


def output_identity(path, declared: Identity | None = None) -> Identity | None:
    """The identity of a file about to be written at ``path``: ``declared``, or the one the
    command's inputs share. In a model's result folder it must be that folder's model and
    seed (of several inputs' identities, the one that is); else :class:`RecordProblem`."""
    candidates = [declared] if declared is not None else _identities()
    folder = folder_identity(path)
    if folder is None:
        return candidates[0] if len(candidates) == 1 else None
    match = [i for i in candidates if (i.model, i.seed) == folder]
    if candidates and not match:
        made = ", ".join(i.words() for i in candidates)
        raise RecordProblem(f"{path}: is made from the files of {made}, so it does not belong in "
                            f"the folder of {folder[0]} seed {folder[1]}; nothing was written")
    return match[0] if match else None


def write_record(data_file: Path, path: Path, declared: Identity | None = None) -> str:
    """The record's text of ``data_file``, about to be published as ``path``."""
    identity = output_identity(path, declared)
    kept = {} if _NOW.inputs is None else {
        p: (digest, covers) for p, (digest, i, covers) in _NOW.inputs.items()
        if i is None or identity is None or i == identity}
    covers = {identity} if identity else set()
    covers.update(c for _, cs in kept.values() for c in cs)
    document = {"format": RECORD_FORMAT, "file": path.name, "sha256": sha256(data_file),
                "size": data_file.stat().st_size, "writer": _NOW.writer,
                "model": identity.model if identity else None,
                "seed": identity.seed if identity else None,
                "spec": identity.spec if identity else None,
                "inputs": {p: digest for p, (digest, _) in kept.items()},
                "covers": [c.to_dict() for c in sorted(covers, key=_order)]}
    return json.dumps(document, indent=1, sort_keys=True) + "\n"


def _order(identity: Identity):
    return identity.model, identity.seed, identity.spec


# ---------------------------------------------------------------- reading a record

@dataclass(frozen=True)
class Record:
    file: str
    sha256: str
    size: int
    writer: str | None
    identity: Identity | None
    inputs: dict
    covers: tuple[Identity, ...] = ()  # every model, seed and spec the file was made from


def read_record(path) -> Record | None:
    """The record of ``path``; None when there is none. A record that is not a small
    regular file, or not a record, is :class:`RecordProblem`."""
    record = record_path(path)
    try:
        info = os.lstat(record)
    except FileNotFoundError:
        return None
    except OSError as err:
        raise RecordProblem(f"its record {record.name} cannot be read ({err.strerror})") from None
    if not stat.S_ISREG(info.st_mode):
        raise RecordProblem(f"its record {record.name} is not a regular file")
    if info.st_size > MAX_RECORD_BYTES:
        raise RecordProblem(f"its record {record.name} is {info.st_size} bytes, more than a "
                            f"record holds ({MAX_RECORD_BYTES})")
    earlier = False
    try:
        with open(record, "rb") as f:
            data = json.loads(f.read(MAX_RECORD_BYTES + 1).decode("utf-8"))
        if data.get("format") in EARLIER_FORMATS:
            earlier = True
            raise ValueError("an earlier format")
        if data.get("format") != RECORD_FORMAT:
            raise ValueError("another format")
        identity = (Identity(str(data["model"]), int(data["seed"]), str(data["spec"]))
                    if data.get("model") is not None else None)
        covers = tuple(Identity(str(c["model"]), int(c["seed"]), str(c["spec"]))
                       for c in data["covers"])
        return Record(str(data["file"]), str(data["sha256"]), int(data["size"]), data.get("writer"), identity,
                      dict(data.get("inputs") or {}), covers)
    except OSError as err:
        raise RecordProblem(f"its record {record.name} cannot be read ({err.strerror})") from None
    except (ValueError, TypeError, KeyError, AttributeError, UnicodeDecodeError):
        if earlier:
            raise RecordProblem(f"its record {record.name} is of an earlier version of this "
                                "project, which names no spec of the models a file covers"
                                ) from None
        raise RecordProblem(f"its record {record.name} is not a record of this project") from None


def check(path, kind: str) -> str:
    """Check ``path`` against its record (see the module's doc) and note it as an input of
    the running command; returns its SHA-256. Raises :class:`RecordProblem` (whose message
    does not name the path: the caller does), :class:`FileChanged` for changed bytes."""
    record = read_record(path)
    digest = sha256(path)
    if record is not None and record.file != Path(path).name:
        raise RecordProblem(f"its record {record_path(path).name} is the record of "
                            f"{record.file!r}, another file")
    if record is None:
        if under_results(path):
            raise RecordProblem(
                f"has no record ({record_path(path).name}) beside it, so the workflow did not "
                f"write it (a rule writes through inductionlab.atomic, which records each file); "
                f"to use {kind} made by hand, give it from outside a results/ folder")
        note_input(path, digest, None)
        return digest
    if digest != record.sha256:
        now = Path(path).stat().st_size
        how = (f"cut short or edited since (now {now} of its recorded {record.size} bytes)"
               if now < record.size else "damaged or edited since")
        raise FileChanged(f"is not the file the workflow wrote: it was {how} (its SHA-256 "
                          f"differs from the one recorded in {record_path(path).name})")
    _check_folder(path, record.identity)
    check_run(path, record.covers)
    note_input(path, digest, record.identity, record.covers)
    return digest


def check_content(path, content: Identity) -> None:
    """The identity ``content`` that the file's own content declares (a model's or a
    spec's) is its record's, and its folder's; noted for the running command."""
    record = read_record(path)
    if record is not None and record.identity is not None and record.identity != content:
        raise RecordProblem(f"holds {content.words()}" + (
            "" if (content.model, content.seed) != (record.identity.model, record.identity.seed)
            else " from another spec") + f", but its record says {record.identity.words()}")
    _check_folder(path, content)
    if _NOW.inputs is not None:  # noted by check() already: its digest, now with this identity
        digest, _, covers = _NOW.inputs.pop(str(path), (None, None, ()))
        note_input(path, digest or sha256(path), content, covers or (content,))


def check_rows_model(path, model: str, seed: int) -> None:
    """A table whose rows all name ``model`` and ``seed`` (its ``variant`` and ``seed``
    columns): in a command about one model, the other inputs must be of that model and
    seed, whether or not the table has a record (one given from outside results/ too)."""
    clash = _other_model_input(path, model, seed)
    if clash:
        other, known = clash
        raise Mismatch(f"its rows are of {model} seed {seed}, but {other} is of "
                       f"{known.words()}; this command reads the files of one model and seed")


def _check_folder(path, identity: Identity | None) -> None:
    folder = folder_identity(path)
    if folder is not None and identity is not None and (identity.model, identity.seed) != folder:
        raise RecordProblem(f"is the file of {identity.words()}, not of {folder[0]} seed "
                            f"{folder[1]}, whose folder it is in")


# ---------------------------------------------------------------- this run's specs
# A run is its models' spec.json files: training writes results/<model>/seed<N>/spec.json
# from the config, so a file of this run covers each model with the spec digest its
# spec.json records. The comparison is made here only (check_run), against the spec.json
# files of the results/ folder a file is in, or against the spec files a command is given
# (inductionlab.core.loading.run_specs).

SPEC_FILE = "spec.json"
SPEC_SHOWN = 12  # hex digits of a spec digest shown in a message


def results_root(path) -> Path | None:
    """The innermost ``results`` folder ``path`` lies in (as given, relative or not); None
    when it lies in none."""
    parts = Path(path).parts[:-1]
    if RESULTS not in parts:
        parts = Path(os.path.abspath(path)).parts[:-1]
        if RESULTS not in parts:
            return None
    last = len(parts) - 1 - parts[::-1].index(RESULTS)
    return Path(*parts[:last + 1])


def model_spec_file(root, model: str, seed: int) -> Path:
    """The spec.json of ``model`` and ``seed`` in the results folder ``root``."""
    return Path(root) / model / f"seed{seed}" / SPEC_FILE


class SpecFileProblem(RecordProblem):
    """This run's spec.json of a model is not the one training wrote; the message says how
    to write it again."""


def spec_digest(spec_file) -> str | None:
    """The spec digest recorded for the spec.json ``spec_file``, checked against its bytes;
    None when there is no such file. A spec.json with no sound record, or edited since it
    was written, is :class:`SpecFileProblem` naming it."""
    spec_file = Path(spec_file)
    if not spec_file.is_file():
        return None
    try:
        record = read_record(spec_file)
    except RecordProblem as err:
        raise SpecFileProblem(f"{spec_file}: {err}; delete it and rerun snakemake, which writes "
                              "it from config.yaml again") from None
    if record is None or record.identity is None or sha256(spec_file) != record.sha256:
        how = ("has no record naming its spec" if record is None or record.identity is None
               else "was edited since it was written (its SHA-256 differs from its record's)")
        raise SpecFileProblem(f"{spec_file} {how}, so it is not the spec training wrote; delete "
                              "it and rerun snakemake, which writes it from config.yaml again")
    return record.identity.spec


def check_run(path, covers, specs: dict | None = None) -> None:
    """Every model the file at ``path`` covers (``covers``, from its record) is of this run:
    its spec digest is the one this run's spec.json of that model records. ``specs``: this
    run's models, ``(model, seed) -> (spec digest, spec.json)``; by default the spec.json
    files of the results/ folder ``path`` is in (none outside one; a model folder without a
    spec.json is not checked). Else :class:`RecordProblem`, naming the model and the
    spec.json (:class:`SpecFileProblem` when that spec.json is the file at fault)."""
    root = results_root(path) if specs is None else None
    if specs is None and root is None:
        return
    own = folder_identity(path)
    for covered in covers:
        if specs is not None:
            digest, spec_file = specs.get((covered.model, covered.seed), (None, None))
            if spec_file is None:
                raise RecordProblem(f"holds {covered.words()}, which is not a model of this run "
                                    f"(no spec.json of it among the {len(specs)} given)")
        else:
            spec_file = model_spec_file(root, covered.model, covered.seed)
            if Path(os.path.abspath(spec_file)) == Path(os.path.abspath(path)):
                continue
            try:
                digest = spec_digest(spec_file)
            except SpecFileProblem as err:
                raise SpecFileProblem(f"holds {covered.words()}, whose {err}") from None
            if digest is None:
                if own == (covered.model, covered.seed):
                    continue
                raise RecordProblem(f"holds {covered.words()}, which is not a model of this run "
                                    f"(there is no {spec_file})")
        if digest != covered.spec:
            raise RecordProblem(
                f"holds {covered.words()} from another spec (its record's spec digest "
                f"{covered.spec[:SPEC_SHOWN]}… differs from {spec_file}'s "
                f"{digest[:SPEC_SHOWN]}…)")


class FileChanged(RecordProblem):
    """The file's bytes are not the ones its record describes."""
