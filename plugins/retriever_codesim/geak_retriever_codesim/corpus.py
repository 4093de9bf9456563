"""Corpus entries and where they come from.

Four sources, one shape (``CorpusEntry``):

* the built-in corpus, ``corpus/*.py`` next to this module: one Triton
  example per file, its module docstring is the description;
* a folder of ``.py`` files given in ``corpora`` (same convention; files
  without a docstring get an empty description);
* a JSON file (a list of records, or an object holding one under ``data``,
  ``records``, ``items`` or ``examples``) or a JSONL file (one record a line),
  whose code and description sit under the first present field of
  ``code_fields`` / ``description_fields``;
* TritonBench's training set (``train_crawl.json``, kernels crawled from
  GitHub, and ``train_synth.json``, synthesised ones: JSON lists of records
  with the code under ``code``), found in a user's checkout and read as the
  JSON corpora are.
"""

from __future__ import annotations

import ast
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from geak_core.api.astutil import parse_source
from geak_core.api.errors import InputError

BUILTIN_DIR = Path(__file__).parent / "corpus"
DEFAULT_CODE_FIELDS: tuple[str, ...] = ("code", "output", "label", "kernel", "source", "content")
DEFAULT_DESCRIPTION_FIELDS: tuple[str, ...] = (
    "description",
    "instruction",
    "simp_instru",
    "comp_instru",
    "docstring",
    "summary",
    "prompt",
)
TRITONBENCH_TRAIN_FILES: tuple[str, ...] = ("train_crawl.json", "train_synth.json")
ID_FIELDS: tuple[str, ...] = ("id", "name", "file", "task_id")
_LIST_KEYS: tuple[str, ...] = ("data", "records", "items", "examples")


@dataclass(frozen=True)
class CorpusEntry:
    id: str  # "<corpus>:<name>", unique across loaded corpora
    code: str
    description: str
    source: str  # file path, with "#<record index>" for JSON records


def split_docstring(text: str) -> tuple[str, str]:
    """(module docstring, code without it); ("", text) when there is none or it does not parse."""
    try:
        tree = parse_source(text)
    except SyntaxError:
        return "", text
    doc = ast.get_docstring(tree, clean=True)
    if not doc or not tree.body:
        return "", text
    end = tree.body[0].end_lineno or 0
    rest = "\n".join(text.splitlines()[end:]).lstrip("\n")
    return doc.strip(), rest


def load_python_folder(folder: Path, corpus: str) -> list[CorpusEntry]:
    entries = []
    for path in sorted(folder.rglob("*.py")):
        if path.name.startswith("_"):
            continue
        doc, code = split_docstring(path.read_text(encoding="utf-8"))
        name = path.relative_to(folder).with_suffix("").as_posix()
        entries.append(CorpusEntry(f"{corpus}:{name}", code, doc, str(path)))
    return entries


def load_builtin() -> list[CorpusEntry]:
    return load_python_folder(BUILTIN_DIR, "builtin")


def _records(path: Path) -> list[Any]:
    text = path.read_text(encoding="utf-8")
    if path.suffix == ".jsonl":
        records = []
        for lineno, line in enumerate(text.splitlines(), start=1):
            if not line.strip():
                continue
            try:
                records.append(json.loads(line))
            except json.JSONDecodeError as exc:
                raise InputError(f"{path}:{lineno}: not valid JSON ({exc.msg})") from exc
        return records
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(f"{path}:{exc.lineno}: not valid JSON ({exc.msg})") from exc
    if isinstance(data, dict):
        for key in _LIST_KEYS:
            if isinstance(data.get(key), list):
                return data[key]
        raise InputError(
            f"{path}: a JSON corpus is a list of records or an object with one of "
            f"{', '.join(_LIST_KEYS)} holding that list (found keys: {', '.join(sorted(data))})"
        )
    if not isinstance(data, list):
        raise InputError(f"{path}: a JSON corpus is a list of records, not {type(data).__name__}")
    return data


def _first(record: dict[str, Any], fields: tuple[str, ...]) -> str | None:
    for name in fields:
        value = record.get(name)
        if isinstance(value, str):
            return value
    return None


def load_records(
    path: Path,
    corpus: str,
    code_fields: tuple[str, ...] = DEFAULT_CODE_FIELDS,
    description_fields: tuple[str, ...] = DEFAULT_DESCRIPTION_FIELDS,
) -> list[CorpusEntry]:
    """Entries of a JSON/JSONL corpus; records with an empty code field are skipped."""
    entries = []
    for index, record in enumerate(_records(path)):
        if not isinstance(record, dict):
            raise InputError(f"{path}: record {index} is {type(record).__name__}, not an object")
        code = _first(record, code_fields)
        if code is None:
            raise InputError(
                f"{path}: record {index} has none of the code fields "
                f"{', '.join(code_fields)} (its keys: {', '.join(sorted(record))}); "
                f"set the retriever option code_fields"
            )
        if not code.strip():
            continue
        description = _first(record, description_fields) or ""
        name = _first(record, ID_FIELDS) or str(index)
        entries.append(CorpusEntry(f"{corpus}:{name}", code, description, f"{path}#{index}"))
    return entries


def load_corpus(
    path: Path,
    code_fields: tuple[str, ...] = DEFAULT_CODE_FIELDS,
    description_fields: tuple[str, ...] = DEFAULT_DESCRIPTION_FIELDS,
) -> list[CorpusEntry]:
    """Entries of one extra corpus path (folder, .json or .jsonl), named after the path's stem."""
    if not path.exists():
        raise InputError(f"corpus path {str(path)!r} does not exist")
    corpus = path.stem if path.is_file() else path.name
    if path.is_dir():
        return load_python_folder(path, corpus)
    if path.suffix in (".json", ".jsonl"):
        return load_records(path, corpus, code_fields, description_fields)
    raise InputError(
        f"corpus path {str(path)!r}: expected a folder of .py files, a .json or a .jsonl file"
    )


def tritonbench_train_files(path: Path) -> list[Path]:
    """The training files ``path`` names: a ``.json``/``.jsonl`` file itself, else those of
    ``TRITONBENCH_TRAIN_FILES`` in the folder or in its ``data/`` (a TritonBench checkout)."""
    wanted = " and ".join(TRITONBENCH_TRAIN_FILES)
    if path.is_file():
        if path.suffix in (".json", ".jsonl"):
            return [path]
        raise InputError(f"{path} is not a JSON file (expected TritonBench's {wanted})")
    if not path.is_dir():
        raise InputError(
            f"{path} does not exist (expected the folder holding TritonBench's {wanted})"
        )
    for folder in (path, path / "data"):
        found = [folder / name for name in TRITONBENCH_TRAIN_FILES if (folder / name).is_file()]
        if found:
            return found
    raise InputError(
        f"{path} holds neither {' nor '.join(TRITONBENCH_TRAIN_FILES)}, nor does its data/ "
        f"folder (expected TritonBench's data/ folder, which has {wanted})"
    )


def load_tritonbench_train(
    path: Path,
    code_fields: tuple[str, ...] = DEFAULT_CODE_FIELDS,
    description_fields: tuple[str, ...] = DEFAULT_DESCRIPTION_FIELDS,
) -> list[CorpusEntry]:
    """Entries of TritonBench's training files, ids ``train_crawl:<name>``, ``train_synth:<name>``."""
    entries = []
    for file in tritonbench_train_files(path):
        entries += load_records(file, file.stem, code_fields, description_fields)
    return entries
