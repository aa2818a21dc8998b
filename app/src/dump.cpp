// `tinescope dump TRACE`: the header, chunks and events as text, and every
// damaged byte range, lost chunk and dropped event.
#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <ctime>
#include <map>
#include <string>

#include "commands.hpp"
#include "tinescope/trace_reader.hpp"

namespace tinescope::app {
namespace {

using namespace tinescope::trace;
using format::FieldType;

std::string quote(std::string_view s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += char(c);
    } else if (c >= 0x20 && c < 0x7f) {
      out += char(c);
    } else {
      char hex[8];
      std::snprintf(hex, sizeof hex, "\\x%02x", c);
      out += hex;
    }
  }
  return out + "\"";
}

struct Dumper : Visitor {
  const Parser* parser = nullptr;
  bool show_events = true, show_chunks = true;
  uint64_t limit = UINT64_MAX;
  uint64_t shown = 0, chunks = 0, events = 0, dropped = 0, lost_chunks = 0, damaged_bytes = 0, damages = 0;
  int64_t t0 = 0;            // ns of the trace's clock that print as 0
  bool t0_first_event = false;  // the first event's (else the recording's start)
  std::map<uint32_t, uint64_t> events_per_feedlet;
  std::map<std::string, uint64_t> events_per_type;

  const Catalog& cat() const { return parser->catalog(); }

  void on_header(const Header& h) override {
    if (!h.intact) {
      std::printf("header: DAMAGED; reading chunks with this reader's built-in schema\n");
      return;
    }
    if (!t0_first_event) t0 = int64_t(h.clock.ref_mono_ns);
    time_t wall = time_t(h.clock.ref_real_ns / 1000000000u);
    char when[64];
    strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S UTC", gmtime(&wall));
    std::printf("format %u.%u, written by %s\n", h.major, h.minor, h.recorder.c_str());
    std::printf("host %s, pid %u, process %s, started %s\n", h.host.c_str(), h.pid, h.process_name.c_str(), when);
    std::string cmd;
    for (const std::string& a : h.cmdline) cmd += (cmd.empty() ? "" : " ") + a;
    std::printf("command line: %s\n", cmd.c_str());
    std::printf("clock: %s, %.6f ticks/ns nominal\n",
                h.clock.source == uint8_t(format::ClockSource::Tsc) ? "tsc" : "monotonic", h.clock.ticks_per_ns);
    size_t types = 0;
    for (bool k : h.schema.known) types += k;
    std::printf("schema: %zu event types\n", types);
  }

  void on_chunk(const ChunkInfo& c) override {
    ++chunks;
    dropped += c.header.dropped_before;
    if (c.header.dropped_before)
      std::printf("DROPPED %" PRIu64 " events in feedlet %u before chunk at offset %" PRIu64 "\n",
                  c.header.dropped_before, c.header.feedlet, c.offset);
    if (!show_chunks) return;
    const auto& h = c.header;
    std::printf("chunk @%" PRIu64 " feedlet %u seq %" PRIu64 " events %u raw %u stored %u%s%s%s\n", c.offset,
                h.feedlet, h.sequence, h.event_count, h.raw_size, h.stored_size,
                h.flags & format::kChunkLz4 ? " lz4" : h.flags & format::kChunkLz4Segments ? " lz4-segments" : "",
                h.flags & format::kChunkPartial ? " partial" : "",
                h.flags & format::kChunkFeedletEnd ? " end" : "");
  }

  void on_event(const Event& e) override {
    ++events;
    ++events_per_feedlet[e.feedlet];
    ++events_per_type[std::string(cat().type_name(e.type))];
    if (!show_events || shown >= limit) return;
    ++shown;
    const format::EventTypeDef* def = cat().schema.find(e.type);
    double t = double(cat().clock.to_ns(e.ts) - t0) / 1e9;
    std::string line;
    for (size_t k = 0; def && k < def->fields.size(); ++k) {
      line += " " + def->fields[k].name + "=";
      switch (def->fields[k].type) {
        case FieldType::String: line += quote(cat().string(e.u[k])); break;
        case FieldType::I64: line += std::to_string(e.i(k)); break;
        case FieldType::F64: line += std::to_string(e.f(k)); break;
        case FieldType::Bytes: line += quote(e.bytes[k]); break;
        default: line += std::to_string(e.u[k]); break;
      }
    }
    std::printf("  %14.9f  f%-3u %-18s%s\n", t, e.feedlet, std::string(cat().type_name(e.type)).c_str(),
                line.c_str());
  }

  void on_damage(const Damage& d) override {
    ++damages;
    damaged_bytes += d.length;
    std::printf("DAMAGE at offset %" PRIu64 ", %" PRIu64 " bytes: %s\n", d.offset, d.length, d.reason.c_str());
  }

  void on_loss(const Loss& l) override {
    lost_chunks += l.count;
    std::printf("LOSS feedlet %u: chunks %" PRIu64 "..%" PRIu64 " missing\n", l.feedlet, l.first_sequence,
                l.first_sequence + l.count - 1);
  }
};

// The trace's first event as the index takes it (the earliest first_ts of
// the data chunks' headers), on the trace's clock: a pass over the chunks'
// headers that decodes only the metadata, and builds or writes no index.
struct FirstEvent : Visitor {
  uint64_t first_ts = UINT64_MAX;
  void on_chunk(const ChunkInfo& c) override {
    if (c.header.feedlet != format::kMetadataFeedlet && c.header.event_count)
      first_ts = std::min(first_ts, c.header.first_ts);
  }
};

int run_dump(const std::string& path, bool chunks_only, bool summary_only, uint64_t limit) {
  Dumper d;
  // Times count from the trace's first event, as in every other command
  // (find, stream, stats, render, the viewer). A trace with no event counts
  // from the recording's start.
  {
    FirstEvent first;
    Parser headers(first, ReaderOptions{.decode_data = false});
    std::string error;
    if (read_file(path, headers, error) && first.first_ts != UINT64_MAX)
      d.t0 = headers.catalog().clock.to_ns(first.first_ts), d.t0_first_event = true;
  }
  std::printf("times: seconds from the %s\n", d.t0_first_event ? "trace's first event" : "recording's start (no event)");
  d.show_events = !chunks_only && !summary_only;
  d.show_chunks = !summary_only;
  d.limit = limit;
  std::string error;
  Parser parser(d);
  d.parser = &parser;
  if (!read_file(path, parser, error)) {
    std::fprintf(stderr, "tinescope dump: %s\n", error.c_str());
    return 1;
  }
  std::printf("summary: %" PRIu64 " chunks, %" PRIu64 " events, %" PRIu64 " dropped, %" PRIu64
              " chunks lost, %" PRIu64 " damaged ranges (%" PRIu64 " bytes)\n",
              d.chunks, d.events, d.dropped, d.lost_chunks, d.damages, d.damaged_bytes);
  for (auto& [feedlet, n] : d.events_per_feedlet) {
    auto it = d.cat().feedlets.find(feedlet);
    std::printf("  feedlet %u %-16s %" PRIu64 " events\n", feedlet,
                feedlet == 0 ? "(metadata)" : it != d.cat().feedlets.end() ? quote(it->second.name).c_str() : "?",
                n);
  }
  for (auto& [type, n] : d.events_per_type) std::printf("  %-20s %" PRIu64 "\n", type.c_str(), n);
  return 0;
}

}  // namespace

void add_dump_command(CLI::App& app, int* exit_code) {
  auto* cmd = app.add_subcommand("dump", "Print a trace's header, chunks and events, with damage and loss");
  static std::string path;
  static bool chunks_only = false, summary_only = false;
  static uint64_t limit = UINT64_MAX;
  cmd->add_option("TRACE", path, "trace file")->required();
  cmd->add_flag("--chunks", chunks_only, "chunks only, no events");
  cmd->add_flag("--summary", summary_only, "only the summary");
  cmd->add_option("--limit", limit, "print at most this many events");
  cmd->callback([=] { *exit_code = run_dump(path, chunks_only, summary_only, limit); });
}

}  // namespace tinescope::app
