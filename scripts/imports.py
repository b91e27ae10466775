#!/usr/bin/env python3
"""Checks the module layering and the size of a crate's source files.

    python3 scripts/imports.py [--list] [--cycles | --lines] [--max N] [--max-cycle N]
                               [--layers FILE] DIR...
    python3 scripts/imports.py --self-test

Each DIR is a crate's `src/` (a DIR that does not exist is skipped, with a note). For each:

- cycles: every `.rs` file is a node (`worker/mod.rs` is `crate::worker`, `worker/run.rs` is
  `crate::worker::run`); an edge goes from a file to the file of every path it names, in `use`
  items (nested groups expanded) and in code (`crate::catch::wake_caught(w)`), as `crate::`,
  `$crate::`, `super::` or `self::` paths, or relative to a name the file imports or a child
  module it declares. A path goes to the file of its longest module prefix
  (`crate::worker::Core` -> `worker/mod.rs`); if the next segment is a name that module
  imports (`pub use runtime::Runtime` in `lib.rs`), it is followed to where that name comes
  from, so a re-export is not a node of its own. Comments, string contents and
  `#[cfg(test)]` modules are left out. A strongly connected component of more than one file
  is printed with one concrete cycle through it (each edge with the path that makes it).
  --max-cycle N lets a component of at most N files pass (printed as allowed): 2 lets a type
  and its tightly bound helper name each other (a stream and its split halves), never a
  circle through a third file. The default, 1, allows no cycle at all.
- lines: lines of code per file: non-blank lines that are not comments (`//`, `///`, `//!`,
  `/* */`), `#[cfg(test)]` / `#[cfg(all(test, ..))]` modules excluded (the attribute, the
  module and its body). Files over --max (default 450) are reported.

- layers (with --layers FILE): FILE (ARCHITECTURE.md) has, after a line
  `<!-- layers: DIR -->`, a table whose rows are the crate's layers, top first, each naming its
  files in `code` spans (a file, `dir/{a,b}.rs`, or `dir/` for the rest of a folder; the most
  specific wins). Every file must be in a row, and no edge may go to a row above its own.

--list prints each file's targets, and every file's line count. Exit status 1 if a cycle, an
edge up the layers or a file over the limit was found, 2 on a usage error.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import tempfile
from collections import defaultdict

MAX_LINES = 450

# --- lexing ------------------------------------------------------------------------------------


def strip(src: str) -> tuple[str, str]:
    """Returns (code, blank): `src` with comments replaced by spaces, and `code` with the
    contents of string and char literals replaced by spaces too. Both keep every newline and
    every offset of `src`."""
    n = len(src)
    code = list(src)
    blank = list(src)
    i = 0

    def erase(a: int, b: int, out: list[str]) -> None:
        for k in range(a, b):
            if out[k] != "\n":
                out[k] = " "

    while i < n:
        c = src[i]
        if c == "/" and src.startswith("//", i):
            j = src.find("\n", i)
            j = n if j < 0 else j
            erase(i, j, code)
            erase(i, j, blank)
            i = j
        elif c == "/" and src.startswith("/*", i):
            depth, j = 1, i + 2
            while j < n and depth:
                if src.startswith("/*", j):
                    depth, j = depth + 1, j + 2
                elif src.startswith("*/", j):
                    depth, j = depth - 1, j + 2
                else:
                    j += 1
            erase(i, j, code)
            erase(i, j, blank)
            i = j
        elif c in "rbc" and (i == 0 or not (src[i - 1].isalnum() or src[i - 1] == "_")) and (
            m := re.compile(r'(?:br|cr|r)(#*)"').match(src, i)
        ):
            end = src.find('"' + m.group(1), m.end())
            end = n if end < 0 else end
            erase(m.end(), end, blank)
            i = end + 1 + len(m.group(1))
        elif c == '"':
            j = i + 1
            while j < n and src[j] != '"':
                j += 2 if src[j] == "\\" else 1
            erase(i + 1, j, blank)
            i = j + 1
        elif c == "'":
            # A char literal ('a', '\n', '\u{1F600}') or a lifetime ('a, 'static).
            if i + 1 < n and src[i + 1] == "\\":
                j = i + 2
                while j < n and src[j] != "'":
                    j += 1
                erase(i + 1, j, blank)
                i = j + 1
            elif i + 2 < n and src[i + 2] == "'":
                erase(i + 1, i + 2, blank)
                i += 3
            else:
                i += 1
        else:
            i += 1
    return "".join(code), "".join(blank)


def match_brace(text: str, open_at: int) -> int:
    """The offset just past the `}` that closes the `{` at `open_at` (in string-blanked text)."""
    depth = 0
    for k in range(open_at, len(text)):
        if text[k] == "{":
            depth += 1
        elif text[k] == "}":
            depth -= 1
            if depth == 0:
                return k + 1
    return len(text)


CFG_TEST = re.compile(r"#\[cfg\((?:test|all\(\s*test\b[^\]]*)\)\]")
ATTR = re.compile(r"\s*#\[[^\]]*\]")
MOD_ITEM = re.compile(r"\s*(?:pub(?:\([^)]*\))?\s+)?mod\s+(\w+)\s*([{;])")


def test_modules(blank: str) -> tuple[list[tuple[int, int]], set[str]]:
    """The spans of `#[cfg(test)]` inline modules (attribute to closing brace), and the names of
    `#[cfg(test)] mod name;` files."""
    spans, files = [], set()
    for m in CFG_TEST.finditer(blank):
        k = m.end()
        while a := ATTR.match(blank, k):
            k = a.end()
        mod = MOD_ITEM.match(blank, k)
        if not mod:
            continue
        if mod.group(2) == "{":
            spans.append((m.start(), match_brace(blank, mod.end() - 1)))
        else:
            files.add(mod.group(1))
            spans.append((m.start(), mod.end()))
    return spans, files


def in_spans(pos: int, spans: list[tuple[int, int]]) -> bool:
    return any(a <= pos < b for a, b in spans)


def count_lines(src: str) -> int:
    """Lines of code: non-blank, not comments, not in `#[cfg(test)]` modules."""
    code, blank = strip(src)
    spans, _ = test_modules(blank)
    excluded = set()
    for a, b in spans:
        excluded.update(range(code.count("\n", 0, a), code.count("\n", 0, b) + 1))
    return sum(
        1 for no, line in enumerate(code.split("\n")) if line.strip() and no not in excluded
    )


# --- modules and paths -------------------------------------------------------------------------


def module_of(rel: str) -> tuple[str, ...]:
    """`lib.rs` -> (), `worker/mod.rs` -> ('worker',), `worker/run.rs` -> ('worker', 'run')."""
    parts = rel[:-3].split("/")
    if parts[-1] in ("lib", "main", "mod"):
        parts = parts[:-1]
    return tuple(parts)


def expand_use(tree: str) -> list[tuple[str, str]]:
    """`a::{b, c::{d as e, self}}` -> [(bound name, path)]: [('b', 'a::b'), ('e', 'a::c::d'),
    ('c', 'a::c')]. A glob binds '*'."""
    tree = re.sub(r"\s+", " ", tree).strip()
    out: list[tuple[str, str]] = []

    def walk(prefix: str, t: str) -> None:
        t = t.strip()
        if not t:
            return
        brace = t.find("{")
        if brace >= 0 and t.endswith("}"):
            head = t[:brace].strip().rstrip(":").strip()
            base = f"{prefix}::{head}" if prefix and head else (prefix or head)
            for part in split_top(t[brace + 1 : -1]):
                walk(base, part)
            return
        alias = None
        if " as " in t:
            t, alias = (s.strip() for s in t.split(" as ", 1))
        if t == "self":
            path = prefix
        else:
            path = f"{prefix}::{t}" if prefix else t
        path = path.replace(" ", "")
        name = alias or path.rsplit("::", 1)[-1]
        out.append((name, path))

    walk("", tree)
    return out


def split_top(s: str) -> list[str]:
    parts, depth, cur = [], 0, []
    for ch in s:
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    parts.append("".join(cur))
    return parts


USE = re.compile(r"(?<![\w$])use\s+([^;]*);")
# A `use` item with a visibility: a re-export (`pub use`, `pub(crate) use`).
PUB = re.compile(r"pub\s*(?:\([^)]*\)\s*)?$")
PATH = re.compile(r"(?<![\w:])(\$?crate|super|self|[A-Za-z_]\w*)((?:\s*::\s*(?:super|\w+))+)")
INLINE_MOD = re.compile(r"(?<![\w$])mod\s+(\w+)\s*\{")
CHILD_MOD = re.compile(r"(?<![\w$])mod\s+(\w+)\s*;")
VIS_IN = re.compile(r"pub\s*\(\s*in\s+[^)]*\)")


# The binding of a name imported from another crate.
EXTERNAL: tuple[str, ...] = ("<external>",)


class Crate:
    """One crate's files, their imports and the edges between them."""

    def __init__(self, root: str, sources: dict[str, str]):
        self.root = root
        self.files: dict[str, tuple[str, ...]] = {}  # rel path -> module path
        self.modules: dict[tuple[str, ...], str] = {}  # module path -> rel path
        self.blank: dict[str, str] = {}
        self.tests: dict[str, list[tuple[int, int]]] = {}
        self.inline: dict[str, list[tuple[int, int, tuple[str, ...]]]] = {}
        # module path -> {bound name -> absolute path (tuple)}, from its `use` items.
        self.imports: dict[tuple[str, ...], dict[str, tuple[str, ...]]] = defaultdict(dict)
        # file -> (offset, absolute path, bound name, whether a re-export) of its `use` items.
        self.uses: dict[str, list[tuple[int, str, str, bool]]] = {}
        self.lines: dict[str, int] = {}
        test_files: set[tuple[str, ...]] = set()
        for rel, src in sorted(sources.items()):
            if rel.startswith("bin/"):
                continue
            mod = module_of(rel)
            self.files[rel] = mod
            self.modules[mod] = rel
            _, blank = strip(src)
            blank = VIS_IN.sub(lambda m: " " * len(m.group(0)), blank)
            self.blank[rel] = blank
            spans, tfiles = test_modules(blank)
            self.tests[rel] = spans
            test_files.update(mod + (t,) for t in tfiles)
            self.lines[rel] = count_lines(src)
            inline = []
            for m in INLINE_MOD.finditer(blank):
                if not in_spans(m.start(), spans):
                    inline.append((m.start(), match_brace(blank, m.end() - 1), m.group(1)))
            resolved = []
            for a, b, name in inline:
                outer = [x for x in inline if x[0] < a and b <= x[1]]
                path = mod + tuple(x[2] for x in sorted(outer)) + (name,)
                resolved.append((a, b, path))
                self.modules.setdefault(path, rel)
            self.inline[rel] = resolved
        for rel in list(self.files):
            if self.files[rel] in test_files:
                del self.files[rel]
        for rel in self.files:
            self.collect_uses(rel)

    def scope(self, rel: str, pos: int) -> tuple[str, ...]:
        inner = [(a, p) for a, b, p in self.inline[rel] if a <= pos < b]
        return max(inner)[1] if inner else self.files[rel]

    def absolute(self, path: list[str], scope: tuple[str, ...]) -> tuple[str, ...] | None:
        """`crate::a::b`, `super::a`, `self::a` -> ('a', 'b') etc.; None for other roots."""
        if path[0] in ("crate", "$crate"):
            return tuple(path[1:])
        if path[0] in ("super", "self"):
            cur = list(scope)
            k = 0
            while k < len(path) and path[k] in ("super", "self"):
                if path[k] == "super":
                    cur = cur[:-1]
                k += 1
            return tuple(cur + path[k:])
        return None

    def collect_uses(self, rel: str) -> None:
        blank = self.blank[rel]
        self.uses[rel] = []
        for m in USE.finditer(blank):
            if in_spans(m.start(), self.tests[rel]):
                continue
            scope = self.scope(rel, m.start())
            reexport = bool(PUB.search(blank[max(0, m.start() - 40) : m.start()]))
            for name, path in expand_use(m.group(1)):
                segs = path.split("::")
                absolute = self.absolute(segs, scope)
                if absolute is None and segs[0] != "std" and (scope + (segs[0],)) in self.modules:
                    absolute = scope + tuple(segs)  # 2018 relative: `use child::Item`
                if absolute is None:
                    # An external crate's item (`std::`, `tickless_io::`): no edge, but the name
                    # is bound, so a path through it is not followed into this crate.
                    if name != "*":
                        self.imports[scope].setdefault(name, EXTERNAL)
                    continue
                if name != "*":
                    self.imports[scope].setdefault(name, absolute)
                self.uses[rel].append((m.start(), "::".join(("crate",) + absolute), name, reexport))

    def resolve(self, path: tuple[str, ...], depth: int = 0) -> str | None:
        """The file defining what the absolute path `path` names; None: another crate."""
        if path[: len(EXTERNAL)] == EXTERNAL:
            return None
        k = len(path)
        while k > 0 and path[:k] not in self.modules:
            k -= 1
        mod = path[:k]
        if depth < 16 and k < len(path):
            target = self.imports.get(mod, {}).get(path[k])
            if target is not None and target != path[: k + 1]:
                return self.resolve(target + path[k + 1 :], depth + 1)
        return self.modules[mod]

    def edges(self, rel: str) -> dict[str, list[str]]:
        """file -> the paths (as written, absolute) that make an edge to it."""
        out: dict[str, list[str]] = defaultdict(list)
        blank = self.blank[rel]
        use_spans = [(m.start(), m.end()) for m in USE.finditer(blank)]
        code = "".join(
            blank[a:b] for a, b in zip([0] + [e for _, e in use_spans], [s for s, _ in use_spans] + [len(blank)])
        )
        for _, path, name, reexport in self.uses[rel]:
            # A re-export is the module's facade, not a dependency of its code: it makes an
            # edge only if the file's own code names what it re-exports.
            if reexport and (name == "*" or not re.search(rf"(?<![\w:]){re.escape(name)}\b", code)):
                continue
            target = self.resolve(tuple(path.split("::")[1:]))
            if target is not None and target != rel:
                out[target].append(path)
        for m in PATH.finditer(blank):
            pos = m.start()
            if in_spans(pos, self.tests[rel]) or in_spans(pos, use_spans):
                continue
            segs = [m.group(1)] + [s.strip() for s in m.group(2).split("::")[1:]]
            scope = self.scope(rel, pos)
            absolute = self.absolute(segs, scope)
            if absolute is None:
                bound = self.imports.get(scope, {}).get(segs[0])
                if bound == EXTERNAL:
                    continue
                if bound is not None:
                    absolute = bound + tuple(segs[1:])
                elif scope + (segs[0],) in self.modules:
                    absolute = scope + tuple(segs)
                else:
                    continue
            target = self.resolve(absolute)
            if target is not None and target != rel:
                out[target].append("::".join(segs))
        return out

    def graph(self) -> dict[str, dict[str, list[str]]]:
        return {rel: self.edges(rel) for rel in sorted(self.files)}


def cycles(graph: dict[str, dict[str, list[str]]]) -> list[list[str]]:
    """Strongly connected components of more than one file (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []
    counter = [0]

    def visit(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(graph.get(v, {})):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in sorted(graph):
        if v not in index:
            visit(v)
    return sorted(out)


def cycle_through(graph: dict[str, dict[str, list[str]]], comp: list[str]) -> list[str]:
    """One shortest cycle from the component's first file back to it, inside the component."""
    start, members = comp[0], set(comp)
    prev: dict[str, str] = {}
    frontier = [start]
    while frontier:
        nxt = []
        for v in frontier:
            for w in sorted(graph[v]):
                if w not in members:
                    continue
                if w == start:
                    path = [v]
                    while path[-1] != start:
                        path.append(prev[path[-1]])
                    return [start] + path[::-1][1:] + [start] if v != start else [start, start]
                if w not in prev:
                    prev[w] = v
                    nxt.append(w)
        frontier = nxt
    return comp


# --- layers ------------------------------------------------------------------------------------


def expand_braces(pattern: str) -> list[str]:
    m = re.search(r"\{([^{}]*)\}", pattern)
    if not m:
        return [pattern]
    return [
        x
        for alt in m.group(1).split(",")
        for x in expand_braces(pattern[: m.start()] + alt.strip() + pattern[m.end() :])
    ]


def read_layers(doc: str, root: str) -> list[list[str]] | None:
    """The layers (top first, each a list of patterns) that `doc` gives for `root`, or None."""
    with open(doc, encoding="utf-8") as f:
        lines = f.read().split("\n")
    marker = re.compile(rf"<!--\s*layers:\s*{re.escape(root.rstrip('/'))}/?\s*(?:\(.*\))?\s*-->")
    for i, line in enumerate(lines):
        if marker.search(line):
            break
    else:
        return None
    layers = []
    for line in lines[i + 1 :]:
        if not line.strip():
            if layers:
                break
            continue
        if not line.lstrip().startswith("|"):
            break
        cells = line.strip().strip("|").split("|")
        if len(cells) < 2 or set(cells[1].strip()) <= set("-: "):
            continue
        patterns = [x for span in re.findall(r"`([^`]+)`", cells[1]) for x in expand_braces(span)]
        if patterns:
            layers.append(patterns)
    return layers


def layer_of(rel: str, layers: list[list[str]]) -> int | None:
    """The row of `rel`: an exact file first, else the row of its longest folder pattern."""
    best, best_len = None, -1
    for i, patterns in enumerate(layers):
        for p in patterns:
            if p == rel:
                return i
            if p.endswith("/") and rel.startswith(p) and len(p) > best_len:
                best, best_len = i, len(p)
    return best


def check_layers(graph: dict[str, dict[str, list[str]]], layers: list[list[str]]) -> list[str]:
    """The problems: files in no row, and edges to a row above the file's own."""
    problems = []
    for rel in sorted(graph):
        mine = layer_of(rel, layers)
        if mine is None:
            problems.append(f"{rel}: in no layer")
            continue
        for target, paths in sorted(graph[rel].items()):
            theirs = layer_of(target, layers)
            if theirs is not None and theirs < mine:
                problems.append(
                    f"{rel} (layer {mine + 1}) uses {target} (layer {theirs + 1}, above): {paths[0]}"
                )
    return problems


# --- the command -------------------------------------------------------------------------------


def load(root: str) -> dict[str, str]:
    sources = {}
    for dirpath, _, names in os.walk(root):
        for name in names:
            if name.endswith(".rs"):
                full = os.path.join(dirpath, name)
                rel = os.path.relpath(full, root).replace(os.sep, "/")
                with open(full, encoding="utf-8") as f:
                    sources[rel] = f.read()
    return sources


def check(root: str, args: argparse.Namespace, out=sys.stdout) -> bool:
    """Prints the report for one `src/` directory; true if it passes."""
    crate = Crate(root, load(root))
    ok = True
    if not args.lines:
        graph = crate.graph()
        if args.list:
            print(f"{root}: imports", file=out)
            for rel, targets in graph.items():
                print(f"  {rel} -> {', '.join(sorted(targets)) or '(nothing)'}", file=out)
        comps = cycles(graph)
        for comp in comps:
            allowed = len(comp) <= args.max_cycle
            ok &= allowed
            what = f"allowed (--max-cycle {args.max_cycle})" if allowed else "import cycle"
            print(f"{root}: {what} of {len(comp)} files: {' '.join(comp)}", file=out)
            path = cycle_through(graph, comp)
            for a, b in zip(path, path[1:]):
                print(f"  {a} -> {b}  ({graph[a][b][0]})", file=out)
        if not comps:
            print(f"{root}: no import cycle ({len(graph)} files)", file=out)
        if args.layers:
            layers = read_layers(args.layers, root)
            if layers is None:
                ok = False
                print(f"{root}: {args.layers} has no <!-- layers: {root} --> table", file=out)
            else:
                problems = check_layers(graph, layers)
                for problem in problems:
                    ok = False
                    print(f"{root}/{problem}", file=out)
                if not problems:
                    print(f"{root}: every edge goes down {len(layers)} layers ({args.layers})", file=out)
    if not args.cycles:
        if args.list:
            print(f"{root}: lines of code", file=out)
            for rel, n in sorted(crate.lines.items(), key=lambda x: -x[1]):
                print(f"  {n:5} {rel}", file=out)
        over = {rel: n for rel, n in crate.lines.items() if n > args.max}
        for rel, n in sorted(over.items(), key=lambda x: -x[1]):
            ok = False
            print(f"{root}/{rel}: {n} lines of code, over {args.max}", file=out)
        if not over:
            biggest = max(crate.lines.items(), key=lambda x: x[1], default=("-", 0))
            print(
                f"{root}: no file over {args.max} lines of code "
                f"(largest: {biggest[0]}, {biggest[1]})",
                file=out,
            )
    return ok


SELF_TEST_FILES = {
    "lib.rs": """
//! Docs: crate::worker::Core in a doc comment is not an edge.
mod context;
mod worker;
mod catch;
pub use worker::Core as PublicCore;
pub use context::with_current;
pub mod loom_exports { pub use crate::catch::wake_caught; }
#[cfg(test)]
mod tests {
    use crate::worker::Core;
    fn f() {}
}
""",
    "context.rs": """
use crate::worker::{self, Core};
/* crate::catch::x in a block comment /* nested */ still a comment */
fn f() -> &'static str { "crate::catch::wake_caught is a string" }
""",
    "catch.rs": """
pub fn wake_caught() { let c = 'x'; crate::with_current(|_| ()); }
""",
    "worker/mod.rs": """
mod shared;
pub struct Core;
fn g() { shared::Shared::new(); }
""",
    "worker/shared.rs": """
use super::Core;
pub(in crate::catch) struct Shared;
#[cfg(all(test, not(loom)))]
mod tests {
    use crate::catch::wake_caught;
}
""",
}


def self_test() -> int:
    code, blank = strip('let s = "a // b"; // c\nlet r = r#"x"y"#; /* d */ let l: &\'a u8;')
    assert code.splitlines()[0].rstrip() == 'let s = "a // b";', code
    assert "d" not in code and 'r#"x"y"#' in code, code
    assert blank.splitlines()[0].rstrip() == 'let s = "      ";', blank
    assert "'a u8" in blank, blank
    assert expand_use("crate::{a::b, c::{d as e, self}}") == [
        ("b", "crate::a::b"),
        ("e", "crate::c::d"),
        ("c", "crate::c"),
    ], expand_use("crate::{a::b, c::{d as e, self}}")
    assert module_of("worker/mod.rs") == ("worker",) and module_of("worker/run.rs") == (
        "worker",
        "run",
    )
    assert count_lines(SELF_TEST_FILES["lib.rs"]) == 6, count_lines(SELF_TEST_FILES["lib.rs"])
    assert count_lines(SELF_TEST_FILES["worker/shared.rs"]) == 2
    with tempfile.TemporaryDirectory() as root:
        for rel, src in SELF_TEST_FILES.items():
            os.makedirs(os.path.dirname(os.path.join(root, rel)), exist_ok=True)
            with open(os.path.join(root, rel), "w", encoding="utf-8") as f:
                f.write(src)
        crate = Crate(root, load(root))
        graph = crate.graph()
        edges = {rel: sorted(t) for rel, t in graph.items()}
        assert edges == {
            "lib.rs": [],  # re-exports only: the facade's edges are its users'
            # `crate::with_current` is lib.rs's re-export of context.rs's function.
            "catch.rs": ["context.rs"],
            "context.rs": ["worker/mod.rs"],
            "worker/mod.rs": ["worker/shared.rs"],
            "worker/shared.rs": ["worker/mod.rs"],
        }, edges
        comps = cycles(graph)
        assert comps == [["worker/mod.rs", "worker/shared.rs"]], comps
        assert cycle_through(graph, comps[0]) == ["worker/mod.rs", "worker/shared.rs", "worker/mod.rs"]
        doc = os.path.join(root, "LAYERS.md")
        with open(doc, "w", encoding="utf-8") as f:
            f.write(
                f"<!-- layers: {root} -->\n| layer | files |\n|---|---|\n"
                "| top | `lib.rs`, `catch.rs` |\n| core | `worker/` |\n"
                "| bottom | `context.rs`, `worker/{shared}.rs` |\n\nafter\n"
            )
        layers = read_layers(doc, root)
        assert layers == [["lib.rs", "catch.rs"], ["worker/"], ["context.rs", "worker/shared.rs"]]
        assert layer_of("worker/mod.rs", layers) == 1 and layer_of("worker/shared.rs", layers) == 2
        problems = check_layers(graph, layers)
        assert problems == [
            "context.rs (layer 3) uses worker/mod.rs (layer 2, above): crate::worker",
            "worker/shared.rs (layer 3) uses worker/mod.rs (layer 2, above): crate::worker::Core",
        ], problems
    print("self-test passed")
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("dirs", nargs="*", help="crate src/ directories")
    parser.add_argument("--list", action="store_true", help="print every file's edges and size")
    parser.add_argument("--cycles", action="store_true", help="check import cycles only")
    parser.add_argument("--lines", action="store_true", help="check lines of code only")
    parser.add_argument("--max", type=int, default=MAX_LINES, help="lines of code allowed")
    parser.add_argument(
        "--max-cycle", type=int, default=1, help="files an allowed import cycle may have"
    )
    parser.add_argument("--layers", metavar="FILE", help="check the layers FILE gives")
    parser.add_argument("--self-test", action="store_true", help="test this script")
    args = parser.parse_args()
    if args.self_test:
        return self_test()
    if not args.dirs or (args.cycles and args.lines):
        parser.print_usage(sys.stderr)
        return 2
    ok = True
    for root in args.dirs:
        if not os.path.isdir(root):
            print(f"{root}: no such directory, skipped")
            continue
        ok &= check(root.rstrip("/"), args)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
