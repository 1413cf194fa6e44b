"""Where datasets are found: the packaged ones by name, the user's data folders
(``$MEMLAB_DATA_DIR``, ``./data``), and a folder given as a path."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

from memlab.core.errors import MissingFileError
from memlab.core.paths import check_links

DEFAULT_DATASET = "seed16"


def packaged_datasets() -> list[str]:
    """Names of the datasets shipped inside the package."""
    root = resources.files("memlab.datasets") / "packaged"
    return sorted(d.name for d in root.iterdir() if d.is_dir())


def user_data_dirs() -> list[Path]:
    """Where ``--dataset NAME`` looks after the packaged datasets: ``$MEMLAB_DATA_DIR`` if set,
    else ``./data`` and, for notebooks that run in ``notebooks/``, ``../data``."""
    import os

    if os.environ.get("MEMLAB_DATA_DIR"):
        return [Path(os.environ["MEMLAB_DATA_DIR"]).expanduser()]
    return [Path.cwd() / "data", Path.cwd().parent / "data"]


def user_datasets() -> list[Path]:
    """Dataset folders under the user data folders (any folder holding a dataset.json)."""
    found: dict[str, Path] = {}
    for root in user_data_dirs():
        if root.is_dir():
            for d in sorted(root.iterdir()):
                if (d / "dataset.json").is_file() and d.name not in found:
                    found[d.name] = d.resolve()
    return list(found.values())


def dataset_dir(name_or_path: str | Path = DEFAULT_DATASET) -> Path:
    """A dataset folder: a packaged dataset by name (``seed16``), else ``data/NAME``, else a path."""
    text = str(name_or_path)
    is_name = bool(text) and "/" not in text and "\\" not in text and text not in (".", "..")
    if is_name:
        packaged = resources.files("memlab.datasets") / "packaged" / text
        if packaged.is_dir():
            return Path(str(packaged))
        for root in user_data_dirs():
            if (root / text).is_dir():
                return (root / text).resolve()
    p = check_links(Path(name_or_path).expanduser(), writing=False)  # a link loop or to nothing: said as such
    if p.is_dir():
        return p
    looked = ", ".join(str(r) for r in user_data_dirs())
    raise MissingFileError(
        f"no dataset {text!r}: not a packaged dataset (packaged: {', '.join(packaged_datasets())}), "
        f"not under {looked}, and not a folder ({p.resolve()})"
    )
