# bringup probe, main part: loaded by the sitecustomize.py that bringup
# injects into a boot (`bringup probe`, later `bringup watch --probe`),
# compiled once per Python version and kept as marshalled code beside this
# file. It records, once per exception object, the exceptions the Go side
# selected (BRINGUP_PROBE), where they are raised (3.12+: sys.monitoring
# RAISE) and where they are reported (uncaught at exit, threading.excepthook,
# logging records with exc_info, traceback.print_exception and
# format_exception), and writes one JSON document per process (schema
# bringup.probe/v1) into the output directory.
#
# Rules this file keeps: it prints nothing, it never changes what the boot
# does (every hook calls through, every internal error is swallowed and
# noted in the report), it imports nothing at start-up that CPython has not
# already imported (dis and re only on the first match), and it holds hard
# caps on records, bytes and time. The Go package probe owns the spec
# grammar, the caps' values and the reading of what is written here.

import os as _os
import sys as _sys


def install(cfg_text):
    """Installs the probe for the configuration cfg_text (BRINGUP_PROBE) and
    returns finish(chained_origin, chained_error), which the loader calls
    once it has run the sitecustomize this probe shadows."""
    import atexit
    import time
    from _thread import get_ident

    cfg = {}
    lists = {"knob": [], "redact": [], "sel": []}
    for line in cfg_text.split("\n"):
        k, _, v = line.partition("=")
        if k == "sel":
            t, _, rx = v.partition(":")
            lists["sel"].append([t, rx or None, None])
        elif k in lists:
            lists[k].append(v)
        elif k:
            cfg[k] = v

    def cap(name, default):
        try:
            return max(0, int(cfg.get(name, default)))
        except ValueError:
            return default

    out = cfg.get("out", "")
    MAX_RECORDS = cap("max_records", 16)
    MAX_FRAMES = cap("max_frames", 64)
    MAX_EVENT_S = cap("max_event_ms", 50) / 1000.0
    MAX_TOTAL_S = cap("max_total_ms", 2000) / 1000.0
    MAX_BYTES = cap("max_bytes", 262144)
    MAX_ITEMS = cap("max_items", 32)
    MAX_STR = cap("max_str", 500)
    sels = lists["sel"]
    knobs = lists["knob"]
    redact = [r.upper() for r in lists["redact"] if r]
    raise_sels = [s for s in sels if s[0] != "any" or s[1] is not None]
    V = _sys.version_info[:2]
    stdlib = _os.path.dirname(_os.__file__) + _os.sep

    def in_stdlib(fn):
        # importlib, os.environ.get and the like raise and catch KeyError
        # all the time: a raise in the standard library (not in a
        # site-packages below it) is not recorded where it is raised.
        if fn.startswith("<frozen "):
            return True
        return fn.startswith(stdlib) and "-packages" + _os.sep not in fn[len(stdlib):]

    st = {}

    def reset(forked_from):
        st.update(
            pid=_os.getpid(),
            stamp="%x" % time.time_ns(),
            records=[],
            n_raise=0,
            n_report=0,
            matched=0,
            skipped_stdlib=0,
            dropped_cap=0,
            dropped_time=0,
            dropped_filter_error=0,
            errors=[],
            seen={},
            spent=0.0,
            disabled="",
            dirty=False,
            last_write=0.0,
            forked_from=forked_from,
            busy=0,
            follow={},
        )

    reset(None)
    hooks, not_hooked = [], []
    raise_types, report_types, stdlib_files = {}, {}, {}
    dis_cache = {}
    chained = [None]

    # ---- output -------------------------------------------------------

    esc = {i: "\\u%04x" % i for i in range(32)}
    esc.update({ord('"'): '\\"', ord("\\"): "\\\\", 8: "\\b", 9: "\\t", 10: "\\n", 12: "\\f", 13: "\\r"})
    esc_sur = [None]

    def jstr(s):
        s = s.translate(esc)
        try:
            s.encode("utf-8")
        except UnicodeEncodeError:
            if esc_sur[0] is None:
                esc_sur[0] = {i: "\\u%04x" % i for i in range(0xD800, 0xE000)}
            s = s.translate(esc_sur[0])
        return '"' + s + '"'

    def enc(o, parts):
        if o is None:
            parts.append("null")
        elif o is True:
            parts.append("true")
        elif o is False:
            parts.append("false")
        elif isinstance(o, str):
            parts.append(jstr(o))
        elif isinstance(o, int):
            parts.append(str(int(o)))
        elif isinstance(o, float):
            parts.append(repr(o) if o == o and o not in (float("inf"), float("-inf")) else "null")
        elif isinstance(o, dict):
            parts.append("{")
            first = True
            for k, v in o.items():
                if not first:
                    parts.append(",")
                first = False
                parts.append(jstr(str(k)))
                parts.append(":")
                enc(v, parts)
            parts.append("}")
        elif isinstance(o, (list, tuple)):
            parts.append("[")
            for i, v in enumerate(o):
                if i:
                    parts.append(",")
                enc(v, parts)
            parts.append("]")
        else:
            parts.append(jstr(short(o)))

    def dumps(o):
        parts = []
        enc(o, parts)
        return "".join(parts).encode("utf-8", "surrogatepass")

    def write(name, data):
        # Atomic: a temporary file created exclusively (no link followed)
        # beside the target, then renamed over it; relative to a directory
        # opened without following a link.
        dfd = _os.open(out, _os.O_RDONLY | _os.O_DIRECTORY | getattr(_os, "O_NOFOLLOW", 0) | getattr(_os, "O_CLOEXEC", 0))
        try:
            tmp = ".%s.%d.%d.tmp" % (name, _os.getpid(), get_ident())
            flags = _os.O_WRONLY | _os.O_CREAT | _os.O_EXCL | getattr(_os, "O_NOFOLLOW", 0) | getattr(_os, "O_CLOEXEC", 0)
            try:
                fd = _os.open(tmp, flags, 0o644, dir_fd=dfd)
            except FileExistsError:
                _os.unlink(tmp, dir_fd=dfd)
                fd = _os.open(tmp, flags, 0o644, dir_fd=dfd)
            try:
                view = memoryview(data)
                while view:
                    n = _os.write(fd, view)
                    view = view[n:]
            finally:
                _os.close(fd)
            _os.replace(tmp, name, src_dir_fd=dfd, dst_dir_fd=dfd)
        finally:
            _os.close(dfd)

    def note(where, e):
        errs = st["errors"]
        if len(errs) < 8:
            errs.append("%s: %s: %s" % (where, type(e).__name__, short(_str(e), 300)))
        st["dirty"] = True

    def short(o, n=None):
        n = MAX_STR if n is None else n
        try:
            s = o if isinstance(o, str) else repr(o)
        except Exception as e:
            s = "<repr failed: %s>" % type(e).__name__
        if len(s) > n:
            s = s[:n] + "..."
        return s

    def process_doc(kind):
        flags = {}
        for f in ("isolated", "ignore_environment", "no_site", "no_user_site", "safe_path", "optimize", "dont_write_bytecode"):
            if hasattr(_sys.flags, f):
                flags[f] = int(getattr(_sys.flags, f))
        doc = {
            "schema": "bringup.probe/v1",
            "kind": kind,
            "pid": st["pid"],
            "ppid": _os.getppid(),
            "stamp": st["stamp"],
            "python": "%d.%d.%d" % _sys.version_info[:3],
            "implementation": _sys.implementation.name,
            "executable": _sys.executable,
            "argv": [short(a) for a in getattr(_sys, "orig_argv", _sys.argv)[:MAX_ITEMS]],
            "flags": flags,
            "spec": cfg.get("spec", ""),
            "hooks": list(hooks),
            "not_hooked": list(not_hooked),
            "chained": chained[0],
        }
        if st["forked_from"] is not None:
            doc["forked_from"] = st["forked_from"]
        return doc

    def env_knobs():
        env = {}
        for k, v in _os.environ.items():
            for pat in knobs:
                if (pat.endswith("*") and k.startswith(pat[:-1])) or k == pat:
                    ku = k.upper()
                    env[k] = "<redacted>" if any(r in ku for r in redact) else short(v)
                    break
            if len(env) >= 4 * MAX_ITEMS:
                break
        return env

    def write_marker():
        try:
            write("loaded-%d-%s.json" % (st["pid"], st["stamp"]), dumps(process_doc("loaded")))
        except Exception as e:
            note("marker", e)

    def write_report(final=False):
        if st["busy"] == get_ident():
            return
        st["busy"] = get_ident()
        try:
            doc = process_doc("report")
            doc["written_at"] = "exit" if final or st.get("exiting") else "record"
            tm = _sys.modules.get("torch")
            if tm is not None:
                doc["torch"] = short(getattr(tm, "__version__", ""), 80)
            doc["env"] = env_knobs()
            doc["counts"] = {
                "matched": st["matched"],
                "recorded": len(st["records"]),
                "recorded_at_raise": st["n_raise"],
                "recorded_at_report": st["n_report"],
                "skipped_stdlib": st["skipped_stdlib"],
                "dropped_cap": st["dropped_cap"],
                "dropped_time": st["dropped_time"],
                "dropped_filter_error": st["dropped_filter_error"],
            }
            doc["spent_ms"] = round(st["spent"] * 1000, 3)
            if st["disabled"]:
                doc["disabled"] = st["disabled"]
            doc["errors"] = list(st["errors"])
            doc["records"] = list(st["records"])
            data = dumps(doc)
            # Over the byte cap: keep every record's origin, shorten stacks.
            keep = 16
            while len(data) > MAX_BYTES and keep >= 1:
                for r in doc["records"]:
                    s = r.get("stack") or []
                    if len(s) > keep:
                        r["stack"] = s[-keep:]
                        r["stack_truncated"] = True
                    for fr in r.get("stack") or []:
                        fr.pop("self", None)
                    r.pop("dynamo_user_stack", None)
                data = dumps(doc)
                keep //= 2
            if len(data) > MAX_BYTES:
                doc["records"] = doc["records"][:1]
                doc["errors"].append("report over %d bytes: records after the first dropped" % MAX_BYTES)
                data = dumps(doc)
            write("probe-%d-%s.json" % (st["pid"], st["stamp"]), data)
            st["dirty"] = False
            st["last_write"] = time.monotonic()
        except Exception as e:
            note("write", e)
        finally:
            st["busy"] = 0

    # ---- matching -----------------------------------------------------

    def type_names(t):
        names = set()
        for k in getattr(t, "__mro__", ()):
            n = getattr(k, "__name__", "")
            names.add(n)
            names.add("%s.%s" % (getattr(k, "__module__", ""), getattr(k, "__qualname__", n)))
        return names

    def classify(t, pool, cache):
        # The selectors that apply to type t: by the name of t or a base
        # class, plain or module-qualified; Dynamo's stand-in Observed<T>
        # counts as T. Cached per type (bounded).
        # The entry is () for no selector, else (selectors, any without a
        # message regex).
        names = type_names(t)
        m = [s for s in pool if s[0] == "any" or s[0] in names or ("Observed" + s[0]) in names]
        if len(cache) > 4096:
            cache.clear()
        e = (m, any(s[1] is None for s in m)) if m else ()
        cache[t] = e
        return e

    def message_ok(exc, entry):
        if entry[1]:
            return True
        try:
            text = str(exc)
        except Exception:
            text = ""
        for s in entry[0]:
            if s[2] is None:
                import re

                s[2] = re.compile(s[1])
            if s[2].search(text):
                return True
        return False

    # ---- decoding -----------------------------------------------------

    def instrs(code):
        got = dis_cache.get(code)
        if got is None:
            import dis

            ins = list(dis.get_instructions(code))
            got = (ins, [i.offset for i in ins])
            if len(dis_cache) > 512:
                dis_cache.clear()
            dis_cache[code] = got
        return got

    def line_of(code, offset):
        try:
            for a, b, ln in code.co_lines():
                if a <= offset < b:
                    return ln
        except Exception:
            pass
        return None

    def find_index(offsets, lasti):
        import bisect

        i = bisect.bisect_right(offsets, lasti) - 1
        return max(i, 0)

    def position_kind(ins):
        return kind_of(getattr(ins, "positions", None))

    def kind_of(pos):
        if pos is None:
            return "lines-only"
        if pos[0] is None:
            return "none"
        if pos[2] is None:
            return "no-columns"
        return "full"

    def cheap(code, lasti):
        # The instruction at lasti without decoding the whole code object
        # (outer frames: a CALL, mostly): its opcode from co_code (which
        # holds the unspecialised instructions) and its position from
        # co_positions.
        import dis
        from itertools import islice

        b = code.co_code
        name = dis.opname[b[lasti]] if 0 <= lasti < len(b) else "?"
        pos = None
        if hasattr(code, "co_positions"):
            pos = next(islice(code.co_positions(), lasti // 2, None), (None, None, None, None))
        return name, kind_of(pos)

    def frame_info(code, lasti, lineno, full):
        co_name = code.co_name
        fi = {
            "file": short(code.co_filename),
            "function": short(getattr(code, "co_qualname", co_name)),
            "name": short(co_name),
            "firstlineno": code.co_firstlineno,
            "line": lineno,
            "offset": lasti,
        }
        ins, k = None, None
        try:
            if full:
                ins, offsets = instrs(code)
                if not ins:
                    return fi, None, None
                k = find_index(offsets, lasti)
                cur = ins[k]
                fi["instruction"] = (cur.opname + " " + short(cur.argrepr, 120)).strip()
                pk = position_kind(cur)
                first = k == 0
            else:
                fi["instruction"], pk = cheap(code, lasti)
                first = lasti == 0
        except Exception as e:
            note("dis", e)
            return fi, None, None
        fi["position"] = pk
        def_line = lineno is not None and lineno == code.co_firstlineno and not first
        fi["def_line"] = def_line
        why = []
        if pk in ("none", "no-columns") and def_line:
            why.append("the instruction has no source position, so the frame reports its def line")
        elif pk == "none":
            why.append("the instruction has no source position")
        elif pk == "lines-only" and def_line:
            why.append("the instruction reports the def line (a line table without columns cannot say more)")
        for pat in ("__resume_at_", "torch_dynamo_resume_in_", "__compiled_fn", "__transformed_code"):
            if pat in co_name:
                why.append("code name %s (Dynamo)" % pat.strip("_"))
        dyn = _sys.modules.get("torch._dynamo.utils")
        ocm = getattr(dyn, "orig_code_map", None) if dyn is not None else None
        if ocm is not None:
            try:
                orig = ocm.get(code) if hasattr(ocm, "get") else None
                if orig is not None:
                    why.append("in torch._dynamo.utils.orig_code_map (transformed code)")
                    ef = _sys.modules.get("torch._dynamo.eval_frame")
                    lst = getattr(ef, "_debug_get_cache_entry_list", None)
                    if lst is not None:
                        fi["cache_entries"] = len(lst(orig))
            except Exception as e:
                note("orig_code_map", e)
        fi["generated"] = bool(why)
        if why:
            fi["generated_why"] = why
        if not full:
            return fi, ins, k
        lo, hi = max(0, k - 8), min(len(ins), k + 3)
        fi["window"] = [
            {
                "offset": i.offset,
                "opname": i.opname,
                "argrepr": short(i.argrepr, 120),
                "position": position_kind(i),
                "current": j == k,
            }
            for j, i in zip(range(lo, hi), ins[lo:hi])
        ]
        return fi, ins, k

    # ---- the expression being evaluated -----------------------------------

    NULL = None
    UNK = ("\u2026", None, True)
    BINOPS = {
        "BINARY_ADD": "+", "BINARY_SUBTRACT": "-", "BINARY_MULTIPLY": "*", "BINARY_TRUE_DIVIDE": "/",
        "BINARY_FLOOR_DIVIDE": "//", "BINARY_MODULO": "%", "BINARY_POWER": "**", "BINARY_MATRIX_MULTIPLY": "@",
        "BINARY_LSHIFT": "<<", "BINARY_RSHIFT": ">>", "BINARY_AND": "&", "BINARY_OR": "|", "BINARY_XOR": "^",
    }
    for k_, v_ in list(BINOPS.items()):
        BINOPS["INPLACE" + k_[6:]] = v_
    UNOPS = {"UNARY_NEGATIVE": "-", "UNARY_POSITIVE": "+", "UNARY_INVERT": "~", "UNARY_NOT": "not "}
    LOADS_LOCAL = ("LOAD_FAST", "LOAD_FAST_CHECK", "LOAD_FAST_AND_CLEAR", "LOAD_FAST_BORROW", "LOAD_DEREF",
                   "LOAD_CLASSDEREF", "LOAD_CLOSURE")
    NOEFFECT = ("NOP", "RESUME", "CACHE", "EXTENDED_ARG", "PRECALL", "MAKE_CELL", "COPY_FREE_VARS", "NOT_TAKEN",
                "SETUP_FINALLY", "SETUP_WITH", "SETUP_ASYNC_WITH", "POP_BLOCK", "TO_BOOL", "LIST_TO_TUPLE",
                "SETUP_ANNOTATIONS", "INTERPRETER_EXIT")
    ENDS = ("RETURN_VALUE", "RETURN_CONST", "JUMP_FORWARD", "JUMP_BACKWARD", "JUMP_ABSOLUTE", "JUMP",
            "RAISE_VARARGS", "RERAISE", "JUMP_BACKWARD_NO_INTERRUPT", "POP_JUMP_IF_TRUE", "POP_JUMP_IF_FALSE",
            "POP_JUMP_IF_NONE", "POP_JUMP_IF_NOT_NONE", "POP_JUMP_FORWARD_IF_TRUE", "POP_JUMP_FORWARD_IF_FALSE",
            "POP_JUMP_BACKWARD_IF_TRUE", "POP_JUMP_BACKWARD_IF_FALSE", "POP_JUMP_FORWARD_IF_NONE",
            "POP_JUMP_FORWARD_IF_NOT_NONE", "POP_JUMP_BACKWARD_IF_NONE", "POP_JUMP_BACKWARD_IF_NOT_NONE",
            "JUMP_IF_TRUE_OR_POP", "JUMP_IF_FALSE_OR_POP", "FOR_ITER", "SEND")

    def item(expr, chain=None, atom=True):
        return (expr, chain, atom)

    def base(it):
        return it[0] if it[2] else "(" + it[0] + ")"

    def const_item(v):
        ch = [("const", v)] if isinstance(v, (str, int)) and not isinstance(v, bool) else None
        return item(short(repr(v), 80), ch)

    def attr_of(b, name):
        ch = b[1] + [("attr", name)] if b[1] is not None and b[1][0][0] != "const" else None
        return item(base(b) + "." + name, ch)

    def subscr_of(b, k):
        ch = None
        if b[1] is not None and b[1][0][0] != "const" and k[1] is not None and k[1][0][0] == "const" and len(k[1]) == 1:
            ch = b[1] + [("key", k[1][0][1])]
        return item(base(b) + "[" + k[0] + "]", ch)

    def simulate(ins, k):
        # Straight-line symbolic execution from the start of the block that
        # holds instruction k (at most 64 instructions back): each stack
        # slot holds the source text of its value. Returns the text of what
        # instruction k evaluates, and its access chain when it is built
        # only of locals, attributes and constant subscripts.
        s = k
        while s > 0 and k - s < 64:
            prev = ins[s - 1]
            if getattr(ins[s], "is_jump_target", False) or prev.opname in ENDS:
                break
            s -= 1
        stack = []
        kw = [()]

        def pop():
            return stack.pop() if stack else UNK

        def popn(n):
            if n <= 0:
                return []
            got = [pop() for _ in range(n)]
            got.reverse()
            return got

        def call_text(fn, args):
            names = kw[0]
            kw[0] = ()
            parts = [a[0] for a in args]
            if names and len(names) <= len(parts):
                n0 = len(parts) - len(names)
                parts = parts[:n0] + ["%s=%s" % (nm, p) for nm, p in zip(names, parts[n0:])]
            return item(base(fn) + "(" + ", ".join(parts) + ")")

        def two_slots(args):
            a, b = popn(2)
            if a is NULL:
                return b, args
            if b is NULL:
                return a, args
            return a, [b] + args

        def step(i):
            op, arg, av = i.opname, i.arg, i.argval
            if op in NOEFFECT:
                return None
            if op == "KW_NAMES":
                kw[0] = tuple(av) if isinstance(av, tuple) else ()
                return None
            if op in LOADS_LOCAL or op == "LOAD_NAME":
                r = item(str(av), [("local", str(av))] if op != "LOAD_NAME" else None)
                stack.append(r)
                return r
            if op == "LOAD_FAST_LOAD_FAST" or op == "LOAD_FAST_BORROW_LOAD_FAST_BORROW":
                for n in av if isinstance(av, tuple) else (av, av):
                    stack.append(item(str(n), [("local", str(n))]))
                return stack[-1]
            if op == "LOAD_GLOBAL":
                r = item(str(av), [("global", str(av))])
                if V >= (3, 11) and arg is not None and arg & 1:
                    stack.extend([r, NULL] if V >= (3, 13) else [NULL, r])
                else:
                    stack.append(r)
                return r
            if op in ("LOAD_CONST", "LOAD_SMALL_INT"):
                r = const_item(av)
                stack.append(r)
                return r
            if op == "PUSH_NULL":
                stack.append(NULL)
                return None
            if op == "LOAD_ATTR":
                b = pop()
                r = attr_of(b, str(av))
                if V >= (3, 12) and arg is not None and arg & 1:
                    stack.extend([NULL, r])
                else:
                    stack.append(r)
                return r
            if op == "LOAD_METHOD":
                r = attr_of(pop(), str(av))
                stack.extend([NULL, r])
                return r
            if op == "LOAD_SUPER_ATTR":
                popn(3)
                r = item("super()." + str(av))
                stack.extend([NULL, r] if arg is not None and arg & 1 else [r])
                return r
            if op == "BINARY_SUBSCR" or (op == "BINARY_OP" and i.argrepr == "[]"):
                kk = pop()
                r = subscr_of(pop(), kk)
                stack.append(r)
                return r
            if op == "BINARY_OP" or op in BINOPS:
                b, a = pop(), pop()
                sym = BINOPS.get(op) or str(i.argrepr).rstrip("=") or "?"
                r = item("%s %s %s" % (a[0], sym, b[0]), None, False)
                stack.append(r)
                return r
            if op == "BINARY_SLICE":
                c, b, a = pop(), pop(), pop()
                r = item("%s[%s:%s]" % (base(a), b[0], c[0]))
                stack.append(r)
                return r
            if op == "BUILD_SLICE":
                parts = popn(arg or 2)
                r = item(":".join(p[0] for p in parts))
                stack.append(r)
                return r
            if op in ("COMPARE_OP", "IS_OP", "CONTAINS_OP"):
                b, a = pop(), pop()
                if op == "COMPARE_OP":
                    sym = str(i.argrepr)
                    if sym.startswith("bool(") and sym.endswith(")"):
                        sym = sym[5:-1]
                elif op == "IS_OP":
                    sym = "is not" if arg else "is"
                else:
                    sym = "not in" if arg else "in"
                r = item("%s %s %s" % (a[0], sym, b[0]), None, False)
                stack.append(r)
                return r
            if op in UNOPS:
                a = pop()
                r = item(UNOPS[op] + base(a), None, op != "UNARY_NOT")
                stack.append(r)
                return r
            if op == "GET_ITER":
                r = item("iter(%s)" % pop()[0])
                stack.append(r)
                return r
            if op == "CALL" or op == "CALL_METHOD":
                args = popn(arg or 0)
                fn, args = two_slots(args)
                r = call_text(fn, args)
                stack.append(r)
                return r
            if op == "CALL_KW":
                names = pop()
                n = arg or 0
                args = popn(n)
                nm = names[1][0][1] if names[1] else None
                kw[0] = tuple(nm) if isinstance(nm, tuple) else ()
                fn, args = two_slots(args)
                r = call_text(fn, args)
                stack.append(r)
                return r
            if op == "CALL_FUNCTION":
                args = popn(arg or 0)
                r = call_text(pop(), args)
                stack.append(r)
                return r
            if op == "CALL_FUNCTION_KW":
                pop()
                args = popn(arg or 0)
                r = call_text(pop(), args)
                stack.append(r)
                return r
            if op == "CALL_FUNCTION_EX":
                kwargs = pop() if (arg or 0) & 1 or V >= (3, 13) else None
                args = pop()
                fn = pop() if V < (3, 11) else two_slots([])[0]
                text = "*" + args[0]
                if kwargs is not None and kwargs is not NULL:
                    text += ", **" + kwargs[0]
                r = item(base(fn) + "(" + text + ")")
                stack.append(r)
                return r
            if op in ("BUILD_TUPLE", "BUILD_LIST", "BUILD_SET"):
                parts = popn(arg or 0)
                o, c = {"BUILD_TUPLE": ("(", ")"), "BUILD_LIST": ("[", "]"), "BUILD_SET": ("{", "}")}[op]
                tail = "," if op == "BUILD_TUPLE" and len(parts) == 1 else ""
                r = item(o + ", ".join(p[0] for p in parts) + tail + c)
                stack.append(r)
                return r
            if op == "BUILD_MAP":
                parts = popn(2 * (arg or 0))
                r = item("{" + ", ".join("%s: %s" % (parts[j][0], parts[j + 1][0]) for j in range(0, len(parts), 2)) + "}")
                stack.append(r)
                return r
            if op == "BUILD_CONST_KEY_MAP":
                popn((arg or 0) + 1)
                r = item("{...}")
                stack.append(r)
                return r
            if op == "BUILD_STRING":
                popn(arg or 0)
                r = item("f'...'")
                stack.append(r)
                return r
            if op in ("FORMAT_VALUE",):
                if (arg or 0) & 4:
                    pop()
                a = pop()
                r = item("f'{%s}'" % a[0])
                stack.append(r)
                return r
            if op in ("FORMAT_SIMPLE", "CONVERT_VALUE"):
                a = pop()
                r = item("f'{%s}'" % a[0])
                stack.append(r)
                return r
            if op == "FORMAT_WITH_SPEC":
                pop()
                a = pop()
                r = item("f'{%s}'" % a[0])
                stack.append(r)
                return r
            if op in ("LIST_APPEND", "SET_ADD", "LIST_EXTEND", "SET_UPDATE", "DICT_UPDATE", "DICT_MERGE"):
                pop()
                return None
            if op == "MAP_ADD":
                popn(2)
                return None
            if op == "COPY":
                n = arg or 1
                stack.append(stack[-n] if len(stack) >= n else UNK)
                return stack[-1]
            if op == "SWAP":
                n = arg or 2
                if len(stack) >= n:
                    stack[-1], stack[-n] = stack[-n], stack[-1]
                return None
            if op == "DUP_TOP":
                stack.append(stack[-1] if stack else UNK)
                return stack[-1]
            if op == "DUP_TOP_TWO":
                a = stack[-2:] if len(stack) >= 2 else [UNK, UNK]
                stack.extend(a)
                return None
            if op in ("ROT_TWO", "ROT_THREE", "ROT_FOUR", "ROT_N"):
                n = {"ROT_TWO": 2, "ROT_THREE": 3, "ROT_FOUR": 4}.get(op, arg or 2)
                if len(stack) >= n:
                    stack.insert(len(stack) - n, stack.pop())
                return None
            if op == "POP_TOP":
                pop()
                return None
            if op in ("STORE_FAST", "STORE_NAME", "STORE_GLOBAL", "STORE_DEREF"):
                v = pop()
                return item("%s = %s" % (av, v[0]))
            if op == "STORE_FAST_LOAD_FAST":
                pop()
                n2 = av[1] if isinstance(av, tuple) else av
                r = item(str(n2), [("local", str(n2))])
                stack.append(r)
                return r
            if op == "STORE_FAST_STORE_FAST":
                popn(2)
                return None
            if op == "STORE_ATTR":
                b, v = pop(), pop()
                return item("%s.%s = %s" % (base(b), av, v[0]))
            if op == "STORE_SUBSCR":
                kk, b, v = pop(), pop(), pop()
                return item("%s[%s] = %s" % (base(b), kk[0], v[0]))
            if op == "DELETE_SUBSCR":
                kk, b = pop(), pop()
                return item("del %s[%s]" % (base(b), kk[0]))
            if op == "DELETE_ATTR":
                return item("del %s.%s" % (base(pop()), av))
            if op == "RAISE_VARARGS":
                parts = popn(arg or 0)
                return item("raise " + " from ".join(p[0] for p in parts) if parts else "raise")
            if op == "IMPORT_NAME":
                popn(2)
                r = item(str(av))
                stack.append(r)
                return r
            if op == "IMPORT_FROM":
                r = item(str(av))
                stack.append(r)
                return r
            if op == "RETURN_VALUE":
                return item("return " + pop()[0])
            # Anything else: its operands are not followed; the stack below
            # is unknown from here on.
            del stack[:]
            return None

        result = None
        for j in range(s, k + 1):
            r = step(ins[j])
            if j == k:
                result = r
        return result

    def resolve(chain, frame):
        # Follow a locals/attribute/constant-key chain on the live objects
        # without running any user code: attributes only from an instance
        # __dict__, keys only in plain dicts. Says where it stops and why.
        if not chain or chain[0][0] != "local" or frame is None:
            return None
        name = chain[0][1]
        try:
            loc = frame.f_locals
            if name not in loc:
                return None
            cur = loc[name]
        except Exception as e:
            note("f_locals", e)
            return None
        steps = []
        text = name
        holder = cur
        for kind, v in chain[1:]:
            owner = cur
            if kind == "attr":
                holder = cur
                text += "." + str(v)
                try:
                    d = object.__getattribute__(cur, "__dict__")
                except Exception:
                    steps.append({"expr": short(text), "stop": "no instance __dict__ on %s" % tname(owner)})
                    break
                if not isinstance(d, dict) or v not in d:
                    steps.append({"expr": short(text), "stop": "not in the instance __dict__ of %s (not evaluated)" % tname(owner)})
                    break
                cur = d[v]
            else:
                text += "[" + short(repr(v), 80) + "]"
                if not isinstance(cur, dict):
                    steps.append({"expr": short(text), "stop": "%s is not a dict (not evaluated)" % tname(owner)})
                    break
                if not dict.__contains__(cur, v):
                    keys = [short(x, 80) for x in list(dict.keys(cur))[:MAX_ITEMS]]
                    miss = {"expr": short(text), "missing": True, "key": short(v, 200), "keys": keys, "n_keys": dict.__len__(cur)}
                    on = module_summary(holder)
                    miss["on"] = on if on is not None else {"type": tname(holder)}
                    steps.append(miss)
                    break
                cur = dict.__getitem__(cur, v)
            steps.append({"expr": short(text), "type": tname(cur)})
        return steps

    def tname(o):
        t = type(o)
        m = getattr(t, "__module__", "")
        q = getattr(t, "__qualname__", t.__name__)
        return q if m in ("builtins", "") else "%s.%s" % (m, q)

    def module_summary(obj):
        try:
            d = object.__getattribute__(obj, "__dict__")
        except AttributeError:
            return None  # no instance dict: not a module
        except Exception as e:
            note("self", e)
            return None
        if not isinstance(d, dict):
            return None
        mm = _sys.modules.get("torch.nn.modules.module")
        Module = getattr(mm, "Module", None) if mm is not None else None
        is_mod = False
        if Module is not None:
            try:
                is_mod = isinstance(obj, Module)
            except Exception:
                is_mod = False
        mods, params, bufs = d.get("_modules"), d.get("_parameters"), d.get("_buffers")
        if not is_mod and not (isinstance(mods, dict) and isinstance(params, dict)):
            return None
        s = {"type": tname(obj), "kind": "nn.Module" if is_mod else "module-like"}
        attrs = {}
        for attr in ("prefix", "layer_idx", "layer_id", "layer_name", "name"):
            v = d.get(attr)
            if isinstance(v, (str, int)) and not isinstance(v, bool):
                attrs[attr] = short(v, 200) if isinstance(v, str) else str(v)
        if attrs:
            s["attrs"] = attrs
        if isinstance(mods, dict):
            s["children"] = [{"name": short(k, 80), "type": tname(v)} for k, v in list(mods.items())[:MAX_ITEMS]]
            s["n_children"] = len(mods)
        if isinstance(params, dict):
            s["parameters"] = [short(k, 80) for k in list(params)[:MAX_ITEMS]]
            s["n_parameters"] = len(params)
        if isinstance(bufs, dict) and bufs:
            s["buffers"] = [short(k, 80) for k in list(bufs)[:MAX_ITEMS]]
        return s

    def self_of(frame, code):
        # The frame's first argument (self, or whatever a method calls it)
        # when it is an nn.Module or shaped like one.
        if frame is None or code.co_argcount < 1 or not code.co_varnames:
            return None
        name = code.co_varnames[0]
        try:
            loc = frame.f_locals
            if name not in loc:
                return None
            s = module_summary(loc[name])
            if s is not None and name != "self":
                s["name"] = name
            return s
        except Exception as e:
            note("self", e)
            return None

    def dynamo_stack(frames):
        out_ = []
        g = _sys.modules.get("torch._guards")
        tc = getattr(g, "TracingContext", None) if g is not None else None
        if tc is not None:
            try:
                ctx = tc.try_get()
                if ctx is not None:
                    for fs in ctx.extract_stack()[-MAX_ITEMS:]:
                        out_.append({"file": short(fs.filename), "line": fs.lineno, "function": short(fs.name)})
                    if out_:
                        return out_, "TracingContext.extract_stack"
            except Exception as e:
                note("tracing_context", e)
        # Fallback: the instruction translators on the stack, innermost
        # first, give the inlined user frames Dynamo is tracing.
        for f in frames:
            try:
                if "symbolic_convert" not in f.f_code.co_filename or f.f_code.co_argcount < 1:
                    continue
                tx = f.f_locals.get("self")
                if tx is None or "InstructionTranslator" not in type(tx).__name__:
                    continue
                fc = getattr(tx, "f_code", None)
                if fc is None:
                    continue
                e = {"file": short(fc.co_filename), "line": getattr(tx, "lineno", None), "function": short(fc.co_name)}
                ci = getattr(tx, "current_instruction", None)
                if ci is not None:
                    e["instruction"] = short("%s %s" % (getattr(ci, "opname", ""), getattr(ci, "argval", "")), 200)
                if not out_ or out_[-1] != e:
                    out_.append(e)
                if len(out_) >= MAX_ITEMS:
                    break
            except Exception as e:
                note("translator", e)
        out_.reverse()
        return out_, "instruction translators on the stack" if out_ else ""

    def exc_entry(e):
        t = type(e)
        return {"type": short(t.__name__, 200), "module": short(getattr(t, "__module__", ""), 200), "message": short(_str(e))}

    def _str(e):
        try:
            return str(e)
        except Exception as x:
            return "<str failed: %s>" % type(x).__name__

    # ---- one record -----------------------------------------------------

    def build(where, exc, frames, t0):
        # frames: [(frame or None, code, lasti, lineno)], innermost first.
        rec = {
            "seq": st["matched"],
            "seen_at": where,
            "time": time.time(),
            "thread": short(_thread_name(), 100),
        }
        rec.update(exc_entry(exc))
        rec["repr"] = short(exc)
        stack = []
        truncated = False
        n = len(frames)
        pick = list(range(n))
        if n > MAX_FRAMES:
            inner = MAX_FRAMES * 3 // 4
            pick = list(range(inner)) + list(range(n - (MAX_FRAMES - inner), n))
            truncated = True
        names = type_names(type(exc))
        tracing = any(nm.startswith("Observed") for nm in names) or any(
            "torch/_dynamo/symbolic_convert.py" in (fr[1].co_filename or "") for fr in frames[:MAX_FRAMES])
        for j in pick:
            f, code, lasti, lineno = frames[j]
            full = j == 0
            if j == 1 and tracing:
                # While Dynamo traces, the user frames it inlines matter more
                # than its own: taken before the time cap can cut them.
                us, src = dynamo_stack([fr[0] for fr in frames if fr[0] is not None])
                if us:
                    rec["dynamo_user_stack"] = us
                    rec["dynamo_user_stack_from"] = src
            fi, ins, k = frame_info(code, lasti, lineno, full)
            if full and ins is not None:
                try:
                    r = simulate(ins, k)
                    if r is not None:
                        fi["expression"] = short(r[0], 1000)
                        steps = resolve(r[1], f)
                        if steps:
                            fi["resolved"] = steps
                except Exception as e:
                    note("expression", e)
            if j < 8:
                s = self_of(f, code)
                if s is not None:
                    fi["self"] = s
            stack.append(fi)
            if time.perf_counter() - t0 > MAX_EVENT_S:
                truncated = True
                rec["time_cap"] = True
                break
        stack.reverse()  # traceback order: outermost first
        rec["stack"] = stack
        rec["n_frames"] = n
        if truncated:
            rec["stack_truncated"] = True
        rec["phase"] = "trace" if tracing else "runtime"
        rec["dynamo_loaded"] = "torch._dynamo" in _sys.modules
        chain_ = []
        c, seen_ids = exc, {id(exc)}
        while len(chain_) < 8:
            nxt, rel = (c.__cause__, "cause") if c.__cause__ is not None else (c.__context__, "context")
            if nxt is None or id(nxt) in seen_ids:
                break
            seen_ids.add(id(nxt))
            ent = exc_entry(nxt)
            ent["relation"] = rel
            chain_.append(ent)
            c = nxt
        if chain_:
            rec["chain"] = chain_
        notes = getattr(exc, "__notes__", None)
        if isinstance(notes, list) and notes:
            rec["notes"] = [short(x, 2000) for x in notes[:4]]
        return rec

    def _thread_name():
        th = _sys.modules.get("threading")
        if th is None:
            return "MainThread"
        try:
            return th.current_thread().name
        except Exception:
            return ""

    def over_budget():
        if st["disabled"]:
            return True
        if st["spent"] > MAX_TOTAL_S:
            st["disabled"] = "time budget of %d ms spent" % int(MAX_TOTAL_S * 1000)
            mon = getattr(_sys, "monitoring", None)
            if mon is not None and tool[0] is not None:
                try:
                    mon.set_events(tool[0], 0)
                except Exception as e:
                    note("disable", e)
            return True
        return False

    def maybe_flush():
        if st["dirty"] and time.monotonic() - st["last_write"] > 1.0:
            write_report()

    def record(where, exc, frames_fn, extra=None):
        # The common path for every hook, after the type filter. An
        # exception raised while this thread is inside the probe (importlib
        # raises KeyError while dis is imported) is the probe's own.
        if st["busy"] == get_ident():
            return
        # Only the report path looks an exception up: a raise is recorded
        # at its first event.
        key = ident(exc) if where != "raise" else None
        prev = None
        if key is not None:
            # A traceback replaced on the way (Dynamo re-raises with
            # with_traceback(None)) still leaves id, type and message.
            prev = st["seen"].get(key) or st["seen"].get(key[:2] + key[4:])
        if prev is not None:
            r = prev
            if where not in r.setdefault("also_seen_at", []) and where != r["seen_at"]:
                r["also_seen_at"].append(where)
                if extra:
                    for k, v in extra.items():
                        r.setdefault(k, v)
                st["dirty"] = True
                write_report()
            return
        if "dis" not in _sys.modules or "bisect" not in _sys.modules:
            # Imported once, on the first match, and not charged to the
            # event's time cap (the process's budget still counts it).
            t0 = time.perf_counter()
            st["busy"] = get_ident()
            try:
                import bisect  # noqa: F401
                import dis  # noqa: F401
            except Exception as e:
                note("import", e)
            finally:
                st["busy"] = 0
                st["spent"] += time.perf_counter() - t0
        t0 = time.perf_counter()
        st["matched"] += 1
        path = "n_raise" if where == "raise" else "n_report"
        try:
            # The time budget bounds the raise path only: what is reported
            # (uncaught, logged, printed) is rare and is what killed the boot.
            if path == "n_raise" and over_budget():
                st["dropped_time"] += 1
                st["dirty"] = True
                return
            if st[path] >= MAX_RECORDS:
                st["dropped_cap"] += 1
                st["dirty"] = True
                maybe_flush()
                return
            st["busy"] = get_ident()
            try:
                rec = build(where, exc, frames_fn(), t0)
            finally:
                st["busy"] = 0
            if extra:
                rec.update(extra)
            rec["elapsed_us"] = int((time.perf_counter() - t0) * 1e6)
            st["records"].append(rec)
            st[path] += 1
            if len(st["seen"]) > 4 * MAX_RECORDS:
                st["seen"].clear()
            key = key or ident(exc)
            st["seen"][key] = rec
            st["seen"][key[:2] + key[4:]] = rec
            st["dirty"] = True
            st["spent"] += time.perf_counter() - t0
            t0 = time.perf_counter()
            write_report()
            return rec
        finally:
            st["spent"] += time.perf_counter() - t0

    def ident(exc):
        # An exception object is known again by its id, type and message and
        # its innermost traceback entry (made where it was raised; it lives
        # as long as the exception). Exceptions take no weak references, and
        # a strong one would keep their frames alive. The same exception
        # raised again and again at one instruction, each freed before the
        # next is reported, may be taken for one.
        tb = exc.__traceback__
        n = 0
        while tb is not None and tb.tb_next is not None and n < 10000:
            tb, n = tb.tb_next, n + 1
        return (id(exc), type(exc), id(tb), tb.tb_lasti if tb is not None else -1, _str(exc))

    def tb_frames(tb):
        out_ = []
        while tb is not None and len(out_) < 4 * MAX_FRAMES:
            out_.append((tb.tb_frame, tb.tb_frame.f_code, tb.tb_lasti, tb.tb_lineno))
            tb = tb.tb_next
        out_.reverse()
        return out_

    # ---- following a raise ---------------------------------------------
    # A raise recorded while Dynamo traced, in torch, numpy or the standard
    # library, is followed (3.12+: PY_UNWIND, EXCEPTION_HANDLED) until it
    # reaches a frame outside them: torch's config lookups and numpy's
    # getlimits raise KeyErrors they catch themselves, which are no
    # evidence. "followed" says the probe watched; "reached" is the first
    # frame outside those libraries the exception propagated into (absent:
    # it never did); "handled_in" the last frame that caught it. Following
    # stops when it reaches one, after FOLLOW_S without an event of it, or
    # for the oldest of more than MAX_FOLLOW.

    FOLLOW_S = 2.0
    MAX_FOLLOW = 64
    following = [0]  # the event mask turned on for following; 0: none
    next_prune = [0.0]
    lib_files = {}

    def in_library(fn):
        r = lib_files.get(fn)
        if r is None:
            r = in_stdlib(fn)
            for name in ("torch", "numpy"):
                f = getattr(_sys.modules.get(name), "__file__", None)
                if not r and isinstance(f, str) and fn.startswith(_os.path.dirname(f) + _os.sep):
                    r = True
            if len(lib_files) > 4096:
                lib_files.clear()
            lib_files[fn] = r
        return r

    def place(f):
        c = f.f_code
        return {"file": short(c.co_filename, 1000), "function": short(getattr(c, "co_qualname", c.co_name), 200), "line": f.f_lineno}

    def follow(exc, rec):
        fl = st["follow"]
        while len(fl) >= MAX_FOLLOW:
            fl.pop(next(iter(fl)))
        fl[id(exc)] = [type(exc), rec, time.monotonic(), origin(exc)]
        rec["followed"] = True
        st["dirty"] = True
        if not following[0]:
            ev = mon.events.PY_UNWIND | mon.events.EXCEPTION_HANDLED
            mon.set_events(tool[0], mon.get_events(tool[0]) | ev)
            following[0] = ev

    def prune(now):
        fl = st["follow"]
        for k in [k for k, v in fl.items() if now - v[2] > FOLLOW_S]:
            del fl[k]
        if not fl and following[0]:
            mon.set_events(tool[0], mon.get_events(tool[0]) & ~following[0])
            following[0] = 0

    def origin(exc):
        # The innermost traceback entry (made where it was raised) tells an
        # exception from a later one that got the id of a freed one.
        tb, n = exc.__traceback__, 0
        while tb is not None and tb.tb_next is not None and n < 10000:
            tb, n = tb.tb_next, n + 1
        return (id(tb), tb.tb_lasti, id(tb.tb_frame.f_code)) if tb is not None else None

    def ours(exc):
        ent = st["follow"].get(id(exc))
        if ent is None or type(exc) is not ent[0] or st["busy"] == get_ident() or origin(exc) != ent[3]:
            return None
        return ent

    def followed(code, exc):
        # The follow entry of exc and the frame of code where the event
        # happened (below this helper and the hook), or (None, None).
        ent = ours(exc)
        if ent is None:
            return None, None
        ent[2] = time.monotonic()
        f = _sys._getframe(1)
        while f is not None and f.f_code is not code:
            f = f.f_back
        return ent, f

    def reached(ent, key, f):
        ent[1]["reached"] = place(f)
        del st["follow"][key]
        st["dirty"] = True
        write_report()

    def on_unwind(code, offset, exc):
        try:
            ent, f = followed(code, exc)
            caller = f.f_back if f is not None else None
            if caller is not None and not in_library(caller.f_code.co_filename):
                reached(ent, id(exc), caller)
        except Exception as e:
            note("unwind hook", e)

    def on_handled(code, offset, exc):
        try:
            ent, f = followed(code, exc)
            if f is None:
                return
            ent[1]["handled_in"] = place(f)
            st["dirty"] = True
            if not in_library(code.co_filename):
                reached(ent, id(exc), f)
            else:
                maybe_flush()
        except Exception as e:
            note("handled hook", e)

    # ---- hooks ---------------------------------------------------------

    tool = [None]

    def on_raise(code, offset, exc):
        try:
            if following[0]:
                now = time.monotonic()
                if now > next_prune[0]:
                    next_prune[0] = now + FOLLOW_S / 4
                    prune(now)
            t = type(exc)
            m = raise_types.get(t)
            if m is None:
                m = classify(t, raise_sels, raise_types)
            if not m:
                return
            tb = exc.__traceback__
            if tb is not None and tb.tb_next is not None:
                return  # raised again on its way out: not its first event
            fn = code.co_filename
            skip = stdlib_files.get(fn)
            if skip is None:
                if len(stdlib_files) > 4096:
                    stdlib_files.clear()
                skip = stdlib_files[fn] = in_stdlib(fn)
            if skip:
                st["skipped_stdlib"] += 1
                return
            try:
                if not message_ok(exc, m):
                    return
            except Exception as e:
                st["dropped_filter_error"] += 1
                note("filter", e)
                return
            if st["busy"] == get_ident():
                return  # the probe's own
            if st["n_raise"] >= MAX_RECORDS or st["disabled"]:
                # The cheap path once the raise path is full or out of time.
                st["matched"] += 1
                st["dropped_time" if st["disabled"] else "dropped_cap"] += 1
                st["dirty"] = True
                maybe_flush()
                return
            f = _sys._getframe(1)
            while f is not None and f.f_code is not code:
                f = f.f_back

            def frames():
                out_ = []
                g = f
                first = True
                while g is not None and len(out_) < 4 * MAX_FRAMES:
                    if first and tb is not None and tb.tb_frame is g:
                        lasti = tb.tb_lasti
                    else:
                        lasti = g.f_lasti
                    first = False
                    out_.append((g, g.f_code, lasti, line_of(g.f_code, lasti)))
                    g = g.f_back
                return out_

            if f is None:
                return
            rec = record("raise", exc, frames)
            if rec is not None and rec.get("phase") == "trace" and in_library(fn):
                follow(exc, rec)
        except Exception as e:
            note("raise hook", e)

    def on_report(where, exc, extra=None):
        try:
            c, n = exc, 0
            while c is not None and n < 8:
                t = type(c)
                m = report_types.get(t)
                if m is None:
                    m = classify(t, sels, report_types)
                if m and message_ok(c, m):
                    ex = dict(extra or {})
                    if c is not exc:
                        ex["reported_as"] = exc_entry(exc)
                    record(where, c, lambda c=c: tb_frames(c.__traceback__), ex)
                    return
                c = c.__cause__ if c.__cause__ is not None else c.__context__
                n += 1
        except Exception as e:
            note(where + " hook", e)

    def wrap(fn, before):
        def w(*a, **k):
            before(a, k)
            return fn(*a, **k)

        for attr in ("__module__", "__name__", "__qualname__", "__doc__"):
            try:
                setattr(w, attr, getattr(fn, attr))
            except Exception:
                pass
        w.__wrapped__ = fn
        w.__bringup_probe__ = True
        return w

    def hook_threading(mod):
        if getattr(getattr(mod, "excepthook", None), "__bringup_probe__", False):
            return

        def before(a, k):
            v = getattr(a[0], "exc_value", None) if a else None
            if isinstance(v, BaseException):
                on_report("threading.excepthook", v, {"thread": short(getattr(getattr(a[0], "thread", None), "name", ""), 100)})

        mod.excepthook = wrap(mod.excepthook, before)
        hooks.append("threading.excepthook")

    def hook_logging(mod):
        old = mod.getLogRecordFactory()
        if getattr(old, "__bringup_probe__", False):
            return

        def factory(*a, **k):
            rec = old(*a, **k)
            try:
                ei = getattr(rec, "exc_info", None)
                if ei and isinstance(ei, tuple) and len(ei) >= 2 and isinstance(ei[1], BaseException):
                    on_report("logging", ei[1], {"logged": {
                        "logger": short(getattr(rec, "name", ""), 200),
                        "level": short(getattr(rec, "levelname", ""), 20),
                        "file": short(getattr(rec, "pathname", "")),
                        "line": getattr(rec, "lineno", None),
                        "function": short(getattr(rec, "funcName", ""), 200),
                        "message": short(_str(getattr(rec, "msg", ""))),
                    }})
            except Exception as e:
                note("logging hook", e)
            return rec

        factory.__bringup_probe__ = True
        factory.__wrapped__ = old
        mod.setLogRecordFactory(factory)
        hooks.append("logging")

    def hook_traceback(mod):
        sentinel = getattr(mod, "_sentinel", object())

        def before(a, k):
            v = k.get("value", a[1] if len(a) > 1 else sentinel)
            if v is sentinel or v is None:
                v = k.get("exc", a[0] if a else None)
            if isinstance(v, BaseException):
                on_report("traceback", v)

        for name in ("print_exception", "format_exception"):
            fn = getattr(mod, name, None)
            if fn is not None and not getattr(fn, "__bringup_probe__", False):
                setattr(mod, name, wrap(fn, before))
        hooks.append("traceback")

    post = {"threading": hook_threading, "logging": hook_logging, "traceback": hook_traceback}

    class PostImport:
        # A meta-path finder that never finds anything itself: it lets the
        # other finders find the modules it watches and patches them right
        # after they are executed, so nothing is imported early.
        busy = set()

        @classmethod
        def find_spec(cls, name, path=None, target=None):
            fn = post.get(name)
            if fn is None or name in cls.busy:
                return None
            cls.busy.add(name)
            try:
                for finder in _sys.meta_path:
                    if finder is cls:
                        continue
                    find = getattr(finder, "find_spec", None)
                    if find is None:
                        continue
                    spec = find(name, path, target)
                    if spec is not None:
                        break
                else:
                    return None
                loader = spec.loader
                if loader is None or isinstance(loader, type) or not hasattr(loader, "exec_module"):
                    return spec
                orig = loader.exec_module

                def exec_module(module):
                    try:
                        orig(module)
                    finally:
                        try:
                            del loader.exec_module
                        except Exception:
                            pass
                    try:
                        fn(module)
                    except Exception as e:
                        note("post-import " + name, e)
                    # Once every watched module is patched, leave meta_path.
                    if all(n in _sys.modules for n in post):
                        try:
                            _sys.meta_path.remove(cls)
                        except ValueError:
                            pass

                loader.exec_module = exec_module
                return spec
            finally:
                cls.busy.discard(name)

        @classmethod
        def invalidate_caches(cls):
            pass

    for name, fn in post.items():
        mod = _sys.modules.get(name)
        if mod is not None:
            try:
                fn(mod)
            except Exception as e:
                note("hook " + name, e)
    if any(n not in _sys.modules for n in post):
        _sys.meta_path.insert(0, PostImport)

    hooks.append("uncaught (at exit)")

    mon = getattr(_sys, "monitoring", None)
    if not raise_sels:
        not_hooked.append("raise: the spec names no type (bare 'any' is recorded where reported only)")
    elif mon is None:
        not_hooked.append("raise: sys.monitoring needs Python 3.12+; recorded where reported only")
    else:
        try:
            for tid in (3, 4):
                if mon.get_tool(tid) is None:
                    mon.use_tool_id(tid, "bringup-probe")
                    tool[0] = tid
                    break
            if tool[0] is None:
                not_hooked.append("raise: sys.monitoring tool ids 3 and 4 are taken")
            else:
                mon.register_callback(tool[0], mon.events.RAISE, on_raise)
                mon.register_callback(tool[0], mon.events.PY_UNWIND, on_unwind)
                mon.register_callback(tool[0], mon.events.EXCEPTION_HANDLED, on_handled)
                mon.set_events(tool[0], mon.get_events(tool[0]) | mon.events.RAISE)
                hooks.append("monitoring.RAISE:%d" % tool[0])
        except Exception as e:
            note("monitoring", e)
            not_hooked.append("raise: sys.monitoring: %s" % short(e, 200))

    def after_fork():
        try:
            parent = st["pid"]
            reset(parent)
            write_marker()
        except Exception as e:
            note("fork", e)

    try:
        _os.register_at_fork(after_in_child=after_fork)
    except Exception as e:
        note("register_at_fork", e)

    def at_exit():
        # An uncaught exception of the main thread: Python printed it and
        # kept it in sys.last_exc (3.12+) / sys.last_value before it runs
        # the atexit handlers, this one last. sys.excepthook stays the
        # boot's own.
        st["exiting"] = True
        try:
            v = getattr(_sys, "last_exc", None) or getattr(_sys, "last_value", None)
            if isinstance(v, BaseException):
                on_report("uncaught", v)
        except Exception as e:
            note("uncaught", e)
        if st["dirty"]:
            write_report(final=True)

    atexit.register(at_exit)

    def finish(origin, error):
        try:
            chained[0] = origin
            if error is not None:
                note("chained sitecustomize %s" % origin, error)
            write_marker()
            if st["errors"]:
                write_report()
        except Exception:
            pass

    return finish
