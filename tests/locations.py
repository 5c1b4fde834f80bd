"""Where the repository and the tests folder are, for a test in any folder under tests/ (conftest.py puts tests/ on
sys.path): ``ROOT / "docs"``, ``TESTS / "data"``, ``TESTS / "dialects" / "fixtures"``, whatever the test's own depth."""
from pathlib import Path

TESTS = Path(__file__).resolve().parent
ROOT = TESTS.parent
