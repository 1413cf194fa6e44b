"""The checkable judge: the phrases a dataset says a good reply contains (``expect``) and does not
contain (``avoid``).

A phrase matches case-insensitively with accents, width and dashes folded (NFKC, then the
combining marks of NFKD dropped, casefold, runs of spaces and hyphens as one space), so "Café au
lait", "cafe-au-lait" and "CAFÉ AU LAIT" match "café au lait". A phrase that starts or ends with a
Latin letter or digit matches whole words on that side ("TTS" is not found in "hits"); other
phrases (Japanese) match anywhere.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence

_SPACES = re.compile(r"[\s\-‐-―]+")


def fold(text: str) -> str:
    """``text`` as phrases are compared: NFKC, accents dropped, casefolded, spaces and dashes as one space."""
    text = unicodedata.normalize("NFKD", unicodedata.normalize("NFKC", text))
    text = "".join(ch for ch in text if not unicodedata.combining(ch))
    return _SPACES.sub(" ", unicodedata.normalize("NFC", text).casefold()).strip()


def _pattern(phrase: str) -> re.Pattern[str]:
    folded = fold(phrase)
    left = r"(?<![a-z0-9])" if folded[:1].isascii() and folded[:1].isalnum() else ""
    right = r"(?![a-z0-9])" if folded[-1:].isascii() and folded[-1:].isalnum() else ""
    return re.compile(left + re.escape(folded) + right)


def contains(reply: str, phrase: str) -> bool:
    return _pattern(phrase).search(fold(reply)) is not None


def phrase_verdict(reply: str, expect: Sequence[str], avoid: Sequence[str]) -> tuple[bool | None, str]:
    """(whether the reply holds every expected phrase and no avoided one, why); (None, "") when
    the question gives no phrase."""
    if not expect and not avoid:
        return None, ""
    missing = [p for p in expect if not contains(reply, p)]
    present = [p for p in avoid if contains(reply, p)]
    reasons = [f"lacks {p!r}" for p in missing] + [f"mentions {p!r}" for p in present]
    if reasons:
        return False, "; ".join(reasons)
    held = f"holds {', '.join(repr(p) for p in expect)}" if expect else ""
    clear = f"mentions none of {len(avoid)} avoided phrases" if avoid else ""
    return True, "; ".join(x for x in (held, clear) if x)
