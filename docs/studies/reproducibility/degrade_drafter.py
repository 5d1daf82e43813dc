"""A genuinely weaker drafter for the gate's detection check: a copy of a drafter with noise added to its weights.

The copy keeps the architecture, tokenizer and config, so the engine serves it exactly as the original; only its
predictions are worse, so its acceptance falls. The noise is seeded and scaled to each tensor's own spread.

    .venv/bin/python docs/studies/reproducibility/degrade_drafter.py build/fixtures/tiny-qwen3-eagle3 \\
        build/drafters/eagle3-noisy
"""

from __future__ import annotations

import argparse
import shutil
from pathlib import Path

import torch
from safetensors.torch import load_file, save_file


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("source", type=Path)
    parser.add_argument("target", type=Path)
    parser.add_argument("--scale", type=float, default=0.5, help="noise sd as a fraction of each tensor's sd")
    args = parser.parse_args()
    shutil.rmtree(args.target, ignore_errors=True)
    shutil.copytree(args.source, args.target)
    generator = torch.Generator().manual_seed(0)
    for path in args.target.glob("*.safetensors"):
        tensors = load_file(str(path))
        noisy = {}
        for name, tensor in tensors.items():
            if tensor.is_floating_point() and tensor.numel() > 1:
                spread = tensor.float().std()
                noise = torch.randn(tensor.shape, generator=generator) * spread * args.scale
                noisy[name] = (tensor.float() + noise).to(tensor.dtype)
            else:
                noisy[name] = tensor
        save_file(noisy, str(path), metadata={"format": "pt"})
    print(f"{args.target}: weights of {args.source} with noise at {args.scale} of each tensor's sd")


if __name__ == "__main__":
    main()
