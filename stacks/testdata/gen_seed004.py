"""Writes the SYNTHETIC py-spy dumps of the seed-004 hang (see README.md).

No public dump of the Inductor implicit-fallback operator_str hang exists
(../shared/corpus/stackdumps/MANIFEST.md), so these are synthesised from
the frame list in signatures.md §5.1 and the ATOM PR in seeds/004: eight
vLLM workers (VLLM::Worker_TP0..7, Python 3.12, py-spy 0.4 text format),
each main thread in GraphLowering.call_function -> OperatorIssue.operator_str
-> ExternKernel.__str__ / MutableBox.__str__ nested to a depth that differs
per rank and per snapshot. py-spy prints co_name, so every level reads
"__str__ (torch/_inductor/ir.py:LINE)".

Run: python3 gen_seed004.py   (rewrites seed004-*/)
"""
import os

HERE = os.path.dirname(os.path.abspath(__file__))

ROOT = [
    ("operator_str", "torch/_inductor/exc.py", 33),
    ("call_function", "torch/_inductor/graph.py", 1187),
    ("run_node", "torch/fx/interpreter.py", 240),
    ("run_node", "torch/_inductor/graph.py", 1447),
    ("run", "torch/fx/interpreter.py", 171),
    ("run", "torch/_inductor/graph.py", 950),
    ("_compile_fx_inner", "torch/_inductor/compile_fx.py", 1273),
    ("fx_codegen_and_compile", "torch/_inductor/compile_fx.py", 1478),
    ("codegen_and_compile", "torch/_inductor/compile_fx.py", 1105),
    ("compile_fx_inner", "torch/_inductor/compile_fx.py", 758),
    ("standalone_compile", "torch/_inductor/standalone_compile.py", 211),
    ("compile", "vllm/compilation/compiler_interface.py", 254),
    ("compile", "vllm/compilation/backends.py", 215),
    ("call_module", "vllm/compilation/backends.py", 497),
    ("run_node", "torch/fx/interpreter.py", 240),
    ("run", "torch/fx/interpreter.py", 171),
    ("__call__", "vllm/compilation/backends.py", 658),
    ("_fn", "torch/_dynamo/eval_frame.py", 929),
    ("forward", "vllm/model_executor/models/deepseek_v2.py", 1101),
    ("__call__", "vllm/compilation/decorators.py", 420),
    ("_dummy_run", "vllm/v1/worker/gpu_model_runner.py", 3342),
    ("profile_run", "vllm/v1/worker/gpu_model_runner.py", 3560),
    ("determine_available_memory", "vllm/v1/worker/gpu_worker.py", 265),
    ("run_method", "vllm/utils/__init__.py", 3007),
    ("worker_busy_loop", "vllm/v1/executor/multiproc_executor.py", 666),
    ("worker_main", "vllm/v1/executor/multiproc_executor.py", 599),
    ("run", "multiprocessing/process.py", 108),
    ("_bootstrap", "multiprocessing/process.py", 314),
    ("_main", "multiprocessing/spawn.py", 135),
    ("spawn_main", "multiprocessing/spawn.py", 122),
    ("<module>", "<string>", 1),
]

# Where the sampled innermost frame landed inside the recursion differs.
LEAVES = [
    [],
    [("str_helper", "torch/_inductor/ir.py", 553)],
    [("indent", "textwrap.py", 480), ("str_helper", "torch/_inductor/ir.py", 560)],
    [],
    [("<genexpr>", "torch/_inductor/ir.py", 6268)],
    [("str_helper", "torch/_inductor/ir.py", 553)],
    [],
    [("indent", "textwrap.py", 480), ("str_helper", "torch/_inductor/ir.py", 560)],
]

# One IR level: ExternKernel.__str__ -> TensorBox/StorageBox (MutableBox)
# __str__ -> the next ExternKernel; innermost first.
LEVEL = [
    ("__str__", "torch/_inductor/ir.py", 6270),  # ExternKernel.__str__
    ("__str__", "torch/_inductor/ir.py", 8950),  # MutableBox.__str__ (StorageBox)
    ("__str__", "torch/_inductor/ir.py", 8950),  # MutableBox.__str__ (TensorBox)
]


def dump(rank, pid, depth, leaf, collective=False):
    out = [f"Process {pid}: VLLM::Worker_TP{rank}", "Python v3.12.11 (/usr/bin/python3.12)", ""]
    out.append(f'Thread {pid} (active+gil): "MainThread"')
    if collective:
        frames = [
            ("all_reduce", "torch/distributed/distributed_c10d.py", 2813),
            ("wrapper", "torch/distributed/c10d_logger.py", 81),
            ("all_reduce", "vllm/distributed/device_communicators/cuda_communicator.py", 93),
            ("all_reduce", "vllm/distributed/parallel_state.py", 506),
            ("determine_available_memory", "vllm/v1/worker/gpu_worker.py", 281),
        ] + ROOT[23:]
        out[3] = f'Thread {pid} (idle): "MainThread"'
    else:
        frames = leaf + LEVEL * depth + ROOT
    for f, file, line in frames:
        out.append(f"    {f} ({file}:{line})")
    out.append(f'Thread {pid + 61} (idle): "ThreadPoolExecutor-0_0"')
    for f, file, line in [("wait", "threading.py", 355), ("get", "queue.py", 171),
                          ("_worker", "concurrent/futures/thread.py", 90),
                          ("run", "threading.py", 1012), ("_bootstrap_inner", "threading.py", 1075),
                          ("_bootstrap", "threading.py", 1032)]:
        out.append(f"    {f} ({file}:{line})")
    out.append(f"Thread {pid + 85} (idle)")
    return "\n".join(out) + "\n"


def write(dirname, depths, collective_rank=None):
    d = os.path.join(HERE, dirname)
    os.makedirs(d, exist_ok=True)
    for rank in range(8):
        pid = 31416 + rank * 7
        text = dump(rank, pid, depths[rank], LEAVES[rank], collective=(rank == collective_rank))
        with open(os.path.join(d, f"worker_TP{rank}.txt"), "w") as f:
            f.write(text)


write("seed004-snap1", [37, 24, 31, 40, 28, 33, 26, 35])
write("seed004-snap2", [41, 27, 34, 46, 30, 38, 29, 39])
write("seed004-straggler", [37, 24, 31, 40, 28, 33, 26, 35], collective_rank=5)
