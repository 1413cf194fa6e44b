"""Criteria declared in a YAML file (``--criteria FILE``), every problem as ``file:line: field: problem``."""

from __future__ import annotations

from pathlib import Path

from memlab.core.criteria import Criterion
from memlab.core.errors import InputError, MissingFileError
from memlab.datasets.yaml_text import load_yaml


def load_criteria(path: str | Path) -> tuple[Criterion, ...]:
    """Criteria declared in YAML: a list (or ``criteria:`` list) of {name, kind, question, description}.

    Problems are reported as ``file:line: field: problem``.
    """
    import yaml

    path = Path(path)
    try:
        root = load_yaml(path, compose=True)  # not UTF-8, invalid, nested too deep: one line
    except FileNotFoundError:
        raise MissingFileError(f"no criteria file {path}") from None
    except IsADirectoryError:
        raise InputError(f"--criteria {path}: is a folder, not a criteria file (YAML)") from None
    if isinstance(root, yaml.MappingNode):
        root = next((v for k, v in root.value if k.value == "criteria"), None)
    if not isinstance(root, yaml.SequenceNode) or not root.value:
        raise InputError(f"{path}: expected a list of criteria (or a 'criteria:' list)")
    out, problems = [], []
    for node in root.value:
        where = f"{path}:{node.start_mark.line + 1}"
        if not isinstance(node, yaml.MappingNode):
            problems.append(f"{where}: expected a mapping with name and kind")
            continue
        # a scalar tagged null (null, ~, empty) is None, not the text "null"; a list or a mapping
        # where text belongs is a problem at its own line
        item, bad = {}, False
        for k, v in node.value:
            key = k.value if isinstance(k, yaml.ScalarNode) else "field name"
            if not isinstance(k, yaml.ScalarNode) or not isinstance(v, yaml.ScalarNode):
                odd = v if isinstance(k, yaml.ScalarNode) else k
                got = "a list" if isinstance(odd, yaml.SequenceNode) else "a mapping"
                problems.append(f"{path}:{odd.start_mark.line + 1}: {key}: expected text, got {got}")
                bad = True
                continue
            item[key] = None if v.tag.endswith(":null") else v.value
        if bad:
            continue
        unknown = set(item) - {"name", "kind", "question", "description"}
        for key in sorted(unknown):
            problems.append(f"{where}: {key}: unknown field (allowed: description, kind, name, question)")
        for key in ("name", "kind"):
            if not item.get(key):
                problems.append(f"{where}: {key}: missing")
        if unknown or not item.get("name") or not item.get("kind"):
            continue
        try:
            out.append(
                Criterion(item["name"], item["kind"], item.get("question"), item.get("description", ""))
            )
        except ValueError as e:
            field = "question" if "needs a question" in str(e) else "name" if "reserved" in str(e) else "kind"
            problems.append(f"{where}: {field}: {e}")
    names = [c.name for c in out]
    for name in sorted({n for n in names if names.count(n) > 1}):
        problems.append(f"{path}: name: {name!r} is declared more than once")
    if problems:
        raise InputError("\n".join(problems))
    return tuple(out)
