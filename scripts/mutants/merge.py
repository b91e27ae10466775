#!/usr/bin/env python3
"""Merges cargo-mutants outputs into one, for run.sh --summary: shards of one run, and reruns of
some mutants after new tests (a later directory's outcome for a mutant replaces an earlier one;
mutants are matched by their description, without the line and column, which edits move).

    scripts/mutants/merge.py target/mutants-executor target/mutants-executor-s0 \\
        target/mutants-executor-s1 target/mutants-executor-recheck-s0 ...
    MUTANTS_README=1 scripts/mutants/run.sh --summary executor

`--exact` (first argument) matches mutants by their whole line, line and column included: for
`--iterate` reruns of unchanged files, whose outputs hold only the mutants not caught before
(matching by order in the file would then pair a rerun's mutant with an earlier namesake).
"""
import os
import re
import sys

KINDS = ["caught", "missed", "unviable", "timeout"]


def key(line):
    """`file:line:col: text` without the line and column."""
    return re.sub(r"^([^:]+):\d+:\d+:", r"\1:", line)


def main():
    args = sys.argv[1:]
    exact = bool(args) and args[0] == "--exact"
    if exact:
        args = args[1:]
    out, dirs = args[0], args[1:]
    outcome = {}
    for d in dirs:
        # Mutants with the same description in one file (on different lines) are told apart by
        # their order in the file.
        seen = {}
        lines = []
        for kind in KINDS:
            path = os.path.join(d, "mutants.out", kind + ".txt")
            if os.path.exists(path):
                lines += [(kind, l.strip()) for l in open(path) if l.strip()]
        lines.sort(key=lambda kl: (kl[1].split(":")[0], int(kl[1].split(":")[1]), kl[1]))
        for kind, line in lines:
            k = line if exact else key(line)
            seen[k] = seen.get(k, 0) + 1
            outcome[(k, seen[k])] = (kind, line)
    os.makedirs(os.path.join(out, "mutants.out"), exist_ok=True)
    for kind in KINDS:
        with open(os.path.join(out, "mutants.out", kind + ".txt"), "w") as f:
            for k, line in sorted((v[1], v[0]) for v in outcome.values()):
                if line == kind:
                    f.write(k + "\n")
    print(f"{out}: {len(outcome)} mutants from {len(dirs)} outputs")


main()
