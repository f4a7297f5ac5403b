#!/usr/bin/env bash
# Submits a sweep to Slurm: an array of N shard tasks, then the merge once all have succeeded.
#
#   scripts/slurm/submit.sh SPEC.toml OUT N [extra sbatch options, e.g. --partition=cpu]
#
# Run it from the repository on the cluster's shared filesystem (the jobs start in this
# directory). Running it again after an interruption resumes: finished cells are kept.
set -euo pipefail
if [ $# -lt 3 ]; then
  echo "usage: $0 SPEC.toml OUT N [sbatch options]" >&2
  exit 2
fi
spec=$1 out=$2 shards=$3
shift 3
here="$(dirname "$0")"
array=$(sbatch --parsable "$@" --array=0-$((shards - 1)) "$here/sweep-shard.sbatch" "$spec" "$out" "$shards")
array=${array%%;*} # --parsable prints JOBID or JOBID;CLUSTER
merge=$(sbatch --parsable "$@" --dependency=afterok:"$array" "$here/sweep-merge.sbatch" "$out" "$shards")
echo "shards: job array $array (tasks 0-$((shards - 1))); merge: job ${merge%%;*} after it"
echo "results: $out/merged/results.csv"
