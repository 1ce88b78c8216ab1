#!/usr/bin/env bash
# A sweep through a real one-node Slurm (scripts/slurm-local): `servelab run --slurm --wait`
# gives results identical, bit for bit, to a local run with the same seeds, also with several
# runs per array task; --resume submits only the runs whose folders lack a finished run.json. Exit 77 (CTest: skipped) where Slurm
# and munge are not installed.
#   check_slurm_sweep.sh SERVELAB_BINARY SOURCE_DIR
set -euo pipefail
BIN=$1
SRC=$2
if ! command -v slurmctld >/dev/null || ! command -v munged >/dev/null; then
  echo "skipped: Slurm (slurm-wlm) and munge are not installed"
  exit 77
fi
WORK=$(mktemp -d)
export SLURM_LOCAL_DIR=$WORK/slurm
export SLURM_LOCAL_CTLD_PORT=$((20000 + RANDOM % 5000)) SLURM_LOCAL_D_PORT=$((25000 + RANDOM % 5000))
trap 'bash "$SRC/scripts/slurm-local" stop; rm -rf "$WORK"' EXIT
export SLURM_CONF=$(bash "$SRC/scripts/slurm-local" start)
EXP=$SRC/experiments/rafiqi/concurrency-paper.yaml
ARGS=(--set workload.requests=200 --set 'workload.arrival.concurrency=[1,16]' --set repetitions=1
      --set 'seeds=[1]' -q)
cd "$WORK"
"$BIN" run "$EXP" --out local "${ARGS[@]}"
"$BIN" run "$EXP" --out cluster "${ARGS[@]}" --slurm --wait 2> submit.log
grep -q "6 of 6 runs submitted" submit.log

same() {  # every run's files and the index's rows (all but wall times) alike; $1: the folder
  local out=${1:-cluster}
  for d in local/runs/*/; do
    n=$(basename "$d")
    cmp local/runs/$n/summary.json $out/runs/$n/summary.json
    cmp local/runs/$n/requests.csv $out/runs/$n/requests.csv
  done
  q="select point_id, mode, repetition, seed, dir, status, summary from results order by run_id"
  diff <(sqlite3 local/results.db "$q") <(sqlite3 $out/results.db "$q")
  [ "$(sqlite3 $out/results.db "select count(*) from runs where status = 'ok'")" = 6 ]
}
same
# Four runs a task: 6 runs in 2 array tasks, the same results.
"$BIN" run "$EXP" --out grouped "${ARGS[@]}" --slurm --runs-per-task 4 --wait 2> grouped.log
grep -q "6 of 6 runs submitted as Slurm job array [0-9]* (2 tasks)" grouped.log
same grouped
# Two runs lost (a pre-empted task): --resume runs just those and merges again.
rm -rf cluster/runs/p000-sim-r0 cluster/runs/p004-sim-r0/run.json
"$BIN" run "$EXP" --out cluster "${ARGS[@]}" --slurm --resume --wait 2> resume.log
grep -q "2 of 6 runs submitted" resume.log
same
# The controller down: refused with Slurm's message, the finished results as they were.
bash "$SRC/scripts/slurm-local" stop
before=$(sqlite3 cluster/results.db "select count(*) from runs where status = 'ok'")
set +e
"$BIN" run "$EXP" --out cluster "${ARGS[@]}" --slurm --resume 2> down.log
status=$?
set -e
[ "$status" = 2 ] && grep -q "Slurm refused" down.log
[ "$(sqlite3 cluster/results.db "select count(*) from runs where status = 'ok'")" = "$before" ]
echo "slurm sweep: identical to the local run, resume ran 2 of 6, a dead controller refused"
