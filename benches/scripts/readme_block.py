"""What the README scripts share: reading `key=value` result lines, and replacing one generated
block of README.md (between `<!-- NAME:begin -->` and `<!-- NAME:end -->`), nothing else."""
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


def replace_block(marker, lines):
    """Writes `lines` (which start with the begin marker and end with the end marker) over the
    README's block `marker`, and prints them; exits if the README has no such block."""
    readme = os.path.join(ROOT, "README.md")
    with open(readme) as f:
        content = f.read()
    block = re.escape(f"<!-- {marker}:begin -->") + ".*?" + re.escape(f"<!-- {marker}:end -->")
    new, n = re.subn(block, lambda _: "\n".join(lines), content, flags=re.S)
    if n != 1:
        sys.exit(f"README.md has no <!-- {marker}:begin --> ... <!-- {marker}:end --> block")
    with open(readme, "w") as f:
        f.write(new)
    print("\n".join(lines))
