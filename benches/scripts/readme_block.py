"""What the README scripts share: reading `key=value` result lines, and replacing one generated
block (between `<!-- NAME:begin -->` and `<!-- NAME:end -->`), nothing else, in whichever of the
documents holds it: benches/README.md (the tables), README.md (the headline), docs/*.md."""
import glob
import os
import platform
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def cpu_model():
    """The machine's CPU, as /proc/cpuinfo names it."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def fields(line):
    """The `key=value` pairs of one result line."""
    return dict(kv.split("=", 1) for kv in line.split() if "=" in kv)


def documents():
    """The files a generated block may live in."""
    return [os.path.join(ROOT, "benches", "README.md"), os.path.join(ROOT, "README.md")] + sorted(
        glob.glob(os.path.join(ROOT, "docs", "*.md"))
    )


def block_file(marker):
    """The one document that holds block `marker`; exits if none or several do."""
    begin = f"<!-- {marker}:begin -->"
    found = []
    for path in documents():
        with open(path) as f:
            if begin in f.read():
                found.append(path)
    if len(found) != 1:
        names = ", ".join(os.path.relpath(p, ROOT) for p in found) or "none of " + ", ".join(
            os.path.relpath(p, ROOT) for p in documents()
        )
        sys.exit(f"block <!-- {marker}:begin --> ... <!-- {marker}:end -->: found in {names}")
    return found[0]


def replace_block(marker, lines):
    """Writes `lines` (which start with the begin marker and end with the end marker) over
    block `marker` wherever it lives, and prints them; exits if no document has it."""
    path = block_file(marker)
    with open(path) as f:
        content = f.read()
    block = re.escape(f"<!-- {marker}:begin -->") + ".*?" + re.escape(f"<!-- {marker}:end -->")
    new, n = re.subn(block, lambda _: "\n".join(lines), content, flags=re.S)
    if n != 1:
        sys.exit(f"{os.path.relpath(path, ROOT)}: more than one <!-- {marker}:begin --> block")
    with open(path, "w") as f:
        f.write(new)
    print("\n".join(lines))
    print(f"(written into {os.path.relpath(path, ROOT)})")
