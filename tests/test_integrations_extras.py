"""The framework modules import their library only when imported themselves, and say which
extra to install when it is missing (one line, a MemlabError)."""

from __future__ import annotations

import importlib
import subprocess
import sys

import pytest

from memlab.core.errors import MemlabError, MissingExtraError

CASES = [
    ("memlab.integrations.langchain", "langchain_core", "langchain-core", "langchain"),
    ("memlab.integrations.llamaindex", "llama_index", "llama-index-core", "llamaindex"),
    ("memlab.integrations.mem0", "mem0", "mem0ai", "mem0"),
]


@pytest.mark.parametrize(("module", "library", "package", "extra"), CASES)
def test_a_missing_library_names_its_extra(monkeypatch, module, library, package, extra):
    for name in [m for m in sys.modules if m == library or m.startswith(library + ".")] or [library]:
        monkeypatch.setitem(sys.modules, name, None)  # as if not installed: importing it fails
    monkeypatch.delitem(sys.modules, module, raising=False)
    with pytest.raises(MissingExtraError) as e:
        importlib.import_module(module)
    assert isinstance(e.value, MemlabError) and isinstance(e.value, ImportError)
    assert str(e.value) == f"{module} needs {package}, which is not installed: pip install 'memlab[{extra}]'"


def test_memlab_itself_imports_no_framework():
    code = (
        "import sys, memlab, memlab.integrations.retriever, memlab.importers.qdrant, memlab.app.cli; "
        "print(sorted(m for m in ('langchain_core', 'llama_index', 'mem0') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
