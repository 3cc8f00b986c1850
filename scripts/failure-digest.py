#!/usr/bin/env python3
"""Prints what each failed test of a libtest log said, in a few short lines.

    scripts/failure-digest.py target/test-logs/e2e-first.log

A failed test's message can be long (a host log, a Flink log): CI shows the end of the run's
output, so scripts/test.sh prints this digest there. For each `---- <test> stdout ----` block:
the panic's location and first lines, then the lines that name an error (ERROR, Exception,
Caused by, error:), each cut to 240 characters.
"""
import re
import sys

HEAD = 6  # lines of the panic message
ERRORS = 8  # lines naming an error, the last ones of the block
WIDTH = 240

ERROR_LINE = re.compile(r"\bERROR\b|Exception|Caused by|\berror:|\bError\b")


def cut(line: str) -> str:
    line = line.rstrip()
    return line if len(line) <= WIDTH else line[: WIDTH - 1] + "…"


def blocks(lines):
    name, body = None, []
    for line in lines:
        m = re.match(r"^---- (\S+) stdout ----$", line)
        if m:
            if name:
                yield name, body
            name, body = m.group(1), []
        elif name and line.rstrip() == "failures:":
            yield name, body
            name, body = None, []
        elif name:
            body.append(line)
    if name:
        yield name, body


def main() -> None:
    with open(sys.argv[1], errors="replace") as f:
        lines = f.read().splitlines()
    for name, body in blocks(lines):
        print(f"\n==> failed: {name}")
        start = next((i for i, l in enumerate(body) if "panicked at" in l), 0)
        head = [l for l in body[start : start + HEAD + 1] if l.strip()]
        errors = [l for l in body[start + HEAD + 1 :] if ERROR_LINE.search(l)][-ERRORS:]
        for line in head:
            print("  " + cut(line))
        if errors:
            print("  … lines naming an error:")
            for line in errors:
                print("  " + cut(line))


if __name__ == "__main__":
    main()
