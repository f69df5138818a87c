#!/usr/bin/python3
"""Checks a report page as headless Chromium rendered it.

usage: check_page.py SCREENSHOT.png DOM.html [MAX_LOAD_MS]
Prints: the share of non-white pixels and the number of distinct colours of the
screenshot (a blank page has neither), then per section (by DOM id prefix) the
unit and leftover rows and the summary numbers, and the page's load time
(data-load-ms, navigation start to laid-out page). Exits 1 when the screenshot
is blank (under 1% non-white pixels or under 8 colours), or when the page
took longer than MAX_LOAD_MS to load.
"""
import re
import struct
import sys
import zlib

import numpy as np


def read_png(path):
    data = open(path, "rb").read()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, idat, width = 8, b"", 0
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            width, height, depth, ctype = struct.unpack(">IIBB", body[:10])
            assert depth == 8 and ctype in (2, 6), f"unsupported PNG (depth {depth}, type {ctype})"
            channels = 3 if ctype == 2 else 4
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    raw = zlib.decompress(idat)
    stride = width * channels
    img = np.zeros((height, stride), dtype=np.int32)
    prev = np.zeros(stride, dtype=np.int32)
    for y in range(height):
        f = raw[y * (stride + 1)]
        line = np.frombuffer(raw, dtype=np.uint8, count=stride, offset=y * (stride + 1) + 1).astype(np.int32)
        if f == 0:
            cur = line
        elif f == 2:
            cur = (line + prev) & 255
        else:  # 1 (sub), 3 (average), 4 (Paeth) depend on the pixel to the left
            cur = np.zeros(stride, dtype=np.int32)
            for x in range(stride):
                a = cur[x - channels] if x >= channels else 0
                b = prev[x]
                c = prev[x - channels] if x >= channels else 0
                if f == 1:
                    p = a
                elif f == 3:
                    p = (a + b) // 2
                else:
                    pa, pb, pc = abs(b - c), abs(a - c), abs(a + b - 2 * c)
                    p = a if pa <= pb and pa <= pc else (b if pb <= pc else c)
                cur[x] = (line[x] + p) & 255
        img[y] = cur
        prev = cur
    return img.reshape(height, width, channels)[:, :, :3]


def main():
    img = read_png(sys.argv[1])
    nonwhite = float(np.mean(np.any(img < 245, axis=2)))
    colours = len(np.unique(img.reshape(-1, 3), axis=0))
    print(f"screenshot: {nonwhite * 100:.1f}% non-white, {colours} colours")
    dom = open(sys.argv[2], encoding="utf-8").read()
    for sec in re.findall(r'<div class="section" id="([a-z]+)"', dom):
        body = dom.split(f'<div class="section" id="{sec}"', 1)[1].split('<div class="section"', 1)[0]
        units = len(re.findall(r'<tr class="unit"', body))
        left = len(re.findall(r'<tr class="leftover"', body))
        boxes = len(re.findall(r'<g id="[a-z]+_u[0-9]+" class="node unit', body))
        nums = dict(re.findall(rf'id="{sec}-([a-z_0-9]+)">([0-9.n/a%]+)<', body))
        print(f"{sec}: {units} unit rows, {left} leftover rows, {boxes} unit boxes drawn, "
              f"summary units={nums.get('units')} copies={nums.get('copies')} "
              f"leftovers={nums.get('leftovers')} requantizes={nums.get('requantizes')}")
    m = re.search(r'data-load-ms="([0-9]+)"', dom)
    print(f"load: {m.group(1) if m else '?'} ms")
    slow = len(sys.argv) > 3 and (not m or int(m.group(1)) > int(sys.argv[3]))
    if slow:
        print(f"page load over {sys.argv[3]} ms")
    return 0 if nonwhite > 0.01 and colours >= 8 and not slow else 1


if __name__ == "__main__":
    sys.exit(main())
