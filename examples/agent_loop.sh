#!/bin/sh
# The agent's tool loop of agent_loop.py, from a shell: one persistent
# sandboxed kernel started for this folder, each cell sent with
# `sandpit run --json`, and a digest of each outcome made with jq.
#
#   examples/agent_loop.sh [WORKSPACE]     (default: this folder, with garden.csv)
#
# SANDPIT names the binary (default: sandpit on PATH).
set -eu
SANDPIT=${SANDPIT:-sandpit}
HERE=$(cd "$(dirname "$0")" && pwd)
WORKSPACE=${1:-$HERE}
cd "$WORKSPACE"

"$SANDPIT" start --timeout 60 --memory 2048 >/dev/null
trap '"$SANDPIT" stop >/dev/null' EXIT

n=0
failed=0
# One cell per call, as a model would send them; the second has a mistake.
for cell in \
    "import csv
rows = list(csv.DictReader(open('garden.csv')))
print(len(rows), 'months of harvest')" \
    "total = sum(float(r['tomatoes']) for r in rows)" \
    "total = sum(float(r['tomatoes_kg']) for r in rows)
print(f'tomatoes: {total:.1f} kg')" \
    "import matplotlib.pyplot as plt
plt.bar([r['month'] for r in rows], [float(r['tomatoes_kg']) for r in rows])
plt.title('Tomatoes per month (kg)')"
do
    n=$((n + 1))
    # Exit status 1 is a failed cell, which the loop reports; 2 is a real problem.
    status=0
    out=$("$SANDPIT" run --json --max-chars 2000 "$cell") || status=$?
    [ "$status" -le 1 ] || exit "$status"
    [ "$status" -eq 0 ] || failed=$((failed + 1))
    printf '%s\n' "$out" | jq -r --arg n "$n" '
        "[cell \($n)] \(.status)",
        (select(.stdout != "") | "stdout: \(.stdout | rtrimstr("\n"))"),
        (select(.error != null) | "error: \(.error.ename): \(.error.evalue)"),
        (.files[] | "image: \(.)")'
done
echo "$n cells, $failed failed (and corrected)"
