class OperatorIssue:
    @staticmethod
    def operator_str(target, args, kwargs):
        lines = [f"target: {target}"]
        for i, arg in enumerate(args):
            lines.append(f"args[{i}]: {arg}")
        return "\n".join(lines)
