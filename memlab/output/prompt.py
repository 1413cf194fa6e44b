"""The prompt blocks and the chat messages that carry them.

- The B format: injected memories inside ``<retrieved_memory>`` with instructions (from the seed
  write-up): use the memories only when they are relevant and never bring them up unprompted;
  prefer the newer date when memories disagree; assert nothing a memory does not say. "Today" is
  the reference date, so ages in the prompt match the bonus.
- The A format of the write-up (``raw``): the same memories as plain lines, without instructions.

``chat_messages`` is what ``memlab answer`` sends and ``memlab prompt --format messages`` prints:
the block as the system message (none when nothing is injected, or for no memory at all), then the
question as the user's message. Every prompt is built here, so the command that prints it and the
replay that sends it cannot differ.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from memlab.core.memory_text import escape_memory
from memlab.core.registry import lookup

if TYPE_CHECKING:
    from memlab.datasets.schema import Dataset, Memory

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


def raw_format(memory_texts: list[str], today: datetime | None = None, lang: str = "en") -> str:
    """The write-up's A format: the injected memories one a line, no wrapper and no instructions
    (``today`` and ``lang`` are unused: the A format says neither); empty when none is injected.
    Escaped as the B block is, so no memory can pose as an instruction line."""
    return "\n".join(escape_memory(t) for t in memory_texts)


BLOCKS = {"b": b_format, "raw": raw_format}  # --block: the form the injected memories take


def injected_texts(dataset: Dataset, memory_ids: Sequence[str], lang: str = "en") -> list[str]:
    """The injected memories' lines as the block shows them, in injection order."""
    return [memory_line(dataset.memory(m), lang) for m in memory_ids]


def memory_block(
    block: str, dataset: Dataset, memory_ids: Sequence[str], today: datetime, lang: str = "en"
) -> str:
    """The block of form ``block`` (``BLOCKS``: b, raw) for these injected memories."""
    form = lookup(BLOCKS, block, "prompt block")
    return form(injected_texts(dataset, memory_ids, lang), today, lang)


def chat_messages(block: str, question: str) -> list[dict[str, str]]:
    """The chat request's messages: the block as the system message (left out when empty), then
    the user's question."""
    system = [{"role": "system", "content": block}] if block else []
    return [*system, {"role": "user", "content": question}]
