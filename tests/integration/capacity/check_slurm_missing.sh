#!/usr/bin/env bash
# `servelab run --slurm` where Slurm is not installed (no sbatch on PATH): a clear error, exit
# status 2, and nothing submitted or written beyond the output folder.
#   check_slurm_missing.sh SERVELAB_BINARY SOURCE_DIR
set -euo pipefail
BIN=$1
SRC=$2
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
set +e
env PATH=/nonexistent "$BIN" run "$SRC/experiments/rafiqi/concurrency-paper.yaml" \
  --out "$WORK/out" --slurm 2> "$WORK/err"
status=$?
set -e
[ "$status" = 2 ] || { echo "exit status $status, expected 2"; cat "$WORK/err"; exit 1; }
grep -q "Slurm is not installed here" "$WORK/err"
[ ! -e "$WORK/out/results.db" ]
echo "slurm missing: refused with a clear error"
