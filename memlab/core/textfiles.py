"""Reading the text files a user gives memlab (JSON, YAML, JSON lines): one message per problem,
never a traceback.

- ``encoding_problem``: UTF-8 is read (a UTF-8 byte-order mark is dropped); a file that is
  UTF-16 or UTF-32 (by its byte-order mark) or holds a byte that is not UTF-8 gets one line saying
  so and where, with what to do: save it as UTF-8;
- ``parse_json``: invalid JSON at its line; JSON nested deeper than the reader's recursion limit;
  an integer of more digits than Python converts (4300): each one line, never ``RecursionError``
  or ``ValueError`` from inside the decoder.
"""

from __future__ import annotations

import codecs
import errno
import json
import os
import stat
from pathlib import Path
from typing import Any

from memlab.core.errors import InputError
from memlab.core.files import not_regular, note_input

BOMS = (
    (codecs.BOM_UTF32_LE, "UTF-32"),
    (codecs.BOM_UTF32_BE, "UTF-32"),
    (codecs.BOM_UTF16_LE, "UTF-16"),
    (codecs.BOM_UTF16_BE, "UTF-16"),
)


def encoding_problem(data: bytes) -> tuple[int | None, str] | None:
    """Why ``data`` is not UTF-8 text, as (line or None, message), or None."""
    for bom, name in BOMS:  # UTF-32 LE starts like UTF-16 LE: checked first
        if data.startswith(bom):
            return None, f"is {name} text (it starts with a {name} byte-order mark): save it as UTF-8"
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as e:
        line = data.count(b"\n", 0, e.start) + 1
        column = e.start - (data.rfind(b"\n", 0, e.start) + 1) + 1
        return line, f"not UTF-8 text (byte 0x{data[e.start]:02x} at column {column}): save the file as UTF-8"
    return None


def decode(data: bytes, where: str) -> str:
    """``data`` as text (UTF-8, a byte-order mark dropped), or one line naming ``where`` (and the
    line, as ``where:line:``)."""
    problem = encoding_problem(data)
    if problem is not None:
        line, message = problem
        raise InputError(f"{where}{'' if line is None else f':{line}'}: {message}")
    return data.decode("utf-8-sig")


def read_input(path: str | Path, where: str | None = None) -> bytes:
    """The bytes of a file a user gave, noted as the command's input
    (``memlab.core.files.note_input``: no output of the command may replace it). Only a regular
    file is read: a FIFO (which would block until someone writes to it), a device or a socket is
    one line naming ``where`` (default: the path); it is opened without waiting
    (``O_NONBLOCK``) and checked on the descriptor, so nothing swapped in between is read. A
    folder raises ``IsADirectoryError``, a missing file ``FileNotFoundError``, as reading would."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    with os.fdopen(fd, "rb") as fh:
        mode = os.fstat(fh.fileno()).st_mode
        if stat.S_ISDIR(mode):
            raise IsADirectoryError(errno.EISDIR, "Is a directory", str(path))
        problem = not_regular(mode)
        if problem is not None:
            raise InputError(
                f"{where or path}: is {problem}, not a regular file: memlab reads only regular files"
            )
        data = fh.read()
    note_input(path)
    return data


def read_text(path: str | Path) -> str:
    """A text file a user gave (``read_input``), decoded by ``decode`` (``FileNotFoundError`` as
    it is)."""
    return decode(read_input(path), str(path))


def parse_json(text: str, where: str, line: bool = True) -> Any:
    """``json.loads(text)``, each way it can fail as one line naming ``where`` (and the line of
    invalid JSON, ``where:line:``, unless ``where`` is already one line of a file)."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        raise InputError(f"{where}{f':{e.lineno}' if line else ''}: invalid JSON: {e.msg}") from None
    except RecursionError:
        raise InputError(f"{where}: nested deeper than memlab reads (about 1000 levels of [ or {{)") from None
    except ValueError as e:  # Python refuses to convert an integer of more than 4300 digits
        raise InputError(f"{where}: {json_number_problem(e)}") from None


def json_number_problem(e: ValueError) -> str:
    if "digits" in str(e):
        return "holds an integer of more than 4300 digits: not a number memlab reads"
    return f"invalid JSON: {e}"


def load_json(path: str | Path) -> Any:
    """A JSON file a user gave: ``read_text`` then ``parse_json``."""
    return parse_json(read_text(path), str(path))


def surrogate_problem(obj: Any, at: str = "") -> str | None:
    """The first text (a key or a value, anywhere in a parsed JSON document) holding a lone
    surrogate (JSON's ``"\\ud800"`` decodes to one; it cannot be written as UTF-8), as
    ``WHERE: lone surrogate escape \\ud800 at character N: not valid Unicode text``, or None.
    ``WHERE`` is the JSON path (``[0].qa[3].question``)."""
    todo = [(obj, at)]
    while todo:
        value, where = todo.pop()
        if isinstance(value, str):
            try:
                value.encode("utf-8")
            except UnicodeEncodeError as e:
                return (
                    f"{where or '(the document)'}: lone surrogate escape \\u{ord(value[e.start]):04x} at "
                    f"character {e.start + 1}: not valid Unicode text"
                )
        elif isinstance(value, dict):
            todo += [(v, f"{where}.{k}" if where else str(k)) for k, v in reversed(value.items())]
            todo += [(k, f"{where} (a key)") for k in value if isinstance(k, str)]
        elif isinstance(value, list):
            todo += [(v, f"{where}[{i}]") for i, v in reversed(list(enumerate(value)))]
    return None
