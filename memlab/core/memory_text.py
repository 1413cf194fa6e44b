"""A memory's text inside the prompt block ``<retrieved_memory>``: escaped, so that no memory can
close the block and write its own lines into the prompt.

- ``DELIMITER``: a tag of the block's name, opening or closing, however spaced or cased
  (``</retrieved_memory>``, ``< / RETRIEVED_MEMORY``), matched on the text as a reader sees it
  (``folded``): each character in its NFKC form (a full-width ``＜／ｒｅｔｒｉｅｖｅｄ＿ｍｅｍｏｒｙ＞``
  reads as the tag), with the characters that show nothing dropped (format characters, Unicode
  category Cf: a zero-width space or a soft hyphen inside the tag; and combining marks, Mn);
- ``LINE_BREAK``: every line break Unicode knows (``str.splitlines``' set: ``\\r\\n``, ``\\n``,
  ``\\r``, vertical tab, form feed, ``\\x1c``-``\\x1e``, U+0085, U+2028, U+2029): a chat model may
  read any of them as a new line;
- ``escape_memory``: every such tag loses its ``<`` (whatever character shows it) to ``&lt;`` and
  every line break becomes a newline followed by two spaces, so a memory stays readable but can
  neither close the block nor start a line of its own (a fake memory, a ``SYSTEM:`` line).
  Escaping keeps the memory usable, where refusing it would drop what it says. Every prompt
  builder uses it: ``memlab prompt``, the panel, and the ``--format python`` snippet (which
  carries this module's functions, read from here: ``SNIPPET``); an ordinary text comes out as
  before, character for character;
- ``delimiter_at``, ``delimiter_tag``, ``line_break_at``: where a text holds the tag or an unusual
  line break (``memlab validate`` names the memory).
"""

from __future__ import annotations

import inspect
import re
import unicodedata

DELIMITER = re.compile(r"<(\s*/?\s*)(retrieved_memory)", re.IGNORECASE)
TAG = re.compile(DELIMITER.pattern + r"\s*>?", re.IGNORECASE)  # the tag as validate quotes it
LINE_BREAK = re.compile("\r\n|[\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029]")
CONTINUATION = "\n  "  # what follows each line break inside one memory
UNSEEN = ("Cf", "Mn")  # categories dropped before matching: format characters, combining marks


def folded(text: str) -> tuple[str, list[int]]:
    """``text`` as the tag is matched on: each character NFKC-normalised, those of a category in
    ``UNSEEN`` dropped; with, for each character of the result, the index in ``text`` it comes
    from."""
    if text.isascii():  # nothing to fold (the usual case: one pass, no per-character work)
        return text, list(range(len(text)))
    out, origin = [], []
    for i, ch in enumerate(text):
        if unicodedata.category(ch) in UNSEEN:
            continue
        piece = unicodedata.normalize("NFKC", ch)
        out.append(piece)
        origin.extend([i] * len(piece))
    return "".join(out), origin


def escape_memory(text: str) -> str:
    """``text`` safe inside the block: each tag's ``<`` as ``&lt;``, each line break followed by
    two spaces (``memlab.core.memory_text``)."""
    view, origin = folded(text)
    starts = {origin[m.start()] for m in DELIMITER.finditer(view)}
    if starts:
        text = "".join("&lt;" if i in starts else ch for i, ch in enumerate(text))
    return LINE_BREAK.sub(CONTINUATION, text)


# the snippet `memlab spec --format python` prints: the very functions above, with what they read
SNIPPET = "\n".join(
    [
        f"DELIMITER = re.compile({DELIMITER.pattern!r}, re.IGNORECASE)",
        f"LINE_BREAK = re.compile({LINE_BREAK.pattern!r})",
        f"CONTINUATION = {CONTINUATION!r}",
        f"UNSEEN = {UNSEEN!r}",
        "",
        "",
        inspect.getsource(folded),
        "",
        inspect.getsource(escape_memory),
    ]
)


def delimiter_tag(text: str) -> tuple[int, str] | None:
    """The index of the first block tag in ``text`` and the tag as written there, else None."""
    view, origin = folded(text)
    found = TAG.search(view)
    if found is None:
        return None
    start, end = origin[found.start()], origin[found.end() - 1] + 1
    return start, text[start:end]


def delimiter_at(text: str) -> int | None:
    """The index of the first block tag in ``text``, else None."""
    tag = delimiter_tag(text)
    return None if tag is None else tag[0]


def line_break_at(text: str) -> int | None:
    """The index of the first line break other than ``\\n`` and ``\\r\\n``, else None: one a
    reader may not see, but a chat model may read as a new line."""
    found = re.search("\r(?!\n)|[\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029]", text)
    return None if found is None else found.start()
