"""Stand-in for torch/_inductor/exc.py (test target, not torch)."""


class OperatorIssue:
    @staticmethod
    def operator_str(target, args, kwargs):
        lines = [f"target: {target}"]
        for i, a in enumerate(args):
            lines.append(f"args[{i}]: {a}")
        return "\n".join(lines)
