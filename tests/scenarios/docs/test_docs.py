"""The reference docs stay complete: every emitted key and every runs column is documented."""
from locations import ROOT

import agentobs
from agentobs.analysis.spans.schema import RUN_COLUMNS, markdown_table
from agentobs.contract import semconv as sc

DOCS = ROOT / "docs"


def test_every_attribute_and_metric_is_in_the_telemetry_reference():
    text = (DOCS / "telemetry.md").read_text()
    for key in sc.ATTRIBUTE_TYPES:
        assert f"`{key}`" in text, key
    for name in (sc.M_TOKEN_USAGE, sc.M_OPERATION_DURATION, sc.M_AGENT_DURATION, sc.M_AGENT_INFERENCE_CALLS,
                 sc.M_AGENT_TOOL_CALLS, sc.M_TOOL_DURATION, sc.M_RUNS, sc.M_RUN_TOKENS, sc.M_RUN_COST,
                 sc.M_BUDGET_UTILISATION):
        assert f"`{name}`" in text, name


def test_the_runs_columns_table_is_generated_from_the_schema():
    text = (DOCS / "analysis.md").read_text()
    assert markdown_table() in text, "regenerate it: python -m agentobs.analysis.spans.schema"
    for col in RUN_COLUMNS:
        assert f"`{col}`" in text, col


def test_the_roles_table_is_generated_from_the_dialect_tables():
    from agentobs.analysis.spans.dialects import REGISTRY
    from agentobs.analysis.spans.dialects._doc import markdown_table as roles_table
    text = (DOCS / "analysis.md").read_text()
    assert roles_table(REGISTRY) in text, "regenerate it: python -m agentobs.analysis.spans.dialects"


def test_the_columns_table_is_generated_without_a_warning():
    """``python -m agentobs.analysis.spans.schema`` printed runpy's RuntimeWarning (the package imported the module
    before it ran as __main__); the package now imports its names on first use."""
    import subprocess
    import sys
    done = subprocess.run([sys.executable, "-W", "error", "-m", "agentobs.analysis.spans.schema"], capture_output=True,
                          text=True, check=False)
    assert done.returncode == 0 and done.stderr == "", done.stderr
    assert done.stdout.strip() == markdown_table()


def test_every_way_to_the_backend_says_what_it_needs():
    """compose refuses to start without GF_ADMIN_PASSWORD, and the stack without Docker listens on 14318: the demo's
    closing hint and the README said `docker compose up -d` and 4318 alone; `make stack-up` printed no
    OTEL_EXPORTER_OTLP_ENDPOINT line."""
    import re

    from agentobs.cli.demo import BACKEND_HINT
    root = DOCS.parent
    assert "GF_ADMIN_PASSWORD=" in BACKEND_HINT and "http://127.0.0.1:4318" in BACKEND_HINT
    assert "make stack-up" in BACKEND_HINT and "http://127.0.0.1:14318" in BACKEND_HINT
    for text in ((root / "README.md").read_text(), (DOCS / "stack.md").read_text(), (DOCS / "limits.md").read_text()):
        for m in re.finditer(r"docker compose up -d", text):
            before = text[max(0, m.start() - 300):m.start()]
            assert "GF_ADMIN_PASSWORD" in before, text[m.start() - 120:m.end()]
    assert "14318" in (root / "README.md").read_text()
    stack = (root / "scripts" / "stack.sh").read_text()
    assert 'export OTEL_EXPORTER_OTLP_ENDPOINT=http://$CLIENT_HOST:$AGENTOBS_COLLECTOR_OTLP_HTTP_PORT' in stack


def test_public_surface_is_sorted_and_complete():
    assert agentobs.__all__ == sorted(agentobs.__all__)
    for name in agentobs.__all__:
        assert hasattr(agentobs, name), name
