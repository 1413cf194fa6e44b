"""The B-format prompt block: injected memories inside ``<retrieved_memory>`` with instructions.

The instructions (from the seed write-up): use the memories only when they are relevant and
never bring them up unprompted; prefer the newer date when memories disagree; assert nothing a
memory does not say. "Today" is the reference date, so ages in the prompt match the bonus.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from memlab.core.memory_text import escape_memory
from memlab.core.registry import lookup

if TYPE_CHECKING:
    from memlab.datasets.schema import Memory

DATE_PREFIX = re.compile(r"\d{4}-\d{2}-\d{2}: ")  # how a memory's text starts with its date

B_FORMAT: dict[str, str] = {
    "en": (
        "<retrieved_memory>\n"
        "Today is {today}. These are memories retrieved for the user's message, each starting "
        "with the date it was recorded.\n"
        "- Use them only when they are relevant to what the user is saying; do not bring them "
        "up on your own.\n"
        "- When memories disagree, prefer the one with the newer date.\n"
        "- Do not assert anything a memory does not say; if unsure, ask.\n"
        "\n"
        "{memories}\n"
        "</retrieved_memory>"
    ),
    "ja": (
        "<retrieved_memory>\n"
        "今日は{today}です。以下はユーザーの発言に関係しそうな記憶で、先頭は記録した日付です。\n"
        "- ユーザーの話に関係する場合だけ使い、自分から持ち出さないでください。\n"
        "- 記憶どうしが食い違うときは、日付が新しい方を優先してください。\n"
        "- 記憶に書かれていないことは断定せず、分からなければ聞き返してください。\n"
        "\n"
        "{memories}\n"
        "</retrieved_memory>"
    ),
}


def b_format(memory_texts: list[str], today: datetime, lang: str = "en") -> str:
    """The block for the injected memories (in injection order); empty when none is injected.
    Each text is escaped (``memlab.core.memory_text.escape_memory``): no memory can close the
    block or start a line of its own."""
    template = lookup(B_FORMAT, lang, "B-format template for")
    if not memory_texts:
        return ""
    memories = "\n".join(escape_memory(t) for t in memory_texts)
    return template.format(today=today.date().isoformat(), memories=memories)


def memory_line(memory: Memory, lang: str = "en") -> str:
    """A memory as the block shows it, starting with the date it was recorded (the block says so):
    its text when the text starts with its date (``"date_prefix"``, the default), else the
    memory's date written as that prefix would be (``YYYY-MM-DD: ``, in UTC) before the text, as
    for every imported store and LoCoMo (``"date_prefix": false``)."""
    text = memory.text(lang)
    return text if DATE_PREFIX.match(text) else f"{memory.date.astimezone(UTC).date().isoformat()}: {text}"
