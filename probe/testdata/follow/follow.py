# Three KeyErrors raised while "Dynamo traces" (torch here is the stand-in
# next to this file): one caught inside the library, one raised in the
# library that reaches this file's frame and is caught there, one raised
# in this file.
import torch.config
from torch._dynamo import symbolic_convert


def caught_in_library():
    return torch.config.get_or_none("lib_caught")


def reaches_user():
    try:
        return torch.config.get("user_reached")
    except KeyError:
        return None


def raised_by_user():
    return {}["user_raised"]


for fn in (caught_in_library, reaches_user, raised_by_user):
    symbolic_convert.trace(fn)
print("done")
