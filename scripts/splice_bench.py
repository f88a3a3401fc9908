#!/usr/bin/env python3
"""Splice the rows of newer bench runs into a committed bench JSON, and say what they changed.

usage: scripts/splice_bench.py BASE.json NEW.json [NEW.json ...] --note TEXT [--out FILE] [--add]

A change that alters the plans at some points is re-timed there only (`qsgemm bench ... --ms ...`);
its rows replace BASE's rows of the same point, in place. A point is (family, layer, M, N, K,
out_dtype, rank, group, ld): one row per point in BASE, and in all the NEW files together. Each NEW
must come from the same device as BASE, and a row replaces only a row timed the same way (`timing`:
graph or not), so that a file never compares a graph-replayed point with a plain one. A NEW row
whose point BASE lacks is an error unless --add (new in-between M values), which appends it. BASE's
`spliced` note gets TEXT and the runs' commits and dates; `git_commit` and `date` stay BASE's (the
run most rows come from).

It prints, per family, the replaced rows' qsgemm time new / old (geometric mean, fastest and
slowest point): the "no loss at the grid points" check of issue #24 for the points re-timed.
Writes BASE in place unless --out. Exit 0; 2 on bad usage or a refused row (nothing is written).
Standard library only.
"""
import collections
import json
import math
import sys

KEY_FIELDS = ("family", "layer", "M", "N", "K", "out_dtype", "rank", "group", "ld")


def point_key(row):
    return tuple(row.get(f) for f in KEY_FIELDS)


class SpliceError(Exception):
    pass


def splice(base, news, note, add=False):
    """Returns (spliced document, {family: [(key, old us, new us)]}, added rows). Raises SpliceError."""
    out = dict(base)
    rows = [dict(r) for r in base["rows"]]
    index = {}
    for i, r in enumerate(rows):
        k = point_key(r)
        if k in index:
            raise SpliceError(f"BASE has two rows for point {k}")
        index[k] = i
    changes = collections.OrderedDict()
    added = 0
    runs = []
    seen = {}  # point -> the NEW that times it (one each)
    for n, new in enumerate(news):
        if new.get("device") != base.get("device"):
            raise SpliceError(f"NEW #{n + 1} ran on {new.get('device')!r}, BASE on {base.get('device')!r}")
        for r in new["rows"]:
            k = point_key(r)
            if k in seen:
                raise SpliceError(f"point {k} is in NEW #{n + 1} and in NEW #{seen[k]}" if seen[k] != n + 1
                                  else f"NEW #{n + 1} has two rows for point {k}")
            seen[k] = n + 1
            if k not in index:
                if not add:
                    raise SpliceError(f"point {k} of NEW #{n + 1} is not in BASE (--add appends it)")
                index[k] = len(rows)
                rows.append(dict(r))
                added += 1
                continue
            old = rows[index[k]]
            if old.get("timing") != r.get("timing"):
                raise SpliceError(f"point {k}: BASE timed it {old.get('timing')!r}, NEW #{n + 1} {r.get('timing')!r}")
            if old.get("qsgemm_us", 0) > 0 and r.get("qsgemm_us", 0) > 0:
                changes.setdefault(r["family"], []).append((k, old["qsgemm_us"], r["qsgemm_us"]))
            rows[index[k]] = dict(r)
        runs.append(f"{new.get('git_commit', '?')} ({new.get('date', '?')}, {len(new['rows'])} rows)")
    text = f"{note}: rows from the run of {', '.join(runs)}."
    out.pop("rows")
    out["spliced"] = (base["spliced"] + " " + text) if base.get("spliced") else text
    out["rows"] = rows  # last, as the bench writes it
    return out, changes, added


def dump(doc):
    """The bench's own layout (bench/report.cpp): the run's fields in a few lines, one row a line."""
    head = dict(doc)
    rows = head.pop("rows")
    j = lambda v: json.dumps(v, ensure_ascii=False)
    lines = []
    for group in (("device", "sms", "cuda"), ("git_commit", "date")):
        if all(k in head for k in group):
            lines.append(", ".join(f"{j(k)}: {j(head.pop(k))}" for k in group))
    lines += [f"{j(k)}: {j(v)}" for k, v in head.items()]
    body = "".join(f"  {l},\n" for l in lines)
    if not rows:
        return "{\n" + body + '  "rows": []\n}\n'
    return "{\n" + body + '  "rows": [\n' + ",\n".join("    " + j(r) for r in rows) + "\n  ]\n}\n"


def writer_for(text):
    """The layout that gives BASE's text back (the bench's, or json indent=1 as some committed files
    are), so that a splice changes only the rows it replaces; the bench's otherwise."""
    doc = json.loads(text)
    for w in (dump, lambda d: json.dumps(d, indent=1) + "\n", lambda d: json.dumps(d, indent=1)):
        if w(doc) == text:
            return w
    return dump


def geomean(xs):
    return math.exp(sum(math.log(x) for x in xs) / len(xs))


def report(changes, added):
    lines = []
    for fam, ch in changes.items():
        ratios = [(new / old, k) for k, old, new in ch]
        lo, hi = min(ratios, key=lambda t: t[0]), max(ratios, key=lambda t: t[0])
        lines.append(f"{fam}: {len(ch)} rows replaced, qsgemm new/old geomean {geomean([r for r, _ in ratios]):.3f}, "
                     f"fastest {lo[0]:.3f} ({lo[1][1]} M={lo[1][2]}), slowest {hi[0]:.3f} ({hi[1][1]} M={hi[1][2]})")
    if added:
        lines.append(f"{added} rows added")
    return lines


def main(argv):
    args = argv[1:]
    note, out_path, add = None, None, False
    files = []
    i = 0
    while i < len(args):
        a = args[i]
        if a in ("--note", "--out"):
            if i + 1 >= len(args):
                print(__doc__)
                return 2
            if a == "--note":
                note = args[i + 1]
            else:
                out_path = args[i + 1]
            i += 2
            continue
        if a == "--add":
            add = True
        elif a.startswith("--"):
            print(__doc__)
            return 2
        else:
            files.append(a)
        i += 1
    if len(files) < 2 or not note:
        print(__doc__)
        return 2
    texts = []
    for p in files:
        with open(p) as f:
            texts.append(f.read())
    docs = [json.loads(t) for t in texts]
    try:
        out, changes, added = splice(docs[0], docs[1:], note, add)
    except SpliceError as e:
        print(f"splice_bench: {e}; nothing written", file=sys.stderr)
        return 2
    for line in report(changes, added):
        print(line)
    with open(out_path or files[0], "w") as f:
        f.write(writer_for(texts[0])(out))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
