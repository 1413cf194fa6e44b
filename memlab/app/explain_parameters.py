"""``memlab explain``'s parameters (the query log, the candidate specs), declared as the fields of
``memlab.app.parameters.Parameter``: ``PARAMETERS`` takes them in, so they are declared once like
every other parameter."""

from __future__ import annotations

EXPLAIN_PARAMETERS = (
    {
        "name": "log",
        "type": "str",
        "default": "",
        "help": "explain: the query log to replay (JSON lines: each query's text or vector, its time, "
        "optionally its id and the memory ids production injected; docs/explain.md)",
        "flag": "--log",
        "group": "explain",
        "empty": "the dataset's own questions, asked at their dates, as the log",
    },
    {
        "name": "against",
        "type": "list",
        "default": [],
        "help": "explain: candidate specs to compare with the current one, each a tuned-spec file (memlab "
        "sweep --save) or changes to the current spec written as in docs/explain.md (a field, an "
        "equals sign and a value, comma-separated)",
        "flag": "--against",
        "group": "explain",
    },
)
