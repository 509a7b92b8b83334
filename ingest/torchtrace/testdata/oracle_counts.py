#!/usr/bin/env python3
"""Independent oracle for the parser's counts on the tlparse corpus.

Written separately from the Go scanner, following tlparse's src/lib.rs
(line regex, payload = following TAB lines, MD5 of the lines joined with
"\n") and the bringup.trace/v1 definitions. Regenerate the golden file with:

    python3 testdata/oracle_counts.py ../../../shared/corpus/tlparse-inputs > testdata/corpus_counts.json
"""
import hashlib, json, os, re, sys

GLOG = re.compile(r'^([VIWECD])(\d{2})(\d{2}) (\d{2}):(\d{2}):(\d{2})\.(\d{6}) (\d+) ([^\]]+):(\d+)\] (.*)$')
RESERVED = {"rank", "compiled_autograd_id", "frame_id", "frame_compile_id", "attempt", "severity",
            "timestamp", "pathname", "thread", "subgraph_name", "has_payload", "stack"}

def cid(env):
    ca, fr, fc, at = (env.get(k) for k in ("compiled_autograd_id", "frame_id", "frame_compile_id", "attempt"))
    if ca is None and fr is None and fc is None:
        return None
    p = lambda x: "-" if x is None else str(x)
    s = p(fr) + "/" + p(fc)
    if at:
        s += "_" + str(at)
    if ca is not None:
        s = "!" + str(ca) + "/" + s
    return s

def counts(path):
    with open(path, "rb") as f:
        lines = f.read().split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    lines = [l[:-1] if l.endswith(b"\r") else l for l in lines]
    c = dict(records=0, corrupted=0, payload_md5_mismatch=0, events={}, artifacts={}, compile_ids=[],
             compilation_metrics=0, failed=0, chromium_events=0, ranks=[], pids=[])
    i = 0
    while i < len(lines):
        raw = lines[i]
        i += 1
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            text = raw.decode("latin-1")
        m = GLOG.match(text)
        if not m:
            continue
        js = m.group(11)
        try:
            env = json.loads(js)
            if not isinstance(env, dict):
                raise ValueError
        except Exception:
            c["corrupted"] += 1
            if '"has_payload"' in js:
                while i < len(lines) and lines[i].startswith(b"\t"):
                    i += 1
            continue
        c["records"] += 1
        kinds = [k for k in env if k not in RESERVED]
        kind = kinds[0] if kinds else ("stack" if "stack" in env else "unknown")
        c["events"][kind] = c["events"].get(kind, 0) + 1
        if kind == "artifact" and isinstance(env[kind], dict) and env[kind].get("name"):
            n = env[kind]["name"]
            c["artifacts"][n] = c["artifacts"].get(n, 0) + 1
        ident = cid(env)
        if ident is not None and ident not in c["compile_ids"]:
            c["compile_ids"].append(ident)
        if isinstance(env.get("rank"), int) and env["rank"] not in c["ranks"]:
            c["ranks"].append(env["rank"])
        pid = int(m.group(8))
        if pid not in c["pids"]:
            c["pids"].append(pid)
        if kind == "compilation_metrics":
            c["compilation_metrics"] += 1
            if isinstance(env[kind], dict) and env[kind].get("fail_type"):
                c["failed"] += 1
        if kind == "chromium_event":
            c["chromium_events"] += 1
        if "has_payload" in env:
            payload = []
            while i < len(lines) and lines[i].startswith(b"\t"):
                payload.append(lines[i][1:])
                i += 1
            if hashlib.md5(b"\n".join(payload)).hexdigest() != env["has_payload"]:
                c["payload_md5_mismatch"] += 1
    return c

def main(root):
    out = {}
    for dirpath, _, files in os.walk(root):
        for name in sorted(files):
            if name.endswith((".log", ".txt")):
                p = os.path.join(dirpath, name)
                out[os.path.relpath(p, root)] = counts(p)
    json.dump(out, sys.stdout, indent=1, sort_keys=True)
    print()

if __name__ == "__main__":
    main(sys.argv[1])
