// An imported trace, indexed, for the importers' tests: the samples in
// ../shared/samples (or tests/data where they are not there) or any file.
#pragma once

#include <unistd.h>

#include <algorithm>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "tinescope/import/trace_import.hpp"
#include "tinescope/index/trace_index.hpp"
#include "trace_helpers.hpp"

namespace tinescope::test {

using index::Item;
using index::StreamKind;
using index::TraceIndex;

inline std::string sample(const std::string& name, const std::string& dir = "chrome-json") {
  std::string src = TINESCOPE_SOURCE_DIR;
  std::string shared = src + "/../shared/samples/" + dir + "/" + name;
  return ::access(shared.c_str(), R_OK) == 0 ? shared : src + "/tests/data/" + dir + "/" + name;
}

struct AtPath {  // an input file anywhere, not a sample
  std::string in;
};

struct Imported {
  std::string path;
  import::ImportResult result;
  std::unique_ptr<TraceIndex> ix;
  std::map<std::string, uint32_t> lane;  // feedlet name -> id

  explicit Imported(const std::string& name, const std::string& dir = "chrome-json")
      : Imported(AtPath{sample(name, dir)}, name) {}
  Imported(const AtPath& at, const std::string& name) : path(temp_path("import_" + name)) {
    const std::string& in = at.in;
    ::unlink(path.c_str());
    ::unlink((path + ".idx").c_str());
    std::string error;
    bool ok = import::import_trace(in, path, result, error);
    EXPECT_TRUE(ok) << error;
    if (!ok) return;
    ix = TraceIndex::build(path, error);
    EXPECT_TRUE(ix) << error;
    if (!ix) return;
    EXPECT_TRUE(ix->damage().empty());
    for (auto& f : ix->feedlets()) lane[f.name] = f.id;
  }
  ~Imported() {
    ::unlink(path.c_str());
    ::unlink((path + ".idx").c_str());
  }
  std::vector<Item> items(StreamKind kind, const std::string& lane_name, const std::string& name) const {
    auto it = lane.find(lane_name);
    if (it == lane.end()) return {};
    int s = ix->find_stream(kind, it->second, name);
    return s < 0 ? std::vector<Item>{} : ix->items(s, 0, UINT64_MAX);
  }
  // Every interval of a lane, whatever its name, by start.
  std::vector<Item> lane_intervals(const std::string& lane_name) const {
    std::vector<Item> out;
    const auto streams = ix->streams();  // a copy
    for (size_t id = 0; id < streams.size(); ++id) {
      const auto& st = streams[id];
      if (st.kind != StreamKind::Interval || !lane.count(lane_name) || st.feedlet != lane.at(lane_name)) continue;
      for (const Item& it : ix->items(int(id), 0, UINT64_MAX)) out.push_back(it);
    }
    std::sort(out.begin(), out.end(), [](const Item& a, const Item& b) { return a.start < b.start; });
    return out;
  }
  uint64_t count(StreamKind kind) const {
    uint64_t n = 0;
    for (auto& s : ix->streams())
      if (s.kind == kind) n += s.items;
    return n;
  }
};

}  // namespace tinescope::test
