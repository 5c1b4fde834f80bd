"""Where the repository and the tests folder are, for a test in any folder under tests/ (conftest.py puts tests/ on
sys.path): ``ROOT / "docs"``, ``TESTS / "data"``, ``TESTS / "dialects" / "fixtures"``, whatever the test's own depth."""
import os
from pathlib import Path

TESTS = Path(__file__).resolve().parent
ROOT = TESTS.parent


def _shared() -> Path:
    """The project's shared folder (published runs in ``data/``, the seeds): ``AGENTOBS_SHARED`` when set, else the
    nearest ``shared`` folder beside the checkout or beside one of its parents (a clone may sit deeper than ours)."""
    named = os.environ.get("AGENTOBS_SHARED")
    if named:
        return Path(named)
    for folder in ROOT.parents:
        if (folder / "shared" / "data").is_dir():
            return folder / "shared"
    return ROOT.parent / "shared"


SHARED = _shared()
TAU2 = SHARED / "data" / "tau2"
