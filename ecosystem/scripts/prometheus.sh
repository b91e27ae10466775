#!/usr/bin/env bash
# End to end: the axum app on tickless (`ecosystem/examples/prometheus.rs`), its runtime's
# metrics published by tickless's metrics-rs reporter under tokio-metrics' names and rendered
# by `metrics-exporter-prometheus` at `/metrics`, scraped by a real Prometheus (Debian's
# `prometheus` package, installed with apt-get if missing) while the app is loaded over
# loopback. Prints every series Prometheus found, with its labels, its value before the load,
# and one scraped value after it for each that changed.
#
#   ecosystem/scripts/prometheus.sh [--requests N] [--port P] [--prometheus-port P]
#
# Bounded: N requests (default 20,000) with curl, 16 at a time, on 127.0.0.1; the app and
# Prometheus listen on 127.0.0.1 only and are stopped on exit; Prometheus keeps its data in a
# temporary directory, removed on exit. Without Prometheus (apt-get cannot install it), it says
# so and reads the app's `/metrics` with curl instead, before and after the load.
#
# Builds the example in release mode (CARGO_TARGET_DIR is honoured; default target/eco, where
# the ecosystem crate is built).
set -euo pipefail
cd "$(dirname "$0")/../.."

requests=20000
port=3900
prom_port=9390
while [ $# -gt 0 ]; do
    case "$1" in
        --requests) requests=$2; shift 2 ;;
        --port) port=$2; shift 2 ;;
        --prometheus-port) prom_port=$2; shift 2 ;;
        *) echo "unknown option: $1" >&2; exit 2 ;;
    esac
done

if ! command -v prometheus >/dev/null 2>&1; then
    echo "# prometheus is missing: installing Debian's package with apt-get" >&2
    sudo=""
    if [ "$(id -u)" != 0 ]; then sudo="sudo"; fi
    $sudo apt-get install -y --no-install-recommends prometheus >&2 \
        || { $sudo apt-get update >&2 && $sudo apt-get install -y --no-install-recommends prometheus >&2; } \
        || echo "# apt-get could not install prometheus: reading /metrics with curl instead" >&2
fi
# Debian's package may start its own service: ours runs apart, on its own port and data.

target_dir=${CARGO_TARGET_DIR:-target/eco}
CARGO_TARGET_DIR=$target_dir cargo build --release -q -p tickless-ecosystem-tests --example prometheus
work=$(mktemp -d)
pids=()
cleanup() {
    for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
    wait 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT

"$target_dir/release/examples/prometheus" "$port" >"$work/app.log" 2>&1 &
pids+=($!)
for _ in $(seq 100); do
    curl -sf "http://127.0.0.1:$port/metrics" >/dev/null && break
    sleep 0.1
done
curl -sf "http://127.0.0.1:$port/" >/dev/null || { cat "$work/app.log" >&2; exit 1; }

have_prometheus=0
if command -v prometheus >/dev/null 2>&1; then
    have_prometheus=1
    cat >"$work/prometheus.yml" <<CONF
global:
  scrape_interval: 1s
scrape_configs:
  - job_name: tickless
    static_configs:
      - targets: ['127.0.0.1:$port']
CONF
    prometheus --config.file="$work/prometheus.yml" --storage.tsdb.path="$work/data" \
        --web.listen-address="127.0.0.1:$prom_port" >"$work/prometheus.log" 2>&1 &
    pids+=($!)
    up=0
    for _ in $(seq 200); do
        if curl -sf "http://127.0.0.1:$prom_port/api/v1/query?query=up%7Bjob%3D%22tickless%22%7D" \
            | grep -q '"value":\[[0-9.]*,"1"\]'; then up=1; break; fi
        sleep 0.1
    done
    [ $up = 1 ] || { tail -20 "$work/prometheus.log" >&2; echo "Prometheus never scraped the app" >&2; exit 1; }
    echo "# $(prometheus --version 2>&1 | head -1)"
    sleep 2 # two scrapes of the idle app
else
    curl -sf "http://127.0.0.1:$port/metrics" >"$work/before.txt"
fi

before=$(date +%s.%N)
echo "# load: $requests requests, 16 at a time, to http://127.0.0.1:$port/json"
curl -s --no-progress-meter --parallel --parallel-max 16 "http://127.0.0.1:$port/json?[1-$requests]" >/dev/null
sleep 3 # a reporter interval (0.5 s) and two scrapes after the load
after=$(date +%s.%N)

if [ $have_prometheus = 1 ]; then
    # Every series of the job, as Prometheus scraped it, before the load and after it.
    python3 - "$prom_port" "$before" "$after" <<'PY'
import json, sys, urllib.parse, urllib.request
port, before, after = sys.argv[1:]
def query(t):
    q = urllib.parse.urlencode({"query": '{job="tickless"}', "time": t})
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/v1/query?{q}") as r:
        data = json.load(r)["data"]["result"]
    def key(m):
        labels = {k: v for k, v in m.items() if k not in ("__name__", "job", "instance")}
        return m["__name__"], tuple(sorted(labels.items()))
    return {key(s["metric"]): s["value"][1] for s in data}
was, now = query(before), query(after)
changed = 0
print(f"# {len(now)} series scraped by Prometheus (job=tickless); before the load -> after it")
for (name, labels) in sorted(now):
    shown = "{" + ",".join(f'{k}="{v}"' for k, v in labels) + "}"
    old = was.get((name, labels), "absent")
    mark = "changed" if old != now[(name, labels)] else "same"
    changed += mark == "changed"
    print(f"{name}{shown} {old} -> {now[(name, labels)]} {mark}")
print(f"# {changed} of {len(now)} series changed under load")
PY
else
    curl -sf "http://127.0.0.1:$port/metrics" >"$work/after.txt"
    python3 - "$work/before.txt" "$work/after.txt" <<'PY'
import sys
def read(path):
    out = {}
    for line in open(path):
        if line.startswith("#") or not line.strip():
            continue
        series, value = line.rsplit(" ", 1)
        out[series] = value.strip()
    return out
was, now = read(sys.argv[1]), read(sys.argv[2])
print(f"# {len(now)} series read from /metrics with curl (no Prometheus); before -> after")
changed = 0
for series in sorted(now):
    old = was.get(series, "absent")
    mark = "changed" if old != now[series] else "same"
    changed += mark == "changed"
    print(f"{series} {old} -> {now[series]} {mark}")
print(f"# {changed} of {len(now)} series changed under load")
PY
fi
