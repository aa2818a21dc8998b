#include "tinescope/trace_writer.hpp"

#include <lz4.h>
#include <lz4hc.h>

#include <algorithm>
#include <utility>

namespace tinescope::format {

static void put_section(std::string& out, Section tag, const void* data, size_t n) {
  uint16_t t = uint16_t(tag);
  uint32_t len = uint32_t(n);
  out.append(reinterpret_cast<const char*>(&t), 2);
  out.append(reinterpret_cast<const char*>(&len), 4);
  out.append(static_cast<const char*>(data), n);
}

std::string build_file_header(const HeaderInfo& info) {
  std::string out(reinterpret_cast<const char*>(kFileMagic), 8);
  uint16_t version[2] = {kMajorVersion, kMinorVersion};
  out.append(reinterpret_cast<const char*>(version), 4);
  out.append(4, '\0');  // header size, patched below
  put_section(out, Section::Clock, &info.clock, sizeof info.clock);
  put_section(out, Section::Host, info.host.data(), info.host.size());
  std::string process(reinterpret_cast<const char*>(&info.pid), 4);
  process += info.process_name;
  put_section(out, Section::Process, process.data(), process.size());
  std::string cmdline;
  for (const std::string& arg : info.cmdline) cmdline.append(arg).push_back('\0');
  put_section(out, Section::CmdLine, cmdline.data(), cmdline.size());
  std::string schema;
  encode_schema(*info.schema, schema);
  put_section(out, Section::Schema, schema.data(), schema.size());
  put_section(out, Section::Recorder, info.recorder.data(), info.recorder.size());
  uint32_t size = uint32_t(out.size() + 8);
  std::memcpy(out.data() + 12, &size, 4);
  uint64_t sum = checksum(out.data(), out.size());
  out.append(reinterpret_cast<const char*>(&sum), 8);
  return out;
}

static int compress_dense(const uint8_t* src, uint8_t* dst, int n, int capacity) {
  // HC's state is ~256 KiB: one per compressing thread, not per chunk builder.
  thread_local std::vector<uint64_t> state;  // (8-byte aligned, as lz4 asks)
  if (state.empty()) state.resize((size_t(LZ4_sizeofStateHC()) + 7) / 8);
  return LZ4_compress_HC_extStateHC(state.data(), reinterpret_cast<const char*>(src), reinterpret_cast<char*>(dst), n,
                                    capacity, kDenseLevel);
}

// Each segment is compressed on its own (format.hpp), so that a reader can
// start decoding at any segment: a query that walks from a resume point in
// the middle of a chunk decoded everything before it, on each of its two
// threads. Costs ~3 % of size on index_bench's traces; lz4 both compresses
// and decompresses the 8 KB blocks ~10 % faster than one 64 KB block.
void ChunkBuilder::finish(uint16_t flags, std::vector<uint8_t>& frame) {
  if (!cuts_.empty() && cuts_.back() == size_) cuts_.pop_back();  // no event after it
  const size_t segments = events_ ? cuts_.size() + 1 : 0;
  auto segment = [this](size_t i) {  // [from, to) in buf_
    return std::pair<size_t, size_t>{i ? cuts_[i - 1] : 0, i < cuts_.size() ? cuts_[i] : size_};
  };
  size_t bound = segments * kSegmentEntry;
  for (size_t i = 0; i < segments; ++i) bound += size_t(LZ4_compressBound(int(segment(i).second - segment(i).first)));
  frame.resize(sizeof(ChunkHeader) + std::max(bound, size_) + kChunkTrailer);
  uint8_t* payload = frame.data() + sizeof(ChunkHeader);
  uint8_t* const blocks = payload + segments * kSegmentEntry;
  size_t at = 0;  // in blocks
  for (size_t i = 0; i < segments; ++i) {
    const auto [from, to] = segment(i);
    const int n = int(to - from);
    int z = dense ? compress_dense(buf_.data() + from, blocks + at, n, LZ4_compressBound(n))
                  : LZ4_compress_default(reinterpret_cast<const char*>(buf_.data() + from),
                                         reinterpret_cast<char*>(blocks + at), n, LZ4_compressBound(n));
    if (z <= 0 || z >= n) {  // incompressible: as is
      std::memcpy(blocks + at, buf_.data() + from, size_t(n));
      z = n;
    }
    at += size_t(z);
    const uint32_t entry[2] = {uint32_t(to), uint32_t(at)};
    std::memcpy(payload + i * kSegmentEntry, entry, kSegmentEntry);
  }
  uint32_t stored;
  if (segments && segments * kSegmentEntry + at < size_) {
    stored = uint32_t(segments * kSegmentEntry + at);
    flags |= kChunkLz4Segments;
  } else {  // incompressible (or empty): store as is
    std::memcpy(payload, buf_.data(), size_);
    stored = uint32_t(size_);
  }
  ChunkHeader h{};
  std::memcpy(h.begin, kChunkBegin, 8);
  h.header_size = sizeof(ChunkHeader);
  h.flags = flags;
  h.feedlet = feedlet;
  h.sequence = sequence;
  h.first_ts = first_ts_;
  h.last_ts = events_ ? last_ts_ : first_ts_;
  h.event_count = events_;
  h.raw_size = uint32_t(size_);
  h.stored_size = stored;
  h.dropped_before = pending_drops;
  h.header_check = header_check(h);
  std::memcpy(frame.data(), &h, sizeof h);
  uint64_t sum = checksum(frame.data() + 8, sizeof(ChunkHeader) - 8 + stored);
  std::memcpy(payload + stored, &sum, 8);
  std::memcpy(payload + stored + 8, kChunkEnd, 8);
  frame.resize(sizeof(ChunkHeader) + stored + kChunkTrailer);

  ++sequence;
  pending_drops = 0;
  size_ = 0;
  events_ = 0;
  prev_delta_ = 0;
  cuts_.clear();
  first_ts_ = last_ts_;
}

}  // namespace tinescope::format
