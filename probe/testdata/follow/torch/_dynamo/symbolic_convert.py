# Dynamo's interpreter, as far as the probe can tell: it calls what it
# traces, and catches what escapes.
def trace(fn):
    try:
        return fn()
    except KeyError:
        return None
