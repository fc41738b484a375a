#!/usr/bin/env python3
"""pngcolors.py PNG HEX... : for each colour, how many pixels of the PNG are
within 12 per channel of it, one count per line. The name "orangish" counts
pixels of an orange hue, pale or blended (red well above blue, green between):
marks narrower than a pixel are drawn blended, never in their exact colour. Standard library only:
decodes 8-bit RGB/RGBA non-interlaced PNGs (what a headless browser's
screenshot is); anything else is an error (exit 2)."""
import struct
import sys
import zlib


def pixels(path):
    with open(path, "rb") as f:
        data = f.read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        sys.exit("%s: not a PNG" % path)
    pos, idat, hdr = 8, b"", None
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        if kind == b"IHDR":
            hdr = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat += body
        pos += 12 + n
    w, h, depth, ctype, _, _, interlace = hdr
    if depth != 8 or ctype not in (2, 6) or interlace:
        print("%s: unsupported PNG (depth %d, colour type %d, interlace %d)" % (path, depth, ctype, interlace),
              file=sys.stderr)
        sys.exit(2)
    bpp = 3 if ctype == 2 else 4
    raw = zlib.decompress(idat)
    stride = w * bpp
    prev = bytearray(stride)
    out = []
    for y in range(h):
        ft = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b = prev[i]
            c = prev[i - bpp] if i >= bpp else 0
            if ft == 1:
                line[i] = (line[i] + a) & 255
            elif ft == 2:
                line[i] = (line[i] + b) & 255
            elif ft == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif ft == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        out.append(bytes(line))
        prev = line
    return w, h, bpp, out


def main():
    w, h, bpp, rows = pixels(sys.argv[1])
    want = [None if x == "orangish" else tuple(int(x.lstrip("#")[k:k + 2], 16) for k in (0, 2, 4))
            for x in sys.argv[2:]]
    # count each distinct colour once, then match the few thousand there are
    seen = {}
    for row in rows:
        for i in range(0, w * bpp, bpp):
            px = row[i:i + 3]
            seen[px] = seen.get(px, 0) + 1
    counts = [0] * len(want)
    for px, n in seen.items():
        r, g, b = px[0], px[1], px[2]
        for k, c in enumerate(want):
            if c is None:
                if r - b > 40 and b + 15 < g < r - 15:
                    counts[k] += n
            elif abs(r - c[0]) <= 12 and abs(g - c[1]) <= 12 and abs(b - c[2]) <= 12:
                counts[k] += n
    for c in counts:
        print(c)


if __name__ == "__main__":
    main()
