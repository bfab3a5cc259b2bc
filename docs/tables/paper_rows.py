#!/usr/bin/env python3
"""The paper's runs, predicted (docs/transformer.md): regenerates the table
from the command block under it and checks the two agree.

The doc's table and its ```-block of `mtf-sim` commands (one per row, with
"$L" the layout set on the block's first line) are read from the doc itself,
so the commands checked are the ones a reader copies. Each command runs with
`--json true` in the given build tree.

  python3 docs/tables/paper_rows.py [--build build] --check   # exit 1 when a figure moved
  python3 docs/tables/paper_rows.py [--build build] --write   # put today's figures in the doc

Tolerances (--check): step time 0.5% relative; utilization and
communication 0.15 points (the doc shows one decimal); peak memory
0.01 GiB. A cost-only simulation is deterministic, so a figure that moves
beyond them moved because the simulator or the model changed: update the
table with --write, and the text that explains it, in the same change.
About 20 s on 2 CPUs.
"""
import argparse
import json
import os
import re
import shlex
import subprocess
import sys

DOC = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "transformer.md")
HEADER = "| d_ff | heads | params | mesh (cores) | step time | utilization | communication | peak memory / core |"


def read_doc(path):
    text = open(path).read()
    start = text.index(HEADER)
    lines = text[start:].split("\n")
    rows = []
    for line in lines[2:]:
        if not line.startswith("|"):
            break
        rows.append(line)
    block = re.search(r"```\n(L=\"[^\n]*\"\n(?:build/tools/mtf-sim [^\n]*\n)+)```", text[start:])
    if not block:
        sys.exit("paper_rows.py: no ```-block of mtf-sim commands under the table in " + path)
    cmd_lines = block.group(1).strip().split("\n")
    layout = re.match(r'L="([^"]*)"', cmd_lines[0]).group(1)
    commands = [c.replace('"$L"', shlex.quote(layout)) for c in cmd_lines[1:]]
    if len(commands) != len(rows):
        sys.exit(f"paper_rows.py: {len(rows)} table rows but {len(commands)} commands")
    return text, rows, commands


def cells(row):
    return [c.strip() for c in row.strip().strip("|").split("|")]


def run(command, build):
    argv = shlex.split(command)
    argv[0] = argv[0].replace("build/", build.rstrip("/") + "/", 1)
    out = subprocess.run(argv + ["--json", "true"], check=True, capture_output=True, text=True).stdout
    j = json.loads(out[out.index("{"):])
    total = j["compute"] + j["communication"] + j["idle"]
    return {
        "step_ms": j["step_time"] * 1e3,
        "util": j["utilization"] * 100,
        "comm": j["communication"] / total * 100 if total > 0 else 0.0,
        "mem_gib": j["peak_memory"] / 2**30,
    }


def row_text(old_cells, f):
    c = list(old_cells)
    c[4] = f"{f['step_ms']:.1f} ms"
    c[5] = f"{f['util']:.1f}%"
    c[6] = f"{f['comm']:.1f}%"
    c[7] = f"{f['mem_gib']:.2f} GiB"
    return "| " + " | ".join(c) + " |"


def shown(old_cells):
    return {
        "step_ms": float(old_cells[4].split()[0]),
        "util": float(old_cells[5].rstrip("%")),
        "comm": float(old_cells[6].rstrip("%")),
        "mem_gib": float(old_cells[7].split()[0]),
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default="build")
    ap.add_argument("--doc", default=DOC)
    mode = ap.add_mutually_exclusive_group(required=True)
    mode.add_argument("--check", action="store_true")
    mode.add_argument("--write", action="store_true")
    args = ap.parse_args()
    text, rows, commands = read_doc(args.doc)
    new_rows, problems = [], []
    for row, command in zip(rows, commands):
        old = cells(row)
        f = run(command, args.build)
        new_rows.append(row_text(old, f))
        s = shown(old)
        what = f"d_ff {old[0]} ({old[2]})"
        if abs(f["step_ms"] - s["step_ms"]) > 0.005 * s["step_ms"]:
            problems.append(f"{what}: step time {f['step_ms']:.1f} ms, the doc shows {s['step_ms']} ms")
        if abs(f["util"] - s["util"]) > 0.15:
            problems.append(f"{what}: utilization {f['util']:.1f}%, the doc shows {s['util']}%")
        if abs(f["comm"] - s["comm"]) > 0.15:
            problems.append(f"{what}: communication {f['comm']:.1f}%, the doc shows {s['comm']}%")
        if abs(f["mem_gib"] - s["mem_gib"]) > 0.01:
            problems.append(f"{what}: peak memory {f['mem_gib']:.2f} GiB, the doc shows {s['mem_gib']} GiB")
    if args.write:
        for old, new in zip(rows, new_rows):
            text = text.replace(old, new, 1)
        open(args.doc, "w").write(text)
        print("\n".join(new_rows))
        return 0
    if problems:
        print("docs/transformer.md's paper table no longer matches the simulator:\n  " +
              "\n  ".join(problems) +
              "\nRegenerate it (python3 docs/tables/paper_rows.py --write) and update the text "
              "that explains the figures.")
        return 1
    print(f"all {len(rows)} rows of the paper table match (step time within 0.5%)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
