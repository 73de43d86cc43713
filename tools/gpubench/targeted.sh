#!/bin/bash
# Runs `hearth bench --backend gpu` (as tools/gpubench/benchbin, the bench
# alone) on the targeted families' synthetic shapes (Gemma 4 E4B, Qwen 3.5
# 4B and 9B; 4-bit) on the device machine and, beside it on that machine's
# CPU, regenerates golden entries with the oracle (tools/oracle/
# make_goldens.py needs the transformers that machine has).
# docs/benchmarks.md records the runs.
#
# What a call may send is 64 MiB, counted as an archive of the tree (about
# 1 KB of header per file) and the carried paths; the tree with the
# committed starter model and test media leaves little or nothing of it
# (2026-12-03: nothing), so the compressed binary goes in parts, one per
# call, to one warm machine (it stays warm 30 s after a call). Here, first:
#   go build -trimpath -ldflags='-s -w' -o /tmp/benchbin ./tools/gpubench/benchbin
#   xz -c --x86 --lzma2=preset=9e /tmp/benchbin >/tmp/benchbin.xz   (4.0 MB)
#   split -n 7 -d /tmp/benchbin.xz /tmp/benchbin.xz.   (as many parts as it takes)
#   (and the Vulkan loader debs in .gl/: see /work/.library/device/README.md)
# Then one call per part, each with .gpubin/ holding that part alone and
# carry [".gl", ".gpubin"] (.gl in the first call only is enough):
#   GOLDENS=qwen3_5_moe-f32 bash tools/gpubench/targeted.sh stage
#   bash tools/gpubench/targeted.sh stage
#   SHA=<sha256 of benchbin.xz> bash tools/gpubench/targeted.sh run "SHAPES" [BENCH FLAGS...]
# stage keeps what was carried in /dev/shm/stage and, the first time
# GOLDENS is set, starts make_goldens.py --only "$GOLDENS" in its own
# session (it outlives the call), merged into a copy of
# testdata/models/manifest.json. run joins the parts, runs the bench on
# each of SHAPES (BT seconds at most each) and waits for the goldens
# (GT seconds at most). $OUT gets smi.txt, bench.log (the JSON reports and
# progress lines), gpumem.csv (device memory in use every 250 ms),
# goldens.log and goldens.tar.
set -o pipefail
S=/dev/shm/stage
mkdir -p "$S"
cp -f .gpubin/* "$S"/ 2>/dev/null
cp -f .gl/*.deb "$S"/ 2>/dev/null
if [ -n "$GOLDENS" ] && [ ! -e /dev/shm/goldens.started ]; then
	touch /dev/shm/goldens.started
	mkdir -p /dev/shm/g /dev/shm/oracle
	cp testdata/models/manifest.json /dev/shm/g/
	cp tools/oracle/*.py /dev/shm/oracle/
	PYTHONUNBUFFERED=1 setsid bash -c 't0=$(date +%s); python3 /dev/shm/oracle/make_goldens.py --out /dev/shm/g --only "$0";
		echo "make_goldens rc=$? took $(($(date +%s) - t0)) s"; touch /dev/shm/goldens.done' "$GOLDENS" \
		</dev/null >/dev/shm/goldens.log 2>&1 &
	echo "goldens started"
fi
ls -la "$S"
[ "$1" = run ] || exit 0
shift
shapes=$1
shift
for f in "$S"/*.deb; do dpkg -x "$f" /; done
ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json TMPDIR=/dev/shm
cat "$S"/benchbin.xz.* >/dev/shm/benchbin.xz
if [ -n "$SHA" ] && ! echo "$SHA  /dev/shm/benchbin.xz" | sha256sum -c; then
	echo "benchbin.xz: wrong parts"
	exit 1
fi
B=/dev/shm/benchbin
xz -dc /dev/shm/benchbin.xz >"$B" 2>/dev/null ||
	python3 -c 'import lzma, shutil, sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[2], "wb"))' /dev/shm/benchbin.xz "$B"
chmod +x "$B"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.max.mem --format=csv >"$OUT/smi.txt" 2>&1
nproc >>"$OUT/smi.txt"
# device memory in use, sampled every 250 ms (the bench's peak RSS is the host's)
nvidia-smi --query-gpu=timestamp,memory.used --format=csv,noheader -lms 250 >"$OUT/gpumem.csv" 2>&1 &
mp=$!
for s in $shapes; do
	t0=$(date +%s)
	echo "== $s $(date -u +%H:%M:%S) UTC" >>"$OUT/bench.log"
	timeout "${BT:-200}" "$B" bench --synthetic "$s" --quant q4g64 --backend gpu --json --cache /dev/shm/syn "$@" \
		2>&1 | grep -v XDG_RUNTIME >>"$OUT/bench.log"
	echo "== $s rc=$? took $(($(date +%s) - t0)) s $(date -u +%H:%M:%S) UTC" | tee -a "$OUT/bench.log"
done
kill "$mp"
if [ -e /dev/shm/goldens.started ]; then
	for _ in $(seq "${GT:-60}"); do
		[ -e /dev/shm/goldens.done ] && break
		sleep 1
	done
	cp /dev/shm/goldens.log "$OUT/goldens.log"
	tail -3 /dev/shm/goldens.log
	(cd /dev/shm/g && tar cf "$OUT/goldens.tar" .)
fi
grep -E '"(decode_tok_s|decode_fraction_of_bound|bandwidth_gb_s)"' "$OUT/bench.log" | head -40
