#!/usr/bin/env python3
"""Compares what a Slurm command printed on a real Slurm with what Corral's shim printed for the
same jobs (tests/slurm/slurm_diff_test.sh). Usage:

  compare_outputs.py KIND SLURM_FILE CORRAL_FILE SLURM_IDS CORRAL_IDS

KIND is table (squeue, sinfo, sprio: columns split on blanks), fixed (sacct's and sacctmgr's
tables: columns cut at the dashes line), parsable (sacct -P), scontrol (`scontrol show job`), or
header (the header line, and the dashes line under it if any: where the two sides' rows differ
by construction, as sshare's tree of accounts). The IDS files hold
"name id" lines. Header lines must be identical. In each row the values that differ by
construction are normalised by column: job ids become the job's name, partitions PART, users
and accounts USER, node names NODE, and times keep their shape only (each digit 9), so that a
time format is still compared. Everything else (state names, exit codes, counts) must be equal.
Exit status 0 if they agree; 1 (with both sides printed) if not, or if either side is empty.
"""
import re
import sys

ID_COLUMNS = {"JOBID", "JobID", "JobIDRaw", "JobId", "ArrayJobId"}
PART_COLUMNS = {"PARTITION", "Partition"}
USER_COLUMNS = {"USER", "User", "UserId", "GroupId"}
# Corral has no Slurm accounts (docs/slurm.md): the column is there, its value is not compared.
ACCOUNT_COLUMNS = {"Account", "ACCOUNT", "Def Acct"}
CLUSTER_COLUMNS = {"Cluster"}
# Slurm's GRES has no type here ("gpu:8"); Corral's names the GPU model ("gpu:SimGPU:8").
GRES_COLUMNS = {"GRES"}
# sprio's factors: Slurm's weighted sums, Corral's own priority and factors x1000.
FACTOR_COLUMNS = {"PRIORITY", "SITE", "AGE", "FAIRSHARE"}
# The machines' sizes differ by construction (Corral's agents report this host's).
SIZE_COLUMNS = {"CPUS", "MEMORY", "S:C:T"}
NODE_COLUMNS = {"NODELIST", "NODELIST(REASON)", "NodeList", "BatchHost"}
TIME_COLUMNS = {"TIME", "TIME_LIMIT", "TIMELIMIT", "Elapsed", "Start", "End", "Submit",
                "Timelimit", "RunTime", "TimeLimit", "SubmitTime", "StartTime", "EndTime",
                "EligibleTime", "AccrueTime"}


def load_ids(path):
    ids = {}
    for line in open(path):
        name, _, job = line.strip().partition(" ")
        if job:
            ids[job] = name
    return ids


def norm_id(value, ids):
    # 12, 12_1, 12.batch, 12_[0-2] -> NAME, NAME_1, NAME.batch ...
    m = re.match(r"^(\d+)(.*)$", value)
    if m and m.group(1) in ids:
        return "ID_" + ids[m.group(1)] + m.group(2)
    return value


def norm(column, value, ids):
    if column in ID_COLUMNS:
        return norm_id(value, ids)
    if column in PART_COLUMNS:
        return "PART" + ("*" if value.endswith("*") else "")
    if column in USER_COLUMNS:
        return "USER" if value else ""
    if column in ACCOUNT_COLUMNS:
        return "ACCOUNT"
    if column in CLUSTER_COLUMNS:
        return "CLUSTER"
    if column in GRES_COLUMNS:
        return re.sub(r"gpu:[A-Za-z][\w.-]*:", "gpu:", value)
    if column in FACTOR_COLUMNS:
        return re.sub(r"\d+", "N", value)
    if column in SIZE_COLUMNS:
        return re.sub(r"\d+", "N", value)
    if column in NODE_COLUMNS:
        return re.sub(r"node(\[[^\]]*\]|\d+)", "NODE", value)
    if column in TIME_COLUMNS:
        return re.sub(r"\d", "9", value)
    return value


def rows_table(text):
    lines = [l for l in text.splitlines() if l.strip()]
    # sinfo -l and -N -l print the date first: its shape only.
    head = []
    if lines and re.match(r"^\w{3} \w{3} [ \d]\d \d\d:\d\d:\d\d \d{4}$", lines[0]):
        head.append(re.sub(r"\w", "x", lines.pop(0)))
    header = lines[0].split()
    return head + [" ".join(header)], header, [l.split() for l in lines[1:]]


def rows_fixed(text):
    lines = [l for l in text.splitlines() if l.strip()]
    dashes = lines[1]
    spans = [m.span() for m in re.finditer(r"-+", dashes)]
    cut = lambda l: [l[a:b + 1].strip() for a, b in spans]
    header = cut(lines[0])
    return [" ".join(header), re.sub(r"-+", "-", dashes.strip())], header, [cut(l) for l in lines[2:]]


def rows_parsable(text):
    lines = [l for l in text.splitlines() if l.strip()]
    header = lines[0].split("|")
    return ["|".join(header)], header, [l.split("|") for l in lines[1:]]


def compare_tabular(kind, slurm, corral, sids, cids):
    parse = {"table": rows_table, "fixed": rows_fixed, "parsable": rows_parsable}[kind]
    s_head, s_cols, s_rows = parse(slurm)
    c_head, c_cols, c_rows = parse(corral)
    problems = []
    if s_head != c_head:
        problems.append(f"header: slurm {s_head!r}, corral {c_head!r}")
    def normed(cols, rows, ids):
        out = []
        for r in rows:
            if len(r) != len(cols):
                problems.append(f"row {r!r} has {len(r)} columns, the header {len(cols)}")
                continue
            out.append(" | ".join(norm(c, v, ids) for c, v in zip(cols, r)))
        return sorted(out)
    s_n, c_n = normed(s_cols, s_rows, sids), normed(c_cols, c_rows, cids)
    if s_head == c_head and s_n != c_n:
        problems.append("rows (normalised):\n  slurm:  " + "\n          ".join(s_n) +
                        "\n  corral: " + "\n          ".join(c_n))
    return problems


def fields(text):
    out = {}
    for token in text.split():
        key, eq, value = token.partition("=")
        if eq and key not in out:
            out[key] = value
    return out


def compare_header(slurm, corral):
    def head(text):
        lines = [l.rstrip() for l in text.splitlines() if l.strip()]
        return lines[:2] if len(lines) > 1 and re.fullmatch(r"[- ]+", lines[1]) else lines[:1]
    s, c = head(slurm), head(corral)
    return [] if s == c else [f"header: slurm {s!r}, corral {c!r}"]


def compare_scontrol(slurm, corral, sids, cids):
    s, c = fields(slurm), fields(corral)
    problems = []
    extra = sorted(set(c) - set(s))
    if extra:
        problems.append(f"fields Slurm does not print: {extra}")
    for key in sorted(set(c) & set(s)):
        a, b = norm(key, s[key], sids), norm(key, c[key], cids)
        if key in ("Command", "WorkDir", "Priority", "TRES", "UserId"):
            continue  # paths, users, Slurm's priorities and billing: listed in docs/slurm.md
        if a != b:
            problems.append(f"{key}: slurm {s[key]!r} ({a}), corral {c[key]!r} ({b})")
    return problems


def main():
    kind, sfile, cfile, sids_file, cids_file = sys.argv[1:6]
    slurm, corral = open(sfile).read(), open(cfile).read()
    if not slurm.strip() or not corral.strip():
        print(f"  empty output: slurm {len(slurm)} bytes, corral {len(corral)} bytes")
        return 1
    sids, cids = load_ids(sids_file), load_ids(cids_file)
    if kind == "scontrol":
        problems = compare_scontrol(slurm, corral, sids, cids)
    elif kind == "header":
        problems = compare_header(slurm, corral)
    else:
        problems = compare_tabular(kind, slurm, corral, sids, cids)
    if problems:
        print("\n".join("  " + p for p in problems))
        print("  ---- slurm printed:\n" + slurm + "  ---- corral printed:\n" + corral)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
