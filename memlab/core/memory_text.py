"""A memory's text inside the prompt block ``<retrieved_memory>``: escaped, so that no memory can
close the block and write its own lines into the prompt.

- ``DELIMITER``: a tag of the block's name, opening or closing, however spaced or cased
  (``</retrieved_memory>``, ``< / RETRIEVED_MEMORY``);
- ``escape_memory``: every such tag loses its ``<`` to ``&lt;`` and every line break is followed
  by two spaces, so a memory stays readable but can neither close the block nor start a line of
  its own (a fake memory, a ``SYSTEM:`` line). Escaping keeps the memory usable, where refusing
  it would drop what it says. Every prompt builder uses it: ``memlab prompt``, the panel, and the
  ``--format python`` snippet (which carries this pattern and replacement, read from here);
- ``delimiter_at``: where a text holds the tag (``memlab validate`` names the memory).
"""

from __future__ import annotations

import re

DELIMITER = re.compile(r"<(\s*/?\s*)(retrieved_memory)", re.IGNORECASE)
REPLACEMENT = r"&lt;\1\2"
CONTINUATION = "\n  "  # what follows each line break inside one memory


def escape_memory(text: str) -> str:
    """``text`` safe inside the block (see the module's docstring)."""
    text = DELIMITER.sub(REPLACEMENT, text)
    return text.replace("\r\n", "\n").replace("\r", "\n").replace("\n", CONTINUATION)


def delimiter_at(text: str) -> int | None:
    """The index of the first block tag in ``text``, else None."""
    found = DELIMITER.search(text)
    return None if found is None else found.start()
