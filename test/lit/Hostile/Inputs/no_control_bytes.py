"""Reads stdin; fails naming the first control byte (ESC, CR, BEL, or any
other but the line feed and tab) and the line it is on. A name printed raw
would put one there; printed escaped it reads \\x1b, \\x0d, \\n."""
import sys

data = sys.stdin.buffer.read()
for i, b in enumerate(data):
    if b < 0x20 and b not in (0x0A, 0x09) or b == 0x7F:
        line = data.count(b"\n", 0, i) + 1
        sys.exit(f"control byte 0x{b:02x} on line {line}")
if b"\nqopt: error: forged" in data or data.startswith(b"qopt: error: forged"):
    sys.exit("a forged error line")
print(f"{len(data)} bytes, no control bytes")
