"""Writes binary junk (NULs, invalid UTF-8, a 2 MiB line without newline)
and a last line without a newline, then exits 0."""
import os, sys
out = sys.stdout.buffer
out.write(b"text line 1\n\x00\x01\x02\xff\xfe binary\n")
out.write(bytes(range(256)) * 8 + b"\n")
out.write(b"x" * (2 << 20))
out.write(b"\nlast line without newline")
out.flush()
