"""The ``kvfleet`` command for a pip install: runs the CLI binary installed in the package.

``pip install .`` builds the same ``kvfleet`` program as CMake and installs it inside the package
(``kvfleet/bin/kvfleet``); this console script hands it the command line unchanged, so that every
``kvfleet ...`` command of the docs works after ``pip install``. In a source build (the package
imported from ``build/python``) it runs ``build/bin/kvfleet`` beside it.
"""
from __future__ import annotations

import os
import sys
from typing import List, Optional


def binary() -> Optional[str]:
    """The kvfleet program this package came with, or None."""
    here = os.path.dirname(os.path.abspath(__file__))
    for candidate in (os.path.join(here, "bin", "kvfleet"),                    # pip install
                      os.path.join(here, "..", "..", "bin", "kvfleet")):       # build/python
        if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return os.path.normpath(candidate)
    return None


def main(argv: Optional[List[str]] = None) -> int:
    exe = binary()
    if exe is None:
        sys.stderr.write("kvfleet: error: the kvfleet program is not installed with this package "
                         "(reinstall with `pip install .` from a checkout)\n")
        return 2
    args = [exe] + (sys.argv[1:] if argv is None else list(argv))
    os.execv(exe, args)
    return 1  # not reached


if __name__ == "__main__":
    sys.exit(main())
