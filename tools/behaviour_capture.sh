#!/usr/bin/env bash
# Usage: tools/behaviour_capture.sh TREE OUT ROAD_EXPORT ROAD_CHECKPOINT CARRACING_CHECKPOINT
# A fingerprint of what the simulator does, for comparing two commits (a refactor must leave it
# unchanged): synth's outputs for every world (a hash of every file, job.json's root made
# relative) and the figures of `drive` and `drive --supervised --record` with fixed models and
# seeds (events without their times). TREE: a checkout with .venv; OUT: a folder to create.
# Compare two captures with `diff -r`; VP8 camera.webm files differ between two runs of the same
# code (libvpx's realtime mode adapts to the CPU), everything else must not.
set -euo pipefail
TREE=$(cd "$1" && pwd); OUT=$2; B=$TREE/.venv/bin
ROAD_EXPORT=$(realpath "$3"); ROAD_CHECKPOINT=$(realpath "$4"); CARRACING_CHECKPOINT=$(realpath "$5")
rm -rf "$OUT"; mkdir -p "$OUT"; cd "$OUT"
strip() { python3 -c '
import json,sys
for line in sys.stdin:
    e=json.loads(line)
    for k in ("time","elapsedSeconds","realtimeFactor","jobId"): e.pop(k,None)
    s=json.dumps(e,sort_keys=True)
    print(s.replace(sys.argv[1],"OUT"))
' "$OUT"; }
for w in road warehouse corridor carracing; do
  $B/rovertrain synth --out synth-$w --world $w --sessions 2 --minutes 0.5 --seed 11 2>/dev/null | strip > synth-$w.events
  (cd synth-$w && find . -type f | sort | while read f; do
     if [ "$(basename $f)" = job.json ]; then sed "s#$OUT#OUT#g" "$f" | sha256sum | sed "s#-#$f#"; else sha256sum "$f"; fi
   done) > synth-$w.sha
done
for w in road warehouse corridor; do
  $B/rovertrain drive $ROAD_EXPORT --world $w --seeds 2 --seconds 30 --out drive-$w 2>/dev/null | strip > drive-$w.events
  (cd drive-$w && sha256sum ticks.ndjson) > drive-$w.sha
done
$B/rovertrain drive $ROAD_CHECKPOINT --world road --seeds 1 --seconds 30 2>/dev/null | strip > drive-road-checkpoint.events
mkdir -p sup-root
$B/rovertrain drive $ROAD_EXPORT --world road --supervised --record sup-root --seeds 2 --seconds 40 2>/dev/null | strip > supervised.events
(cd sup-root && find . -type f -name '*.ndjson' -o -type f -name 'session.json' | sort | xargs sha256sum) > supervised.sha
$B/rovertrain drive $CARRACING_CHECKPOINT --world carracing --seeds 2 --seconds 20 --out drive-cr 2>/dev/null | strip > drive-carracing.events
echo captured in $OUT
