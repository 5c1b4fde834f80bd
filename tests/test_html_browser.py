"""The HTML report in a real headless Chromium: the page loads and every plot is rendered."""
import re
import shutil
import subprocess

import pytest
from click.testing import CliRunner

from agentobs.analysis.html import PLOTS
from agentobs.cli.main import cli
from agentobs.domain.population import simulate
from agentobs.telemetry import configure

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
pytestmark = pytest.mark.browser


@pytest.mark.skipif(CHROMIUM is None, reason="Chromium is installed by scripts/test.sh (Debian package chromium)")
def test_every_plot_renders_in_headless_chromium(tmp_path):
    traces = tmp_path / "t.jsonl"
    tel = configure(traces_out=traces)
    simulate(400, seed=3, observers=lambda: [tel.observer()])
    tel.shutdown()
    page = tmp_path / "report.html"
    res = CliRunner().invoke(cli, ["report", str(traces), "--format", "html", "--out", str(page)])
    assert res.exit_code == 0, res.output
    flags = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
             "--disable-background-networking", "--disable-component-update", "--disable-sync",
             f"--user-data-dir={tmp_path / 'profile'}", "--virtual-time-budget=5000"]
    dom = subprocess.run([CHROMIUM, *flags, "--dump-dom", page.as_uri()], capture_output=True, text=True,
                         timeout=120).stdout
    plots = re.search(r'data-plots="(\d+)"', dom)
    rendered = re.search(r'data-plots-rendered="(\d+)"', dom)
    assert plots and rendered, dom[:500]
    assert int(plots.group(1)) == len(PLOTS) == int(rendered.group(1))
    for name in PLOTS:
        assert f'id="plot-{name}"' in dom
    shot = tmp_path / "report.png"
    subprocess.run([CHROMIUM, *flags, "--window-size=1280,2400", f"--screenshot={shot}", page.as_uri()],
                   capture_output=True, timeout=120)
    assert shot.exists() and shot.stat().st_size > 50_000
