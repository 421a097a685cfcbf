#!/usr/bin/env bash
# The judge on a GPU, in one prepared run of at most 8 minutes: randomly initialised models of
# public shapes (SmolLM2-135M, Qwen2.5-1.5B, Llama-3-8B) in bf16, the naive recipe beside, and
# the table of docs/performance.md (comparisons/s, prompt tokens/s, MFU, GPU peak memory, max
# |dp| against the naive recipe); then four aspects in one pass against one aspect, and the
# tiny model's host time per comparison on the device.
#
#   benchmarks/gpu_check.sh                                  # on a machine with a GPU
#   benchmarks/gpu_check.sh --smoke                          # the tiny shape on CPU: runs, no crash
#   benchmarks/gpu_check.sh --tokenizer DIR --data-dir DIR   # a tokenizer folder / the CSVs
#
# --tokenizer: a tokenizer folder (default: the bundled judge's, from its GGUF; a machine without
# it needs one, e.g. the converted folder's tokenizer files copied over). --data-dir: a folder
# with summeval.csv and topicalchat_usr.csv (default ../shared/data; without it the app's SummEval
# sample is used). PYTHON: the interpreter (default .venv/bin/python, else python3). Each step
# has its own time limit, so the whole stays within 8 minutes; a step that fails or runs out of
# time says so and the rest still runs.
set -uo pipefail
cd "$(dirname "$0")/.."

DEVICE=cuda
SMOKE=0
TOKENIZER=""
DATA_DIR="../shared/data"
while [ $# -gt 0 ]; do
  case "$1" in
    --smoke) SMOKE=1; DEVICE=cpu ;;
    --device) DEVICE="$2"; shift ;;
    --tokenizer) TOKENIZER="$2"; shift ;;
    --data-dir) DATA_DIR="$2"; shift ;;
    -h|--help) sed -n '2,17p' "$0"; exit 0 ;;
    *) echo "gpu_check.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
  shift
done

if [ -n "${PYTHON:-}" ]; then PY="$PYTHON"
elif [ -x .venv/bin/python ]; then PY=.venv/bin/python
else PY=python3; fi
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"

WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
if [ -z "$TOKENIZER" ]; then
  TOKENIZER=$("$PY" - <<'EOF'
from compassess_core.judges.loading import convert_gguf
from compassess_core.judges.models import cached_sha256, default_model_path
gguf = default_model_path()
if not gguf.is_file():
    raise SystemExit(f"no tokenizer: {gguf} is absent; give --tokenizer DIR")
print(convert_gguf(gguf, cached_sha256(gguf)))
EOF
  ) || exit 1
fi
if [ ! -f "$DATA_DIR/summeval.csv" ]; then
  echo "($DATA_DIR/summeval.csv absent: SummEval shape from assets/sample_summeval.csv; no TopicalChat)"
  DATA_DIR="$WORK/data"
  mkdir -p "$DATA_DIR"
  cp assets/sample_summeval.csv "$DATA_DIR/summeval.csv"
fi
DATASETS=summeval
[ -f "$DATA_DIR/topicalchat_usr.csv" ] && DATASETS=summeval,topicalchat

step() {  # step SECONDS DESCRIPTION COMMAND...
  local limit=$1 what=$2; shift 2
  echo
  echo "## $what"
  local t0=$SECONDS
  timeout "$limit" "$@"
  local rc=$?
  if [ $rc -eq 124 ]; then echo "(stopped after ${limit} s: out of its time)";
  elif [ $rc -ne 0 ]; then echo "(failed with exit status $rc)"; fi
  echo "(${what}: $((SECONDS - t0)) s)"
}

echo "# gpu_check.sh $(date -u +%Y-%m-%dT%H:%MZ) device=$DEVICE smoke=$SMOKE"
"$PY" -c "import torch, transformers; print('torch', torch.__version__, 'transformers', transformers.__version__,
      '|', torch.cuda.get_device_name() if torch.cuda.is_available() else 'no GPU')"
command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader

JT=(benchmarks/judge_throughput.py --tokenizer "$TOKENIZER" --data-dir "$DATA_DIR" --device "$DEVICE")
HO=(benchmarks/host_overhead.py --tokenizer "$TOKENIZER" --data-dir "$DATA_DIR" --device "$DEVICE")
if [ "$SMOKE" = 1 ]; then
  step 240 "tiny shape, engine and naive recipe" "$PY" "${JT[@]}" --random-init tiny-llama \
    --dtype bf16 --datasets "$DATASETS" --contexts 1 --candidates 4 --naive-per-context 4 --batch-size 0
  step 240 "tiny shape: one and four aspects, host time per comparison" "$PY" "${HO[@]}" \
    --dtype bf16 --datasets summeval --candidates 4 --aspects 1,4 --repeat 1 --naive-per-context 4 --profile
  exit 0
fi
# Budget (H100/H200): about 60 + 110 + 150 + 70 + 50 s of the 480.
step 75 "SmolLM2-135M shape, bf16, sized batches" "$PY" "${JT[@]}" --random-init smollm2-135m \
  --dtype bf16 --datasets "$DATASETS" --contexts 2 --batch-size 0 --naive-per-context 12
step 120 "Qwen2.5-1.5B shape, bf16, sized batches" "$PY" "${JT[@]}" --random-init qwen2.5-1.5b \
  --dtype bf16 --datasets "$DATASETS" --contexts 2 --batch-size 0 --naive-per-context 12
step 160 "Llama-3-8B shape, bf16, sized batches" "$PY" "${JT[@]}" --random-init llama3-8b \
  --dtype bf16 --datasets "$DATASETS" --contexts 2 --batch-size 0 --naive-per-context 8
step 75 "Qwen2.5-1.5B shape, bf16: four aspects in one pass against one" "$PY" "${HO[@]}" \
  --shape qwen2.5-1.5b --dtype bf16 --datasets summeval --aspects 1,4 --repeat 1 \
  --batch-size 0 --naive-per-context 8
step 50 "tiny model: host time per comparison on the device, with a profile" "$PY" "${HO[@]}" \
  --dtype bf16 --aspects 1,4 --repeat 2 --batch-size 0 --naive-per-context 16 --profile
