#!/usr/bin/env python3
"""Functions longer than a limit in the C and C++ sources, tests aside.

  scripts/function_sizes.py [--limit 80] [--all] [DIR...]   (default DIR: src)
  scripts/function_sizes.py --members FILE:CLASS              (its data members)

Prints "LINES path:line name" for each function over the limit, longest first, then their
count. A function may carry its reason for its length in the comment just above it, one line
that starts with "Long:" ("// Long: one case per change kind, the decoder's table."); those are
listed apart, with their reasons, and not counted. A function is a definition that begins at the start of a line (this tree does not
indent namespace bodies) and ends at its matching closing brace; member functions defined
inside a class body are not counted (they are the short ones). Strings, character literals
and comments are skipped when braces are matched. Test sources (*_test.cc, testing/) are left
out unless --all is given.
"""
import argparse
import os
import re
import sys

SOURCE = re.compile(r".*\.(cc|c|h|cpp)$")
NOT_A_FUNCTION = re.compile(
    r"^(#|//|/\*|\*|namespace\b|using\b|typedef\b|template\s*<[^>]*>\s*$|}|"
    r"(struct|class|enum|union)\b(?!.*\)\s*(const\s*)?\{?\s*$)|extern\s+\"C\")"
)


def strip_code(text):
    """The text with comments and the insides of string and character literals blanked, line
    breaks kept, so that braces can be counted and lines numbered."""
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append("\n" * text.count("\n", i, j))
            i = j
        elif c == "R" and text.startswith('R"', i) and (i == 0 or not text[i - 1].isalnum()):
            open_paren = text.find("(", i + 2)
            delim = text[i + 2:open_paren]
            j = text.find(")" + delim + '"', open_paren)
            j = n if j < 0 else j + len(delim) + 2
            out.append('""' + "\n" * text.count("\n", i, j))
            i = j
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == "\\" else 1
            out.append(c + c + "\n" * text.count("\n", i, j))
            i = j + 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


LONG_REASON = re.compile(r"^\s*//\s*Long:\s*(.+)$")


def reason_above(raw, i):
    """The "Long:" reason in the comment lines just above line index i, or None."""
    k = i - 1
    while k >= 0 and raw[k].lstrip().startswith("//"):
        m = LONG_REASON.match(raw[k])
        if m:
            return m.group(1).strip()
        k -= 1
    return None


def functions(path):
    """(first line, line count, name, reason) of each function defined at the start of a
    line; reason is its "Long:" comment's, or None."""
    with open(path, encoding="utf-8", errors="replace") as f:
        text = f.read()
    raw = text.split("\n")
    lines = strip_code(text).split("\n")
    found = []
    i = 0
    while i < len(lines):
        line = lines[i]
        if not line or line[0].isspace() or NOT_A_FUNCTION.match(line) or "(" not in line:
            i += 1
            continue
        # The signature runs to the first "{" (a definition) or ";" (a declaration).
        j, head = i, ""
        while j < len(lines):
            head += lines[j] + " "
            if "{" in lines[j] or ";" in lines[j]:
                break
            j += 1
        brace, semi = head.find("{"), head.find(";")
        if brace < 0 or (0 <= semi < brace) or "=" in head[: head.find("(")]:
            i = j + 1
            continue
        depth, k = 0, j
        for k in range(j, len(lines)):
            depth += lines[k].count("{") - lines[k].count("}")
            if depth <= 0 and "}" in lines[k]:
                break
        name = re.findall(r"([~\w:]+(?:operator\S*)?)\s*\(", head[: brace])
        found.append((i + 1, k - i + 1, name[0] if name else "?", reason_above(raw, i)))
        i = k + 1
    return found


def members(spec):
    """The data members declared directly in the body of class or struct CLASS of FILE: the
    declarations at the body's indentation that end with ';' and declare no function."""
    path, cls = spec.rsplit(":", 1)
    with open(path, encoding="utf-8") as f:
        lines = strip_code(f.read()).split("\n")
    start = next(i for i, l in enumerate(lines) if re.match(r"(class|struct) %s\b[^;]*$" % cls, l))
    found, decl = [], ""
    for line in lines[start + 1:]:
        if line.startswith("};"):
            break
        if decl or (line.startswith("  ") and not line.startswith("   ") and line.strip()):
            decl += line.strip() + " "
            if not decl.rstrip().endswith((";", "{", "}", ":")):
                continue
            d, decl = decl.strip(), ""
            head = d.split("=")[0].split("{")[0]
            if d.endswith(";") and "(" not in head and not re.match(
                    r"(using|friend|static|enum|struct|class|typedef|public|private)\b", d):
                names = re.findall(r"(\w+)\s*(?:=|\{|;|\[)", d)
                if names:
                    found.append(names[0])
    return found


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--limit", type=int, default=80)
    p.add_argument("--all", action="store_true", help="count test sources too")
    p.add_argument("--members", metavar="FILE:CLASS", help="list the data members of CLASS")
    p.add_argument("dirs", nargs="*", default=["src"])
    args = p.parse_args()
    if args.members:
        names = members(args.members)
        print(" ".join(names))
        print(f"{len(names)} data members")
        return 0
    long, explained = [], []
    for top in args.dirs:
        for root, _, files in os.walk(top):
            for name in files:
                path = os.path.join(root, name)
                is_test = name.endswith("_test.cc") or "/testing" in root
                if not SOURCE.match(name) or (is_test and not args.all):
                    continue
                for line, count, fn, why in functions(path):
                    if count > args.limit:
                        (explained if why else long).append((count, path, line, fn, why))
    for count, path, line, fn, _ in sorted(long, key=lambda x: (-x[0], x[1])):
        print(f"{count:5d} {path}:{line} {fn}")
    print(f"{len(long)} functions over {args.limit} lines without a reason")
    for count, path, line, fn, why in sorted(explained, key=lambda x: (-x[0], x[1])):
        print(f"{count:5d} {path}:{line} {fn} (Long: {why})")
    if explained:
        print(f"{len(explained)} functions over {args.limit} lines with one")
    return 0


if __name__ == "__main__":
    sys.exit(main())
