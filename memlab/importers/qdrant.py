"""Import an existing Qdrant collection as a memlab dataset, without re-embedding.

``import_qdrant`` reads every point's vector and payload (a date field, a text field and,
optionally, the application's own memory id), checks them all, and writes a dataset folder:
``dataset.json`` (recording the vectors' file, dimension and model, and under ``qdrant`` the
collection's names: date field and format, text field, vector name, id field, so ``memlab spec``
exports back to the same schema), ``memories.jsonl``, ``vectors.npy`` (one row per memory, in
file order) and ``questions.jsonl`` (copied from ``questions`` when given; otherwise empty, to
be filled). ``preset`` (``langchain``, ``llamaindex``, ``mem0``: ``memlab.qdrant.presets``)
names the fields the library writes; a field given beside it wins. A field's name is a payload
path: dots step into nested objects (``metadata.date``), as Qdrant's key paths do. Problems are
reported together as ``collection NAME: point ID: field: problem`` and nothing is written; the
folder appears whole or not at all. A bad ``questions`` file is reported against that file, not
the folder being written.
"""

from __future__ import annotations

import io
import json
import math
from pathlib import Path

import numpy as np

from memlab.core.errors import InputError, MissingFileError
from memlab.core.files import write_folder_atomically
from memlab.core.numbers import counted
from memlab.core.registry import check_names, lookup
from memlab.core.urls import redact
from memlab.core.vectors import raw_vector_problem
from memlab.datasets.payload import MISSING, payload_at, read_payload
from memlab.datasets.records import (
    READ_DATE_FORMATS,
    is_number,
    parse_instant,
    text_too_long,
    unicode_problem,
)
from memlab.datasets.schema import DatasetError, parse_datetime
from memlab.qdrant.client import local_storage, open_client
from memlab.qdrant.presets import PRESETS


def _field_missing(where: str, what: str, name: str, points: list) -> InputError:
    fields = sorted({k for p in points for k in (p.payload or {})})
    return InputError(
        f"{where}: no point has payload field {name!r} ({what}); "
        f"payload fields: {', '.join(fields) or 'none'}"
    )


def import_qdrant(
    *,
    collection: str,
    date_field: str | None = None,
    text_field: str | None = None,
    out: str | Path,
    path: str | None = None,
    url: str | None = None,
    vector_name: str | None = None,
    id_field: str | None = None,
    date_format: str = "auto",
    model: str | None = None,
    questions: str | Path | None = None,
    reference_date: str | None = None,
    language: str = "en",
    progress: bool = False,
    keep_fields: tuple[str, ...] = (),
    preset: str | None = None,
    filter_fields: tuple[str, ...] = (),
    flags: tuple[str, str] = ("--path", "--url"),
) -> Path:
    """Write the dataset folder ``out`` from the collection (see the module's docstring); the
    questions file may hold a text per language (``text``, ``text_ja``...): each ``text_<lang>``
    is a language of the dataset, asked of the memories' one text. ``keep_fields``: payload
    fields kept as the memory's ``payload`` (keyword values: a tenant filter's fields, a shard
    key); ``filter_fields``: kept the same, for a tenant filter the caller applies next (a field
    no point holds is then named as ``--filter``'s); every memory keeps its point id
    (``point_id``), which Qdrant's sharding hashes. A ``preset`` fills the date and text names it
    knows and keeps its user field where the points have one. ``flags``: the options that gave
    ``path`` and ``url``, as the messages name them."""
    chosen = lookup(PRESETS, preset, "preset") if preset is not None else None
    if chosen is not None:
        date_field = date_field or chosen.date_field
        text_field = text_field or chosen.text_field
    for value, flag in ((date_field, "--date-field"), (text_field, "--text-field")):
        if not value:
            raise InputError(f"{flag} is needed (or --preset {'|'.join(PRESETS)})")
    path_flag, url_flag = flags  # the command's own names for path and url
    if bool(path) == bool(url):
        raise InputError(
            f"give exactly one of {path_flag} (local Qdrant folder) or {url_flag} (Qdrant server)"
        )
    check_names(READ_DATE_FORMATS, [date_format], "date format")
    if path:
        local_storage(path, path_flag)
    if questions is not None and not Path(questions).is_file():
        raise MissingFileError(f"--questions {questions}: no such file")
    out = Path(out)
    if out.exists() and any(out.iterdir()):
        raise FileExistsError(f"{out} exists and is not empty: choose a new folder")
    client = open_client(path=path, url=url, url_flag=url_flag)
    try:
        if not client.collection_exists(collection):
            names = ", ".join(sorted(c.name for c in client.get_collections().collections)) or "none"
            raise InputError(f"no collection {collection!r} (collections: {names})")
        vectors_cfg = client.get_collection(collection).config.params.vectors
        named = isinstance(vectors_cfg, dict)
        if named:
            if vector_name is None:
                if len(vectors_cfg) != 1:
                    raise InputError(
                        f"collection {collection!r} has named vectors "
                        f"{', '.join(sorted(vectors_cfg))}: pass --vector-name"
                    )
                vector_name = next(iter(vectors_cfg))
            if vector_name not in vectors_cfg:
                raise InputError(
                    f"collection {collection!r} has no vector {vector_name!r} "
                    f"(it has: {', '.join(sorted(vectors_cfg))})"
                )
            dim = vectors_cfg[vector_name].size
        else:
            if vector_name is not None:
                raise InputError(f"collection {collection!r} has one unnamed vector: drop --vector-name")
            dim = vectors_cfg.size
        points = _scroll_all(client, collection, vector_name if named else None, progress)
    finally:
        client.close()

    where = f"collection {collection}"
    if (  # a store without users has no user field to keep
        chosen is not None
        and chosen.user_field not in keep_fields
        and any(payload_at(p.payload or {}, chosen.user_field) is not MISSING for p in points)
    ):
        keep_fields = (*keep_fields, chosen.user_field)
    options = [(date_field, "--date-field"), (text_field, "--text-field"), (id_field, "--id-field")]
    filter_fields = tuple(k for k in dict.fromkeys(filter_fields) if k not in keep_fields)
    for name, what in [
        *options,
        *((k, "--keep-field") for k in keep_fields),
        *((k, "--filter") for k in filter_fields),
    ]:
        reads_json = name == text_field
        if (
            name is not None
            and points
            and not any(
                payload_at(p.payload or {}, name, json_strings=reads_json) is not MISSING for p in points
            )
        ):
            raise _field_missing(where, what, name, points)
    problems: list[str] = []
    rows, vecs, formats, seen = [], [], {}, {}
    for p in points:
        pid = str(p.id)
        payload = p.payload or {}
        # an unnamed dense vector beside named sparse ones (Mem0's bm25) comes back under ""
        vector = p.vector.get(vector_name or "") if isinstance(p.vector, dict) else p.vector
        stored_date = payload_at(payload, date_field)
        if stored_date is MISSING:
            problems.append(f"{where}: point {pid}: {date_field}: missing")
            continue
        try:
            when = parse_instant(stored_date, date_format)
        except (ValueError, OverflowError, OSError) as e:
            problems.append(f"{where}: point {pid}: {date_field}: {e}")
            continue
        formats.setdefault("iso" if not is_number(stored_date) else date_format, []).append(pid)
        if id_field is not None:
            mid = payload_at(payload, id_field)
            if isinstance(mid, bool) or not isinstance(mid, str | int) or str(mid).strip() == "":
                problems.append(f"{where}: point {pid}: {id_field}: missing or not an id")
                continue
            if str(mid) in seen:
                problems.append(f"{where}: point {pid}: {id_field}: {mid!r} is also point {seen[str(mid)]}'s")
                continue
            seen[str(mid)] = pid
            pid = str(mid)
        text = payload_at(payload, text_field, json_strings=True)
        if not isinstance(text, str) or not text.strip():
            problems.append(f"{where}: point {pid}: {text_field}: missing or not text")
            continue
        if (long := text_too_long(text)) is not None:  # what the dataset loader would refuse
            problems.append(f"{where}: point {pid}: {text_field}: {long}")
            continue
        if vector is None or len(vector) != dim:
            problems.append(
                f"{where}: point {pid}: vector: expected {dim} dimensions, "
                f"got {None if vector is None else len(vector)}"
            )
            continue
        if not all(math.isfinite(x) for x in vector):
            problems.append(f"{where}: point {pid}: vector: contains NaN or infinity")
            continue
        untrusted = raw_vector_problem(np.asarray(vector, dtype=np.float64)) or unicode_problem(pid, text)
        if untrusted is not None:  # a zero vector has no cosine; a lone surrogate no UTF-8
            problems.append(f"{where}: point {pid}: {untrusted}")
            continue
        kept = {k: v for k in (*keep_fields, *filter_fields) if (v := payload_at(payload, k)) is not MISSING}
        bad = read_payload(kept)[1]
        if bad is not None:
            problems.append(f"{where}: point {pid}: {bad}")
            continue
        rows.append(
            {
                "id": pid,
                "date": when.isoformat().replace("+00:00", "Z"),
                "text": text,
                "provenance": "imported",
                **({"payload": kept} if kept else {}),
                "point_id": p.id,
            }
        )
        vecs.append(vector)
    if not points:
        problems.append(f"{where}: no points")
    if len(formats) > 1:  # one query reads one format; the engine fails it whole on the other
        (fewer, ids), (_, others) = sorted(formats.items(), key=lambda kv: len(kv[1]))
        kind, other = ("date strings", "numbers") if fewer == "iso" else ("numbers", "date strings")
        problems.append(
            f"{where}: {date_field}: {len(ids)} point(s) hold {kind} where {len(others)} hold "
            f"{other} (points {', '.join(ids[:5])}): store one format"
        )
    if problems:
        raise DatasetError(problems)
    stored_format = next(iter(formats))
    if stored_format == "auto":
        stored_format = "epoch-s"

    latest = max(parse_datetime(r["date"]) for r in rows)
    if reference_date is not None:
        try:
            ref = parse_datetime(reference_date)
        except ValueError as e:
            raise InputError(f"--reference-date: {e}") from None
        if ref < latest:
            raise InputError(
                f"--reference-date {reference_date} is before the newest memory ({latest.isoformat()})"
            )
    meta = {
        "name": collection,
        "reference_date": reference_date or latest.isoformat().replace("+00:00", "Z"),
        "language": language,
        # the questions' own languages (text_<lang>): asked of the memories' one text
        **({"languages": langs} if len(langs := question_languages(questions, language)) > 1 else {}),
        "description": f"imported from Qdrant collection {collection!r} ({counted(len(rows), 'memory')})",
        "provenance": f"{'path ' + str(path) if path else 'url ' + redact(str(url))}; "
        f"date field {date_field!r}, "
        f"text field {text_field!r}" + (f", vector {vector_name!r}" if vector_name else ""),
        "date_prefix": False,
        "vectors": {"file": "vectors.npy", "dim": dim, "model": model, "order": "memories.jsonl"},
        # the collection's own names: memlab spec exports the query back to this schema
        "qdrant": {
            "collection": collection,
            "date_field": date_field,
            "date_format": stored_format,
            "text_field": text_field,
            # LangChain names its one dense vector "": Qdrant's default vector, as if unnamed
            "vector_name": (vector_name or None) if named else None,
            "id_field": id_field,
            **({"kept_fields": list(keep_fields)} if keep_fields else {}),
            **({"preset": preset} if preset is not None else {}),
            # the user field a retriever's user= filters on (memlab.qdrant.query.CollectionSchema)
            **({"user_field": chosen.user_field} if chosen and chosen.user_field in keep_fields else {}),
        },
    }
    # the folder appears whole or not at all; with questions, it must load (they must fit)
    buf = io.BytesIO()
    np.save(buf, np.asarray(vecs, dtype=np.float32))
    files: dict[str, str | bytes] = {
        "dataset.json": json.dumps(meta, indent=2, ensure_ascii=False) + "\n",
        "memories.jsonl": "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows),
        "vectors.npy": buf.getvalue(),
        "questions.jsonl": Path(questions).read_bytes() if questions is not None else "",
    }
    from memlab.datasets.schema import load_dataset

    def check(tmp: Path) -> None:
        """The folder must load; a problem in the questions is reported against the user's file."""
        try:
            load_dataset(tmp)
        except DatasetError as e:
            theirs = str(Path(questions).resolve()) if questions is not None else ""
            raise DatasetError(
                [p.replace(f"{tmp}/questions.jsonl", theirs).replace(f"{tmp}/", "") for p in e.problems]
            ) from None

    write_folder_atomically(out, files, check=check if questions is not None else None)
    return out


def question_languages(questions: str | Path | None, language: str) -> list[str]:
    """The memories' language, then every other language the questions file writes a text in
    (``text_<lang>``, the dataset format's field for a second language), in first-seen order.
    Lines that do not parse are left to the dataset check, which names them."""
    found = [language]
    if questions is None:
        return found
    for line in Path(questions).read_text(encoding="utf-8", errors="replace").splitlines():
        try:
            obj = json.loads(line)
        except ValueError:
            continue
        if isinstance(obj, dict):
            found += [k[5:] for k in obj if k.startswith("text_") and len(k) > 5 and k[5:] not in found]
    return found


def _scroll_all(client, collection: str, vector_name: str | None, progress: bool) -> list:
    total = client.count(collection, exact=True).count
    bar = None
    if progress and total > 1000:
        from tqdm import tqdm

        bar = tqdm(total=total, unit="point", disable=None)
    points, offset = [], None
    while True:
        batch, offset = client.scroll(
            collection,
            limit=1000,
            offset=offset,
            with_payload=True,
            with_vectors=[vector_name] if vector_name else True,
        )
        points.extend(batch)
        if bar is not None:
            bar.update(len(batch))
        if offset is None:
            break
    if bar is not None:
        bar.close()
    return points
