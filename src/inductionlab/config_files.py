"""Reading a config file as data: YAML (or JSON) with the safe loader, refusing a key
given twice, aliases that expand without bound, a tag that builds a Python object and a
YTE template; each a one-line :class:`ConfigError` naming file:line:column. Also how
Snakemake merges ``--configfile`` files (:func:`overlay`)."""
from __future__ import annotations

import json
from pathlib import Path

import yaml


class ConfigError(ValueError):
    """The configuration is invalid; the message names the key."""



# A config file is a few hundred values; anchors and aliases repeat a value without writing
# it out, so a small file can stand for billions ("billion laughs"). Counted before anything
# walks the data.
MAX_VALUES = 100_000


class _UniqueKeyLoader(yaml.SafeLoader):
    """YAML's safe loader, refusing a key given twice in one mapping (the second would
    silently replace the first), in block and flow style alike."""


def _mapping_without_duplicates(loader, node, deep=False):
    seen = {}
    for key_node, _ in node.value:
        if key_node.tag == "tag:yaml.org,2002:merge":
            continue
        key = loader.construct_object(key_node, deep=True)
        try:
            first = seen.setdefault(key, key_node.start_mark)
        except TypeError:
            continue  # an unhashable key: the constructor below refuses it
        if first is not key_node.start_mark:
            raise yaml.constructor.ConstructorError(
                None, None, f"duplicate key {key!r} (first given on line {first.line + 1}"
                + (f", column {first.column + 1}" if first.line == key_node.start_mark.line else "")
                + "); the second would silently replace the first", key_node.start_mark)
    return yaml.SafeLoader.construct_mapping(loader, node, deep)


_UniqueKeyLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG,
                                 _mapping_without_duplicates)


def _expanded_size(node, limit: int = MAX_VALUES) -> int:
    """How many values ``node`` stands for with every alias written out, counted once per
    node (an alias shares its anchor's node). Raises a ConstructorError at the smallest
    value that exceeds ``limit``, or at an alias inside its own anchor."""
    sizes, open_ = {}, set()

    def size(n) -> int:
        if id(n) in sizes:
            return sizes[id(n)]
        if id(n) in open_:
            raise yaml.constructor.ConstructorError(
                None, None, "an alias refers to a value it is part of; a config file holds no "
                "cycles", n.start_mark)
        open_.add(id(n))
        if isinstance(n, yaml.MappingNode):
            total = 1 + sum(size(k) + size(v) for k, v in n.value)
        elif isinstance(n, yaml.SequenceNode):
            total = 1 + sum(size(v) for v in n.value)
        else:
            total = 1
        open_.discard(id(n))
        if total > limit:
            raise yaml.constructor.ConstructorError(
                None, None, f"this value stands for more than {limit:,} values once its aliases "
                "(*name) are written out; a config file is far smaller: write it out, or "
                "repeat less", n.start_mark)
        sizes[id(n)] = total
        return total

    return size(node)


def load_yaml_text(text: str):
    """YAML ``text`` as data, with the safe loader; a key given twice, or aliases that
    expand to more than :data:`MAX_VALUES` values, is an error."""
    loader = _UniqueKeyLoader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        _expanded_size(node)
        return loader.construct_document(node)
    finally:
        loader.dispose()


class _DuplicateJsonKey(Exception):
    pass


def _json_object(pairs):
    data = dict(pairs)
    if len(data) < len(pairs):
        seen = set()
        raise _DuplicateJsonKey(next(k for k, _ in pairs if k in seen or seen.add(k)))
    return data


def _count_values(data, limit: int = MAX_VALUES) -> int:
    """How many values ``data`` holds (mappings and lists count themselves and their items)."""
    count, todo = 0, [data]
    while todo and count <= limit:
        item = todo.pop()
        count += 1
        if isinstance(item, dict):
            todo += [*item.keys(), *item.values()]
        elif isinstance(item, list):
            todo += item
    return count


def parse_config_text(text: str, where: str):
    """The data of a config file's ``text``, read as Snakemake reads it: as JSON when it is
    JSON (so ``1e-3`` is a number there, as JSON has it), else as YAML (where YAML 1.1, as
    Snakemake's loader has it, reads ``1e-3`` as text). ``where``: the file, for messages."""
    try:
        data = json.loads(text, object_pairs_hook=_json_object)
    except json.JSONDecodeError:
        return load_yaml_text(text)
    except _DuplicateJsonKey as twice:
        # read again as YAML (JSON is YAML) for the line and column; else without them
        try:
            load_yaml_text(text)
        except yaml.constructor.ConstructorError:
            raise
        except (yaml.YAMLError, RecursionError):
            pass
        raise ConfigError(f"{where}: duplicate key {twice.args[0]!r}; the second would "
                          "silently replace the first") from None
    if _count_values(data) > MAX_VALUES:
        raise ConfigError(f"{where}: holds more than {MAX_VALUES:,} values; a config file is "
                          "far smaller")
    return data



def read_yaml(path, kind: str = "config file") -> dict:
    """A YAML (or JSON) config file as a mapping, read as data only. A syntax error, a key
    given twice, aliases expanding beyond :data:`MAX_VALUES` values, a tag that would build
    a Python object, a YTE template (``__use_yte__``, which Snakemake would run as code) or
    an empty file is one line naming file:line:column (or the file)."""
    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"{path}: no such {kind}" if not path.exists()
                          else f"{path}: is a directory, not a {kind}" if path.is_dir()
                          else f"{path}: is not a regular file, so not a {kind}")
    try:
        data = parse_config_text(path.read_text(encoding="utf-8"), str(path))
    except yaml.constructor.ConstructorError as err:
        mark = err.problem_mark or err.context_mark
        where = f"{path}:{mark.line + 1}:{mark.column + 1}" if mark else str(path)
        problem = err.problem or err.context or ""
        if problem.startswith("could not determine a constructor for the tag"):
            tag = problem.split("tag", 1)[1].strip().strip("'")
            problem = (f"the tag {tag.replace('tag:yaml.org,2002:', '!!')} asks for something "
                       f"other than data; a {kind} holds only mappings, lists, text, numbers "
                       "and booleans")
        raise ConfigError(f"{where}: {problem}") from None
    except yaml.MarkedYAMLError as err:
        mark = err.problem_mark or err.context_mark
        where = f"{path}:{mark.line + 1}:{mark.column + 1}" if mark else str(path)
        raise ConfigError(f"{where}: YAML syntax error: {err.problem or err.context}") from None
    except (yaml.YAMLError, UnicodeDecodeError) as err:
        raise ConfigError(f"{path}: not a YAML file, so not a {kind} ({str(err)[:120]})") from None
    except RecursionError:
        raise ConfigError(f"{path}: nested too deeply to be a {kind}") from None
    if data is None:
        # Snakemake's own words too: it reads a --configfile before the workflow can
        raise ConfigError(f"{path}: holds no keys (it is empty, or only comments); a {kind} "
                          "must be given as JSON or YAML with keys at top level: give at least "
                          "one, or leave the file out")
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: a {kind} must be given as JSON or YAML with keys at top "
                          f"level, a mapping of keys to values, not a {type(data).__name__}")
    if "__use_yte__" in data:
        raise ConfigError(f"{path}: __use_yte__ would have Snakemake run this file as a YTE "
                          f"template, its ?-values as Python code; a {kind} is data, never "
                          "code: remove __use_yte__ and write the values out")
    return data


def overlay(config: dict, other: dict) -> dict:
    """``other`` merged into ``config`` in place, as Snakemake merges ``--configfile`` files:
    mappings key by key, recursively; every other value (a list too) replaced."""
    for key, value in other.items():
        if isinstance(value, dict):
            base = config.get(key)
            config[key] = overlay(base if isinstance(base, dict) else {}, value)
        else:
            config[key] = value
    return config
