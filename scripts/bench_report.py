#!/usr/bin/env python3
"""Benchmark reports for tinescope (used by scripts/bench.sh).

  bench_report.py report OUT.json LOG...   figures of the logs -> one JSON report
  bench_report.py compare A.json B.json    figure by figure, B against A

Every benchmark prints `figure: NAME VALUE UNIT (free text)`. A figure's goal
is read from its text ("goal <= 33 ms", "goal >= 0.8", "goal 150 M/s"); its
physical limit, where it has one, is another figure (LIMITS below), usually
one of this machine's (bench/machine_bench).
"""
import json, os, platform, re, socket, subprocess, sys, time

# figure -> (limit figure, factor): ratio_to_limit = value / (limit * factor)
LIMITS = {
    "recorder.event_ns.1t": ("machine.rdtsc_ns", 1.0),
    "recorder.event_ns.2t": ("machine.rdtsc_ns", 1.0),
    "recorder.rdtsc_ns": ("machine.rdtsc_ns", 1.0),
    "recorder.func_call_ns": ("machine.rdtsc_ns", 1.0),
    "index.lz4_decompress_mb_per_s": ("machine.lz4_decompress_mb_per_s", 1.0),
    "index.disk_read_mb_per_s": ("machine.disk_read_mb_per_s", 1.0),
    "index.cold_mb_per_s": ("machine.disk_read_mb_per_s", 1.0),
    "import.mb_per_s": ("import.json_parse_mb_per_s", 1.0),
    "import.perfetto_mb_per_s": ("import.protobuf_parse_mb_per_s", 1.0),
}
# Goals the text does not state in a form the pattern reads.
GOALS = {
    "recorder.event_ns.1t": ("<=", 1.15, "machine.rdtsc_ns"),
    "recorder.event_ns.2t": ("<=", 1.15, "machine.rdtsc_ns"),
    "recorder.lossless_events_per_s": (">=", 20e6, None),
    "recorder.bytes_per_event": ("<=", 6.0, None),
    "recorder.symbols_ms": ("<=", 1000, None),
    "recorder.func_call_ns": ("<=", 2.3, "machine.rdtsc_ns"),
    "recorder.func_lossless_calls_per_s": (">=", 10e6, None),
    "index.events_per_s": (">=", 150e6, None),
    "index.cold_mb_per_s": (">=", 0.8, "machine.disk_read_mb_per_s"),
    "live.ingest_events_per_s": (">=", 10e6, None),
}
LINE = re.compile(r"^figure: (\S+) (\S+) (\S+)(?: (.*))?$")
GOAL = re.compile(r"goal(?: p\d+)? *(<=|>=|≤|≥)? *([0-9.]+(?:e[0-9]+)?) *(?:(k|M|G)(?=/s))?")
SCALE = {"k": 1e3, "M": 1e6, "G": 1e9, None: 1}


def parse(paths):
    figures = {}
    for path in paths:
        for line in open(path, encoding="utf-8", errors="replace"):
            m = LINE.match(line.strip())
            if not m:
                continue
            name, value, unit, text = m.group(1), m.group(2), m.group(3), m.group(4) or ""
            try:
                v = float(value)
            except ValueError:
                continue
            figures[name] = {"name": name, "value": v, "unit": unit, "text": text.strip(), "source": os.path.basename(path)}
    return figures


def annotate(figures):
    for name, f in figures.items():
        if name in LIMITS and LIMITS[name][0] in figures and name != LIMITS[name][0]:
            lim, factor = LIMITS[name]
            f["limit"] = {"name": lim, "value": figures[lim]["value"] * factor}
            if f["limit"]["value"]:
                f["ratio_to_limit"] = f["value"] / f["limit"]["value"]
        goal = None
        if name in GOALS:
            op, g, rel = GOALS[name]
            if rel is None:
                goal = {"op": op, "value": g}
            elif rel in figures:
                goal = {"op": op, "value": g * figures[rel]["value"], "as": f"{g} x {rel}"}
        else:
            m = GOAL.search(f["text"])
            if m:
                op = {"≤": "<=", "≥": ">="}.get(m.group(1), m.group(1)) or ">="
                goal = {"op": op, "value": float(m.group(2)) * SCALE[m.group(3)]}
        if goal:
            f["goal"] = goal
            if goal["value"]:
                f["ratio_to_goal"] = f["value"] / goal["value"]
            f["met"] = f["value"] <= goal["value"] if goal["op"] == "<=" else f["value"] >= goal["value"]


def machine():
    info = {"host": socket.gethostname(), "platform": platform.platform(), "cpus": os.cpu_count()}
    try:
        model = [l for l in open("/proc/cpuinfo") if l.startswith("model name")]
        info["cpu"] = model[0].split(":", 1)[1].strip() if model else ""
        info["memory_gb"] = round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30, 1)
    except (OSError, ValueError):
        pass
    try:
        info["commit"] = subprocess.check_output(["git", "rev-parse", "HEAD"], text=True, stderr=subprocess.DEVNULL).strip()
    except (OSError, subprocess.CalledProcessError):
        pass
    return info


def report(out, logs):
    figures = parse(logs)
    annotate(figures)
    doc = {"tinescope_bench_report": 1, "date": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "machine": machine(),
           "figures": [figures[k] for k in sorted(figures)]}
    with open(out, "w") as f:
        json.dump(doc, f, indent=1)
    for f in doc["figures"]:
        extra = ""
        if "ratio_to_limit" in f:
            extra += f"  {f['ratio_to_limit']:.3g}x {f['limit']['name']}"
        if "goal" in f:
            extra += f"  goal {f['goal']['op']} {f['goal']['value']:.4g}: {'met' if f['met'] else 'NOT met'}"
        print(f"{f['name']:38} {f['value']:>14.6g} {f['unit']:12}{extra}")
    print(f"report: {out} ({len(figures)} figures)")


def compare(a_path, b_path):
    a = {f["name"]: f for f in json.load(open(a_path))["figures"]}
    b = {f["name"]: f for f in json.load(open(b_path))["figures"]}
    print(f"{'figure':38} {'A':>12} {'B':>12} {'B/A':>8}")
    for name in sorted(set(a) | set(b)):
        fa, fb = a.get(name), b.get(name)
        if not fa or not fb:
            print(f"{name:38} {'-' if not fa else fa['value']:>12} {'-' if not fb else fb['value']:>12}")
            continue
        r = fb["value"] / fa["value"] if fa["value"] else float("inf")
        lower_better = fb.get("goal", {}).get("op") == "<=" or fb["unit"] in ("ns", "us", "ms", "s", "MB", "bytes", "ratio")
        better = (r < 1) == lower_better if r != 1 else None
        mark = "" if better is None or abs(r - 1) < 0.05 else ("  better" if better else "  WORSE")
        print(f"{name:38} {fa['value']:>12.5g} {fb['value']:>12.5g} {r:>8.3f}{mark}")


if __name__ == "__main__":
    if len(sys.argv) >= 3 and sys.argv[1] == "report":
        report(sys.argv[2], sys.argv[3:])
    elif len(sys.argv) == 4 and sys.argv[1] == "compare":
        compare(sys.argv[2], sys.argv[3])
    else:
        sys.exit(__doc__)
