#!/usr/bin/env python3
"""Runs the command blocks of a Markdown doc as printed, and checks the output
blocks shown under them.

Every ```sh, ```bash and ```python block of a checked doc must carry a
directive: an HTML comment on the line right above its fence (invisible
when the Markdown is rendered, so the reader sees the commands as they are):

  <!-- doc: run [options] -->       run the block as printed (bash -e -o pipefail,
                                    python blocks with /usr/bin/python3)
  <!-- doc: skip REASON -->         not runnable here; the reason is required
  <!-- doc: output [options] -->    a plain ``` block: what the last run block
                                    printed (stdout and stderr), checked
  <!-- doc: table [options] -->     a Markdown table whose figures a command
                                    prints, one command a row: its commands are
                                    the next block marked <!-- doc: rows -->

Options of `run`:
  shorten='--steps 20 ...'   flags appended to every command that runs an example
                             (a path containing examples/); the last flag wins, so
                             long runs are shortened without editing the doc
  append='PATTERN=>FLAGS'    the same for the commands that contain PATTERN
  before='COMMAND'           a hidden set-up command run first (e.g. a checkpoint
                             that the block's command reads)
  sub='OLD=>NEW'             a literal replacement in the block (repeatable), for
                             placeholders such as DIR
  timeout=SECONDS            default 300
  needs=PROGRAM              skip the block, saying so, when PROGRAM is neither on
                             PATH nor a path in the tree (mpirun in a build without MPI)

Options of `output`:
  tolerance=PERCENT          numbers may differ by this much relative (default 0:
                             exact), plus half a unit of the last digit shown
  mask='REGEX'               parts masked in both (repeatable): wall times, paths

Options of `table` (the rows block holds one command a row, in order, each
run with --json true appended; lines NAME="VALUE" set shell variables for
the commands after them):
  cell='N=FORMAT'            column N (from 1) is FORMAT, a Python format string
                             over the fields of the command's JSON output, e.g.
                             cell='5={step_time*1e3:.1f} ms' (repeatable); the
                             other columns are text or measured, not checked
  rows='A-B'                 the table rows (from 1) the commands give, when not
                             all of them
  per_row=K                  K commands a row (default 1); cell='N@J=FORMAT' takes
                             column N from the row's J-th command
  tolerance=PERCENT          as for output blocks

How output is compared: each line shown must appear in the output, in order,
with runs of spaces counted as one; a line "..." stands for lines left out,
and "..." within a line for text left out (the rest of that line then
matches exactly). Numbers within the tolerance count as equal.

Commands run in a scratch directory holding links to the source tree's
top-level entries and `build` -> the build tree, so `build/...`,
`examples/...` and `tests/...` resolve as in a clone; HOME is a fresh
directory inside it and every `/tmp/` in a block is rewritten into it, so a
run leaves nothing behind.

  python3 tests/doc_blocks.py --build build README.md             # check
  python3 tests/doc_blocks.py --build build --write docs/x.md     # put today's
      figures into the output blocks whose lines moved (text kept, numbers updated)
  python3 tests/doc_blocks.py --list README.md                    # what would run

Why our own extractor rather than cram: cram runs `.t` files of `  $ `
prompts, so the docs would have to be written in its format (or copied into
it, and drift); here the docs stay ordinary Markdown and are the test input.
"""
import argparse
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile

FENCE = re.compile(r"^```(\w*)\s*$")
DIRECTIVE = re.compile(r"^<!--\s*doc:\s*(run|skip|output|table|rows)\b(.*?)-->\s*$")
COMMAND_LANGS = {"sh", "bash", "python"}
NUMBER = re.compile(r"[-+]?(?:\d+\.\d+|\d+)(?:[eE][-+]?\d+)?")


class DocError(Exception):
    pass


class Block:
    def __init__(self, lang, start, lines, kind, options, reason):
        self.lang, self.start, self.lines = lang, start, lines
        self.kind, self.options, self.reason = kind, options, reason


def parse_options(text, where):
    options = {}
    try:
        words = shlex.split(text)
    except ValueError as e:
        raise DocError(f"{where}: cannot read the directive's options ({e})")
    for word in words:
        if "=" not in word:
            raise DocError(f"{where}: option {word!r} is not NAME=VALUE")
        name, value = word.split("=", 1)
        if name not in {"shorten", "append", "before", "sub", "timeout", "needs", "tolerance", "mask",
                        "cell", "rows", "per_row"}:
            raise DocError(f"{where}: unknown option {name!r}")
        options.setdefault(name, []).append(value)
    return options


def read_text(path):
    with open(path) as f:
        return f.read()


def write_text(path, text):
    with open(path, "w") as f:
        f.write(text)


def read_blocks(path):
    lines = read_text(path).split("\n")
    blocks, i = [], 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        d = DIRECTIVE.match(lines[i])
        if d and d.group(1) == "table":
            where = f"{path}:{i + 1}"
            end = i + 1
            while end < len(lines) and lines[end].startswith("|"):
                end += 1
            if end - (i + 1) < 3:
                raise DocError(f"{where}: `doc: table` must stand right above a Markdown table")
            blocks.append(Block("table", i + 1, lines[i + 1:end], "table",
                                parse_options(d.group(2), where), None))
            i = end
            continue
        if not m:
            i += 1
            continue
        lang, start = m.group(1), i + 1
        end = start
        while end < len(lines) and not lines[end].startswith("```"):
            end += 1
        if end == len(lines):
            raise DocError(f"{path}:{start}: a ``` block that never closes")
        body = lines[start:end]
        d = DIRECTIVE.match(lines[i - 1]) if i > 0 else None
        where = f"{path}:{start}"
        if d:
            kind, rest = d.group(1), d.group(2).strip()
            if kind == "skip":
                if not rest:
                    raise DocError(f"{where}: `doc: skip` needs the reason beside it")
                blocks.append(Block(lang, start, body, kind, {}, rest))
            else:
                if kind in ("run", "rows") and lang not in COMMAND_LANGS:
                    raise DocError(f"{where}: `doc: run` on a ```{lang} block (sh, bash or python)")
                if kind == "output" and lang:
                    raise DocError(f"{where}: `doc: output` belongs on a plain ``` block")
                blocks.append(Block(lang, start, body, kind, parse_options(rest, where), None))
        elif lang in COMMAND_LANGS:
            raise DocError(f"{where}: a ```{lang} block without a directive: put "
                           "<!-- doc: run --> or <!-- doc: skip REASON --> on the line above it")
        i = end + 1
    waiting = None
    for b in blocks:
        if b.kind == "table":
            if waiting:
                raise DocError(f"{path}:{waiting.start}: a `doc: table` whose rows block never "
                               "comes (another table comes first)")
            waiting = b
        elif b.kind == "rows":
            if not waiting:
                raise DocError(f"{path}:{b.start}: a `doc: rows` block with no table above it")
            waiting = None
    return blocks


def split_comment(command):
    """(command, ' # comment') split at the first unquoted #."""
    quote = None
    for i, c in enumerate(command):
        if quote:
            if c == quote:
                quote = None
        elif c in "'\"":
            quote = c
        elif c == "#" and (i == 0 or command[i - 1].isspace()):
            return command[:i].rstrip(), " " + command[i:]
    return command, ""


def shell_script(block, scratch):
    text = "\n".join(block.lines)
    for sub in block.options.get("sub", []):
        if "=>" not in sub:
            raise DocError(f"{block.start}: sub={sub!r} is not OLD=>NEW")
        old, new = sub.split("=>", 1)
        if old not in text:
            raise DocError(f"{block.start}: sub: {old!r} is not in the block")
        text = text.replace(old, new)
    text = text.replace("/tmp/", os.path.join(scratch, "tmp") + "/")
    text = text.replace("\\\n", " ")  # one command a line
    appends = [("examples/", flags) for flags in block.options.get("shorten", [])]
    for append in block.options.get("append", []):
        if "=>" not in append:
            raise DocError(f"{block.start}: append={append!r} is not PATTERN=>FLAGS")
        appends.append(tuple(append.split("=>", 1)))
    out = []
    for line in text.split("\n"):
        command, comment = split_comment(line)
        for pattern, flags in appends:
            if pattern in command:
                command += " " + flags
        out.append(command + comment)
    return "\n".join(out)


def make_scratch(source, build):
    scratch = tempfile.mkdtemp(prefix="mtf-docs-")
    for name in os.listdir(source):
        if name in {"build", ".git"}:
            continue
        os.symlink(os.path.join(source, name), os.path.join(scratch, name))
    os.symlink(os.path.abspath(build), os.path.join(scratch, "build"))
    for d in ("tmp", "home"):
        os.mkdir(os.path.join(scratch, d))
    return scratch


def run_block(block, scratch, env):
    timeout = float(block.options.get("timeout", ["300"])[-1])
    script = shell_script(block, scratch) if block.lang != "python" else "\n".join(block.lines)
    steps = [("bash", before) for before in block.options.get("before", [])]
    steps.append(("python" if block.lang == "python" else "bash", script))
    output = ""
    for lang, text in steps:
        argv = ["/usr/bin/python3", "-c", text] if lang == "python" else \
            ["bash", "-e", "-o", "pipefail", "-c", text]
        try:
            p = subprocess.run(argv, cwd=scratch, env=env, timeout=timeout,
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                               encoding="utf-8", errors="replace")
        except subprocess.TimeoutExpired:
            raise DocError(f"{block.start}: still running after {timeout:.0f} s:\n{text}")
        output = p.stdout
        if p.returncode != 0:
            raise DocError(f"{block.start}: exit status {p.returncode}:\n{text}\n"
                           f"--- output ---\n{output[-4000:]}")
    return output


def normalise(line, masks):
    for mask in masks:
        line = re.sub(mask, "<masked>", line)
    return " ".join(line.split())


def skeleton(line):
    return NUMBER.sub("#", line)


def numbers_agree(shown, actual, tolerance):
    a, b = NUMBER.findall(shown), NUMBER.findall(actual)
    if len(a) != len(b):
        return False
    for x, y in zip(a, b):
        digits = len(x.split(".")[1].split("e")[0].split("E")[0]) if "." in x else 0
        slack = abs(float(x)) * tolerance + 0.5 * 10 ** -digits
        if abs(float(x) - float(y)) > slack + 1e-12:
            return False
    return True


def compare(block, output, write):
    """Returns (problems, new_lines or None)."""
    tolerance = float(block.options.get("tolerance", ["0"])[-1].rstrip("%")) / 100
    masks = block.options.get("mask", [])
    actual = [a for a in output.split("\n")]
    problems, new_lines, pos, checked = [], list(block.lines), 0, 0
    for k, shown in enumerate(block.lines):
        if shown.strip() in ("", "..."):
            continue
        want = normalise(shown, masks)
        elided = re.compile(".*".join(map(re.escape, want.split("..."))) + "$") \
            if "..." in want else None
        found = None
        for j in range(pos, len(actual)):
            got = normalise(actual[j], masks)
            if elided.match(got) if elided else \
                    skeleton(got) == skeleton(want) and numbers_agree(want, got, tolerance):
                found = j
                break
        if found is None:
            near = next((j for j in range(pos, len(actual))
                         if skeleton(normalise(actual[j], masks)) == skeleton(want)), None)
            if near is not None:
                problems.append(f"{block.start + k + 1}: a figure moved beyond "
                                f"{tolerance * 100:g}%:\n  shown:   {shown.strip()}\n"
                                f"  printed: {actual[near].strip()}")
                if write:
                    new_lines[k] = rewrite_numbers(shown, actual[near])
                pos = near + 1
            else:
                problems.append(f"{block.start + k + 1}: not printed:\n  {shown.strip()}")
            continue
        checked += 1
        pos = found + 1
    if checked == 0 and not problems:
        problems.append(f"{block.start}: an output block with nothing to check")
    return problems, new_lines


def rewrite_numbers(shown, printed):
    """The shown line with the printed line's numbers, the shown spacing kept
    where the widths allow."""
    values = iter(NUMBER.findall(printed))
    return NUMBER.sub(lambda m: next(values), shown)


def table_commands(rows_block):
    """The rows block's commands, each with the variable lines before it."""
    text = "\n".join(rows_block.lines).replace("\\\n", " ")
    variables, commands = [], []
    for line in text.split("\n"):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        if re.match(r'^[A-Za-z_]\w*=', line):
            variables.append(line)
        else:
            commands.append("\n".join(variables + [split_comment(line)[0] + " --json true"]))
    return commands


def table_rows(block):
    spec = block.options.get("rows", [None])[-1]
    body = list(range(2, len(block.lines)))  # after the header and its rule
    if spec is None:
        return body
    m = re.match(r"^(\d+)-(\d+)$", spec)
    if not m:
        raise DocError(f"{block.start}: rows={spec!r} is not A-B")
    return [body[r - 1] for r in range(int(m.group(1)), int(m.group(2)) + 1)]


def render(fmt, fields):
    def one(m):
        value = eval(m.group(1), {"__builtins__": {}}, fields)  # the docs are ours
        return format(value, m.group(2) or "")
    return re.sub(r"\{([^{}:]+)(?::([^{}]*))?\}", one, fmt)


def json_of(command, scratch, env):
    """The JSON object a command prints, or the reason there is none."""
    p = subprocess.run(["bash", "-e", "-o", "pipefail", "-c", command], cwd=scratch, env=env,
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=600,
                       encoding="utf-8", errors="replace")
    if p.returncode != 0 or "{" not in p.stdout:
        return f"exit status {p.returncode}, no JSON:\n{command}\n{p.stdout[-2000:]}"
    return json.JSONDecoder().raw_decode(p.stdout[p.stdout.index("{"):])[0]


def check_table(block, rows_block, scratch, env, write):
    """Returns (problems, new_lines)."""
    if rows_block is None:
        raise DocError(f"{block.start}: a `doc: table` with no ```sh block marked "
                       "<!-- doc: rows --> after it")
    tolerance = float(block.options.get("tolerance", ["0"])[-1].rstrip("%")) / 100
    per_row = int(block.options.get("per_row", ["1"])[-1])
    cells = []
    for spec in block.options.get("cell", []):
        column, _, fmt = spec.partition("=")
        m = re.match(r"^(\d+)(?:@(\d+))?$", column)
        if not m or not fmt or int(m.group(2) or 1) > per_row:
            raise DocError(f"{block.start}: cell={spec!r} is not N=FORMAT or N@J=FORMAT "
                           f"(J up to per_row={per_row})")
        cells.append((int(m.group(1)), int(m.group(2) or 1), fmt))
    if not cells:
        raise DocError(f"{block.start}: a `doc: table` without cell='N=FORMAT': nothing to check")
    rows, commands = table_rows(block), table_commands(rows_block)
    if len(rows) * per_row != len(commands):
        raise DocError(f"{block.start}: {len(rows)} table rows ({per_row} commands each) but "
                       f"{len(commands)} commands in the rows block at line {rows_block.start}")
    problems, new_lines = [], list(block.lines)
    for n, row in enumerate(rows):
        results = [json_of(c, scratch, env) for c in commands[n * per_row:(n + 1) * per_row]]
        failed = [r for r in results if isinstance(r, str)]
        if failed:
            problems.append(f"{block.start + row + 1}: {failed[0]}")
            continue
        shown = [c.strip() for c in block.lines[row].strip().strip("|").split("|")]
        for column, j, fmt in cells:
            command = commands[n * per_row + j - 1]
            want, got = shown[column - 1], render(fmt, results[j - 1])
            if skeleton(want) != skeleton(got) or not numbers_agree(want, got, tolerance):
                problems.append(f"{block.start + row + 1}: column {column} shows {want!r}; "
                                f"the command prints {got!r}\n  {command.splitlines()[-1]}")
                shown[column - 1] = got
        new_lines[row] = "| " + " | ".join(shown) + " |"
    return problems, new_lines


def check_doc(path, source, build, write, env_extra):
    blocks = read_blocks(path)
    scratch = make_scratch(source, build)
    env = dict(os.environ)
    env.update(HOME=os.path.join(scratch, "home"), TMPDIR=os.path.join(scratch, "tmp"),
               PYTHONPATH=os.path.join(scratch, "build", "python"))
    env.update(env_extra)
    problems, last_output, ran, skipped, outputs = [], None, 0, 0, 0
    shown_path = os.path.relpath(path, source)
    text_lines = read_text(path).split("\n")
    try:
        for block in blocks:
            if block.kind in ("skip", "rows"):
                skipped += block.kind == "skip"
                continue
            if block.kind == "table":
                later = blocks[blocks.index(block) + 1:]
                rows_block = next((b for b in later if b.kind == "rows"), None)  # checked above
                try:
                    found, new_lines = check_table(block, rows_block, scratch, env, write)
                except DocError as e:
                    found, new_lines = [str(e)], None
                outputs += 1
                problems += [f"{shown_path}:{p}" for p in found]
                if write and found and new_lines:
                    text_lines[block.start:block.start + len(block.lines)] = new_lines
                continue
            missing = [n for n in block.options.get("needs", [])
                       if not shutil.which(n) and not os.path.exists(os.path.join(scratch, n))]
            if block.kind == "run" and missing:
                print(f"{shown_path}:{block.start}: skipped here: {', '.join(missing)} not found")
                skipped += 1
                last_output = None
                continue
            if block.kind == "run":
                try:
                    last_output = run_block(block, scratch, env)
                    ran += 1
                except DocError as e:
                    problems.append(f"{shown_path}:{e}")
                    last_output = None
                continue
            outputs += 1
            if last_output is None:
                problems.append(f"{shown_path}:{block.start}: an output block with no run block "
                                "(that succeeded) above it")
                continue
            found, new_lines = compare(block, last_output, write)
            problems += [f"{shown_path}:{p}" for p in found]
            if write and found:
                text_lines[block.start:block.start + len(block.lines)] = new_lines
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    if write:
        write_text(path, "\n".join(text_lines))
    return problems, ran, skipped, outputs


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("docs", nargs="+")
    ap.add_argument("--build", default="build")
    ap.add_argument("--source", default=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    ap.add_argument("--write", action="store_true")
    ap.add_argument("--list", action="store_true")
    args = ap.parse_args()
    status = 0
    for doc in args.docs:
        path = doc if os.path.isabs(doc) else os.path.join(args.source, doc)
        try:
            if args.list:
                for b in read_blocks(path):
                    print(f"{doc}:{b.start}: {b.kind} {b.reason or ''}".rstrip())
                continue
            problems, ran, skipped, outputs = check_doc(path, args.source, args.build,
                                                        args.write, {})
        except DocError as e:
            print(f"doc_blocks: {e}")
            status = 1
            continue
        for p in problems:
            print(p + "\n")
        verb = "rewrote" if args.write else "checked"
        print(f"{doc}: {ran} blocks run, {outputs} output blocks and tables {verb}, {skipped} skipped "
              f"(with their reasons), {len(problems)} problems")
        if problems and not args.write:
            status = 1
    if status and not args.write:
        print("A doc no longer matches what its commands do: fix the doc or the code; "
              "figures that moved for a reason: python3 tests/doc_blocks.py --write DOC, "
              "and say why beside them.")
    return status


if __name__ == "__main__":
    sys.exit(main())
