#!/usr/bin/env python3
"""Runs the Python code blocks of a Markdown page in order, as one notebook would.

Every fenced block that starts with ```python runs in one shared namespace, in a scratch folder
(files the walk-through writes go there). A block that fails stops the run with its number, its
first line and the traceback: the docs may not show code that does not work. ctest runs this on
docs/python.md (python_docs_walkthrough).

  run_python_doc.py docs/python.md
"""
import os
import re
import sys
import tempfile
import traceback


def blocks(text):
    return [m.group(1) for m in re.finditer(r"^```python\n(.*?)^```", text, re.S | re.M)]


def main():
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    page = os.path.abspath(sys.argv[1])
    with open(page) as f:
        code = blocks(f.read())
    if not code:
        print(f"{page}: no ```python blocks", file=sys.stderr)
        return 1
    namespace = {"__name__": "__main__"}
    with tempfile.TemporaryDirectory() as scratch:
        os.chdir(scratch)
        for i, block in enumerate(code, 1):
            first = block.strip().splitlines()[0]
            print(f"--- block {i}/{len(code)}: {first}", flush=True)
            try:
                exec(compile(block, f"{page} block {i}", "exec"), namespace)
            except Exception:
                traceback.print_exc()
                print(f"{page}: block {i} ({first}) failed", file=sys.stderr)
                return 1
    print(f"{page}: {len(code)} blocks ran")
    return 0


if __name__ == "__main__":
    sys.exit(main())
