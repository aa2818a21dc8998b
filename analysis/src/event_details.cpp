#include "tinescope/analysis/event_details.hpp"

#include <algorithm>
#include <cctype>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>

namespace tinescope::analysis {

using format::FieldType;

namespace {

std::string number_text(double d) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.17g", d);
  // The shortest text that reads back as the same double.
  for (int p = 1; p <= 17; ++p) {
    char t[40];
    std::snprintf(t, sizeof t, "%.*g", p, d);
    if (std::strtod(t, nullptr) == d) return t;
  }
  return buf;
}

}  // namespace

bool is_text(std::string_view bytes) {
  for (unsigned char c : bytes)
    if ((c < 0x20 && c != '\t') || c == 0x7f) return false;
  return true;
}

namespace {

FieldView field_view(const trace::Catalog& c, const format::FieldDef& def, uint64_t v, const std::string& bytes) {
  FieldView f;
  f.name = def.name;
  f.type = char(def.type);
  switch (def.type) {
    case FieldType::U64:
    case FieldType::DeltaU64:
      f.numeric = true, f.number = double(v), f.text = std::to_string(v);
      break;
    case FieldType::I64:
      f.numeric = true, f.number = double(int64_t(v)), f.text = std::to_string(int64_t(v));
      break;
    case FieldType::F64: {
      double d;
      std::memcpy(&d, &v, 8);
      f.numeric = true, f.number = d, f.text = std::isfinite(d) ? number_text(d) : (std::isnan(d) ? "NaN" : d > 0 ? "Infinity" : "-Infinity");
      break;
    }
    case FieldType::String:
      f.text = std::string(c.string(v));
      break;
    case FieldType::Bytes:
      f.bytes = bytes, f.text = is_text(bytes) ? bytes : std::to_string(bytes.size()) + " bytes";
      break;
    default:
      f.type = '?', f.bytes = bytes, f.text = std::to_string(bytes.size()) + " bytes of an unknown field type";
  }
  return f;
}

}  // namespace

const FieldView* EventView::field(std::string_view name) const {
  for (const auto* list : {&fields, &args})
    for (const FieldView& f : *list)
      if (f.name == name) return &f;
  return nullptr;
}

bool is_argument_type(const trace::Catalog& c, uint16_t type) {
  const format::EventTypeDef* d = c.schema.find(type);
  return d && format::is_argument_type(*d);
}

EventView describe(const trace::Catalog& c, const index::EventData& e) {
  EventView v;
  v.data = e;
  const format::EventTypeDef* def = e.unknown ? nullptr : c.schema.find(e.type);
  v.type_name = def ? def->name : "type " + std::to_string(e.type) + " (not in the schema)";
  if (!def) {
    FieldView f;
    f.name = "bytes", f.type = '?', f.bytes = e.bytes.empty() ? std::string() : e.bytes[0];
    f.text = std::to_string(f.bytes.size()) + " bytes, undecoded";
    v.fields.push_back(std::move(f));
  } else {
    for (size_t i = 0; i < def->fields.size() && i < e.values.size(); ++i)
      v.fields.push_back(field_view(c, def->fields[i], e.values[i], i < e.bytes.size() ? e.bytes[i] : std::string()));
  }
  auto labels = c.thread_labels();
  auto t = labels.find(e.feedlet);
  v.thread = t != labels.end() ? t->second : "feedlet " + std::to_string(e.feedlet);
  v.process = c.process_of(e.feedlet);
  return v;
}

namespace {

// The events from `first` on that are `e` and its arguments: e, then the
// argument events right after it.
void attach_arguments(const trace::Catalog& c, std::vector<index::EventData>& events, size_t at, EventView& v) {
  for (size_t k = at + 1; k < events.size() && is_argument_type(c, events[k].type); ++k) {
    EventView a = describe(c, events[k]);
    for (FieldView& f : a.fields) v.args.push_back(std::move(f));
  }
}

}  // namespace

bool read_event(const index::TraceIndex& ix, uint32_t feedlet, uint64_t position, EventView& out, std::string& why) {
  auto cat = ix.catalog_snapshot();
  std::vector<index::EventData> events;
  // The event and up to a type's worth of argument events after it.
  if (!ix.read_events(feedlet, position, 1 + 4, events, why)) return false;
  if (events.empty() || events[0].position != position) {
    why = "feedlet " + std::to_string(feedlet) + " has no event " + std::to_string(position);
    return false;
  }
  out = describe(*cat, events[0]);
  attach_arguments(*cat, events, 0, out);
  return true;
}

namespace {

// Of the events at one time, the first of a type in `types` whose field
// `field` is `value` (every one if field < 0), from `from` on; SIZE_MAX if none.
size_t pick(const std::vector<index::EventData>& events, std::initializer_list<uint16_t> types, int field,
            uint64_t value, size_t from = 0) {
  for (size_t i = from; i < events.size(); ++i) {
    const index::EventData& e = events[i];
    if (e.unknown || std::find(types.begin(), types.end(), e.type) == types.end()) continue;
    if (field < 0 || (size_t(field) < e.values.size() && e.values[size_t(field)] == value)) return i;
  }
  return SIZE_MAX;
}

// The event at ts (within slack: the nearest) of one of `types` whose field
// `field` is `value`, with its arguments, appended to out. Of several such
// at the time found, the one rank_at(that time) more in file order (the
// last if fewer).
bool add_at(const index::TraceIndex& ix, const trace::Catalog& c, uint32_t feedlet, uint64_t ts, uint64_t slack,
            std::initializer_list<uint16_t> types, int field, uint64_t value, std::vector<EventView>& out,
            std::string& why, uint64_t duration = UINT64_MAX,
            const std::function<size_t(uint64_t)>& rank_at = nullptr) {
  std::vector<index::EventData> events;
  if (!ix.events_at(feedlet, ts > slack ? ts - slack : 0, ts + std::min(slack, UINT64_MAX - ts), events, why))
    return false;
  auto fits = [&](size_t i) {
    // A complete event names its duration: of two at one end, the one of this item.
    return duration == UINT64_MAX || slack != 0 || (events[i].values.size() >= 2 && events[i].values[1] == duration);
  };
  size_t best = SIZE_MAX;
  uint64_t best_off = UINT64_MAX;
  for (size_t i = pick(events, types, field, value); i != SIZE_MAX; i = pick(events, types, field, value, i + 1)) {
    if (!fits(i)) continue;
    const uint64_t off = events[i].ts > ts ? events[i].ts - ts : ts - events[i].ts;
    if (off < best_off) best = i, best_off = off;
  }
  if (best == SIZE_MAX) return true;
  if (rank_at) {
    const uint64_t at = events[best].ts;
    size_t rank = rank_at(at);
    for (size_t i = pick(events, types, field, value, best + 1); i != SIZE_MAX && rank > 0;
         i = pick(events, types, field, value, i + 1))
      if (events[i].ts == at && fits(i)) best = i, --rank;
  }
  EventView v = describe(c, events[best]);
  attach_arguments(c, events, best, v);
  out.push_back(std::move(v));
  return true;
}

}  // namespace

bool item_events(const index::TraceIndex& ix, uint32_t feedlet, const index::Item& it, std::vector<EventView>& out,
                 std::string& why, uint64_t slack) {
  using namespace format;
  auto cat = ix.catalog_snapshot();
  const size_t before = out.size();
  bool ok = true;
  switch (it.kind) {
    case index::StreamKind::Interval:
    case index::StreamKind::Depth:
    case index::StreamKind::Span:
      if (it.complete) {
        ok = add_at(ix, *cat, feedlet, it.end, slack, {kIntervalComplete}, 0, it.name, out, why, it.end - it.start);
        break;
      }
      {
        // Intervals of one name begun (or ended) at one time nest: their
        // begins come outermost first in the file, their ends innermost
        // first. This item's are the ones its depth ranks it at the time
        // found (a tick from the item's where the viewer asks with slack).
        const int s = ix.find_stream(index::StreamKind::Interval, feedlet, it.name);
        auto begin_rank = [&](uint64_t at) {
          size_t rank = 0;
          for (const index::OpenInterval& o : ix.open_at(feedlet, at))
            rank += o.start == at && o.name == it.name && o.depth < it.depth;
          if (s >= 0)  // (open_at leaves out those that ended then too: zero-length)
            for (const index::Item& o : ix.items(s, at, at))
              rank += !o.complete && o.start == at && o.end == at && o.depth < it.depth;
          return rank;
        };
        // (A deeper one that begins and ends there after this one ended is
        // counted too: a zero-length interval inside a later one at one time.)
        auto end_rank = [&](uint64_t at) {
          size_t rank = 0;
          if (s >= 0)
            for (const index::Item& o : ix.items(s, at, at))
              rank += !o.complete && !o.truncated && o.end == at && o.depth > it.depth;
          return rank;
        };
        ok = add_at(ix, *cat, feedlet, it.start, slack, {kIntervalBegin, kFuncEnter}, 0, it.name, out, why, UINT64_MAX,
                    begin_rank);
        if (ok && !it.truncated)
          ok = add_at(ix, *cat, feedlet, it.end, slack, {kIntervalEnd, kFuncExit}, 0, it.name, out, why, UINT64_MAX,
                      end_rank);
      }
      if (ok && out.size() == before)  // a complete event after all
        ok = add_at(ix, *cat, feedlet, it.end, slack, {kIntervalComplete}, 0, it.name, out, why, it.end - it.start);
      if (ok && out.size() == before) {  // a wait for a lock: its contend and acquire
        ok = add_at(ix, *cat, feedlet, it.start, slack, {kLockContend}, 0, it.name, out, why);
        if (ok && !it.truncated) ok = add_at(ix, *cat, feedlet, it.end, slack, {kLockAcquire}, 0, it.name, out, why);
      }
      break;
    case index::StreamKind::Instant:
      ok = add_at(ix, *cat, feedlet, it.start, slack, {kInstant}, 0, it.name, out, why);
      break;
    case index::StreamKind::Counter:
      ok = add_at(ix, *cat, feedlet, it.start, slack, {kCounterInt, kCounterFloat}, 0, it.name, out, why);
      break;
    case index::StreamKind::Sched:
    case index::StreamKind::Task:
      ok = add_at(ix, *cat, feedlet, it.start, slack, {kJobStart, kJobResume}, 0, it.name, out, why);
      if (ok && !it.truncated)
        ok = add_at(ix, *cat, feedlet, it.end, slack, {kJobPreempt, kJobBlock, kJobComplete}, 0, it.name, out, why);
      break;
    case index::StreamKind::Send:
      ok = add_at(ix, *cat, feedlet, it.start, slack, {kMessageSend}, 1, it.name, out, why);
      break;
    case index::StreamKind::Hold:
      ok = add_at(ix, *cat, feedlet, it.start, slack, {kLockAcquire}, 0, it.name, out, why);
      if (ok && !it.truncated) ok = add_at(ix, *cat, feedlet, it.end, slack, {kLockRelease}, 0, it.name, out, why);
      break;
  }
  return ok;
}

bool message_events(const index::TraceIndex& ix, const index::Flow& f, std::vector<EventView>& out, std::string& why,
                    uint64_t slack) {
  auto cat = ix.catalog_snapshot();
  if ((f.flags & index::kFlowSent) &&
      !add_at(ix, *cat, f.src, f.send_ts, slack, {format::kMessageSend}, 0, f.id, out, why))
    return false;
  if ((f.flags & index::kFlowReceived) &&
      !add_at(ix, *cat, f.dst, f.recv_ts, slack, {format::kMessageRecv}, 0, f.id, out, why))
    return false;
  return true;
}

bool find_message(const index::TraceIndex& ix, uint64_t id, index::Flow& out) {
  for (const index::Flow& f : ix.flows(0, UINT64_MAX))
    if (f.id == id) return out = f, true;
  return false;
}

bool FieldSearch::hex(std::string_view pattern, std::string& bytes) {
  if (pattern.size() < 4 || pattern.size() % 2 || (pattern.substr(0, 2) != "0x" && pattern.substr(0, 2) != "0X"))
    return false;
  bytes.clear();
  for (size_t i = 2; i < pattern.size(); i += 2) {
    unsigned v;
    char pair[3] = {pattern[i], pattern[i + 1], 0};
    char* end = nullptr;
    v = unsigned(std::strtoul(pair, &end, 16));
    if (!end || *end || !std::isxdigit(uint8_t(pair[0]))) return false;
    bytes += char(v);
  }
  return true;
}

uint64_t search_fields(const index::TraceIndex& ix, const FieldSearch& s, uint64_t t0, uint64_t t1, size_t limit,
                       std::vector<FieldHit>& out, std::string& why) {
  auto cat = ix.catalog_snapshot();
  const trace::Catalog& c = *cat;
  uint64_t found = 0;
  for (const index::FeedletSummary& f : ix.feedlets()) {
    uint32_t last_name = 0;  // of the last event that is not an argument event
    auto hit = [&](const trace::Event& e, const format::EventTypeDef& d, size_t k, std::string value) {
      if (found++ >= limit) return;
      const bool argument = format::is_argument_type(d);
      out.push_back({f.id, e.ts, argument ? std::string(c.string(last_name)) : d.name, d.fields[k].name, std::move(value)});
    };
    const bool ok = ix.decode_events(f.id, t0, t1, [&](const trace::Event& e) {
      const format::EventTypeDef* d = c.schema.find(e.type);
      if (!d) return;
      const bool user = e.type >= format::kFirstUserType, argument = format::is_argument_type(*d);
      if (!argument)
        last_name = !d->fields.empty() && d->fields[0].type == format::FieldType::String ? uint32_t(e.u[0]) : 0;
      for (size_t k = 0; k < d->fields.size() && k < e.field_count; ++k) {
        const format::FieldType t = d->fields[k].type;
        if (t == format::FieldType::String && s.text && (user || k > 0)) {
          const std::string_view v = c.string(e.u[k]);
          if (s.text(v)) hit(e, *d, k, std::string(v));
        } else if (t == format::FieldType::Bytes) {
          const std::string_view b = e.bytes[k];
          const bool text = is_text(b);
          if ((!s.bytes.empty() && b.find(s.bytes) != std::string_view::npos) || (s.text && text && s.text(b))) {
            hit(e, *d, k, text ? std::string(b) : "0x" + hex(b.substr(0, 64)) + (b.size() > 64 ? "..." : ""));
          }
        }
      }
    }, why);
    if (!ok) return found;
  }
  return found;
}

std::string hex(std::string_view bytes) {
  static const char kDigits[] = "0123456789abcdef";
  std::string out;
  out.reserve(bytes.size() * 2);
  for (unsigned char c : bytes) out += kDigits[c >> 4], out += kDigits[c & 15];
  return out;
}

std::string hex_ascii(std::string_view bytes, size_t per_line) {
  std::string out;
  if (per_line == 0) per_line = 16;
  char buf[24];
  for (size_t line = 0; line < bytes.size(); line += per_line) {
    std::snprintf(buf, sizeof buf, "%04zx ", line);
    out += buf;
    for (size_t i = 0; i < per_line; ++i) {
      if (line + i < bytes.size()) std::snprintf(buf, sizeof buf, " %02x", uint8_t(bytes[line + i]));
      else std::snprintf(buf, sizeof buf, "   ");
      out += buf;
    }
    out += "  ";
    for (size_t i = 0; i < per_line && line + i < bytes.size(); ++i) {
      const unsigned char ch = uint8_t(bytes[line + i]);
      out += ch >= 0x20 && ch < 0x7f ? char(ch) : '.';
    }
    out += '\n';
  }
  return out;
}

}  // namespace tinescope::analysis
