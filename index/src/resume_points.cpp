#include "resume_points.hpp"

namespace tinescope::index {

using format::get_varint;
using format::unzigzag;
using format::zigzag;

namespace {

void put(std::vector<uint8_t>& out, uint64_t v) {
  uint8_t b[10];
  out.insert(out.end(), b, format::put_varint(b, v));
}

// Reads past a point's open intervals and running jobs; false if malformed.
bool skip_state(const uint8_t*& p, const uint8_t* end) {
  uint64_t n, v;
  for (int part = 0; part < 2; ++part) {  // intervals (2 varints each), then running jobs (4)
    if (!get_varint(p, end, n) || n > uint64_t(end - p)) return false;
    for (uint64_t i = 0; i < n * (part ? 4 : 2); ++i)
      if (!get_varint(p, end, v)) return false;
  }
  return true;
}

}  // namespace

void ResumeWriter::add(size_t offset, uint64_t ts, uint64_t prev_delta, const WalkState& st,
                       std::vector<uint8_t>& out) {
  put(out, offset - offset_);
  put(out, ts - ts_);
  put(out, zigzag(int64_t(prev_delta - prev_delta_)));
  offset_ = offset, ts_ = ts, prev_delta_ = prev_delta;
  put(out, st.stack.size());
  for (const OpenInterval& o : st.stack) put(out, o.name), put(out, zigzag(int64_t(ts - o.start)));
  put(out, st.running.size());
  for (const RunningJob& r : st.running)
    put(out, r.cpu), put(out, r.task), put(out, r.job), put(out, zigzag(int64_t(ts - r.start)));
}

bool find_resume(const uint8_t* p, const uint8_t* end, uint64_t first_ts, uint64_t before_ts, uint64_t max_event,
                 WalkState& st, WalkFrom& from) {
  // Points are decoded in turn (a chunk has a few); only the chosen one's
  // intervals are kept, the others' are read past.
  WalkFrom at{0, first_ts, 0, 0};
  const uint8_t* chosen = nullptr;  // the chosen point's intervals
  WalkFrom best;
  for (uint64_t event = kResumeEvery; p < end && event <= max_event; event += kResumeEvery) {
    uint64_t d_offset, d_ts, d_prev;
    if (!get_varint(p, end, d_offset) || !get_varint(p, end, d_ts) || !get_varint(p, end, d_prev)) return false;
    at.offset += d_offset, at.ts += d_ts, at.prev_delta += uint64_t(unzigzag(d_prev)), at.event = event;
    if (at.ts >= before_ts) break;
    best = at, chosen = p;
    if (!skip_state(p, end)) return false;
  }
  if (!chosen) return false;
  WalkState got;
  got.counts = st.counts;
  p = chosen;
  uint64_t n, name, task, cpu, job, back;
  if (!get_varint(p, end, n)) return false;
  for (uint64_t i = 0; i < n; ++i) {
    if (!get_varint(p, end, name) || !get_varint(p, end, back)) return false;
    got.stack.push_back(OpenInterval{uint32_t(name), uint32_t(i), best.ts - uint64_t(unzigzag(back))});
  }
  if (!get_varint(p, end, n)) return false;
  for (uint64_t i = 0; i < n; ++i) {
    if (!get_varint(p, end, cpu) || !get_varint(p, end, task) || !get_varint(p, end, job) || !get_varint(p, end, back))
      return false;
    got.running.push_back(RunningJob{uint32_t(cpu), uint32_t(task), best.ts - uint64_t(unzigzag(back)), job});
  }
  st = std::move(got);
  from = best;
  return true;
}

bool list_points(const uint8_t* p, const uint8_t* end, uint64_t first_ts, std::vector<WalkFrom>& out) {
  WalkFrom at{0, first_ts, 0, 0};
  while (p < end) {
    uint64_t d_offset, d_ts, d_prev;
    if (!get_varint(p, end, d_offset) || !get_varint(p, end, d_ts) || !get_varint(p, end, d_prev)) return false;
    at.offset += d_offset, at.ts += d_ts, at.prev_delta += uint64_t(unzigzag(d_prev)), at.event += kResumeEvery;
    if (!skip_state(p, end)) return false;
    out.push_back(at);
  }
  return true;
}

bool payload_until(const uint8_t* p, const uint8_t* end, uint64_t first_ts, uint64_t until, size_t& bytes) {
  uint64_t offset = 0, ts = first_ts, v;
  while (p < end) {
    uint64_t d_offset, d_ts;
    if (!get_varint(p, end, d_offset) || !get_varint(p, end, d_ts) || !get_varint(p, end, v)) return false;
    offset += d_offset, ts += d_ts;
    if (ts > until) {
      bytes = size_t(offset);
      return true;
    }
    if (!skip_state(p, end)) return false;
  }
  return false;
}

}  // namespace tinescope::index
