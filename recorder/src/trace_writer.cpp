#include "tinescope/trace_writer.hpp"

#include <lz4.h>

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

void ChunkBuilder::finish(uint16_t flags, std::vector<uint8_t>& frame) {
  const int bound = LZ4_compressBound(int(size_));
  frame.resize(sizeof(ChunkHeader) + size_t(bound) + kChunkTrailer);
  uint8_t* payload = frame.data() + sizeof(ChunkHeader);
  int compressed = size_ ? LZ4_compress_default(reinterpret_cast<const char*>(buf_.data()),
                                                reinterpret_cast<char*>(payload), int(size_), bound)
                         : 0;
  uint32_t stored;
  if (compressed > 0 && size_t(compressed) < size_) {
    stored = uint32_t(compressed);
    flags |= kChunkLz4;
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
  first_ts_ = last_ts_;
}

}  // namespace tinescope::format
