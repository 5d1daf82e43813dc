"""Small real checkpoints for the predictors' tests: safetensors files whose headers carry the shapes a model reads."""

from __future__ import annotations

import json
from pathlib import Path


def write_checkpoint(root: Path, *, wide: int = 16384, hidden: int = 128) -> Path:
    """A DeepSeek-shaped checkpoint: one wide dense layer (large), 4 experts in layer 1 (one large), an MTP layer 2."""
    import torch
    from safetensors.torch import save_file

    root.mkdir(parents=True, exist_ok=True)
    (root / "config.json").write_text(json.dumps({"num_hidden_layers": 2, "n_routed_experts": 4,
                                                  "num_experts_per_tok": 1, "hidden_size": hidden}))
    bf16 = torch.bfloat16
    tensors = {
        "model.embed_tokens.weight": torch.zeros(wide, hidden, dtype=bf16),          # large, but a lookup
        "model.layers.0.mlp.gate_proj.weight": torch.zeros(wide, hidden, dtype=bf16),  # 4 MiB: streamed
        "model.layers.0.mlp.down_proj.weight": torch.zeros(hidden, wide, dtype=bf16),
        "model.layers.0.self_attn.o_proj.weight": torch.zeros(hidden, hidden, dtype=bf16),  # small: overhead
        "model.layers.1.mlp.experts.0.up_proj.weight": torch.zeros(wide, hidden, dtype=bf16),
        "model.layers.2.mlp.gate_proj.weight": torch.zeros(wide, hidden, dtype=bf16),  # past num_hidden_layers
        "model.layers.0.input_layernorm.weight": torch.zeros(hidden, dtype=bf16),
    }
    save_file(tensors, str(root / "model.safetensors"))
    return root
