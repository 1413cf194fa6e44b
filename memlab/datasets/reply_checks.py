"""What a good reply to a question holds, where a dataset says so (``memlab answer`` checks it).

Optional question fields, each in the dataset's own language and, for another language, with its
suffix (``expect_ja``), as the question's text is:

- ``expect``: phrases a good reply contains, every one of them (C1: ``["café au lait"]``);
- ``avoid``: phrases a good reply does not contain, none of them (N1: the memories' topics);
- ``answer``: the reference answer (LoCoMo's ``answer``), scored by token F1.

Phrases match case-insensitively, with accents and width folded (``memlab.answers.phrases``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from memlab.datasets.records import JsonRecord

PHRASE_FIELDS = ("expect", "avoid")
REPLY_FIELDS = (*PHRASE_FIELDS, "answer")


def _frozen(d: dict[str, Any]) -> Mapping[str, Any]:
    return MappingProxyType(d)


@dataclass(frozen=True)
class ReplyChecks:
    """Per language: the phrases a reply must contain and must not, and the reference answer."""

    expect: Mapping[str, tuple[str, ...]] = field(default_factory=lambda: _frozen({}))
    avoid: Mapping[str, tuple[str, ...]] = field(default_factory=lambda: _frozen({}))
    answer: Mapping[str, str] = field(default_factory=lambda: _frozen({}))

    def phrases(self, lang: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """(expect, avoid) in ``lang`` (empty where the dataset gives none)."""
        return self.expect.get(lang, ()), self.avoid.get(lang, ())

    def has_phrases(self, lang: str) -> bool:
        return bool(self.expect.get(lang) or self.avoid.get(lang))


def field_names(name: str, fields: Mapping[str, str]) -> dict[str, str]:
    """lang -> the field holding ``name`` in that language (``expect``, ``expect_ja``), from the
    text fields (lang -> ``text`` or ``text_<lang>``)."""
    return {lang: name + fname[len("text") :] for lang, fname in fields.items()}


def allowed_fields(fields: Mapping[str, str]) -> set[str]:
    return {f for name in REPLY_FIELDS for f in field_names(name, fields).values()}


def _phrases(r: JsonRecord, fieldname: str) -> tuple[str, ...]:
    value = r.obj.get(fieldname)
    if value is None:
        return ()
    if not isinstance(value, list) or not value:
        r.problem(fieldname, f"expected a non-empty list of phrases, got {value!r}")
        return ()
    bad = [v for v in value if not isinstance(v, str) or not v.strip()]
    if bad:
        r.problem(fieldname, f"expected phrases (non-empty strings), got {bad[0]!r}")
        return ()
    return tuple(v.strip() for v in value)


def read_reply_checks(r: JsonRecord, fields: Mapping[str, str]) -> ReplyChecks:
    """The question's reply checks, each problem located (``file:line: field: problem``); a phrase
    both expected and avoided is a problem."""
    out: dict[str, dict[str, Any]] = {name: {} for name in REPLY_FIELDS}
    for name in PHRASE_FIELDS:
        for lang, fname in field_names(name, fields).items():
            if phrases := _phrases(r, fname):
                out[name][lang] = phrases
    for lang, fname in field_names("answer", fields).items():
        value = r.obj.get(fname)
        if isinstance(value, int | float) and not isinstance(value, bool):
            value = str(value)  # LoCoMo writes some answers as numbers (a year)
            r.obj[fname] = value
        text = r.text(fname, required=False)
        if text is not None and not text.strip():
            r.problem(fname, "empty")
        elif text is not None:
            out["answer"][lang] = text.strip()
    for lang in fields:
        both = sorted(set(out["expect"].get(lang, ())) & set(out["avoid"].get(lang, ())))
        if both:
            r.problem(field_names("avoid", fields)[lang], f"{both[0]!r} is also expected")
    return ReplyChecks(*(_frozen(out[name]) for name in REPLY_FIELDS))
