import time


class ExternKernel:
    """Prints its inputs recursively, like Inductor's IR nodes."""

    def __init__(self, depth):
        self.depth = depth

    def __str__(self):
        if self.depth == 0:
            while True:  # formatting a huge IR: no output, no end in sight
                time.sleep(0.05)
        return "ExternKernel(" + str(ExternKernel(self.depth - 1)) + ")"
