#!/bin/bash
# A stormsim sweep split over a Slurm job array, then merged.
#
# Submit both steps at once (the merge waits for every array task to end
# well):
#
#   mkdir -p logs   # Slurm does not create the folder of --output
#   jobid=$(sbatch --parsable deploy/slurm-array.sh scenarios/capacity-sweep.yaml)
#   sbatch --dependency=afterok:"$jobid" --job-name=stormsim-merge \
#          --output=logs/%x-%j.out \
#          --wrap "stormsim merge results/capacity-sweep --out results/capacity-sweep"
#
# Array task I runs shard I of N (N = the array's size, from
# SLURM_ARRAY_TASK_COUNT; an array that starts at 1 or has a step works
# too: stormsim uses SLURM_ARRAY_TASK_MIN and SLURM_ARRAY_TASK_STEP). Shard
# I holds the items k = variant_index x replicates + replicate with
# k mod N = I, so a task that is requeued writes the same bytes again. The
# merge checks the manifests (same scenario digest, same version, every
# shard exactly once), exits 2 naming what is missing or mismatched, and
# writes the tables, charts and report.html of the whole run, byte for
# byte those of an unsharded `stormsim run`, beside the shard folders.
#
# To change the number of shards, change --array (0-7 is 8 shards); `%4`
# caps the tasks running at once. The results folder must be on a file
# system that every node sees.
#SBATCH --job-name=stormsim-sweep
#SBATCH --array=0-7%4
#SBATCH --cpus-per-task=2
#SBATCH --mem=2G
#SBATCH --time=01:00:00
#SBATCH --output=logs/%x-%A_%a.out
#SBATCH --requeue
set -euo pipefail

scenario=${1:?usage: sbatch deploy/slurm-array.sh SCENARIO.yaml [RESULTS_DIR] [-- stormsim run options]}
shift
results=results/$(basename "$scenario" .yaml)
if [ $# -gt 0 ] && [ "$1" != "--" ]; then
    results=$1
    shift
fi
if [ "${1:-}" = "--" ]; then
    shift
fi

mkdir -p "$results"
exec stormsim run "$scenario" \
    --shard-from-env \
    --threads "${SLURM_CPUS_PER_TASK:-1}" \
    --quiet \
    --out "$results/shard-${SLURM_ARRAY_TASK_ID}-of-${SLURM_ARRAY_TASK_COUNT}" \
    "$@"
