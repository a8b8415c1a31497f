#!/usr/bin/env python3
"""Reads an 8-bit RGB or RGBA PNG with zlib alone (no imaging library on the test machine), to
tell a rendered page from a blank one: its distinct colours and mean brightness.

    python3 tests/browser/png.py FILE    prints the distinct colours (every other pixel of
                                         every other row)
"""

import struct
import sys
import zlib


def png_stats(path):
    """Distinct colours (every other pixel) and mean brightness (0..255) of an 8-bit PNG."""
    data = open(path, "rb").read()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, idat, w = 8, b"", 0
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        if kind == b"IHDR":
            w, h, depth, ctype = struct.unpack(">IIBB", body[:10])
            assert depth == 8 and ctype in (2, 6), (depth, ctype)
            bpp = 3 if ctype == 2 else 4
        elif kind == b"IDAT":
            idat += body
        pos += 12 + n
    raw, stride, prev = zlib.decompress(idat), w * bpp, bytearray(w * bpp)
    colours, total, count = set(), 0, 0
    for y in range(h):
        f = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b, c = prev[i], prev[i - bpp] if i >= bpp else 0
            if f == 1:
                line[i] = (line[i] + a) & 255
            elif f == 2:
                line[i] = (line[i] + b) & 255
            elif f == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        if y % 2 == 0:
            for i in range(0, stride, bpp * 2):
                colours.add(bytes(line[i:i + 3]))
                total += line[i] + line[i + 1] + line[i + 2]
                count += 3
        prev = line
    return len(colours), total / max(count, 1)


if __name__ == "__main__":
    print(png_stats(sys.argv[1])[0])
