"""What a test target reports about itself (imported by target.py and
busy.py): every thread's frames through sys._current_frames() -- function
(co_qualname on 3.11+, co_name before), file, line, innermost first --
with its ident, native id, threading name and whether it is the main
thread, written atomically as JSON."""

import json
import os
import sys
import threading


def frame_name(code):
    if sys.version_info >= (3, 11):
        return code.co_qualname
    return code.co_name


def write(path, skip=()):
    """Writes the view to path, leaving out the calling thread and the
    threads whose idents are in skip."""
    me = threading.get_ident()
    frames = sys._current_frames()
    by_ident = {t.ident: t for t in threading.enumerate()}
    out = []
    for ident, f in frames.items():
        if ident == me or ident in skip:
            continue
        t = by_ident.get(ident)
        stack = []
        while f is not None:
            stack.append({"func": frame_name(f.f_code), "file": f.f_code.co_filename, "line": f.f_lineno})
            f = f.f_back
        out.append({
            "ident": ident,
            "native_id": t.native_id if t else 0,
            "name": t.name if t else "",
            "main": t is threading.main_thread(),
            "frames": stack,
        })
    doc = {
        "pid": os.getpid(),
        "version": "%d.%d.%d" % sys.version_info[:3],
        "reporter_native_id": threading.get_native_id(),
        "threads": out,
    }
    tmp = path + ".tmp"
    with open(tmp, "w") as fh:
        json.dump(doc, fh, indent=1)
    os.rename(tmp, path)
