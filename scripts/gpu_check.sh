#!/usr/bin/env bash
# The CUDA path end to end on a real GPU: `traceanalyze capture` on the example scripts (small and
# large, fp32 and bf16, eager and torch.compile, training and inference), the JSON and Markdown
# reports of each trace, and `calibrate --quick`. Everything lands in $OUT (a tar of the traces,
# reports and logs, plus this script's summary).
#
# On the device machine of this workplace (no package index there), carry the wheels that its
# Python lacks (polars, polars-runtime-32, msgspec, isal, typer, click: see `.whl` below) and run
#     bash scripts/gpu_check.sh
# Elsewhere: GPU_CHECK_WHEELS= PY=python OUT=/tmp/gpu-out bash scripts/gpu_check.sh
# GPU_CHECK_CASES="ddp_nccl calibrate" runs only the named cases (the names below; `whatif`: the
# replay's before/after pairs, scripts/whatif_check.py; `sweep_mlp sweep_transformer`: the scaling sweeps alone).
set -u
export PYTHONUNBUFFERED=1 COLUMNS=120
REPO=$PWD
OUT=${OUT:-$REPO/gpu-out}
PY=${PY:-python3}
WORK=$(mktemp -d)
mkdir -p "$OUT"

if [ -n "${GPU_CHECK_WHEELS-.whl}" ]; then
    $PY -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site \
        "${GPU_CHECK_WHEELS-.whl}"/*.whl || exit 1
    export PYTHONPATH=/tmp/site:$REPO
    if $PY setup.py -q build_ext --inplace >"$WORK/build.log" 2>&1; then echo "native: built"; else
        echo "native: build failed (build.log), the msgspec and polars paths"; fi
fi
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv 2>&1 | tee "$WORK/nvidia-smi.txt"
$PY - <<'EOF' 2>&1 | tee "$WORK/versions.txt"
import polars, torch
from traceanalyze.load import columnar
gpu = torch.cuda.get_device_name() if torch.cuda.is_available() else "no GPU"
print("torch", torch.__version__, "cuda", torch.version.cuda, gpu, "| polars", polars.__version__, "| native", columnar.available())
EOF

want() { [ -z "${GPU_CHECK_CASES-}" ] || [[ " $GPU_CHECK_CASES " == *" $1 "* ]]; }

# name, seconds allowed, then capture's arguments
capture() {
    want "$1" || return 0
    local name=$1 limit=$2
    shift 2
    local start=$SECONDS
    timeout "$limit" $PY -m traceanalyze capture -o "$WORK/$name" "$@" >"$WORK/$name.log" 2>&1
    local rc=$?
    echo "=== $name: rc $rc, $((SECONDS - start)) s: capture $*"
    if [ -f "$WORK/$name/trace.json.gz" ]; then
        $PY -m traceanalyze report "$WORK/$name/trace.json.gz" --format json --no-cache -o "$WORK/$name/report.json" 2>&1 | tail -3
        $PY -m traceanalyze report "$WORK/$name/trace.json.gz" --format markdown --no-cache -o "$WORK/$name/report.md" 2>&1 | tail -3
        $PY -m traceanalyze report "$WORK/$name/trace.json.gz" --no-cache 2>&1 | head -22
    else
        tail -20 "$WORK/$name.log"
    fi
}

EX=scripts/examples
capture mlp_small 120 $EX/mlp_train.py -- --steps 20
capture mlp_fp32_large 120 $EX/mlp_train.py -- --steps 12 --hidden 4096 --batch-size 4096
capture transformer_bf16 120 $EX/transformer_train.py -- --steps 20 --amp --width 1024 --context 512 --batch-size 16
capture transformer_compiled 200 $EX/transformer_train.py -- --steps 20 --amp --compile --width 512 --context 256
capture convnet_channels_last 120 $EX/convnet_train.py -- --steps 20 --channels-last --batch-size 128
capture transformer_cuda_graphs 240 $EX/transformer_train.py -- --steps 20 --amp --compile-mode reduce-overhead --width 512 --context 256
capture decode 120 --steps-from decode_step $EX/transformer_infer.py -- --steps 40
capture ddp_nccl 120 $EX/ddp_train.py -- --steps 20

# the essay's test for overhead (docs/scaling.md): `capture --sweep` of the MLP and the transformer at three
# batch sizes each, the scaling report in the log and as HTML; name, seconds allowed, then capture's arguments
sweep() {
    want "$1" || return 0
    local name=$1 limit=$2
    shift 2
    local start=$SECONDS
    timeout "$limit" $PY -m traceanalyze capture -o "$WORK/$name" "$@" >"$WORK/$name.log" 2>&1
    echo "=== $name: rc $?, $((SECONDS - start)) s: capture $*"
    sed -n '/^VERDICT/,/^TIMES PER STEP/p' "$WORK/$name.log" | head -40
    if [ -f "$WORK/$name/scaling.json" ]; then
        $PY -m traceanalyze scaling "$WORK/$name"/*=*/trace.json.gz -f html --no-cache -o "$WORK/$name/scaling.html" 2>&1 | tail -3
    else
        tail -20 "$WORK/$name.log"
    fi
}
sweep sweep_mlp 240 $EX/mlp_train.py --sweep "--batch-size=64,512,4096" -- --steps 12 --hidden 4096
sweep sweep_transformer 300 $EX/transformer_train.py --sweep "--batch-size=2,8,32" -- --steps 12 --amp --width 1024 --context 512

# torch.utils.flop_counter's count of one training step of the two large models, for the FLOP model
want flop_counter && timeout 120 $PY - "$WORK/flop_counter.json" <<'EOF' 2>&1 | tail -5
import json, sys
import torch
from torch import nn
from torch.utils.flop_counter import FlopCounterMode
sys.path.insert(0, "scripts/examples")
from tiny_transformer import TinyGPT

device = "cuda" if torch.cuda.is_available() else "cpu"


def count(model, inputs, loss_of, amp):
    with FlopCounterMode(display=False) as counter:
        with torch.autocast(device, dtype=torch.bfloat16, enabled=amp):
            loss = loss_of(model(inputs))
        loss.backward()
    return {"total": counter.get_total_flops(),
            "by_op": {str(op): n for op, n in counter.get_flop_counts()["Global"].items()}}


torch.manual_seed(0)
out = {}
gpt = TinyGPT(vocab=512, width=1024, heads=32, context=512).to(device)
tokens = torch.randint(0, 512, (16, 513), device=device)
out["transformer_bf16"] = count(gpt, tokens[:, :-1], lambda logits: nn.functional.cross_entropy(
    logits.reshape(-1, 512).float(), tokens[:, 1:].reshape(-1)), True)
mlp = nn.Sequential(nn.Flatten(), nn.Linear(784, 4096), nn.ReLU(), nn.Linear(4096, 4096), nn.ReLU(),
                    nn.Linear(4096, 10)).to(device)
labels = torch.randint(0, 10, (4096,), device=device)
out["mlp_fp32_large"] = count(mlp, torch.randn(4096, 1, 28, 28, device=device),
                              lambda logits: nn.functional.cross_entropy(logits, labels), False)
json.dump(out, open(sys.argv[1], "w"), indent=1)
print({name: f"{entry['total'] / 1e12:.4f} TFLOP" for name, entry in out.items()})
EOF

if want calibrate; then
    start=$SECONDS
    timeout 200 $PY -m traceanalyze calibrate --quick --output "$WORK/device.json" --plot "$WORK/device.svg" \
        >"$WORK/calibrate.log" 2>&1
    echo "=== calibrate: rc $?, $((SECONDS - start)) s"
    tail -25 "$WORK/calibrate.log"
fi
if [ -f "$WORK/device.json" ] && [ -f "$WORK/mlp_fp32_large/trace.json.gz" ]; then
    $PY -m traceanalyze report "$WORK/mlp_fp32_large/trace.json.gz" --device-file "$WORK/device.json" --format json \
        --no-cache -o "$WORK/mlp_fp32_large/report_calibrated.json" 2>&1 | tail -3
fi

# the replay's predictions against real before/after pairs (docs/whatif.md): predictions.json is
# written from the before trace before any after run; measured.md is the table for the docs
if want whatif; then
    start=$SECONDS
    timeout 540 $PY scripts/whatif_check.py --size gpu --timeout 240 --out "$WORK/whatif" >"$WORK/whatif.log" 2>&1
    echo "=== whatif: rc $?, $((SECONDS - start)) s"
    tail -12 "$WORK/whatif.log"
fi

tar -C "$WORK" -czf "$OUT/gpu_check.tar.gz" .
ls -la "$OUT"
