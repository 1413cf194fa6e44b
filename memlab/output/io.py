"""Tables written in chunks (CSV, Parquet, JSON), atomically, and the one JSON cleaner."""

from __future__ import annotations

import math
import os
import tempfile
from pathlib import Path
from typing import Any

from memlab.core.files import file_mode
from memlab.core.registry import check_names

TABLE_FORMATS = ("csv", "parquet", "json")


class TableWriter:
    """Write a table chunk by chunk to a temporary file; rename it into place on success.

    On any error the temporary file is removed and the target is left as it was.
    Formats: csv, parquet (one row group per chunk), json (an array of row objects).
    """

    def __init__(self, path: str | Path, fmt: str):
        check_names(dict.fromkeys(TABLE_FORMATS), [fmt], "table format")
        self.path = Path(path)
        self.fmt = fmt
        self.rows = 0
        self._parquet = None

    def __enter__(self) -> TableWriter:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=self.path.parent, prefix=f".{self.path.name}.", suffix=".tmp")
        os.close(fd)
        os.chmod(tmp, file_mode(self.path))  # mkstemp makes 0600
        self.tmp = Path(tmp)
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
                self._parquet = pq.ParquetWriter(self.tmp, table.schema)
            self._parquet.write_table(table)
        self.rows += len(frame)

    def __exit__(self, exc_type, exc, tb) -> None:
        try:
            if self._fh is not None:
                if self.fmt == "json":
                    self._fh.write("\n]\n")
                self._fh.close()
            if self._parquet is not None:
                self._parquet.close()
        finally:
            if exc_type is None:
                os.replace(self.tmp, self.path)
            else:
                self.tmp.unlink(missing_ok=True)


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
