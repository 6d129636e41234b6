#!/usr/bin/env python3
"""The docs' chart images are what kvfleet draws today: docs/tools/make_images.sh redraws them into a
scratch folder with the commands the docs show, and each must be a PNG (by its bytes, not its
name) of the size of the committed one in docs/img, which must be a PNG too. Run by ctest as
docs_images (needs kvfleet built with Qt6 Charts); no third-party Python module.

  docs_images.py --kvfleet build/bin/kvfleet --source . --out build/docs-images
"""
import argparse
import os
import struct
import subprocess
import sys

PNG = b"\x89PNG\r\n\x1a\n"


def png_size(path):
    with open(path, "rb") as f:
        head = f.read(24)
    if len(head) < 24 or head[:8] != PNG or head[12:16] != b"IHDR":
        return None
    return struct.unpack(">II", head[16:24])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kvfleet", required=True)
    ap.add_argument("--source", required=True)
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    subprocess.run([os.path.join(a.source, "docs", "tools", "make_images.sh"), a.kvfleet, a.out],
                   check=True)
    made = sorted(f for f in os.listdir(a.out) if f.endswith(".png"))
    problems = []
    if len(made) < 4:
        problems.append(f"make_images.sh drew {len(made)} images, expected at least 4: {made}")
    for name in made:
        new = png_size(os.path.join(a.out, name))
        committed = os.path.join(a.source, "docs", "img", name)
        old = png_size(committed) if os.path.exists(committed) else None
        if new is None:
            problems.append(f"{name}: drawn, but not a PNG")
        elif old is None:
            problems.append(f"docs/img/{name}: missing or not a PNG (run docs/tools/make_images.sh)")
        elif new != old:
            problems.append(f"{name}: drawn {new[0]}x{new[1]}, docs/img has {old[0]}x{old[1]}")
        else:
            print(f"docs_images: {name}: PNG {new[0]}x{new[1]}")
    for p in problems:
        print("docs_images: " + p, file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
