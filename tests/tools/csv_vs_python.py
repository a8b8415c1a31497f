#!/usr/bin/env python3
"""Holds the project's CSV reader and number parsing to Python's csv module and float()/int().

1. Random CSV texts (quoted cells with commas, doubled quotes and line breaks, text after a
   closing quote, stray quotes inside plain cells, CR LF / LF / CR line ends, blank lines, a
   missing last line end) and csv.writer output of hostile strings are written to files and
   read by `csv_records --batch` (one process, "PIECES FILE" per line) for 1, 2, 3 and 7 pieces: the records (cells, start
   line, whether the record had a line end) must equal what csv.reader returns. With more
   than one piece the ranges must either join to the same records or say they do not (the
   report then reads the file again in one piece).
2. `cell_bits` prints how every cell of tests/tools/number_cells.hpp parses: each must be the
   double float() gives, bit for bit, or refused where float() refuses (int() likewise).

Usage: csv_vs_python.py CSV_RECORDS CELL_BITS
"""
import csv
import io
import json
import os
import random
import struct
import subprocess
import sys
import tempfile

PIECES = [
    "1789416029.2655346", "94.29", "", "node-a", '"quoted, cell"', '"a ""b"" c"',
    '"two\nlines"', '"cr\rinside"', '"crlf\r\ninside"', 'x"y', "acpi", "CPU Power Socket 0",
    "0123456789abcdef0123456789", '""', " ", '"tail"x', "\xe9t\xe9", "\x1b[31m", "\xff\xfe",
]
ENDS = ["\r\n", "\n", "\n\n", "\r", "\r\n\r\n"]


def random_text(rng, pieces=PIECES, rows=40, ends=ENDS):
    out = []
    for _ in range(rng.randint(1, rows)):
        cells = [rng.choice(pieces) for _ in range(rng.randint(0, 13))]
        out.append(",".join(cells) + rng.choice(ends))
    text = "".join(out)
    if rng.random() < 0.3:
        text = text.rstrip("\r\n")
    return text


def writer_text(rng):
    buf = io.StringIO()
    w = csv.writer(buf)  # the default dialect, as the collectors write
    for _ in range(rng.randint(1, 30)):
        row = []
        for _ in range(rng.randint(1, 12)):
            n = rng.randint(0, 12)
            row.append("".join(rng.choice(',"\r\n ab\x1b\xe9\xff0.9') for _ in range(n)))
        w.writerow(row)
    return buf.getvalue()


def python_records(text):
    """(start line, cells, terminated) as csv.reader sees the text, blank lines skipped."""
    reader = csv.reader(io.StringIO(text, newline=""))
    out = []
    prev = 0
    while True:
        try:
            row = next(reader)
        except StopIteration:
            break
        if row:
            out.append((prev + 1, row))
        prev = reader.line_num
    result = []
    for i, (line, row) in enumerate(out):
        last = i == len(out) - 1
        terminated = not last or text.endswith(("\n", "\r"))
        result.append({"line": line, "cells": row, "terminated": terminated})
    return result


def parse_answer(lines):
    records, damage, meet = [], [], None
    for line in lines:
        obj = json.loads(line)
        if "cells" in obj:
            records.append(obj)
        elif "damage" in obj:
            damage.append(obj)
        else:
            meet = obj["ranges_meet"]
    return records, damage, meet


def ours(tool, requests):
    """(records, damage, ranges_meet) for each (path, pieces), from one `csv_records --batch`
    process: a sanitized build starts once, not once a read."""
    stdin = "".join("%d %s\n" % (pieces, path) for path, pieces in requests)
    proc = subprocess.run([tool, "--batch"], input=stdin.encode(), capture_output=True,
                          check=True)
    answers, current = [], []
    for line in proc.stdout.decode("ascii").splitlines():
        if line == '{"end": true}':
            answers.append(parse_answer(current))
            current = []
        else:
            current.append(line)
    assert len(answers) == len(requests), (len(answers), len(requests))
    return answers


def check_csv(tool, work):
    rng = random.Random(20261201)
    plain = [p for p in PIECES if '"' not in p]
    texts = ([random_text(rng) for _ in range(200)] + [writer_text(rng) for _ in range(100)] +
             [random_text(rng, plain, 400, ["\r\n", "\n", "\n\n"]) for _ in range(60)])
    failures = 0
    split_checked = 0
    paths, wants = [], []
    for n, text in enumerate(texts):
        path = os.path.join(work, "t%d.csv" % n)
        with open(path, "wb") as f:
            f.write(text.encode("latin-1"))
        paths.append(path)
        wants.append(python_records(text))
    splits = []
    for n, (whole, damage, _) in enumerate(ours(tool, [(p, 1) for p in paths])):
        if damage or whole != wants[n]:
            failures += 1
            if failures <= 3:
                print("MISMATCH on text %d %r\n ours:   %r\n python: %r\n damage: %r"
                      % (n, texts[n], whole, wants[n], damage))
            continue
        # Texts with quotes are read again in one piece by the loader; one split of them
        # checks that the ranges say so (or join correctly), the others get three.
        splits += [(n, pieces) for pieces in ((3,) if '"' in texts[n] else (2, 3, 7))]
    answers = ours(tool, [(paths[n], pieces) for n, pieces in splits])
    for (n, pieces), (records, _, meet) in zip(splits, answers):
        if meet:
            split_checked += 1
            if records != wants[n]:
                failures += 1
                print("RANGES MISMATCH on text %d in %d pieces: %r" % (n, pieces, texts[n]))
    print("csv: %d texts, %d multi-range reads that joined, %d failures"
          % (len(texts), split_checked, failures))
    return failures


def check_numbers(tool):
    proc = subprocess.run([tool], capture_output=True, check=True)
    failures = 0
    checked = 0
    for line in proc.stdout.decode("ascii").splitlines():
        bits, as_int, escaped = line.split(" ", 2)
        cell = escaped.encode("ascii").decode("unicode_escape")
        if "_" in cell or any(ord(c) > 127 for c in cell):
            continue  # float() also takes digit separators and Unicode digits and blanks
        try:
            want = "%016x" % struct.unpack("<Q", struct.pack("<d", float(cell)))[0]
        except ValueError:
            want = "none"
        try:
            want_int = str(int(cell))
            if not -2**63 <= int(cell) < 2**63:
                want_int = "none"
        except ValueError:
            want_int = "none"
        checked += 1
        if bits != want or as_int != want_int:
            failures += 1
            print("NUMBER MISMATCH %r: ours %s %s, python %s %s"
                  % (cell, bits, as_int, want, want_int))
    print("numbers: %d cells, %d failures" % (checked, failures))
    return failures


def main():
    with tempfile.TemporaryDirectory() as work:
        failures = check_csv(sys.argv[1], work) + check_numbers(sys.argv[2])
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
