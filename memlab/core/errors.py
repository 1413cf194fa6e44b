"""memlab's exceptions: one base class the command line catches.

Each subclass also derives from the built-in exception it refines, so ``except ValueError`` in
a caller keeps working. Anything that is not a ``MemlabError`` is a bug in memlab and shows as a
traceback.
"""

from __future__ import annotations


class MemlabError(Exception):
    """A problem with what the user gave memlab: a value, a file, a name."""


class InputError(MemlabError, ValueError):
    """A value, option or file content memlab cannot use; the message says which and why."""


class UnknownNameError(InputError, KeyError):
    """A name that is not in a registry (a question id, a dataset, a rule); lists what exists."""

    def __str__(self) -> str:  # KeyError's str() quotes its message
        return str(self.args[0]) if self.args else ""


class MissingFileError(MemlabError, FileNotFoundError):
    """A file or folder the user named does not exist."""


class UnreachableError(MemlabError, ConnectionError):
    """A server the user named (a Qdrant URL) that refuses the connection or does not answer."""


class MemlabWarning(UserWarning):
    """Something memlab noticed and worked around (a corrupt cache entry it rebuilt); the CLI
    prints it as one ``memlab: warning:`` line."""


class EmbeddingError(MemlabError, RuntimeError):
    """An embedding model or server that cannot serve: not found offline, a broken cache, a bad reply."""


class MissingExtraError(MemlabError, ImportError):
    """An optional extra that is not installed (``memlab[langchain]``...); the message names it."""


def needs_extra(module: str, extra: str, what: str) -> ImportError:
    """The one-line error for ``what`` when ``module`` cannot be imported: install ``extra``."""
    return MissingExtraError(f"{what} needs {module}, which is not installed: pip install 'memlab[{extra}]'")
