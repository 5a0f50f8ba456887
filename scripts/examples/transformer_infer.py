"""Generate tokens with a small GPT-style transformer: inference, no optimizer.

Each generated token runs inside `record_function("decode_step")`. `traceanalyze capture
scripts/examples/transformer_infer.py` records the whole run (there is no optimizer step); either of
these records a window of it:

    traceanalyze capture --steps-from decode_step scripts/examples/transformer_infer.py -- --steps 20
    traceanalyze capture --duration 2 scripts/examples/transformer_infer.py -- --steps 200
"""

import argparse

import torch
from torch.profiler import record_function

from tiny_transformer import TinyGPT


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=20, help="tokens to generate")
    parser.add_argument("--batch-size", type=int, default=4)
    parser.add_argument("--prompt", type=int, default=16, help="prompt length")
    parser.add_argument("--vocab", type=int, default=512)
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    args = parser.parse_args()

    torch.manual_seed(0)
    device = torch.device(args.device)
    model = TinyGPT(vocab=args.vocab, context=64).to(device).eval()
    tokens = torch.randint(0, args.vocab, (args.batch_size, args.prompt), device=device)

    with torch.inference_mode():
        for _ in range(args.steps):
            with record_function("decode_step"):
                window = tokens[:, -model.context :]
                logits = model(window)[:, -1]
                next_token = logits.argmax(dim=-1, keepdim=True)
                tokens = torch.cat([tokens, next_token], dim=1)
    print(f"generated {args.steps} tokens: {tokens[0, -8:].tolist()}")


if __name__ == "__main__":
    main()
