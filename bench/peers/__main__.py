"""``python -m bench.peers [--quick] [--update]``: the peers benchmark through ``bench.run``."""
import sys

from ..run import main

sys.exit(main(["--only", "peers", *sys.argv[1:]]))
