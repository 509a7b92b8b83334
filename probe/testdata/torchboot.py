# Seed 000's chain on the CPU with real torch.compile (reference/probe.md
# §1.4): a graph break inside the decoder-layer loop skips the model's frame,
# so each layer's forward is compiled as its own root; with every guard
# dropped (vLLM's guard_filter_fn), layer 1 runs the code compiled for
# layer 0, whose prologue loads a parameter of a child layer 1 does not
# have. The KeyError reports the def line of Layer.forward.
import torch


class KDA(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.in_proj_qkvbfg_a = torch.nn.Linear(4, 4)

    def forward(self, x):
        return self.in_proj_qkvbfg_a(x)


class MLA(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.q_proj = torch.nn.Linear(4, 4)

    def forward(self, x):
        return self.q_proj(x)


class Layer(torch.nn.Module):
    def __init__(self, kda, layer_idx):
        super().__init__()
        self.layer_idx = layer_idx
        self.self_attn = KDA() if kda else MLA()

    def forward(self, x):
        return self.self_attn(x) + 1


class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = torch.nn.ModuleList([Layer(True, 0), Layer(False, 1)])

    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
            torch._dynamo.graph_break()
        return x


model = torch.compile(Model(), backend="eager", options={"guard_filter_fn": torch.compiler.skip_all_guards_unsafe})
model(torch.randn(2, 4))
