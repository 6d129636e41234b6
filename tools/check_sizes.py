#!/usr/bin/python3
"""The size limits of docs/architecture.md ("Size limits"): no source file of sim/ or gui/ over
600 lines and no function over 80, tests and fuzz targets aside. Run by .ci/run; exits 1 naming
every file and function over its limit.

Functions are found by braces: a `{` that ends a line opening a parameter list's `)` (a function
or a lambda at the outermost level of its scope, a member defined in a class) starts one, its
matching `}` ends it; string and character literals and comments are skipped. A declaration
table (a visit() of parameters, a list of presets) is a function like any other.
"""
import os
import re
import sys

FILE_LIMIT = 600
FUNCTION_LIMIT = 80
ROOTS = ("sim", "gui")
CONTROL = re.compile(r"^\s*(if|for|while|switch|else|do|namespace|class|struct|enum|union|extern|"
                     r"try|catch)\b")
OPENS_FUNCTION = re.compile(r"\)\s*(const|override|noexcept|final|mutable|\s)*(->\s*[^{]+)?\{\s*$")


def code_of(line, in_comment):
    """The line without literals and comments; whether a block comment is still open."""
    out, i, n = [], 0, len(line)
    while i < n:
        if in_comment:
            end = line.find("*/", i)
            if end < 0:
                return "".join(out), True
            i, in_comment = end + 2, False
            continue
        c = line[i]
        if line.startswith("//", i):
            break
        if line.startswith("/*", i):
            in_comment, i = True, i + 2
            continue
        if c in "\"'":
            j = i + 1
            while j < n and line[j] != c:
                j += 2 if line[j] == "\\" else 1
            out.append(c + c)
            i = j + 1
            continue
        out.append(c)
        i += 1
    return "".join(out), in_comment


def long_functions(path, lines):
    found, depth, in_comment, raw = [], 0, False, False
    start = None  # (line index, depth inside it, signature)
    for k, line in enumerate(lines):
        # Raw string literals (R"( ... )") hold text, not code.
        if raw:
            if ')"' in line:
                raw = False
            continue
        if 'R"(' in line and ')"' not in line.split('R"(', 1)[1]:
            line = line.split('R"(', 1)[0] + '""'
            raw = True
        code, in_comment = code_of(line, in_comment)
        for pos, ch in enumerate(code):
            if ch == "{":
                depth += 1
                head = code[:pos + 1]
                if (start is None and OPENS_FUNCTION.search(head)
                        and not CONTROL.match(head)):
                    start = (k, depth, line.strip())
            elif ch == "}":
                if start is not None and depth == start[1]:
                    length = k - start[0] + 1
                    if length > FUNCTION_LIMIT:
                        found.append((length, path, start[0] + 1, start[2][:80]))
                    start = None
                depth -= 1
    return found


def main():
    root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
    bad_files, bad_functions, files = [], [], 0
    for top in ROOTS:
        for folder, _, names in os.walk(os.path.join(root, top)):
            for name in sorted(names):
                if not name.endswith((".cpp", ".h", ".cu", ".cuh")):
                    continue
                if name.endswith("_test.cpp") or "fuzz" in name:
                    continue
                path = os.path.join(folder, name)
                rel = os.path.relpath(path, root)
                lines = open(path, encoding="utf-8", errors="replace").read().split("\n")
                files += 1
                if len(lines) - 1 > FILE_LIMIT:
                    bad_files.append((len(lines) - 1, rel))
                bad_functions += long_functions(rel, lines)
    for n, rel in sorted(bad_files, reverse=True):
        print(f"check_sizes: {rel}: {n} lines (limit {FILE_LIMIT}): split it along its data")
    for n, rel, line, sig in sorted(bad_functions, reverse=True):
        print(f"check_sizes: {rel}:{line}: a function of {n} lines (limit {FUNCTION_LIMIT}): {sig}")
    if bad_files or bad_functions:
        return 1
    print(f"check_sizes: {files} source files of {', '.join(ROOTS)}: none over {FILE_LIMIT} lines, "
          f"no function over {FUNCTION_LIMIT}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
