#!/usr/bin/env python3
"""tests/cli/html_check.py DIR — the HTML reports checked without a browser.

For every page of html_pages.PAGES: it is written (exit 0), is well-formed XML,
holds every chart it should, no coordinate is NaN or Inf, bar lengths are
proportional to their values with one scale per chart (stacked segments
touching, axis ticks where their values say), and the numbers the charts are
drawn from are exactly the numbers the same command writes as CSV (compare,
plan --view terms|collectives|time, sweep, report seed's CSV files, scaling,
quant-error, run -o and report fidelity -o). Prints "ok - name" / "FAIL - name" lines; the calling
script counts them."""
import csv
import io
import math
import os
import re
import sys
import xml.etree.ElementTree as ET

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import html_pages as P  # noqa: E402
from html_pages import check, fail, ok  # noqa: E402


def parse(path):
    tree = ET.parse(path)
    for el in tree.iter():  # drop the SVG namespace: tags read as in the markup
        if "}" in el.tag:
            el.tag = el.tag.split("}", 1)[1]
    return tree.getroot()


def rows(text):
    return list(csv.DictReader(io.StringIO(text)))


def figures(root):
    return {f.get("id")[4:]: f for f in root.iter("figure") if (f.get("id") or "").startswith("fig-")}


def svg_of(fig):
    return next(iter(fig.iter("svg")), None)


NUM = re.compile(r"^-?\d+(\.\d+)?$")
COORDS = ("x", "y", "width", "height", "cx", "cy", "r", "x1", "y1", "x2", "y2")


def bad_coordinates(root):
    """Attributes that are not plain finite numbers where a number belongs."""
    bad = []
    for el in root.iter():
        for a in COORDS:
            v = el.get(a)
            if v is not None and not NUM.match(v):
                bad.append("%s %s=%r" % (el.tag, a, v))
        for a in ("d", "viewBox", "transform"):
            v = el.get(a)
            if v is not None and re.search(r"nan|inf", v, re.I):
                bad.append("%s %s=%r" % (el.tag, a, v))
    return bad


def check_bars(page, fid, svg):
    """One px-per-unit for every bar, stacked segments touching, ticks where their values say."""
    g = next((e for e in svg.iter("g") if e.get("class") == "bars"), None)
    if g is None:
        return
    scale, x0 = float(g.get("data-scale")), float(g.get("data-x0"))
    rects = [r for r in g.iter("rect") if r.get("class") == "bar"]
    vals = [(float(r.get("data-v")) * scale, float(r.get("x")), float(r.get("width")), r) for r in rects]
    big = max(vals, key=lambda t: t[0]) if vals else None
    if not big or big[0] <= 0:  # every value 0 (a single-rank run's collectives): every bar must be empty
        return check("%s %s: every bar zero long, as its value" % (page, fid),
                     vals and all(w == 0 for _, _, w, _ in vals))
    k = big[2] / big[0]  # px per axis unit
    # coordinates carry two decimals: each of x and width is off by <= 0.005 px, the scale by its share of that
    worst = max(abs(w - k * v) - 0.011 - 0.005 * v / big[0] for v, _, w, _ in vals)
    check("%s %s: every bar's length is its value on one scale" % (page, fid), worst <= 0, "off by %.4f px" % worst)
    misplaced = []
    prev = None
    for v, x, w, r in vals:
        if r.get("data-overlay") == "1" or prev is None or prev[0] != (r.get("data-cat"), r.get("data-key"), r.get("y")):
            start = x0
        else:
            start = prev[1]
        if abs(x - start) > 0.011:
            misplaced.append("%s at x=%s, expected %.3f" % (r.get("data-v"), x, start))
        prev = ((r.get("data-cat"), r.get("data-key"), r.get("y")), x + w)
    check("%s %s: segments start at zero or where the previous one ends" % (page, fid), not misplaced, *misplaced[:5])
    ticks = [t for t in svg.iter("text") if t.get("data-tick") is not None]
    off = [t.text for t in ticks if abs(float(t.get("x")) - (x0 + k * float(t.get("data-tick")))) > 0.05]
    check("%s %s: axis ticks at their values (%d)" % (page, fid, len(ticks)), ticks and not off, *off[:5])


def bars(fig, col=None):
    svg = svg_of(fig)
    return [r for r in svg.iter("rect") if r.get("class") == "bar" and (col is None or r.get("data-col") == col)]


def structure(pages):
    for name, (path, rc, err) in pages.items():
        figs_wanted = P.PAGES[name][2]
        if rc != 0:
            fail("%s: written (exit %d)" % (name, rc), err)
            continue
        try:
            root = parse(path)
        except ET.ParseError as e:
            fail("%s: well-formed" % name, e)
            continue
        ok("%s: written, well-formed XML" % name)
        check("%s: no script, no external resource" % name,
              not list(root.iter("script")) and not re.search(r'(src|href)="(https?:)?//', open(path).read()))
        figs = figures(root)
        missing = [f for f in figs_wanted if f not in figs or svg_of(figs[f]) is None or
                   svg_of(figs[f]).get("id") != f]
        check("%s: every chart present (%s)" % (name, ", ".join(figs_wanted) or "none"), not missing, missing)
        bad = bad_coordinates(root)
        check("%s: every coordinate a finite number" % name, not bad, *bad[:5])
        for fid in figs_wanted:
            if fid in figs:
                svg = svg_of(figs[fid])
                marks = bars(figs[fid]) + [g for g in svg.iter("g") if g.get("class") == "pt"]
                check("%s %s: draws marks" % (name, fid), marks)
                check("%s %s: has its table beneath" % (name, fid), list(figs[fid].iter("table")))
                check_bars(name, fid, svg)
        if name == "models":
            rc2, out, _ = P.fp8plan(["models", "--format", "csv"])
            n = len(rows(out))
            got = len(list(next(root.iter("table")).iter("tr"))) - 1
            check("models: the page holds the catalog's %d rows" % n, got == n, "got %d" % got)


# ---- the charts' numbers against the CSV ---------------------------------------------------------------------

GROUPS = {  # memory group -> terms (plan --view terms), as the seed's accounting groups them
    "weight_bytes": ["weight_gemm", "weight_other", "weight_expert", "router_bias"],
    "fp8_weight_copy_bytes": ["fp8_rowwise", "fp8_colwise", "fp8_expert"],
    "master_bytes": ["master_gemm", "master_other", "master_expert"],
    "grad_bytes": ["grad_gemm", "grad_other", "grad_expert"],
    "optim_bytes": ["adam_m_gemm", "adam_m_other", "adam_v_gemm", "adam_v_other", "adam_m_expert",
                    "adam_v_expert"],
    "scale_bytes": ["scale_gemm", "scale_block", "scale_state"],
    "activation_bytes": ["act_layer_hp", "act_layer_fp8", "act_attention", "act_dropout_mask", "act_output",
                         "transient", "act_moe"],
    "buffer_bytes": ["comm_buffers", "gemm_workspace"],
    "other_overhead_bytes": ["cuda_context", "fragmentation"],
}


def plan_charts_match(page, root, recipes):
    figs = figures(root)
    _, out, _ = P.fp8plan(["compare"] + P.L175 + ["--recipes", ",".join(recipes * (2 if len(recipes) == 1 else 1)),
                                                  "--format", "csv"])
    summary = {r["recipe"]: r for r in rows(out)}
    mem = {(r.get("data-cat"), r.get("data-col")): r.get("data-v") for r in bars(figs["mem"])}
    wrong, coll_wrong, time_wrong, seen = [], [], [], 0
    for rec in recipes:
        _, tout, _ = P.fp8plan(["plan"] + P.L175 + ["--recipe", rec, "--view", "terms", "--format", "csv"])
        terms = {t["term"]: int(t["bytes"]) for t in rows(tout)}
        listed = sum(len(v) for v in GROUPS.values())
        if listed != len(terms) or sum(terms.values()) != int(summary[rec]["total_bytes"]):
            wrong.append("%s: the groups do not cover the terms %s" % (rec, sorted(terms)))
        total = 0
        for col, names in GROUPS.items():
            got = mem.get((rec, col))
            want = str(sum(terms[n] for n in names))
            if col in summary[rec] and summary[rec][col] != want:
                wrong.append("%s %s: terms sum %s, compare csv %s" % (rec, col, want, summary[rec][col]))
            if got != want:
                wrong.append("%s %s: chart %s, csv %s" % (rec, col, got, want))
            total += int(got or 0)
        if str(total) != summary[rec]["total_bytes"]:
            wrong.append("%s: chart total %d, csv %s" % (rec, total, summary[rec]["total_bytes"]))
        # collectives: every used one has its bar with step_bytes, time_s and exposed_s exactly as the CSV
        _, cout, _ = P.fp8plan(["plan"] + P.L175 + ["--recipe", rec, "--view", "collectives", "--format", "csv"])
        cbytes = {r.get("data-cat"): r.get("data-v") for r in bars(figs["comm-bytes"]) if r.get("data-key") == rec}
        ctime = {(r.get("data-cat"), r.get("data-col")): r.get("data-v")
                 for r in bars(figs["comm-time"]) if r.get("data-key") == rec}
        used = [c for c in rows(cout) if c["link"] != "-"]
        if len(cbytes) != len(used):
            coll_wrong.append("%s: %d bars, %d collectives used" % (rec, len(cbytes), len(used)))
        for c in used:
            if cbytes.get(c["collective"]) != c["step_bytes"]:
                coll_wrong.append("%s %s: chart %s, csv %s" % (rec, c["collective"], cbytes.get(c["collective"]),
                                                               c["step_bytes"]))
            for col in ("time_s", "exposed_s"):
                if ctime.get((c["collective"], col)) != c[col]:
                    coll_wrong.append("%s %s %s: chart %s, csv %s" % (rec, c["collective"], col,
                                                                       ctime.get((c["collective"], col)), c[col]))
        # step time: one segment per item, exactly the CSV's seconds; together the step
        _, sout, _ = P.fp8plan(["plan"] + P.L175 + ["--recipe", rec, "--view", "time", "--format", "csv"])
        segs = {r.get("data-seg"): r.get("data-v") for r in bars(figs["time"]) if r.get("data-cat") == rec}
        items = rows(sout)
        step = float(next(i["seconds"] for i in items if i["item"] == "step"))
        for i in items:
            if i["item"] != "step" and segs.get(i["item"]) != i["seconds"]:
                time_wrong.append("%s %s: chart %s, csv %s" % (rec, i["item"], segs.get(i["item"]), i["seconds"]))
        if abs(sum(float(v) for v in segs.values()) - step) > 1e-9 * step:
            time_wrong.append("%s: segments add to %r, step %r" % (rec, sum(float(v) for v in segs.values()), step))
        seen += len(used)
    check("%s mem: every group = its terms in plan --view terms = compare csv, total exact" % page, not wrong,
          *wrong[:6])
    check("%s comm-bytes/comm-time: %d collectives, bytes and seconds exactly the csv's" % (page, seen),
          not coll_wrong, *coll_wrong[:6])
    check("%s time: every item's seconds exactly plan --view time's" % page, not time_wrong, *time_wrong[:6])


def sweep_matches(root):
    figs = figures(root)
    svg = svg_of(figs["sweep"])
    _, text, _ = P.fp8plan(["sweep"] + P.SWEEP + ["--top", "3"])
    fit = int(re.search(r"(\d+) fit", text).group(1))
    pts = [g for g in svg.iter("g") if g.get("class") == "pt"]
    series = [g for g in svg.iter("g") if g.get("class") == "s" and "front" not in g.get("class")]
    plotted = sum(int(p.get("data-n")) for s in series for p in s.iter("g") if p.get("class") == "pt")
    # the chart draws of each recipe the 2 fastest layouts in each of 160 memory slices; its description
    # counts the layouts that fit (the text's) and the points drawn (the markers' data-n add up to them)
    desc = " ".join("".join(figs["sweep"].itertext()).split())
    m = re.search(r"The layouts that fit \((\d+)\).*\((\d+) points\)", desc)
    check("sweep: the figure counts the layouts that fit (the text's %d) and the points it draws (%d)" % (fit, plotted),
          m and int(m.group(1)) == fit and int(m.group(2)) == plotted and 0 < plotted <= fit, desc[:300])
    _, out, _ = P.fp8plan(["sweep"] + P.SWEEP + ["--top", "3", "--format", "csv"])
    best = rows(out)[0]
    mark = next(g for g in svg.iter("g") if g.get("class") == "mark")
    check("sweep: the chosen plan is rank 1 of sweep --format csv",
          (mark.get("data-x"), mark.get("data-y")) == (best["total_bytes"], best["tokens_per_s"]),
          (mark.get("data-x"), mark.get("data-y")), (best["total_bytes"], best["tokens_per_s"]))
    drawn = {(float(p.get("data-x")), float(p.get("data-y"))) for s in series for p in s.iter("g")
             if p.get("class") == "pt"}
    check("sweep: the fastest layout (rank 1) is among the points drawn",
          (float(best["total_bytes"]), float(best["tokens_per_s"])) in drawn)
    front = [g for s in svg.iter("g") if "front" in (s.get("class") or "") for g in s.iter("g")
             if g.get("class") == "pt"]
    pairs = [(float(p.get("data-x")), float(p.get("data-y"))) for p in pts]
    dominated = [(fx, fy) for fx, fy in ((float(f.get("data-x")), float(f.get("data-y"))) for f in front)
                 if any(x < fx and y > fy for x, y in pairs)]
    check("sweep: no layout has less memory and more tokens/s than a front point (%d on the front)" % len(front),
          front and not dominated, *dominated[:4])


def seed_matches(root, tmp):
    figs = figures(root)
    outdir = os.path.join(tmp, "seedcsv")
    P.fp8plan(["report", "seed", "-o", outdir])
    t5 = rows(open(os.path.join(outdir, "table5_fp8lm.csv")).read())
    wrong = []
    for fid, metric in (("t5-memory", "memory"), ("t5-comm", "weight_comm")):
        got = {(r.get("data-cat"), r.get("data-col")): r.get("data-v") for r in bars(figs[fid])}
        want = [r for r in t5 if r["metric"] == metric]
        for r in want:
            cat = "%s \u00b7 %s \u00b7 %s" % (r["model"], r["layout"], r["recipe"])
            for col in ("published", "predicted"):
                if got.get((cat, col)) != r[col]:
                    wrong.append("%s %s %s: chart %s, csv %s" % (fid, cat, col, got.get((cat, col)), r[col]))
        if len(got) != 2 * len(want):
            wrong.append("%s: %d bars for %d rows" % (fid, len(got), len(want)))
    t1a = rows(open(os.path.join(outdir, "table1a_bytes_per_param.csv")).read())
    got = {(r.get("data-cat"), r.get("data-col")): r.get("data-v") for r in bars(figs["t1a"])}
    for r in t1a:
        for col in ("weight", "master", "grad", "adam_m", "adam_v", "fp8_copy"):
            c = col + "_bytes_per_param"
            if got.get((r["recipe"], c)) != r[c]:
                wrong.append("t1a %s %s: chart %s, csv %s" % (r["recipe"], c, got.get((r["recipe"], c)), r[c]))
    t1b = rows(open(os.path.join(outdir, "table1b_scale_granularity.csv")).read())
    got = {(r.get("data-cat"), r.get("data-col")): r.get("data-v") for r in bars(figs["scales"])}
    for r in t1b:
        cat = "%s \u00b7 %s" % (r["format"], r["granularity"])
        for c in ("payload_bytes", "scale_bytes"):
            if got.get((cat, c)) != r[c]:
                wrong.append("scales %s %s: chart %s, csv %s" % (cat, c, got.get((cat, c)), r[c]))
    check("seed: Table 5, 1a and 1b bars exactly report seed's CSV files (%d rows)" % (len(t5) + len(t1a) + len(t1b)),
          not wrong, *wrong[:6])


def fidelity_matches(root, tmp):
    """Every run's point is (measured, predicted) of fidelity_runs.csv in its stack's series (memory: its kind's);
    the MAE bars are fidelity_summary.csv's stack rows."""
    figs = figures(root)
    outdir = os.path.join(tmp, "fidcsv")
    P.fp8plan(["report", "fidelity", "-o", outdir])
    runs = rows(open(os.path.join(outdir, "fidelity_runs.csv")).read())
    summ = rows(open(os.path.join(outdir, "fidelity_summary.csv")).read())
    for fid, key, xc, yc in (("fid-tok", "stack", "measured_tokens_per_s_per_gpu", "predicted_tokens_per_s_per_gpu"),
                             ("fid-mem", "mem_kind", "measured_mem_gib", "predicted_mem_gib")):
        svg = svg_of(figs[fid])
        want = {i: (r[key], r[xc], r[yc]) for i, r in enumerate(runs) if r[xc] and r[yc]}
        wrong, drawn = [], {}
        for s in svg.iter("g"):
            if s.get("class") == "s" and s.get("data-series") != "predicted = measured":
                for p in s.iter("g"):
                    if p.get("class") == "pt":  # a point may stand for data-n runs closer than a marker
                        i, got = int(p.get("data-line")), (s.get("data-series"), p.get("data-x"), p.get("data-y"))
                        if want.get(i) != got:
                            wrong.append("line %d: chart %s, csv %s" % (i, got, want.get(i)))
                        drawn[got[0]] = drawn.get(got[0], 0) + int(p.get("data-n"))
        per = {}
        for k, _, _ in want.values():
            per[k] = per.get(k, 0) + 1
        check("fidelity %s: every point is its run's of fidelity_runs.csv, every run drawn (%d)" % (fid, len(want)),
              not wrong and drawn == per, *(wrong[:6] + [drawn, per]))
    got = {r.get("data-cat"): r.get("data-v") for r in bars(figs["fid-mae"])}
    want = {r["group"]: r["mae_pct"] for r in summ if r["kind"] == "stack"}
    check("fidelity fid-mae: the bars are fidelity_summary.csv's MAE per stack (%d stacks)" % len(want),
          got == want, got, want)


def scaling_matches(root):
    svg = svg_of(figures(root)["scaling-bounds"])
    _, out, _ = P.fp8plan(P.SCALING + ["--format", "csv"], P.SCALING_IN)
    want = {r["step"]: r for r in rows(out)}
    wrong, drawn = [], 0
    for s in svg.iter("g"):
        if s.get("class") != "s":
            continue
        col = {"amax of the step": "amax", "saturates above": "saturate_above",
               "flushes to 0 at or below": "flush_below"}.get(s.get("data-series"))
        for p in s.iter("g"):
            if col and p.get("class") == "pt":
                drawn += col == "amax"
                if want[p.get("data-x")][col] != p.get("data-y"):
                    wrong.append("%s step %s: chart %s, csv %s" % (col, p.get("data-x"), p.get("data-y"),
                                                                  want[p.get("data-x")][col]))
    events = [g for g in svg.iter("g") if g.get("class") == "ev"]
    sat = [r["step"] for r in want.values() if r["cast"] != "ok"]
    evsat = [e.get("data-x") for e in events if e.get("data-status") in ("saturates", "inf", "nan")]
    # 12 amax values, of which 0 and inf cannot sit on a log axis
    check("scaling: the trace's points are the csv's (%d amax drawn, 0 and inf left out)" % drawn,
          not wrong and drawn == 10, *wrong[:5])
    check("scaling: a mark on every step whose cast saturates (%s)" % ",".join(sat), sorted(evsat) == sorted(sat),
          evsat)
    # values a log axis cannot show, over the chart's five series: the amax 0 and inf, and the window amax
    # while the inf is in it
    cols = ("amax", "window_amax", "saturate_above", "min_sub_below", "flush_below")
    left = sum(1 for r in want.values() for c in cols if not (0 < float(r[c]) < math.inf))
    fig = figures(root)["scaling-bounds"]
    note = " ".join(p.text or "" for p in fig.iter("p"))
    check("scaling: the figure says it leaves out the %d values a log axis cannot show" % left,
          "%d values are not drawn" % left in note, note[-200:])


def qerror_matches(root):
    figs = figures(root)
    _, out, _ = P.fp8plan(P.QERR + ["--format", "csv"])
    want = rows(out)
    wrong = []
    for fid, col in (("qerror-rel", "mean_rel_pct"), ("qerror-flushed", "flushed_pct")):
        got = {(r.get("data-cat"), r.get("data-key")): r.get("data-v") for r in bars(figs[fid])}
        for r in want:
            if got.get((r["granularity"], r["format"])) != r[col]:
                wrong.append("%s %s %s: chart %s, csv %s" % (fid, r["format"], r["granularity"],
                                                             got.get((r["granularity"], r["format"])), r[col]))
    check("quant-error: bars exactly the csv's (%d rows)" % len(want), not wrong, *wrong[:5])


def run_matches(root, tmp):
    figs = figures(root)
    path = os.path.join(tmp, "run.csv")
    P.fp8plan(P.RUN + ["-o", path])
    want = {r["term"]: r for r in rows(open(path).read()) if r["section"] == "memory"}
    got = {(r.get("data-cat"), r.get("data-col")): r.get("data-v") for r in bars(figs["run-memory"])}
    wrong = []
    for term, r in want.items():
        if r["planned_bytes"] and r["measured_bytes"]:
            for c in ("planned_bytes", "measured_bytes"):
                if got.get((term, c)) != r[c]:
                    wrong.append("%s %s: chart %s, csv %s" % (term, c, got.get((term, c)), r[c]))
    check("run: memory bars exactly run -o's CSV (%d terms measured)" % (len(got) // 2), got and not wrong,
          *wrong[:5])
    loss = [g for g in svg_of(figs["run-loss"]).iter("g") if g.get("class") == "pt"]
    check("run: a loss point per step (12)", len(loss) == 12, len(loss))


def main():
    tmp = sys.argv[1]
    pages = P.generate(tmp)
    structure(pages)
    for name, fn in (("plan", lambda r: plan_charts_match("plan", r, ["te-fp8"])),
                     ("compare", lambda r: plan_charts_match("compare", r, P.RECIPES.split(","))),
                     ("whatif", lambda r: plan_charts_match("whatif", r, P.RECIPES.split(","))),
                     ("sweep", sweep_matches), ("seed", lambda r: seed_matches(r, tmp)), ("scaling", scaling_matches),
                     ("qerror", qerror_matches), ("run", lambda r: run_matches(r, tmp)),
                     ("fidelity", lambda r: fidelity_matches(r, tmp))):
        path, rc, _ = pages[name]
        if rc == 0:
            try:
                fn(parse(path))
            except Exception as e:  # a checker that cannot run is a failure, never a pass
                fail("%s: the CSV cross-check ran" % name, repr(e))


if __name__ == "__main__":
    main()
