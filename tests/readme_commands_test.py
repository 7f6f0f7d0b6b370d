#!/usr/bin/env python3
"""README's command table against the binary: every command `corral --help` lists is named
(as `corral NAME`) in the first column of exactly one row of the table, and the table names no
command the binary lacks.

usage: readme_commands_test.py CORRAL README.md
"""
import re
import subprocess
import sys


def help_commands(corral):
    # `corral --help` prints "usage: ..." then, under "daemons:" and "client:", one command a
    # line, indented two spaces: "  NAME   what it does".
    out = subprocess.run([corral, "--help"], capture_output=True, text=True, timeout=60)
    text = out.stdout + out.stderr
    names = []
    for line in text.splitlines():
        m = re.match(r"^  ([a-z][a-z-]*)\s", line)
        if m:
            names.append(m.group(1))
    return names


def table_rows(readme):
    # The rows of the table whose header is "| command | what |": each row's first column.
    rows, inside = [], False
    for line in open(readme, encoding="utf-8"):
        line = line.rstrip("\n")
        if line.startswith("| command | what |"):
            inside = True
            continue
        if inside and line.startswith("|---"):
            continue
        if inside and not line.startswith("|"):
            break
        if inside:
            rows.append(re.split(r"(?<!\\)\|", line)[1])
    return rows


def main():
    corral, readme = sys.argv[1], sys.argv[2]
    commands = help_commands(corral)
    if len(commands) < 10:
        print(f"corral --help listed too few commands to be right: {commands}")
        return 1
    rows = table_rows(readme)
    problems = []
    named = set()
    for name in commands:
        holders = [r for r in rows if re.search(r"`corral " + re.escape(name) + r"[` ]", r)]
        named.add(name)
        if len(holders) != 1:
            problems.append(f"`corral {name}` is in {len(holders)} rows of README's table, want 1")
    for row in rows:
        for name in re.findall(r"`corral ([a-z][a-z-]*)", row):
            if name not in named:
                problems.append(f"README's table names `corral {name}`, which --help does not list")
    for p in problems:
        print(p)
    print(f"{len(commands)} commands, {len(rows)} rows, {len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
