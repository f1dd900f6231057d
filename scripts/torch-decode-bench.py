#!/usr/bin/env python3
"""The decode step of Hugging Face transformers' LlamaForCausalLM on the GPU, for comparison with
cudagraph's decoder on the same model (bench/serve.ts runs it beside bench/serve-step.ts).

Usage:
  python3 scripts/torch-decode-bench.py MODEL_DIR OUT_JSON [--batches 1,4,16] [--position 128]
      [--rounds 5] [--reps 40] [--modes eager,static,cuda-graph,compile] [--device cuda]

MODEL_DIR holds config.json (toHuggingFaceConfig) and model.safetensors (saveLlamaWeights). One
step is what cudagraph's step is: B sequences, each at position --position with that many
positions cached, one new token each; the token ids go in from the host, the greedy next tokens
come back to the host (so the time includes the wait for the GPU). The modes:

  eager       model(...) with transformers' default DynamicCache (what generate() uses), cropped
              back to --position after every step (outside the timed part);
  static      the same with a StaticCache of --position + 1 entries, the step written in place;
  cuda-graph  the static step and its argmax captured once in a torch.cuda.CUDAGraph and replayed
              (the static-buffer idiom: copy the ids in, replay, read the tokens out);
  compile     torch.compile(mode="reduce-overhead", fullgraph=True) of the static step (Inductor's
              kernels in a CUDA graph of its own), warmed up before timing.

Rounds interleave: in each round every batch size runs every mode for --reps steps; a mode's figure
is the median over rounds of each round's median. float32 weights, TF32 off (the matmuls in full
float32, as cudagraph's are), SDPA attention. A mode that fails (e.g. torch.compile without a
working compiler) is reported with its error and the others go on.

OUT_JSON receives {"torch", "transformers", "gpu", "position", "sameTokens" (every mode gave the
same next tokens at each batch size), "rows": [{"batch", "mode", "us",
"perRound", "tokens"}], "errors": {mode: message}}. Exit status: 0 done; 2 bad arguments; 3 torch or
transformers cannot be imported or no CUDA device.
"""
import argparse
import inspect
import json
import statistics
import sys
import time


def make_static_cache(transformers, config, batch, length, device):
    """A StaticCache for `batch` sequences of `length` positions (its arguments differ by version)."""
    wanted = {"config": config, "max_cache_len": length, "max_batch_size": batch, "batch_size": batch,
              "device": device, "dtype": None}
    import torch
    wanted["dtype"] = torch.float32
    params = inspect.signature(transformers.StaticCache.__init__).parameters
    return transformers.StaticCache(**{k: v for k, v in wanted.items() if k in params})


def rewind(cache, length):
    """Makes a StaticCache's next write go to position `length` again. transformers 5 counts the
    positions written in each layer (cumulative_length) instead of using cache_position; earlier
    versions write at cache_position and have nothing to rewind."""
    for layer in getattr(cache, "layers", []):
        n = getattr(layer, "cumulative_length", None)
        if hasattr(n, "fill_"):
            n.fill_(length)
        elif isinstance(n, int):
            layer.cumulative_length = length
        if isinstance(getattr(layer, "cumulative_length_int", None), int):
            layer.cumulative_length_int = length


def main(argv=None):
    p = argparse.ArgumentParser(prog="torch-decode-bench.py", description="transformers' Llama decode step on the GPU.")
    p.add_argument("model")
    p.add_argument("out")
    p.add_argument("--batches", default="1,4,16")
    p.add_argument("--position", type=int, default=128)
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--reps", type=int, default=40)
    p.add_argument("--modes", default="eager,static,cuda-graph,compile")
    p.add_argument("--device", default="cuda")
    args = p.parse_args(argv)
    try:
        batches = [int(b) for b in args.batches.split(",")]
    except ValueError:
        batches = []
    modes = args.modes.split(",")
    unknown = [m for m in modes if m not in ("eager", "static", "cuda-graph", "compile")]
    if not batches or any(b < 1 for b in batches) or unknown or args.position < 1 or args.rounds < 1 or args.reps < 1:
        print("torch-decode-bench.py: --batches takes positive integers, --modes eager,static,cuda-graph,compile; "
              "--position, --rounds and --reps are positive", file=sys.stderr)
        return 2
    try:
        import torch
        import transformers
        from transformers import DynamicCache, LlamaForCausalLM
    except ImportError as e:
        print(f"torch-decode-bench.py: {e}; install PyTorch and transformers", file=sys.stderr)
        return 3
    device = torch.device(args.device)
    if device.type == "cuda" and not torch.cuda.is_available():
        print("torch-decode-bench.py: no CUDA device", file=sys.stderr)
        return 3
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    model = LlamaForCausalLM.from_pretrained(args.model, dtype=torch.float32, attn_implementation="sdpa")
    model = model.to(device).eval()
    P = args.position
    sync = torch.cuda.synchronize if device.type == "cuda" else (lambda: None)

    def prompt(batch):
        # Sequence i is the bytes 65 + i, 66 + i, ... (any fixed tokens: the step's cost does not depend on them).
        return torch.tensor([[(65 + i + t) % 256 for t in range(P)] for i in range(batch)], dtype=torch.long, device=device)

    def static_step(batch):
        """(step function taking host token ids -> host next tokens, cache) with a StaticCache."""
        cache = make_static_cache(transformers, model.config, batch, P + 1, device)
        model(input_ids=prompt(batch), past_key_values=cache, cache_position=torch.arange(P, device=device), use_cache=True)
        pos = torch.full((1,), P, dtype=torch.long, device=device)
        pos_ids = torch.full((batch, 1), P, dtype=torch.long, device=device)
        return cache, pos, pos_ids

    errors = {}
    steps = {}  # (batch, mode) -> callable(ids_host: torch.Tensor) -> next tokens (host)
    with torch.no_grad():
        for B in batches:
            for mode in modes:
                try:
                    if mode == "eager":
                        cache = DynamicCache()
                        model(input_ids=prompt(B), past_key_values=cache, use_cache=True)

                        def run(ids, cache=cache):
                            logits = model(input_ids=ids.to(device), past_key_values=cache, use_cache=True).logits
                            out = torch.argmax(logits[:, -1, :], dim=-1).cpu()
                            return out

                        def after(cache=cache):
                            cache.crop(-1)  # drop the token the step added
                        steps[(B, mode)] = (run, after)
                    elif mode == "static":
                        cache, pos, pos_ids = static_step(B)

                        def run(ids, cache=cache, pos=pos, pos_ids=pos_ids):
                            logits = model(input_ids=ids.to(device), past_key_values=cache, cache_position=pos,
                                           position_ids=pos_ids, use_cache=True).logits
                            return torch.argmax(logits[:, -1, :], dim=-1).cpu()
                        steps[(B, mode)] = (run, lambda cache=cache: rewind(cache, P))
                    elif mode == "cuda-graph":
                        cache, pos, pos_ids = static_step(B)
                        ids_in = torch.full((B, 1), 65, dtype=torch.long, device=device)

                        def body(cache=cache, pos=pos, pos_ids=pos_ids, ids_in=ids_in):
                            logits = model(input_ids=ids_in, past_key_values=cache, cache_position=pos,
                                           position_ids=pos_ids, use_cache=True).logits
                            return torch.argmax(logits[:, -1, :], dim=-1)
                        side = torch.cuda.Stream()
                        side.wait_stream(torch.cuda.current_stream())
                        with torch.cuda.stream(side):
                            for _ in range(3):
                                body()
                                rewind(cache, P)
                        torch.cuda.current_stream().wait_stream(side)
                        graph = torch.cuda.CUDAGraph()
                        with torch.cuda.graph(graph):
                            tokens_out = body()
                        rewind(cache, P)

                        def run(ids, graph=graph, ids_in=ids_in, tokens_out=tokens_out):
                            ids_in.copy_(ids)
                            graph.replay()
                            return tokens_out.cpu()
                        steps[(B, mode)] = (run, lambda cache=cache: rewind(cache, P))
                    elif mode == "compile":
                        cache, pos, pos_ids = static_step(B)
                        fwd = torch.compile(model.forward, mode="reduce-overhead", fullgraph=True)

                        def run(ids, cache=cache, pos=pos, pos_ids=pos_ids, fwd=fwd):
                            logits = fwd(input_ids=ids.to(device), past_key_values=cache, cache_position=pos,
                                         position_ids=pos_ids, use_cache=True).logits
                            return torch.argmax(logits[:, -1, :], dim=-1).cpu()
                        t = time.perf_counter()
                        for _ in range(4):
                            run(torch.full((B, 1), 65, dtype=torch.long))
                            rewind(cache, P)
                        print(f"torch-decode-bench.py: compiled B={B} in {time.perf_counter() - t:.1f} s", file=sys.stderr)
                        steps[(B, mode)] = (run, lambda cache=cache: rewind(cache, P))
                except Exception as e:  # a mode that does not work here is reported, the rest go on
                    errors[f"{mode} B={B}"] = f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"

        per_round = {key: [] for key in steps}
        tokens = {}
        for _ in range(args.rounds):
            for B in batches:
                ids = torch.full((B, 1), 65, dtype=torch.long)
                for mode in modes:
                    if (B, mode) not in steps:
                        continue
                    run, after = steps[(B, mode)]
                    xs = []
                    for _ in range(args.reps):
                        sync()
                        t = time.perf_counter_ns()
                        out = run(ids)
                        xs.append((time.perf_counter_ns() - t) / 1000)
                        if after is not None:
                            after()
                    tokens[(B, mode)] = out.tolist()
                    per_round[(B, mode)].append(statistics.median(xs))

    rows = [{"batch": B, "mode": mode, "us": statistics.median(v), "perRound": v, "tokens": tokens[(B, mode)]}
            for (B, mode), v in per_round.items()]
    # Every mode runs the same computation on the same cache: they should agree on the tokens.
    same = all(len({json.dumps(r["tokens"]) for r in rows if r["batch"] == B}) <= 1 for B in batches)
    gpu = torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu"
    with open(args.out, "w", encoding="utf-8") as f:
        json.dump({"torch": torch.__version__, "transformers": transformers.__version__, "gpu": gpu, "position": P,
                   "sameTokens": same, "rows": rows, "errors": errors}, f, indent=1)
    for r in rows:
        print(f"  torch {r['mode']:<10} B={r['batch']:>2}  {r['us']:8.1f} µs a step  ({r['us'] / r['batch']:.1f} µs a token)")
    print(f"  torch: every mode gives the same tokens: {same}")
    for k, v in errors.items():
        print(f"  torch {k}: failed: {v}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
