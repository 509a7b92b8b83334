# bringup probe loader: the sitecustomize.py bringup puts first on a boot's
# PYTHONPATH. It loads the probe (bringup_probe.py, named by BRINGUP_PROBE)
# from marshalled code kept beside it per Python version, compiling it only
# when there is none (site imports this file; the probe itself would be
# compiled again in every process under PYTHONDONTWRITEBYTECODE), then runs
# the sitecustomize this file shadows. Nothing here prints; a probe that
# fails to load leaves the boot as it was.
import os as _os
import sys as _sys


def _bringup_probe_load(cfg):
    import marshal
    import _frozen_importlib_external as ext

    src = ""
    for line in cfg.split("\n"):
        if line.startswith("code="):
            src = line[5:]
    if not src:
        return None
    st = _os.stat(src)
    stamp = ext.MAGIC_NUMBER + st.st_size.to_bytes(8, "little") + st.st_mtime_ns.to_bytes(8, "little")
    cache = "%s.%s.bin" % (src[:-3], _sys.implementation.cache_tag)
    nofollow = getattr(_os, "O_NOFOLLOW", 0) | getattr(_os, "O_CLOEXEC", 0)
    code = None
    try:
        fd = _os.open(cache, _os.O_RDONLY | nofollow)
        with open(fd, "rb") as f:
            data = f.read()
        if data[: len(stamp)] == stamp:
            code = marshal.loads(data[len(stamp):])
    except (OSError, ValueError, EOFError, TypeError):
        code = None
    if code is None:
        fd = _os.open(src, _os.O_RDONLY | nofollow)
        with open(fd, "rb") as f:
            code = compile(f.read(), src, "exec", dont_inherit=True)
        try:
            tmp = "%s.%d.tmp" % (cache, _os.getpid())
            fd = _os.open(tmp, _os.O_WRONLY | _os.O_CREAT | _os.O_EXCL | nofollow, 0o644)
            with open(fd, "wb") as f:
                f.write(stamp + marshal.dumps(code))
            _os.replace(tmp, cache)
        except OSError:
            pass
    g = {"__name__": "_bringup_probe", "__file__": src, "__builtins__": __builtins__}
    exec(code, g)
    return g["install"](cfg)


def _bringup_probe_chain():
    # The sitecustomize this file shadows: the next one on sys.path after
    # this file's directory, executed as `sitecustomize`. Its errors
    # propagate, so site.py reports them exactly as it would without the
    # probe. The probe's own directory leaves sys.path: children get it from
    # PYTHONPATH, and the boot sees the sys.path it would have had.
    try:
        import _frozen_importlib as boot
        import _frozen_importlib_external as ext
    except ImportError:
        return None, None

    here = _bringup_probe_abspath(_os.path.dirname(_os.path.abspath(__file__)))
    rest, seen_here = [], False
    for p in _sys.path:
        if _bringup_probe_abspath(p) == here:
            seen_here = True
        elif seen_here:
            rest.append(p)
    if not seen_here:
        rest = list(_sys.path)
    _sys.path[:] = [p for p in _sys.path if _bringup_probe_abspath(p) != here]
    spec = ext.PathFinder.find_spec("sitecustomize", rest)
    if spec is None or spec.loader is None:
        return None, None
    mod = boot.module_from_spec(spec)
    me = _sys.modules.get("sitecustomize")
    if me is not None:
        _sys.modules["_bringup_probe"] = me
    _sys.modules["sitecustomize"] = mod
    origin = spec.origin or spec.name
    try:
        spec.loader.exec_module(mod)
    except BaseException as e:
        return origin, e
    return origin, None


def _bringup_probe_abspath(p):
    try:
        return _os.path.abspath(p or ".")
    except Exception:
        return None


_bringup_probe_finish = None
_bringup_probe_cfg = _os.environ.get("BRINGUP_PROBE")
if _bringup_probe_cfg:
    try:
        _bringup_probe_finish = _bringup_probe_load(_bringup_probe_cfg)
    except Exception:
        _bringup_probe_finish = None
_bringup_probe_origin, _bringup_probe_error = _bringup_probe_chain()
if _bringup_probe_finish is not None:
    _bringup_probe_finish(_bringup_probe_origin, _bringup_probe_error)
if _bringup_probe_error is not None:
    raise _bringup_probe_error
