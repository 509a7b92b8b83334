"""2 ranks (torchrun, gloo) each compile a tiny transformer block with Inductor."""
# testbed: ranks=2 logs=dynamo,inductor timeout=900
#
# init_process_group runs before the first compile, so each rank's TORCH_TRACE
# file is named dedicated_log_torch_trace_rank_<N>_*.log. The block's output is
# all-reduced in eager mode, as a tensor-parallel layer would. TORCH_LOGS=dynamo,inductor
# prints Dynamo's and Inductor's INFO progress lines ("Step 1: torchdynamo start
# tracing ...", "Step 3: torchinductor compiling FORWARDS graph 0") on each rank.
import os
import sys

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(__file__))
from _common import banner  # noqa: E402


class Block(nn.Module):
    def __init__(self, dim=32, heads=2):
        super().__init__()
        self.heads = heads
        self.norm1 = nn.LayerNorm(dim)
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)
        self.norm2 = nn.LayerNorm(dim)
        self.up = nn.Linear(dim, 4 * dim)
        self.down = nn.Linear(4 * dim, dim)

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(self.norm1(x)).chunk(3, dim=-1)
        q, k, v = (z.view(b, t, self.heads, d // self.heads).transpose(1, 2) for z in (q, k, v))
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(a.transpose(1, 2).reshape(b, t, d))
        return x + self.down(F.gelu(self.up(self.norm2(x))))


def main():
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    if rank == 0:
        banner("tp2_block")
    torch.manual_seed(0)
    model = Block().eval()
    compiled = torch.compile(model, backend="inductor")
    x = torch.randn(2, 8, 32)
    with torch.no_grad():
        out = compiled(x)
        dist.all_reduce(out)
        ref = model(x)
        dist.all_reduce(ref)
    torch.testing.assert_close(out, ref, rtol=1e-4, atol=1e-4)
    print(f"rank {rank}: compiled block ok, out.sum()={out.sum().item():.4f}", flush=True)
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
