#!/usr/bin/env python3
"""Checks a bench report (scripts/bench_report.py): the figures scripts/bench.sh
must hold, with their goals and their ratios to the limits they name."""
import json, sys

doc = json.load(open(sys.argv[1]))
figures = {f["name"]: f for f in doc["figures"]}
problems = []
for name in ["machine.rdtsc_ns", "machine.memcpy_gb_per_s", "machine.lz4_compress_mb_per_s",
             "machine.lz4_decompress_mb_per_s", "machine.disk_read_mb_per_s", "machine.disk_write_mb_per_s",
             "recorder.event_ns.1t", "recorder.event_ns.2t", "recorder.lossless_events_per_s", "recorder.bytes_per_event",
             "index.events_per_s", "index.size_ratio", "index.cold_mb_per_s", "index.open_ms", "index.query_us",
             "index.anon_rss_mb", "render.frame_ms.p50", "render.frame_ms.p95", "render.prims_per_frame.max",
             "render.message_frame_ms.p95", "render.lane_order_arrow_ratio", "render.six_figures_frame_ms.p95",
             "render.find_period_ms",
             "live.latency_ms.p95", "live.ingest_events_per_s", "analysis.topk_ms", "analysis.derive_events_per_s",
             "import.json_parse_mb_per_s", "import.mb_per_s", "import.anon_rss_mb", "import.anon_to_json",
             "import.protobuf_parse_mb_per_s", "import.perfetto_mb_per_s", "import.perfetto_anon_rss_mb"]:
    if name not in figures:
        problems.append(f"missing {name}")
for name, goal in [("render.frame_ms.p95", 33), ("render.six_figures_frame_ms.p95", 41), ("render.message_frame_ms.p95", 33), ("render.lane_order_arrow_ratio", 0.5), ("index.open_ms", 50), ("recorder.bytes_per_event", 6),
                   ("index.size_ratio", 0.05), ("live.latency_ms.p95", 100), ("live.ingest_events_per_s", 10e6),
                   ("analysis.topk_ms", 50), ("analysis.derive_events_per_s", 50e6),
                   ("import.anon_to_json", 10), ("import.perfetto_mb_per_s", 200), ("import.perfetto_anon_rss_mb", 512)]:
    f = figures.get(name, {})
    if f.get("goal", {}).get("value") != goal or "met" not in f:
        problems.append(f"{name}: goal {goal} not read ({f.get('goal')})")
for name, limit in [("recorder.event_ns.1t", "machine.rdtsc_ns"), ("index.cold_mb_per_s", "machine.disk_read_mb_per_s"),
                     ("import.mb_per_s", "import.json_parse_mb_per_s"),
                     ("import.perfetto_mb_per_s", "import.protobuf_parse_mb_per_s")]:
    f = figures.get(name, {})
    if f.get("limit", {}).get("name") != limit or not f.get("ratio_to_limit"):
        problems.append(f"{name}: no ratio to {limit}")
if not doc.get("machine", {}).get("cpus"):
    problems.append("no machine description")
print("\n".join(problems) or f"{len(figures)} figures, goals and limits in place")
sys.exit(1 if problems else 0)
