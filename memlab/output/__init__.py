"""output"""

import sys

# jsonschema (imported by nbformat, which plotly's notebook renderer and papermill import) loads
# the optional `rfc3987_syntax` IRI checker, which builds a grammar at import: 1.1 s of every
# kernel's first figure. memlab validates no IRIs; marking it absent makes jsonschema skip it.
if "jsonschema" not in sys.modules:
    sys.modules.setdefault("rfc3987_syntax", None)
