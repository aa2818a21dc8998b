#include "tinescope/analysis/categories.hpp"

#include <algorithm>
#include <map>
#include <thread>
#include <unordered_map>

#include "tinescope/analysis/event_details.hpp"

namespace tinescope::analysis {

namespace {

// Begins, complete events, instants and function entries (function
// tracing's intervals): what the timeline draws by name.
bool names_an_item(uint16_t type) {
  return type == format::kIntervalBegin || type == format::kIntervalComplete || type == format::kInstant ||
         type == format::kFuncEnter;
}

// An importer's arguments past its type codes are one text "key=value; ..."
// (docs/IMPORT.md), the category first: "cat=io; bytes=12".
std::string_view category_in_text(std::string_view text) {
  if (text.substr(0, 4) != "cat=") return {};
  text.remove_prefix(4);
  return text.substr(0, text.find("; "));
}

// What one thread found: for each category text ("" for none), its events,
// and for each name the texts its events had.
struct Found {
  std::unordered_map<std::string, uint32_t> text_id;
  std::vector<std::string> texts;
  std::vector<uint64_t> text_events;
  std::map<uint32_t, std::vector<uint32_t>> name_texts;  // name string id -> text ids (unsorted, unique)
  uint64_t events = 0;
  std::string error;

  uint32_t text(std::string_view t) {
    auto [it, fresh] = text_id.try_emplace(std::string(t), uint32_t(texts.size()));
    if (fresh) texts.emplace_back(t), text_events.push_back(0);
    return it->second;
  }
  void add(uint32_t name, uint32_t text) {
    ++text_events[text];
    std::vector<uint32_t>& v = name_texts[name];
    if (std::find(v.begin(), v.end(), text) == v.end()) v.push_back(text);
  }
};

// The events of one feedlet: an item's category is the `cat` field of an
// argument event right after it (none: ""). Read in slices of its time, so
// that `stop` ends it soon (an item and its arguments share a time: never
// split). False if stopped.
bool scan_feedlet(const index::TraceIndex& ix, const trace::Catalog& c, const index::FeedletSummary& f,
                  const std::vector<int8_t>& cat_field, Found& out, const std::atomic<bool>* stop,
                  std::atomic<uint64_t>* done) {
  uint32_t pending = 0;  // name of the last item, its category not yet seen
  bool has_pending = false;
  const uint32_t none = out.text("");
  auto close = [&] {
    if (has_pending) out.add(pending, none);
    has_pending = false;
  };
  auto each = [&](const trace::Event& e) {
    ++out.events;
    const int k = e.type < cat_field.size() ? cat_field[e.type] : -1;
    if (k >= 0 && size_t(k) < e.field_count) {  // an argument event with a category
      if (!has_pending) return;  // (a second argument event of one item, or one after no item)
      const format::FieldDef& d = c.schema.find(e.type)->fields[size_t(k)];
      if (d.name == "cat") {
        out.add(pending, out.text(d.type == format::FieldType::String ? c.string(e.u[k]) : e.bytes[k]));
        has_pending = false;
      } else if (const std::string_view cat = category_in_text(e.bytes[k]); !cat.empty()) {
        out.add(pending, out.text(cat));
        has_pending = false;
      }
      return;
    }
    if (k == -2) return;  // an argument event with no category: the item's category may follow
    close();
    if (names_an_item(e.type) && e.field_count > 0) pending = uint32_t(e.u[0]), has_pending = true;
  };
  constexpr uint64_t kSlices = 64;
  const uint64_t span = f.last_ts >= f.first_ts ? f.last_ts - f.first_ts : 0;
  const uint64_t step = span / kSlices + 1;
  for (uint64_t t0 = f.first_ts;; t0 += step) {
    if (stop && stop->load(std::memory_order_relaxed)) return false;
    const uint64_t t1 = f.last_ts - t0 < step ? f.last_ts : t0 + step - 1;
    const uint64_t before = out.events;
    std::string why;
    if (!ix.decode_events(f.id, t0, t1, each, why) && out.error.empty()) out.error = why;
    if (done) done->fetch_add(out.events - before, std::memory_order_relaxed);
    if (t1 == f.last_ts) break;
  }
  close();
  return true;
}

}  // namespace

int Categories::find(const std::string& category) const {
  for (size_t i = 0; i < categories.size(); ++i)
    if (categories[i].name == category) return int(i);
  return -1;
}

bool records_categories(const trace::Catalog& c) {
  for (uint32_t t = format::kFirstUserType; t <= format::kMaxEventType; ++t) {
    const format::EventTypeDef* d = c.schema.find(uint16_t(t));
    if (!d || !format::is_argument_type(*d)) continue;
    for (const format::FieldDef& f : d->fields)
      if (f.name == "cat") return true;
  }
  return false;
}

Categories scan_categories(const index::TraceIndex& ix, const std::atomic<bool>* stop, std::atomic<uint64_t>* done) {
  // (The feedlets first: a catalog read after them names every string and
  // type their events use.)
  const auto feedlets = ix.feedlets();
  auto catalog = ix.catalog_snapshot();
  const trace::Catalog& c = *catalog;
  // [type]: the index of its field `cat` (an argument type's; or of its one
  // text field "text", which may begin "cat=..."), -2 for an argument type
  // without either, -1 for any other type.
  std::vector<int8_t> cat_field(format::kMaxEventType + 1, -1);
  for (uint32_t t = format::kFirstUserType; t <= format::kMaxEventType; ++t) {
    const format::EventTypeDef* d = c.schema.find(uint16_t(t));
    if (!d || !format::is_argument_type(*d)) continue;
    cat_field[t] = -2;
    for (size_t k = 0; k < d->fields.size(); ++k) {
      const format::FieldDef& f = d->fields[k];
      if (f.name == "cat" && (f.type == format::FieldType::String || f.type == format::FieldType::Bytes))
        cat_field[t] = int8_t(k);
      else if (f.name == "text" && f.type == format::FieldType::Bytes && d->fields.size() == 1)
        cat_field[t] = int8_t(k);
    }
  }
  const unsigned threads = std::max(1u, std::min<unsigned>(std::thread::hardware_concurrency(), unsigned(feedlets.size())));
  std::vector<Found> found(threads);
  std::atomic<size_t> next{0};
  std::atomic<bool> stopped{false};
  auto work = [&](Found& out) {
    for (size_t i; (i = next++) < feedlets.size();) {
      if (!scan_feedlet(ix, c, feedlets[i], cat_field, out, stop, done)) {
        stopped = true;
        return;
      }
    }
  };
  std::vector<std::thread> helpers;
  for (unsigned t = 1; t < threads; ++t) helpers.emplace_back(work, std::ref(found[t]));
  work(found[0]);
  for (auto& h : helpers) h.join();

  // Texts to categories: each text's parts (comma separated), "" none.
  Categories out;
  std::map<std::string, uint32_t> part_index;
  std::map<std::string, uint64_t> part_events;
  std::map<std::string, std::vector<uint32_t>> part_names;  // (names, for their count)
  std::map<uint32_t, std::vector<std::string>> name_parts;
  auto parts_of = [](const std::string& text) {
    std::vector<std::string> parts = split_categories(text);
    if (parts.empty()) parts.push_back(kNoCategory);
    return parts;
  };
  for (const Found& f : found) {
    out.events += f.events;
    if (out.error.empty()) out.error = f.error;
    std::vector<std::vector<std::string>> parts(f.texts.size());
    for (size_t t = 0; t < f.texts.size(); ++t) {
      parts[t] = parts_of(f.texts[t]);
      for (const std::string& p : parts[t]) part_events[p] += f.text_events[t];
    }
    for (const auto& [name, texts] : f.name_texts)
      for (uint32_t t : texts)
        for (const std::string& p : parts[t]) {
          std::vector<std::string>& v = name_parts[name];
          if (std::find(v.begin(), v.end(), p) == v.end()) v.push_back(p);
        }
  }
  if (stopped) out.error = "stopped";
  // Categories by name, kNoCategory last.
  for (const auto& [p, n] : part_events)
    if (p != kNoCategory && n) out.categories.push_back({p, n, 0});
  if (auto it = part_events.find(kNoCategory); it != part_events.end() && it->second)
    out.categories.push_back({kNoCategory, it->second, 0});
  for (uint32_t i = 0; i < out.categories.size(); ++i) part_index[out.categories[i].name] = i;
  out.of_name.resize(c.strings.size());
  for (const auto& [name, parts] : name_parts) {
    if (name >= out.of_name.size()) out.of_name.resize(name + 1);
    std::vector<uint32_t>& v = out.of_name[name];
    for (const std::string& p : parts) v.push_back(part_index[p]), ++out.categories[part_index[p]].names;
    std::sort(v.begin(), v.end());
    if (v.size() > 1) ++out.mixed_names;
  }
  return out;
}

std::vector<std::string> split_categories(const std::string& text) {
  std::vector<std::string> parts;
  size_t at = 0;
  for (;;) {
    const size_t comma = text.find(',', at);
    std::string p = text.substr(at, comma == std::string::npos ? std::string::npos : comma - at);
    const size_t b = p.find_first_not_of(' '), e = p.find_last_not_of(' ');
    p = b == std::string::npos ? std::string() : p.substr(b, e - b + 1);
    if (!p.empty() && std::find(parts.begin(), parts.end(), p) == parts.end()) parts.push_back(p);
    if (comma == std::string::npos) return parts;
    at = comma + 1;
  }
}

std::vector<uint8_t> hidden_names(const Categories& c, const std::vector<std::string>& hidden) {
  std::vector<uint8_t> is_hidden(c.categories.size(), 0);
  for (size_t i = 0; i < c.categories.size(); ++i)
    is_hidden[i] = std::find(hidden.begin(), hidden.end(), c.categories[i].name) != hidden.end();
  std::vector<uint8_t> out(c.of_name.size(), 0);
  for (size_t n = 0; n < c.of_name.size(); ++n) {
    const auto& v = c.of_name[n];
    out[n] = !v.empty() && std::all_of(v.begin(), v.end(), [&](uint32_t k) { return is_hidden[k] != 0; });
  }
  return out;
}

}  // namespace tinescope::analysis
