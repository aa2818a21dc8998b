// Perfetto's protobuf traces, written here with libprotobuf's classes of
// Perfetto's schema (import/proto/perfetto_trace.proto), imported and read
// back through the index: every packet kind the importer reads, checked
// field by field; interned data across sequences and cleared mid-trace;
// clocks; the kernel's bundles out of order; compressed packets; bad input.
#include <zlib.h>

#include <fstream>
#include <random>

#include "import_helpers.hpp"
#include "perfetto_trace.pb.h"
#include "tinescope/analysis/event_details.hpp"
#include "tinescope/import/protowire.hpp"

namespace tinescope::test {
namespace {

namespace pp = perfetto::protos;
using TE = pp::TrackEvent;

std::string write_trace(const pp::Trace& t, const std::string& name) {
  const std::string path = temp_path(name);
  std::string bytes;
  EXPECT_TRUE(t.SerializeToString(&bytes));
  write_file(path, bytes);
  return path;
}

pp::TracePacket* packet(pp::Trace& t, uint32_t seq, uint64_t ts) {
  pp::TracePacket* p = t.add_packet();
  p->set_trusted_packet_sequence_id(seq);
  p->set_timestamp(ts);
  return p;
}

TE* event(pp::Trace& t, uint32_t seq, uint64_t ts, uint64_t track, TE::Type type) {
  pp::TracePacket* p = packet(t, seq, ts);
  p->set_sequence_flags(pp::TracePacket::SEQ_NEEDS_INCREMENTAL_STATE);
  TE* e = p->mutable_track_event();
  e->set_track_uuid(track);
  e->set_type(type);
  return e;
}

// A sequence's first packet: its incremental state set (empty).
void start_sequence(pp::Trace& t, uint32_t seq) {
  pp::TracePacket* p = t.add_packet();
  p->set_trusted_packet_sequence_id(seq);
  p->set_sequence_flags(pp::TracePacket::SEQ_INCREMENTAL_STATE_CLEARED);
}

void describe_thread(pp::Trace& t, uint64_t uuid, int pid, int tid, const char* name) {
  auto* d = t.add_packet()->mutable_track_descriptor();
  d->set_uuid(uuid);
  d->mutable_thread()->set_pid(pid);
  d->mutable_thread()->set_tid(tid);
  d->mutable_thread()->set_thread_name(name);
}

// The arguments of the one interval or instant of that name on a lane.
std::map<std::string, std::string> args_of(const Imported& im, StreamKind kind, const std::string& lane,
                                           const std::string& name) {
  std::map<std::string, std::string> out;
  auto items = im.items(kind, lane, name);
  EXPECT_EQ(items.size(), 1u) << name;
  if (items.size() != 1) return out;
  std::vector<analysis::EventView> ev;
  std::string why;
  EXPECT_TRUE(analysis::item_events(*im.ix, im.lane.at(lane), items[0], ev, why)) << why;
  for (auto& e : ev)
    for (auto& a : e.args) out[a.name] = a.text;
  return out;
}

// The wire format's varints, every length from 1 to 10 bytes, read where
// the message ends right after them and where more bytes follow, against
// a plain reading a byte at a time; one cut short reads as malformed.
TEST(PerfettoImport, VarintsOfEveryLengthReadAsTheirBytesSay) {
  std::mt19937_64 rng(7);
  auto reference = [](const std::string& b, size_t& used) {
    uint64_t v = 0;
    for (size_t i = 0; i < b.size() && i < 10; ++i) {
      v |= uint64_t(uint8_t(b[i]) & 0x7f) << (7 * i);
      if (uint8_t(b[i]) < 0x80) return used = i + 1, v;
    }
    return used = 0, v;
  };
  for (int trial = 0; trial < 20000; ++trial) {
    const int bits = int(rng() % 65);
    const uint64_t value = bits == 0 ? 0 : bits == 64 ? rng() : rng() & ((uint64_t(1) << bits) - 1);
    std::string b;
    protowire::Writer(b).varint(value);
    const size_t length = b.size();
    const size_t tail = rng() % 12;  // bytes after it: none, or enough for a wide load
    for (size_t i = 0; i < tail; ++i) b += char(rng());
    size_t used = 0;
    ASSERT_EQ(reference(b, used), value);
    ASSERT_EQ(used, length);
    const uint8_t* p = reinterpret_cast<const uint8_t*>(b.data());
    uint64_t v = 0;
    ASSERT_TRUE(protowire::read_varint(p, p + b.size(), v)) << value;
    EXPECT_EQ(v, value);
    EXPECT_EQ(size_t(p - reinterpret_cast<const uint8_t*>(b.data())), length);
    // Cut before its last byte: not a varint.
    if (length > 1) {
      std::string cut = b.substr(0, length - 1);
      const uint8_t* q = reinterpret_cast<const uint8_t*>(cut.data());
      EXPECT_FALSE(protowire::read_varint(q, q + cut.size(), v)) << value;
    }
  }
  // Eleven bytes with the high bit set: no varint, wherever the buffer ends.
  const std::string eleven(11, char(0x80));
  for (size_t n = 1; n <= 11; ++n) {
    const uint8_t* p = reinterpret_cast<const uint8_t*>(eleven.data());
    uint64_t v;
    EXPECT_FALSE(protowire::read_varint(p, p + n, v)) << n;
  }
}

constexpr int kPid = 10;

// Threads and a process named by their descriptors; slices nested by begin
// and end; an instant; counters, integer and double, with their unit; an
// async track's slice on a lane of its own; a flow from a slice on one
// thread to a slice on another; categories and debug annotations (interned
// and inline names, every value type, a nested dictionary and an array) as
// the events' fields.
TEST(PerfettoImport, TrackEventsSlicesInstantsCountersFlowsAndArguments) {
  pp::Trace t;
  {
    pp::TracePacket* p = packet(t, 1, 0);
    p->clear_timestamp();
    p->set_sequence_flags(pp::TracePacket::SEQ_INCREMENTAL_STATE_CLEARED);
    auto* in = p->mutable_interned_data();
    auto* n = in->add_event_names();
    n->set_iid(1), n->set_name("frame");
    auto* c = in->add_event_categories();
    c->set_iid(1), c->set_name("gfx");
    auto* a = in->add_debug_annotation_names();
    a->set_iid(1), a->set_name("size");
    auto* s = in->add_debug_annotation_string_values();
    s->set_iid(1), s->set_str("interned text");
  }
  {
    auto* d = t.add_packet()->mutable_track_descriptor();
    d->set_uuid(1);
    d->mutable_process()->set_pid(kPid);
    d->mutable_process()->set_process_name("app");
  }
  describe_thread(t, 2, kPid, 11, "main");
  describe_thread(t, 3, kPid, 12, "worker");
  {
    auto* d = t.add_packet()->mutable_track_descriptor();
    d->set_uuid(4), d->set_parent_uuid(1), d->set_name("queue depth");
    d->mutable_counter()->set_unit(pp::CounterDescriptor::UNIT_SIZE_BYTES);
    auto* a = t.add_packet()->mutable_track_descriptor();
    a->set_uuid(5), a->set_parent_uuid(1), a->set_name("requests");
  }
  TE* e = event(t, 1, 1000, 2, TE::TYPE_SLICE_BEGIN);
  e->set_name_iid(1), e->add_category_iids(1), e->add_flow_ids(7);
  e = event(t, 1, 1100, 2, TE::TYPE_SLICE_BEGIN);
  e->set_name("draw");
  {
    auto* a = e->add_debug_annotations();
    a->set_name_iid(1), a->set_int_value(42);
    a = e->add_debug_annotations();
    a->set_name("label"), a->set_string_value("hello");
    a = e->add_debug_annotations();
    a->set_name("ratio"), a->set_double_value(0.5);
    a = e->add_debug_annotations();
    a->set_name("ok"), a->set_bool_value(true);
    a = e->add_debug_annotations();
    a->set_name("big"), a->set_uint_value(18000000000000000000ull);
    a = e->add_debug_annotations();
    a->set_name("ptr"), a->set_pointer_value(0xdead);
    a = e->add_debug_annotations();
    a->set_name("kept"), a->set_string_value_iid(1);
    a = e->add_debug_annotations();
    a->set_name("obj");
    auto* x = a->add_dict_entries();
    x->set_name("x"), x->set_int_value(1);
    a = e->add_debug_annotations();
    a->set_name("list");
    a->add_array_values()->set_int_value(5);
    a->add_array_values()->set_string_value("six");
  }
  event(t, 1, 1500, 2, TE::TYPE_SLICE_END);
  event(t, 1, 2000, 2, TE::TYPE_SLICE_END);
  event(t, 1, 1200, 3, TE::TYPE_INSTANT)->set_name("tick");
  e = event(t, 1, 2500, 3, TE::TYPE_SLICE_BEGIN);
  e->set_name("handle"), e->add_terminating_flow_ids(7);
  event(t, 1, 2600, 3, TE::TYPE_SLICE_END);
  event(t, 1, 1000, 4, TE::TYPE_COUNTER)->set_counter_value(3);
  event(t, 1, 1600, 4, TE::TYPE_COUNTER)->set_double_counter_value(4.5);
  event(t, 1, 1000, 5, TE::TYPE_SLICE_BEGIN)->set_name("request A");
  event(t, 1, 3000, 5, TE::TYPE_SLICE_END);

  Imported im(AtPath{write_trace(t, "perfetto_events.pftrace")}, "perfetto_events");
  ASSERT_TRUE(im.ix);
  EXPECT_TRUE(im.result.unsupported.empty()) << im.result.unsupported.begin()->first;
  EXPECT_EQ(im.result.malformed_events, 0u);
  EXPECT_EQ(im.result.events_read, 11u);  // 4 + 1 + 2 slice events, 2 counter values, 2 async slice events
  for (const char* lane : {"main", "worker", "requests", "app counters"}) EXPECT_TRUE(im.lane.count(lane)) << lane;

  auto frame = im.items(StreamKind::Interval, "main", "frame");
  auto draw = im.items(StreamKind::Interval, "main", "draw");
  ASSERT_EQ(frame.size(), 1u);
  ASSERT_EQ(draw.size(), 1u);
  EXPECT_EQ(frame[0].start, 1000u);
  EXPECT_EQ(frame[0].end, 2000u);
  EXPECT_EQ(frame[0].depth, 0u);
  EXPECT_EQ(draw[0].start, 1100u);
  EXPECT_EQ(draw[0].end, 1500u);
  EXPECT_EQ(draw[0].depth, 1u);
  auto tick = im.items(StreamKind::Instant, "worker", "tick");
  ASSERT_EQ(tick.size(), 1u);
  EXPECT_EQ(tick[0].end, 1200u);
  auto req = im.items(StreamKind::Interval, "requests", "request A");
  ASSERT_EQ(req.size(), 1u);
  EXPECT_EQ(req[0].start, 1000u);
  EXPECT_EQ(req[0].end, 3000u);

  auto q = im.items(StreamKind::Counter, "app counters", "queue depth (bytes)");
  ASSERT_EQ(q.size(), 2u);
  EXPECT_EQ(q[0].end, 1000u);
  EXPECT_EQ(q[0].value, 3.0);
  EXPECT_EQ(q[1].end, 1600u);
  EXPECT_EQ(q[1].value, 4.5);

  auto flows = im.ix->flows(0, UINT64_MAX);
  ASSERT_EQ(flows.size(), 1u);
  EXPECT_TRUE(flows[0].matched());
  EXPECT_EQ(flows[0].send_ts, 1000u);
  EXPECT_EQ(flows[0].recv_ts, 2500u);
  EXPECT_EQ(flows[0].dst, im.lane.at("worker"));

  auto fa = args_of(im, StreamKind::Interval, "main", "frame");
  EXPECT_EQ(fa["cat"], "gfx");
  auto da = args_of(im, StreamKind::Interval, "main", "draw");
  EXPECT_EQ(da["size"], "42");
  EXPECT_EQ(da["label"], "hello");
  EXPECT_EQ(da["ratio"], "0.5");
  EXPECT_EQ(da["ok"], "true");
  EXPECT_EQ(da["big"], "18000000000000000000");
  EXPECT_EQ(da["ptr"], "0xdead");
  EXPECT_EQ(da["kept"], "interned text");
  EXPECT_EQ(da["obj.x"], "1");
  EXPECT_EQ(da["list[0]"], "5");
  EXPECT_EQ(da["list[1]"], "six");
}

// Interned ids are a sequence's own: two sequences give iid 1 different
// names; one clears its state mid-trace and gives iid 1 a new name. A
// sequence whose state was never set has its packets that need it skipped,
// counted; an iid never interned keeps its event, named by the iid, counted;
// packets lost on a sequence make it wait for the next clear.
TEST(PerfettoImport, InternedDataPerSequenceAndClearedMidTrace) {
  pp::Trace t;
  describe_thread(t, 2, kPid, 11, "a");
  describe_thread(t, 3, kPid, 12, "b");
  auto clear_and_name = [&](uint32_t seq, uint64_t ts, const char* name) {
    pp::TracePacket* p = packet(t, seq, ts);
    p->set_sequence_flags(pp::TracePacket::SEQ_INCREMENTAL_STATE_CLEARED);
    auto* n = p->mutable_interned_data()->add_event_names();
    n->set_iid(1), n->set_name(name);
  };
  clear_and_name(1, 0, "first on 1");
  clear_and_name(2, 0, "first on 2");
  event(t, 1, 100, 2, TE::TYPE_INSTANT)->set_name_iid(1);
  event(t, 2, 110, 3, TE::TYPE_INSTANT)->set_name_iid(1);
  clear_and_name(1, 200, "second on 1");
  event(t, 1, 300, 2, TE::TYPE_INSTANT)->set_name_iid(1);
  event(t, 2, 310, 3, TE::TYPE_INSTANT)->set_name_iid(1);
  event(t, 2, 320, 3, TE::TYPE_INSTANT)->set_name_iid(9);  // never interned
  event(t, 3, 330, 3, TE::TYPE_INSTANT)->set_name("needs a state never set");
  pp::TracePacket* lost = packet(t, 2, 400);  // packets lost before it: sequence 2 waits for a clear
  lost->set_previous_packet_dropped(1);
  lost->set_sequence_flags(pp::TracePacket::SEQ_NEEDS_INCREMENTAL_STATE);
  lost->mutable_track_event()->set_name_iid(1);
  lost->mutable_track_event()->set_track_uuid(3);
  lost->mutable_track_event()->set_type(TE::TYPE_INSTANT);
  clear_and_name(2, 500, "after the loss");
  event(t, 2, 600, 3, TE::TYPE_INSTANT)->set_name_iid(1);

  Imported im(AtPath{write_trace(t, "perfetto_interned.pftrace")}, "perfetto_interned");
  ASSERT_TRUE(im.ix);
  auto at = [&](const char* lane, const char* name) {
    std::vector<uint64_t> v;
    for (auto& it : im.items(StreamKind::Instant, lane, name)) v.push_back(it.end);
    return v;
  };
  EXPECT_EQ(at("a", "first on 1"), std::vector<uint64_t>{100});
  EXPECT_EQ(at("a", "second on 1"), std::vector<uint64_t>{300});
  EXPECT_EQ(at("b", "first on 2"), (std::vector<uint64_t>{110, 310}));
  EXPECT_EQ(at("b", "(name iid 9)"), std::vector<uint64_t>{320});
  EXPECT_EQ(at("b", "after the loss"), std::vector<uint64_t>{600});
  EXPECT_TRUE(at("b", "needs a state never set").empty());
  auto& u = im.result.unsupported;
  EXPECT_EQ(u["perfetto: event names never interned (named \"(name iid N)\")"], 1u);
  EXPECT_EQ(u["perfetto: packets skipped: their sequence's incremental state was not valid (never cleared, or lost)"], 2u);
  EXPECT_EQ(u["perfetto: packets lost before one of a sequence (previous_packet_dropped)"], 1u);
}

// Times on other clocks land on the trace clock (BOOTTIME) through clock
// snapshots; a sequence's own clock (id 64) counts in µs, incrementally;
// a clock nothing relates to the trace clock is counted, never guessed.
TEST(PerfettoImport, ClockSnapshotsAndASequencesOwnIncrementalClock) {
  pp::Trace t;
  {
    auto* cs = t.add_packet()->mutable_clock_snapshot();
    auto* c = cs->add_clocks();
    c->set_clock_id(6), c->set_timestamp(1000000);
    c = cs->add_clocks();
    c->set_clock_id(3), c->set_timestamp(500000);
  }
  {
    // A sequence's own clock is part of its incremental state: set with it.
    pp::TracePacket* d = packet(t, 5, 0);
    d->clear_timestamp();
    d->set_sequence_flags(pp::TracePacket::SEQ_INCREMENTAL_STATE_CLEARED);
    d->mutable_trace_packet_defaults()->set_timestamp_clock_id(64);
    auto* cs = d->mutable_clock_snapshot();
    auto* c = cs->add_clocks();
    c->set_clock_id(6), c->set_timestamp(10000000);
    c = cs->add_clocks();
    c->set_clock_id(64), c->set_timestamp(0), c->set_is_incremental(true), c->set_unit_multiplier_ns(1000);
  }
  describe_thread(t, 2, kPid, 11, "main");
  start_sequence(t, 1);
  pp::TracePacket* p = packet(t, 1, 600000);
  p->set_timestamp_clock_id(3);  // MONOTONIC
  p->mutable_track_event()->set_track_uuid(2), p->mutable_track_event()->set_type(TE::TYPE_INSTANT);
  p->mutable_track_event()->set_name("on monotonic");
  event(t, 5, 5, 2, TE::TYPE_INSTANT)->set_name("on 64");   // 0 + 5 µs
  event(t, 5, 5, 2, TE::TYPE_INSTANT)->set_name("on 64");   // 5 + 5 µs
  p = packet(t, 1, 7);
  p->set_timestamp_clock_id(42);  // no snapshot has it
  p->mutable_track_event()->set_track_uuid(2), p->mutable_track_event()->set_type(TE::TYPE_INSTANT);
  p->mutable_track_event()->set_name("on nothing known");

  Imported im(AtPath{write_trace(t, "perfetto_clocks.pftrace")}, "perfetto_clocks");
  ASSERT_TRUE(im.ix);
  auto mono = im.items(StreamKind::Instant, "main", "on monotonic");
  ASSERT_EQ(mono.size(), 1u);
  EXPECT_EQ(mono[0].end, 1100000u);
  auto own = im.items(StreamKind::Instant, "main", "on 64");
  ASSERT_EQ(own.size(), 2u);
  EXPECT_EQ(own[0].end, 10005000u);
  EXPECT_EQ(own[1].end, 10010000u);
  EXPECT_TRUE(im.items(StreamKind::Instant, "main", "on nothing known").empty());
  EXPECT_EQ(im.result.unsupported["perfetto: track events on a clock no snapshot relates to the trace clock"], 1u);
}

// Sequences interleave in any order: thread a's sequence is written first
// with later times, thread b's after it with earlier ones; a flow sent on b
// (earlier in time, later in the file) is received on a. Process stats are
// counters of the process.
TEST(PerfettoImport, SequencesOutOfOrderAndProcessStats) {
  pp::Trace t;
  {
    auto* d = t.add_packet()->mutable_track_descriptor();
    d->set_uuid(1);
    d->mutable_process()->set_pid(kPid);
    d->mutable_process()->set_process_name("app");
  }
  describe_thread(t, 2, kPid, 11, "a");
  describe_thread(t, 3, kPid, 12, "b");
  start_sequence(t, 1);
  TE* e = event(t, 1, 500, 2, TE::TYPE_SLICE_BEGIN);
  e->set_name("late"), e->add_terminating_flow_ids(5);
  event(t, 1, 600, 2, TE::TYPE_SLICE_END);
  start_sequence(t, 2);
  e = event(t, 2, 100, 3, TE::TYPE_SLICE_BEGIN);
  e->set_name("early"), e->add_flow_ids(5);
  event(t, 2, 200, 3, TE::TYPE_SLICE_END);
  {
    auto* ps = packet(t, 9, 300)->mutable_process_stats()->add_processes();
    ps->set_pid(kPid), ps->set_vm_rss_kb(2048), ps->set_rss_anon_kb(1024), ps->set_oom_score_adj(-100);
  }

  Imported im(AtPath{write_trace(t, "perfetto_order.pftrace")}, "perfetto_order");
  ASSERT_TRUE(im.ix);
  EXPECT_TRUE(im.result.unsupported.empty()) << im.result.unsupported.begin()->first;
  auto flows = im.ix->flows(0, UINT64_MAX);
  ASSERT_EQ(flows.size(), 1u);
  EXPECT_TRUE(flows[0].matched());
  EXPECT_EQ(flows[0].send_ts, 100u);
  EXPECT_EQ(flows[0].recv_ts, 500u);
  EXPECT_EQ(flows[0].dst, im.lane.at("a"));
  for (auto [name, value] : {std::pair<const char*, double>{"mem.rss_kb", 2048}, {"mem.rss.anon_kb", 1024},
                             {"oom_score_adj", -100}}) {
    auto c = im.items(StreamKind::Counter, "app counters", name);
    ASSERT_EQ(c.size(), 1u) << name;
    EXPECT_EQ(c[0].end, 300u) << name;
    EXPECT_EQ(c[0].value, value) << name;
  }
}

pp::FtraceEvent* kernel_event(pp::FtraceEventBundle* b, uint64_t ts, int pid) {
  pp::FtraceEvent* e = b->add_event();
  e->set_timestamp(ts);
  e->set_pid(uint32_t(pid));
  return e;
}

void switch_to(pp::FtraceEventBundle* b, uint64_t ts, const char* prev, int prev_pid, int64_t state, const char* next,
               int next_pid) {
  auto* s = kernel_event(b, ts, prev_pid)->mutable_sched_switch();
  s->set_prev_comm(prev), s->set_prev_pid(prev_pid), s->set_prev_prio(120), s->set_prev_state(state);
  s->set_next_comm(next), s->set_next_pid(next_pid), s->set_next_prio(120);
}

// The kernel's bundles, one CPU each, come in any order: CPU 1's bundle
// (later times) before CPU 0's. Its switches become CPU lanes and the
// threads' states; a wakeup is an arrow to where the thread next runs; a
// migration an arrow between CPUs; cpu_frequency a counter; atrace markers
// in print events slices on their thread; the process tree names.
TEST(PerfettoImport, KernelBundlesOutOfOrderBecomeCpuLanesStatesAndMarkers) {
  pp::Trace t;
  {
    auto* tree = packet(t, 9, 0)->mutable_process_tree();
    auto* proc = tree->add_processes();
    proc->set_pid(100), proc->add_cmdline("/usr/bin/server");
    auto* th = tree->add_threads();
    th->set_tid(101), th->set_tgid(100), th->set_name("server-io");
  }
  pp::FtraceEventBundle* cpu1 = packet(t, 9, 0)->mutable_ftrace_events();
  cpu1->set_cpu(1);
  switch_to(cpu1, 5000, "swapper/1", 0, 0, "server-io", 101);  // woken at 4000 on CPU 0, runs here
  switch_to(cpu1, 7000, "server-io", 101, 1, "swapper/1", 0);   // sleeps
  pp::FtraceEventBundle* cpu0 = packet(t, 9, 0)->mutable_ftrace_events();
  cpu0->set_cpu(0);
  switch_to(cpu0, 1000, "swapper/0", 0, 0, "server", 100);
  kernel_event(cpu0, 2000, 100)->mutable_print()->set_buf("B|100|handle request\n");
  kernel_event(cpu0, 3000, 100)->mutable_print()->set_buf("E|100\n");
  auto* w = kernel_event(cpu0, 4000, 100)->mutable_sched_waking();
  w->set_comm("server-io"), w->set_pid(101), w->set_target_cpu(1);
  auto* m = kernel_event(cpu0, 4500, 100)->mutable_sched_migrate_task();
  m->set_pid(101), m->set_orig_cpu(0), m->set_dest_cpu(1);
  switch_to(cpu0, 6000, "server", 100, 256, "swapper/0", 0);  // preempted (TASK_REPORT_MAX)
  auto* f = kernel_event(cpu0, 6500, 0)->mutable_cpu_frequency();
  f->set_state(1800000), f->set_cpu_id(0);
  auto* idle = kernel_event(cpu0, 6550, 0)->mutable_cpu_idle();
  idle->set_state(4294967295u), idle->set_cpu_id(0);  // leaves idle: -1
  kernel_event(cpu0, 6600, 0)->mutable_task_rename()->set_newcomm("x");  // read, names nothing drawn here
  switch_to(cpu0, 8000, "swapper/0", 0, 0, "server", 100);                 // runs again
  auto* w2 = kernel_event(cpu0, 8500, 100)->mutable_sched_wakeup();         // woken, never runs in the trace
  w2->set_comm("server-io"), w2->set_pid(101), w2->set_target_cpu(1);
  cpu0->set_lost_events(3);

  Imported im(AtPath{write_trace(t, "perfetto_kernel.pftrace")}, "perfetto_kernel");
  ASSERT_TRUE(im.ix);
  auto run0 = im.items(StreamKind::Interval, "CPU 0", "server-100");
  ASSERT_EQ(run0.size(), 1u);  // (its second run, from 8000, has no known end: drawn to the end, no item)
  EXPECT_EQ(run0[0].start, 1000u);
  EXPECT_EQ(run0[0].end, 6000u);
  auto run1 = im.items(StreamKind::Interval, "CPU 1", "server-io-101");
  ASSERT_EQ(run1.size(), 1u);
  EXPECT_EQ(run1[0].start, 5000u);
  EXPECT_EQ(run1[0].end, 7000u);
  // server was preempted at 6000; server-io was woken at 4000 and ran at 5000.
  auto pre = im.items(StreamKind::Interval, "server-100 states", "Runnable (preempted)");
  ASSERT_EQ(pre.size(), 1u);
  EXPECT_EQ(pre[0].start, 6000u);
  EXPECT_EQ(pre[0].end, 8000u);
  auto woken = im.items(StreamKind::Interval, "server-io-101 states", "Runnable (woken)");
  ASSERT_EQ(woken.size(), 1u);
  EXPECT_EQ(woken[0].start, 4000u);
  EXPECT_EQ(woken[0].end, 5000u);
  auto asleep = im.items(StreamKind::Interval, "server-io-101 states", "Sleeping");
  ASSERT_EQ(asleep.size(), 1u);
  EXPECT_EQ(asleep[0].start, 7000u);
  EXPECT_EQ(asleep[0].end, 8500u);
  // The arrows: the wakeup (CPU 0 at 4000 -> CPU 1 at 5000) and the migration (CPU 0 -> CPU 1 at 4500).
  std::map<uint64_t, uint64_t> arrows;
  for (auto& fl : im.ix->flows(0, UINT64_MAX)) {
    EXPECT_TRUE(fl.matched());
    EXPECT_EQ(fl.dst, im.lane.at("CPU 1"));
    arrows[fl.send_ts] = fl.recv_ts;
  }
  EXPECT_EQ(arrows, (std::map<uint64_t, uint64_t>{{4000, 5000}, {4500, 4500}}));
  auto freq = im.items(StreamKind::Counter, "CPU 0", "frequency kHz");
  ASSERT_EQ(freq.size(), 1u);
  EXPECT_EQ(freq[0].value, 1800000.0);
  auto idle_state = im.items(StreamKind::Counter, "CPU 0", "idle state");
  ASSERT_EQ(idle_state.size(), 1u);
  EXPECT_EQ(idle_state[0].value, -1.0);
  // The atrace marker, on the thread the process tree names.
  auto marker = im.items(StreamKind::Interval, "server", "handle request");
  ASSERT_EQ(marker.size(), 1u);
  EXPECT_EQ(marker[0].start, 2000u);
  EXPECT_EQ(marker[0].end, 3000u);
  ASSERT_EQ(im.result.notes.size(), 1u);
  EXPECT_NE(im.result.notes[0].find("3 kernel events were lost"), std::string::npos);
}

std::string deflate(const std::string& in) {
  uLongf n = compressBound(uLong(in.size()));
  std::string out(n, '\0');
  EXPECT_EQ(compress(reinterpret_cast<Bytef*>(out.data()), &n, reinterpret_cast<const Bytef*>(in.data()), uLong(in.size())),
            Z_OK);
  out.resize(n);
  return out;
}

// Packets compressed inside the trace are read as if they were outside it;
// a truncated file keeps every whole packet and says where it stopped; a
// packet that does not parse costs only itself, named by its offset.
TEST(PerfettoImport, CompressedPacketsTruncationAndAMalformedPacket) {
  pp::Trace inner;
  describe_thread(inner, 2, kPid, 11, "main");
  start_sequence(inner, 1);
  event(inner, 1, 100, 2, TE::TYPE_INSTANT)->set_name("inside");
  pp::Trace t;
  std::string packed;
  ASSERT_TRUE(inner.SerializeToString(&packed));
  t.add_packet()->set_compressed_packets(deflate(packed));
  event(t, 1, 200, 2, TE::TYPE_INSTANT)->set_name("outside");
  std::string bytes;
  ASSERT_TRUE(t.SerializeToString(&bytes));
  // A malformed packet: a field of a wire type that does not exist (7).
  const size_t bad_at = bytes.size();
  bytes += std::string("\x0a\x03\x0f\x01\x02", 5);
  std::string after;
  pp::Trace tail;
  event(tail, 1, 300, 2, TE::TYPE_INSTANT)->set_name("after the bad one");
  event(tail, 1, 400, 2, TE::TYPE_INSTANT)->set_name("cut");
  ASSERT_TRUE(tail.SerializeToString(&after));
  bytes += after.substr(0, after.size() - 3);  // the last packet cut short
  const std::string path = temp_path("perfetto_bad.pftrace");
  write_file(path, bytes);

  Imported im(AtPath{path}, "perfetto_bad");
  ASSERT_TRUE(im.ix);
  for (const char* name : {"inside", "outside", "after the bad one"})
    EXPECT_EQ(im.items(StreamKind::Instant, "main", name).size(), 1u) << name;
  EXPECT_TRUE(im.items(StreamKind::Instant, "main", "cut").empty());
  EXPECT_EQ(im.result.malformed_events, 1u);
  ASSERT_EQ(im.result.malformed.size(), 1u);
  EXPECT_NE(im.result.malformed[0].find("packet at byte " + std::to_string(bad_at)), std::string::npos)
      << im.result.malformed[0];
  EXPECT_NE(im.result.warning.find("stopped at byte"), std::string::npos) << im.result.warning;
  EXPECT_NE(im.result.warning.find("packets before it are kept"), std::string::npos);
}

// A gzipped Perfetto trace is told by its content, as the other formats are.
TEST(PerfettoImport, GzippedTraceIsRecognised) {
  pp::Trace t;
  describe_thread(t, 2, kPid, 11, "main");
  start_sequence(t, 1);
  event(t, 1, 100, 2, TE::TYPE_INSTANT)->set_name("zipped");
  std::string bytes;
  ASSERT_TRUE(t.SerializeToString(&bytes));
  const std::string path = temp_path("perfetto_zipped.pftrace.gz");
  gzFile gz = gzopen(path.c_str(), "wb");
  ASSERT_TRUE(gz);
  gzwrite(gz, bytes.data(), unsigned(bytes.size()));
  gzclose(gz);
  Imported im(AtPath{path}, "perfetto_zipped");
  ASSERT_TRUE(im.ix);
  EXPECT_EQ(im.items(StreamKind::Instant, "main", "zipped").size(), 1u);
}

}  // namespace
}  // namespace tinescope::test
