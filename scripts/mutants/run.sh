#!/usr/bin/env bash
# Mutation testing with cargo-mutants, and a per-file summary of what the tests caught.
#
#   scripts/mutants/run.sh                    # tickless-timer (the default)
#   scripts/mutants/run.sh timer              # the same
#   scripts/mutants/run.sh executor           # tickless, the files in EXECUTOR_FILES below
#   scripts/mutants/run.sh blocking           # the blocking pool and shutdown by ownership
#   scripts/mutants/run.sh registration       # tickless-io's registration: binding, home, reactor gone
#   scripts/mutants/run.sh movement           # work that moves: stealing, spill queues, placement
#   scripts/mutants/run.sh harvest            # a core that runs taking a stuck core's ready I/O
#   scripts/mutants/run.sh crowding           # stepping back from crowded CPUs, listener hand-over
#   scripts/mutants/run.sh -p CRATE           # any package
#   scripts/mutants/run.sh timer/src/wheel.rs 'io/src/**'   # some files (globs quoted)
#   scripts/mutants/run.sh timer -- --re queue # anything after `--` goes to cargo mutants
#   scripts/mutants/run.sh --summary timer    # print the summary of the last run only
#
# Output goes to target/mutants-<name>/mutants.out/ (<name>: timer, executor, the package, or
# "files"; MUTANTS_NAME overrides it); a plain `cargo mutants` writes to target/mutants/
# (.cargo/mutants.toml), never into the tree. MUTANTS_JOBS sets --jobs (default 1: on a small
# machine parallel builds only fight over the CPUs). The score is caught / (caught + missed): unviable
# mutants (they do not build) and timeouts (usually an infinite loop) are reported apart.
set -euo pipefail
cd "$(dirname "$0")/../.."

# --- EXECUTOR_FILES: the executor's core, task and join files. ----------------------------------
# What the loop, the idle path, the shared half, shutdown and the timers' interface (worker/),
# and spawning, the task harness, join handles, errors and slots (task/) are. Left out: the
# clock, the device and the config (plain conversions and data), JoinSet and the blocking pool
# (tested on their own).
EXECUTOR_FILES=(
    'executor/src/worker/mod.rs'
    'executor/src/worker/run.rs'
    'executor/src/worker/idle.rs'
    'executor/src/worker/block_on.rs'
    'executor/src/worker/shared.rs'
    'executor/src/worker/registry.rs'
    'executor/src/worker/shutdown.rs'
    'executor/src/worker/timers.rs'
    'executor/src/worker/id.rs'
    'executor/src/task/harness.rs'
    'executor/src/task/join_handle.rs'
    'executor/src/task/join_error.rs'
    'executor/src/task/join_slot.rs'
    'executor/src/task/spawn.rs'
    'executor/src/task/deferred.rs'
    'executor/src/task/yield_now.rs'
)
# The test binaries a mutant of those files is tried against (the library's unit tests and
# the integration tests about tasks, cores, time and serving): the others (I/O types, hyper,
# signals, the trybuild suite) only slow each mutant down.
EXECUTOR_TESTS=(
    --lib task_join task_join_set task_blocking rt_drop rt_drop_fds rt_cores rt_panics
    rt_dead_core rt_pingpong time_paused time_bad_input rt_nohz_kick macros net_serve
)
# --- blocking: the pool (accounting, guards, close, paused time's hold) and shutdown by
# ownership, against the tests that use them.
BLOCKING_FILES=('executor/src/blocking.rs' 'executor/src/worker/shutdown.rs')
BLOCKING_TESTS=(--lib task_blocking rt_drop rt_dead_core rt_panics time_paused fs_file rt_placement)
# --- registration: a registration bound to the core that polls it (moving with it), its home and
# the reactor-gone state, against every test of tickless-io (none named: all of them).
REGISTRATION_FILES=('io/src/home.rs' 'io/src/key.rs' 'io/src/registration/*.rs' 'io/src/context.rs')
REGISTRATION_TESTS=()
# --- movement: an idle core taking another's backlog (steal.rs), the queues it takes from
# (spill.rs), where a spawn after an accept goes (placement.rs) and core 0 handing its tasks on
# as its block_on returns (core_zero.rs, with its tokio stand-in and its leak on a drop inside
# the runtime), against the tests that move work, the tokio context's and the drops'.
MOVEMENT_FILES=('executor/src/worker/steal.rs' 'executor/src/worker/spill.rs'
    'executor/src/worker/placement.rs' 'executor/src/runtime/core_zero.rs')
MOVEMENT_TESTS=(--lib rt_steal net_follow rt_placement net_serve rt_cores rt_send tokio_compat
    rt_drop)
# --- harvest: a core that runs taking the ready I/O of a peer that has not come back to its loop
# (harvest.rs: when to look, the harvested wakes), against the tests that block a core and the
# library's.
HARVEST_FILES=('executor/src/worker/harvest.rs')
HARVEST_TESTS=(--lib rt_harvest)
# --- crowding: stepping back from crowded CPUs (crowding.rs: the rule, its work probe, serving
# again), the accept loops' watch of whether a core serves (serve_watch.rs) and the listener
# hand-over (accept.rs), against the library's tests (the rule's unit tests), the tests that
# step a core back on cue, and those of a server's stop and of a leaking shutdown's listeners.
CROWDING_FILES=('executor/src/runtime/crowding.rs' 'executor/src/worker/shared/serve_watch.rs'
    'executor/src/serve/accept.rs')
CROWDING_TESTS=(--lib net_serve net_serve_stop rt_books rt_send)
# -----------------------------------------------------------------------------------------------

# Proptest cases per property under mutation: a tenth of the default runs, enough to catch the
# mutants a property catches at all, and it keeps each mutant's test run short.
export PROPTEST_CASES="${PROPTEST_CASES:-1000}"
jobs="${MUTANTS_JOBS:-1}"

summary_only=false
if [[ "${1:-}" == "--summary" ]]; then
    summary_only=true
    shift
fi

# Split our arguments from the ones after `--`.
ours=()
extra=()
while (($#)); do
    if [[ "$1" == "--" ]]; then
        shift
        extra=("$@")
        break
    fi
    ours+=("$1")
    shift
done

target_args=()
name=""
set -- "${ours[@]+"${ours[@]}"}"
if (($# == 0)) || [[ "$1" == "timer" ]]; then
    name=timer
    target_args=(--package tickless-timer)
elif [[ "$1" == "executor" || "$1" == "blocking" || "$1" == "registration" \
        || "$1" == "movement" || "$1" == "harvest" || "$1" == "crowding" ]]; then
    name="$1"
    case "$1" in
        executor) package=tickless; files=("${EXECUTOR_FILES[@]}"); tests=("${EXECUTOR_TESTS[@]}") ;;
        blocking) package=tickless; files=("${BLOCKING_FILES[@]}"); tests=("${BLOCKING_TESTS[@]}") ;;
        registration)
            package=tickless-io; files=("${REGISTRATION_FILES[@]}"); tests=("${REGISTRATION_TESTS[@]}") ;;
        movement) package=tickless; files=("${MOVEMENT_FILES[@]}"); tests=("${MOVEMENT_TESTS[@]}") ;;
        harvest) package=tickless; files=("${HARVEST_FILES[@]}"); tests=("${HARVEST_TESTS[@]}") ;;
        crowding) package=tickless; files=("${CROWDING_FILES[@]}"); tests=("${CROWDING_TESTS[@]}") ;;
    esac
    target_args=(--package "$package")
    for f in "${files[@]}"; do
        target_args+=(--file "$f")
    done
    for t in "${tests[@]}"; do
        if [[ "$t" == --lib ]]; then
            target_args+=(--cargo-test-arg=--lib)
        else
            target_args+=(--cargo-test-arg=--test="$t")
        fi
    done
    # Debug info makes each mutant's many test binaries slow to link, and buys nothing here.
    export CARGO_PROFILE_DEV_DEBUG=0
elif [[ "$1" == "-p" || "$1" == "--package" ]]; then
    (($# >= 2)) || { echo "run.sh: $1 needs a package name" >&2; exit 2; }
    name="$2"
    target_args=(--package "$2")
    shift 2
    for f in "$@"; do
        [[ "$f" == "--file" ]] || target_args+=(--file "$f")
    done
else
    name=files
    for f in "$@"; do
        [[ "$f" == "--file" ]] || target_args+=(--file "$f")
    done
fi
name="${MUTANTS_NAME:-$name}"
out="target/mutants-$name"

if ! $summary_only; then
    if ! cargo mutants --version >/dev/null 2>&1; then
        echo "== installing cargo-mutants"
        cargo install --locked cargo-mutants
    fi
    mkdir -p "$out"
    echo "== cargo mutants ${target_args[*]} ${extra[*]+"${extra[*]}"} --jobs $jobs --output $out" \
        "(PROPTEST_CASES=$PROPTEST_CASES)"
    start=$(date +%s)
    status=0
    # Timeouts: 3x the baseline test time, but never under 20 s (a debug build of a proptest
    # varies with the load; a mutant that loops forever costs this much). cargo-mutants exits
    # non-zero when mutants are missed: that is a result, not a failure of this script.
    cargo mutants "${target_args[@]}" \
        --jobs "$jobs" \
        --timeout-multiplier 3 \
        --minimum-test-timeout 20 \
        --build-timeout-multiplier 3 \
        --output "$out" \
        ${extra[@]+"${extra[@]}"} || status=$?
    end=$(date +%s)
    # Exit codes (cargo-mutants docs): 0 all caught, 2 missed, 3 timeouts, 4 baseline failed.
    case $status in
        0 | 2 | 3) ;;
        *) echo "run.sh: cargo mutants failed with status $status" >&2; exit "$status" ;;
    esac
    # `-- --list` and the like test nothing: no summary then.
    [[ -d "$out/mutants.out" && -e "$out/mutants.out/outcomes.json" ]] || exit "$status"
    echo "$((end - start))" >"$out/mutants.out/elapsed-seconds"
fi

python3 - "$out/mutants.out" "scripts/mutants/equivalent-$name.txt" "$name" <<'PY'
import collections, os, re, sys

out, equivalent, name = sys.argv[1], sys.argv[2], sys.argv[3]
kinds = ["caught", "missed", "unviable", "timeout"]
counts = collections.defaultdict(lambda: dict.fromkeys(kinds, 0))
lines = {k: [] for k in kinds}
for kind in kinds:
    path = os.path.join(out, kind + ".txt")
    if not os.path.exists(path):
        continue
    for line in open(path):
        line = line.strip()
        if not line:
            continue
        lines[kind].append(line)
        counts[line.split(":", 1)[0]][kind] += 1
if not counts:
    sys.exit(f"run.sh: no results in {out}")

def row(label, c):
    viable = c["caught"] + c["missed"]
    score = f"{100 * c['caught'] / viable:5.1f}%" if viable else "    -"
    return (f"{label:<40} {c['caught']:>6} {c['missed']:>6} {c['unviable']:>8} "
            f"{c['timeout']:>7}   {score}")

print(f"{'file':<40} {'caught':>6} {'missed':>6} {'unviable':>8} {'timeout':>7}   score")
total = dict.fromkeys(kinds, 0)
for f in sorted(counts):
    print(row(f, counts[f]))
    for k in kinds:
        total[k] += counts[f][k]
print(row("total", total))
print("score = caught / (caught + missed); timeouts and unviable mutants are not in it")
elapsed = os.path.join(out, "elapsed-seconds")
if os.path.exists(elapsed):
    s = int(open(elapsed).read())
    print(f"run took {s // 60} min {s % 60} s")
for kind in ("missed", "timeout"):
    if lines[kind]:
        print(f"\n{kind}:")
        for line in sorted(lines[kind], key=lambda l: (l.split(":")[0], int(l.split(":")[1]))):
            print("  " + line)
# MUTANTS_README=1: the per-file scores go into benches/README.md, between
# <!-- mutants-NAME:begin --> and <!-- mutants-NAME:end -->, so the README never holds a figure
# typed by hand.
if os.environ.get("MUTANTS_README") == "1":
    viable = total["caught"] + total["missed"]
    rows = [f"| {f} | {c['caught']} | {c['missed']} | {c['unviable']} | {c['timeout']} | "
            f"{100 * c['caught'] / max(1, c['caught'] + c['missed']):.1f}% |"
            for f, c in sorted(counts.items())]
    block = "\n".join([
        f"<!-- mutants-{name}:begin -->",
        f"`scripts/mutants/run.sh {name}`: {total['caught']} of {viable} viable mutants caught "
        f"({100 * total['caught'] / max(1, viable):.1f}%); the missed ones are listed, each with "
        f"its reason, in `scripts/mutants/equivalent-{name}.txt`.",
        "",
        "| file | caught | missed | unviable | timeout | score |",
        "|---|---:|---:|---:|---:|---:|",
        *rows,
        f"<!-- mutants-{name}:end -->",
    ])
    doc = "benches/README.md"
    readme = open(doc).read()
    pattern = re.compile(rf"<!-- mutants-{re.escape(name)}:begin -->.*?<!-- mutants-{re.escape(name)}:end -->", re.S)
    if not pattern.search(readme):
        sys.exit(f"run.sh: {doc} has no <!-- mutants-{name}:begin --> block")
    open(doc, "w").write(pattern.sub(lambda _: block, readme))
    print(f"{doc}: mutants-{name} block rewritten")
# Missed mutants not listed as equivalent (or not worth killing) are the ones to look at.
if os.path.exists(equivalent):
    known = {l.split(" — ")[0].strip() for l in open(equivalent) if l.strip() and not l.startswith("#")}
    new = [l for l in lines["missed"] if l not in known]
    print(f"\nmissed and not in {equivalent}: {len(new)}")
    for line in new:
        print("  " + line)
PY
