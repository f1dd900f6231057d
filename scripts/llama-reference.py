#!/usr/bin/env python3
"""The logits Hugging Face transformers' LlamaForCausalLM gives for token sequences, to check
cudagraph's decoder against (its CPU reference and its GPU engines).

Usage:
  python3 scripts/llama-reference.py MODEL_DIR SEQUENCES_JSON OUT_JSON [--all-positions] [--device DEV]

MODEL_DIR holds config.json (written from toHuggingFaceConfig) and model.safetensors (written by
saveLlamaWeights). SEQUENCES_JSON is a list of token sequences, e.g. [[256, 72, 105], [256]].
OUT_JSON receives

  {"transformers": "4.57.1", "torch": "2.8.0", "device": "cuda:0", "positions": "last",
   "results": [{"tokens": [256, 72, 105], "next": 42, "logits": [0.12, -1.5, ...]}, ...]}

one result per sequence, in order: "logits" is the last position's row (vocab floats), or with
--all-positions one row per position; "next" is the greedy next token (the first maximum).

The model runs in float32 with eager attention and TF32 off, one sequence at a time (no padding,
no cache), so what is left between it and an exact computation is float32 rounding. The floats
are written with repr, which reads back as the same float32.

Exit status: 0 done; 2 bad arguments or a bad SEQUENCES_JSON; 3 torch or transformers cannot be
imported (the message says which).
"""
import argparse
import json
import sys


def read_sequences(path):
    """The token sequences in `path`, or an error message."""
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except (OSError, ValueError) as e:
        return None, f"cannot read {path}: {e}"
    ok = isinstance(data, list) and all(
        isinstance(s, list) and len(s) > 0 and all(isinstance(t, int) and not isinstance(t, bool) and t >= 0 for t in s)
        for s in data
    )
    if not ok:
        return None, f"{path} must hold a list of non-empty lists of token ids (non-negative integers)"
    return data, None


def version_at_least(version, major, minor):
    """True when a version string such as '4.57.0.dev0' is at least major.minor."""
    parts = []
    for piece in version.split(".")[:2]:
        digits = "".join(c for c in piece if c.isdigit())
        parts.append(int(digits) if digits else 0)
    return tuple(parts) >= (major, minor)


def main(argv=None):
    parser = argparse.ArgumentParser(
        prog="llama-reference.py",
        description="Logits of transformers' LlamaForCausalLM (float32, eager attention) for token sequences.",
    )
    parser.add_argument("model", help="directory with config.json and model.safetensors")
    parser.add_argument("sequences", help="JSON file: a list of token sequences")
    parser.add_argument("out", help="JSON file to write the logits to")
    parser.add_argument("--all-positions", action="store_true", help="the logits of every position, not only the last")
    parser.add_argument("--device", default=None, help="torch device (default: cuda when available, else cpu)")
    args = parser.parse_args(argv)

    sequences, problem = read_sequences(args.sequences)
    if problem is not None:
        print(f"llama-reference.py: {problem}", file=sys.stderr)
        return 2

    try:
        import torch
    except ImportError as e:
        print(f"llama-reference.py: torch is not importable ({e}); install PyTorch and transformers", file=sys.stderr)
        return 3
    try:
        import transformers
        from transformers import LlamaForCausalLM
    except ImportError as e:
        print(f"llama-reference.py: transformers is not importable ({e}); pip install transformers", file=sys.stderr)
        return 3

    device = args.device or ("cuda" if torch.cuda.is_available() else "cpu")
    # TF32 would round the matmuls' inputs to 10-bit mantissas: far more than float32's rounding.
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    # transformers 4.56 renamed from_pretrained's torch_dtype to dtype.
    dtype_key = "dtype" if version_at_least(transformers.__version__, 4, 56) else "torch_dtype"
    model = LlamaForCausalLM.from_pretrained(args.model, attn_implementation="eager", **{dtype_key: torch.float32})
    model = model.to(device).eval()

    results = []
    with torch.no_grad():
        for tokens in sequences:
            ids = torch.tensor([tokens], dtype=torch.long, device=device)
            logits = model(input_ids=ids, use_cache=False).logits[0].float()
            last = logits[-1]
            results.append({
                "tokens": tokens,
                "next": int(torch.argmax(last).item()),
                "logits": (logits if args.all_positions else last).tolist(),
            })
    with open(args.out, "w", encoding="utf-8") as f:
        json.dump({
            "transformers": transformers.__version__,
            "torch": torch.__version__,
            "device": str(device),
            "positions": "all" if args.all_positions else "last",
            "results": results,
        }, f)
    return 0


if __name__ == "__main__":
    sys.exit(main())
