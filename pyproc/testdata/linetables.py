"""Writes line-table fixtures for pyproc's decoder tests.

For every code object (functions, nested code) in a few stdlib modules and in
target.py, records the raw co_linetable, co_firstlineno and the ranges
CPython itself derives from the table (co_lines()), so the Go decoders can be
checked offset by offset against CPython. Run with each CPython:
    python3.X testdata/linetables.py > testdata/linetables/3.X.json
"""

import json
import sys
import types

import asyncio.base_events
import json.decoder
import threading

sys.path.insert(0, __file__.rsplit("/", 1)[0])
import target  # noqa: E402


def codes(obj, seen):
    for v in vars(obj).values():
        for c in _codes_of(v, seen):
            yield c


def _codes_of(v, seen):
    if isinstance(v, type) and id(v) not in seen:
        seen.add(id(v))
        yield from codes(v, seen)
    f = getattr(v, "__func__", v)
    f = getattr(f, "__wrapped__", f)
    code = getattr(f, "__code__", None)
    if isinstance(code, types.CodeType):
        yield from _walk(code)


def _walk(code):
    yield code
    for c in code.co_consts:
        if isinstance(c, types.CodeType):
            yield from _walk(c)


out = []
seen = set()
done = set()
for mod in (target, json.decoder, threading, asyncio.base_events):
    for code in codes(mod, seen):
        if id(code) in done:
            continue
        done.add(id(code))
        out.append({
            "name": code.co_name,
            "first": code.co_firstlineno,
            "table": code.co_linetable.hex(),
            "lines": [[s, e, -1 if l is None else l] for s, e, l in code.co_lines()],
        })
json.dump({"version": "%d.%d.%d" % sys.version_info[:3], "codes": out}, sys.stdout)
