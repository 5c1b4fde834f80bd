"""The README's pictures of the explorer: docs/explorer-overview.png and docs/explorer-run.png.

    .venv/bin/python scripts/explorer_screenshots.py

Simulates the demo's population (2,000 runs, seed 7), writes its page as ``agentobs report ... --out
report.html`` does, and photographs it in Debian's chromium (headless, driven by Playwright): the overview, and a
repeated-call run reached from its signature, its evidence highlighted. Needs the dev extra and chromium.
"""
from __future__ import annotations

import os
import shutil
import sys
import tempfile
from pathlib import Path

from click.testing import CliRunner

ROOT = Path(__file__).resolve().parent.parent
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--no-first-run"]


def main() -> None:
    from playwright.sync_api import sync_playwright

    from agentobs.cli.main import cli
    from agentobs.domain.population import simulate
    from agentobs.telemetry import configure

    chromium = "/usr/bin/chromium" if os.path.exists("/usr/bin/chromium") else shutil.which("chromium")
    if chromium is None:
        sys.exit("Debian's chromium is needed: apt-get install chromium")
    work = Path(tempfile.mkdtemp(prefix="explorer-shots-"))
    here = Path.cwd()
    os.chdir(work)                      # the page names its source as given: a relative name, no machine's path
    try:
        traces = Path("simulate-traces.jsonl")
        tel = configure(traces_out=traces)
        simulate(2000, seed=7, observers=lambda: [tel.observer()], start_ns=1_780_000_000 * 10**9)
        tel.shutdown()
        page = Path("report.html")
        res = CliRunner().invoke(cli, ["report", str(traces), "--out", str(page)])
        if res.exit_code != 0:
            sys.exit(res.output)
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=chromium, headless=True, args=FLAGS)
            tab = browser.new_page(viewport={"width": 1400, "height": 1000})
            tab.goto((work / page).as_uri())
            tab.wait_for_selector("body[data-ready]", state="attached", timeout=120_000)
            tab.screenshot(path=str(ROOT / "docs" / "explorer-overview.png"))
            tab.click("#view-overview a.signature-link:text-is('repeated_call')")
            tab.click("#signature-body a.example-run >> nth=0")
            tab.wait_for_selector('body[data-run="loaded"]', state="attached")
            tab.evaluate("document.querySelector('#run-body .evidence-box').scrollIntoView()")
            tab.screenshot(path=str(ROOT / "docs" / "explorer-run.png"))
            browser.close()
    finally:
        os.chdir(here)
        shutil.rmtree(work, ignore_errors=True)
    print("docs/explorer-overview.png, docs/explorer-run.png")


if __name__ == "__main__":
    main()
