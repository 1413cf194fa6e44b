"""YAML a user gives memlab (``--criteria``, a batch file, ``-p key=[a, b]``), read so that every
way it can fail is one line: not UTF-8 (``memlab.core.textfiles``), invalid YAML at its line,
nested deeper than the parser's recursion limit. Scalars stay text (``BaseLoader``): a value is
typed by whoever reads it, and YAML's tags are inert.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from memlab.core.errors import InputError
from memlab.core.textfiles import read_text


def parse_yaml(text: str, where: str, compose: bool = False, located: bool = True) -> Any:
    """``text`` as a YAML document (plain data, every scalar a string), or its node tree
    (``compose``: with line numbers); one line naming ``where`` (and the line, unless ``located``
    is false: a value of one line) when it cannot be read."""
    import yaml

    try:
        return yaml.compose(text) if compose else yaml.load(text, Loader=yaml.BaseLoader)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        line = f":{mark.line + 1}" if mark is not None and located else ""
        raise InputError(f"{where}{line}: invalid YAML: {getattr(e, 'problem', None) or e}") from None
    except RecursionError:
        raise InputError(f"{where}: nested deeper than memlab reads (about 1000 levels of [ or {{)") from None


def load_yaml(path: str | Path, compose: bool = False) -> Any:
    """A YAML file: ``read_text`` (UTF-8) then ``parse_yaml`` (``FileNotFoundError`` as it is)."""
    return parse_yaml(read_text(path), str(path), compose)
