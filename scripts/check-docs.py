#!/usr/bin/env python3
"""Checks the project's Markdown: every relative link names a file or directory that exists,
every #anchor names a heading (GitHub's rules) or an HTML id of the page it points to, and the
README stays a short page for newcomers.

    scripts/check-docs.py            # from anywhere; exits 1 with one line per broken link

External (http, https, mailto) links are not fetched: CI runs offline. Files under target/,
vendor/ and hidden directories, and text inside code blocks and code spans, are not checked.
"""

import os
import re
import sys
import unicodedata
from pathlib import Path
from urllib.parse import unquote

ROOT = Path(__file__).resolve().parent.parent
README_MAX_BYTES = 10 * 1024
SKIP_DIRS = {"target", "vendor", "node_modules"}

INLINE_LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
REFERENCE_DEF = re.compile(r"^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+\"[^\"]*\")?\s*$")
HEADING = re.compile(r"^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$")
HTML_ID = re.compile(r"<[^>]+\b(?:id|name)\s*=\s*\"([^\"]+)\"")
FENCE = re.compile(r"^\s{0,3}(```|~~~)")
CODE_SPAN = re.compile(r"(`+)(.+?)\1")


def markdown_files():
    for dirpath, dirnames, filenames in os.walk(ROOT):
        dirnames[:] = [d for d in dirnames if d not in SKIP_DIRS and not d.startswith(".")]
        for name in filenames:
            if name.endswith(".md"):
                yield Path(dirpath) / name


def outside_fences(text):
    """The lines outside fenced code blocks: (line number, text)."""
    fenced = None
    for number, line in enumerate(text.splitlines(), 1):
        fence = FENCE.match(line)
        if fence:
            if fenced is None:
                fenced = fence.group(1)
            elif fence.group(1) == fenced:
                fenced = None
            continue
        if fenced is None:
            yield number, line


def prose_lines(text):
    """The lines outside fenced code blocks, with code spans blanked; (line number, text)."""
    for number, line in outside_fences(text):
        yield number, CODE_SPAN.sub(lambda m: " " * len(m.group(0)), line)


def slug(heading):
    """GitHub's anchor for a heading: markup dropped, lowercase, punctuation dropped, spaces
    to hyphens."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # links keep their text
    text = re.sub(r"<[^>]+>", "", text)  # inline HTML
    text = text.replace("`", "").lower()
    kept = []
    for ch in text:
        category = unicodedata.category(ch)
        if ch in " -_" or category[0] in "LN" or category == "Mn":
            kept.append("-" if ch == " " else ch)
    return "".join(kept)


_anchors = {}


def anchors(path):
    if path not in _anchors:
        found, seen = set(), {}
        for _, line in outside_fences(path.read_text(encoding="utf-8")):
            heading = HEADING.match(line)
            if heading:
                base = slug(heading.group(2))
                n = seen.get(base, 0)
                seen[base] = n + 1
                found.add(base if n == 0 else f"{base}-{n}")
            found.update(HTML_ID.findall(line))
        _anchors[path] = found
    return _anchors[path]


def check(path):
    problems = []
    text = path.read_text(encoding="utf-8")
    shown = path.relative_to(ROOT)
    targets = []
    for number, line in prose_lines(text):
        targets += [(number, t) for t in INLINE_LINK.findall(line)]
        targets += [(number, t) for t in REFERENCE_DEF.findall(line)]
    for number, target in targets:
        if re.match(r"^[a-z][a-z0-9+.-]*:", target, re.I):  # http:, https:, mailto:
            continue
        file_part, _, anchor = target.partition("#")
        file_part = unquote(file_part)
        dest = path if not file_part else (path.parent / file_part).resolve()
        if not dest.exists():
            problems.append(f"{shown}:{number}: link to a missing file: {target}")
            continue
        try:
            dest.relative_to(ROOT)
        except ValueError:
            problems.append(f"{shown}:{number}: link outside the repository: {target}")
            continue
        if anchor and dest.is_file() and dest.suffix == ".md":
            if unquote(anchor) not in anchors(dest):
                problems.append(
                    f"{shown}:{number}: no heading or id '#{anchor}' in {dest.relative_to(ROOT)}"
                )
    return problems


def self_test():
    """The checker finds what it must: run first by scripts/test.sh, so a checker that
    silently passes everything fails CI."""
    import tempfile

    global ROOT
    saved = ROOT
    with tempfile.TemporaryDirectory() as tmp:
        ROOT = Path(tmp)
        (ROOT / "docs").mkdir()
        (ROOT / "docs" / "a.md").write_text(
            "# A page\n\n## The `--x` option, again!\n\n## The `--x` option, again!\n\n"
            "[ok](b.md#b-title) [ok](#the---x-option-again-1) [ok](../src)\n"
            "[missing](c.md) [bad anchor](b.md#nope)\n\n```\n[in code](nowhere.md)\n[code]: nowhere.md\n```\n"
            "`[span](nowhere.md)` [web](https://example.com/x)\n\n[ref]: b.md#nope-either\n",
            encoding="utf-8",
        )
        (ROOT / "docs" / "b.md").write_text("# B title\n", encoding="utf-8")
        (ROOT / "src").mkdir()
        found = check(ROOT / "docs" / "a.md")
    ROOT = saved
    _anchors.clear()
    expected = [
        "docs/a.md:8: link to a missing file: c.md",
        "docs/a.md:8: no heading or id '#nope' in docs/b.md",
        "docs/a.md:16: no heading or id '#nope-either' in docs/b.md",
    ]
    if found != expected:
        print(f"check-docs self-test failed: found {found}, expected {expected}")
        return 1
    return 0


def main():
    if self_test():
        return 1
    problems = []
    files = sorted(markdown_files())
    for path in files:
        problems += check(path)
    readme = ROOT / "README.md"
    size = readme.stat().st_size
    if size > README_MAX_BYTES:
        problems.append(
            f"README.md: {size} bytes, over {README_MAX_BYTES}: details belong in docs/"
        )
    for problem in problems:
        print(problem)
    print(f"checked {len(files)} Markdown files: {len(problems)} problems", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
