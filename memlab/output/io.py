"""Tables written in chunks (CSV, Parquet, JSON), atomically, and the one JSON cleaner."""

from __future__ import annotations

import math
import sys
from pathlib import Path
from typing import Any

from memlab.core.files import commit, discard, new_temp_file, output_target
from memlab.core.registry import check_names

TABLE_FORMATS = ("csv", "parquet", "json")


class TableWriter:
    """Write a table chunk by chunk to a temporary file; rename it into place on success.

    On any error (a signal included) the temporary file is removed and the target is left as it
    was. ``path`` ``-`` writes to standard output instead. Formats: csv, parquet (one row group
    per chunk), json (an array of row objects).
    """

    def __init__(self, path: str | Path, fmt: str):
        check_names(dict.fromkeys(TABLE_FORMATS), [fmt], "table format")
        self.stdout = str(path) == "-"
        self.path = Path(path)
        self.target = None if self.stdout else output_target(self.path)
        self.fmt = fmt
        self.rows = 0
        self._parquet = None

    def __enter__(self) -> TableWriter:
        if self.stdout:
            self.tmp = None
            self._fh = None if self.fmt == "parquet" else sys.stdout
        else:
            self.tmp = new_temp_file(self.target)
            self._fh = None if self.fmt == "parquet" else self.tmp.open("w", encoding="utf-8", newline="")
        if self.fmt == "json":
            self._fh.write("[")
        return self

    def write(self, frame) -> None:  # a pandas DataFrame
        if self.fmt == "csv":
            frame.to_csv(self._fh, header=self.rows == 0, index=False)
        elif self.fmt == "json":
            lines = frame.to_json(orient="records", lines=True, double_precision=15).strip()
            if lines:
                self._fh.write(("," if self.rows else "") + "\n" + lines.replace("\n", ",\n"))
        else:
            import pyarrow as pa
            import pyarrow.parquet as pq

            table = pa.Table.from_pandas(frame, preserve_index=False)
            if self._parquet is None:
                sink = sys.stdout.buffer if self.stdout else self.tmp
                self._parquet = pq.ParquetWriter(sink, table.schema)
            self._parquet.write_table(table)
        self.rows += len(frame)

    def __exit__(self, exc_type, exc, tb) -> None:
        try:
            if self._fh is not None:
                if self.fmt == "json":
                    self._fh.write("\n]\n")
                if self.stdout:
                    self._fh.flush()
                else:
                    self._fh.close()
            if self._parquet is not None:
                self._parquet.close()
        except BaseException:
            if self.tmp is not None:
                discard(self.tmp)
            raise
        if self.tmp is None:
            return
        if exc_type is None:
            commit(self.tmp, self.target)
        else:
            discard(self.tmp)


def json_ready(obj: Any) -> Any:
    """``obj`` as plain JSON values: numpy scalars and arrays become Python numbers and lists,
    NaN and infinities become null (they are not JSON), tuples become lists, and anything else
    that JSON cannot hold becomes its ``str``. The one JSON cleaner of every writer."""
    if isinstance(obj, bool | int | str) or obj is None:
        return obj
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {str(k): json_ready(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [json_ready(v) for v in obj]
    if hasattr(obj, "tolist"):  # numpy scalars and arrays
        return json_ready(obj.tolist())
    return str(obj)
