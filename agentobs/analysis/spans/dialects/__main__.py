"""``python -m agentobs.analysis.spans.dialects``: the roles table of docs/analysis.md."""
from . import REGISTRY
from ._doc import markdown_table

print(markdown_table(REGISTRY))
