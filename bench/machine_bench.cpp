// This machine's physical limits, the yardsticks the other benchmarks are
// measured against. Prints `figure: machine.NAME VALUE UNIT`:
//   rdtsc_ns                 one rdtsc (the floor of a recorded event)
//   memcpy_gb_per_s          one core copying 256 MB buffers
//   lz4_compress_mb_per_s    one core, lz4 default level, on trace chunks
//   lz4_decompress_mb_per_s  one core, on the same chunks (raw output)
//   disk_write_mb_per_s      sequential 4 MB writes, then fdatasync
//   disk_read_mb_per_s       sequential 4 MB reads after dropping the file from the page cache
#include <fcntl.h>
#include <lz4.h>
#include <unistd.h>
#include <x86intrin.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "bench_util.hpp"
#include "synthetic_trace.hpp"
#include "tinescope/trace_reader.hpp"

using namespace tinescope;
using clk = bench::Clock;
using bench::seconds_since;

namespace {

// The raw payloads of a synthetic trace's chunks: what the recorder compresses.
std::vector<std::vector<uint8_t>> trace_chunks(const std::string& dir) {
  const std::string path = dir + "/machine_bench.tine";
  std::filesystem::remove(path);
  bench::SyntheticOptions o;
  o.events = 2'000'000, o.threads = 8;
  bench::SyntheticResult r;
  std::string error;
  std::vector<std::vector<uint8_t>> out;
  if (!bench::write_synthetic_trace(path, o, r, error)) return out;
  struct Chunks : trace::Visitor {
    std::vector<uint64_t> offsets;
    void on_chunk(const trace::ChunkInfo& c) override { offsets.push_back(c.offset); }
  } v;
  trace::read_file(path, v, error, {.decode_data = false});
  std::vector<uint8_t> file(std::filesystem::file_size(path));
  FILE* f = std::fopen(path.c_str(), "rb");
  if (f && std::fread(file.data(), 1, file.size(), f) == file.size()) {
    std::vector<uint8_t> buf;
    for (uint64_t off : v.offsets) {
      format::ChunkHeader h;
      std::memcpy(&h, &file[off], sizeof h);
      const uint8_t* raw = trace::chunk_payload(&file[off], buf);
      if (raw) out.emplace_back(raw, raw + h.raw_size);
    }
  }
  if (f) std::fclose(f);
  std::filesystem::remove(path);
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"machine_bench: this machine's limits"};
  bool quick = false;
  std::string dir = ".";
  app.add_flag("--quick", quick, "small sizes: checks that every figure prints");
  app.add_option("--dir", dir, "directory for the disk test (on the disk traces go to)");
  CLI11_PARSE(app, argc, argv);

  // rdtsc
  const uint64_t n = quick ? 1'000'000 : 20'000'000;
  uint64_t sink = 0;
  auto t = clk::now();
  for (uint64_t i = 0; i < n; ++i) sink += __rdtsc();
  const double rdtsc_ns = seconds_since(t) * 1e9 / double(n);
  std::printf("figure: machine.rdtsc_ns %.2f ns (%llu calls)\n", rdtsc_ns, (unsigned long long)(n + (sink & 0)));

  // memcpy
  const size_t mb = quick ? 32 : 256;
  std::vector<uint8_t> a(mb << 20, 1), b(mb << 20, 2);
  std::memcpy(b.data(), a.data(), a.size());  // touch
  const int rounds = quick ? 2 : 8;
  t = clk::now();
  for (int i = 0; i < rounds; ++i) std::memcpy(i % 2 ? a.data() : b.data(), i % 2 ? b.data() : a.data(), a.size());
  const double gbs = double(a.size()) * rounds / seconds_since(t) / 1e9;
  std::printf("figure: machine.memcpy_gb_per_s %.2f GB/s (one core, %zu MB buffers)\n", gbs, mb);

  // lz4 on trace chunks
  const auto chunks = trace_chunks(dir);
  size_t raw = 0;
  for (auto& c : chunks) raw += c.size();
  std::vector<std::vector<char>> packed(chunks.size());
  t = clk::now();
  for (size_t i = 0; i < chunks.size(); ++i) {
    packed[i].resize(size_t(LZ4_compressBound(int(chunks[i].size()))));
    packed[i].resize(size_t(LZ4_compress_default(reinterpret_cast<const char*>(chunks[i].data()), packed[i].data(),
                                                 int(chunks[i].size()), int(packed[i].size()))));
  }
  const double comp = double(raw) / seconds_since(t) / 1e6;
  std::vector<char> out(1 << 24);
  const int dec_rounds = quick ? 1 : 5;
  t = clk::now();
  for (int r = 0; r < dec_rounds; ++r)
    for (size_t i = 0; i < chunks.size(); ++i)
      LZ4_decompress_safe(packed[i].data(), out.data(), int(packed[i].size()), int(out.size()));
  const double dec = double(raw) * dec_rounds / seconds_since(t) / 1e6;
  std::printf("figure: machine.lz4_compress_mb_per_s %.0f MB/s (one core, %zu chunks, %.1f MB of trace-like data)\n",
              comp, chunks.size(), double(raw) / 1e6);
  std::printf("figure: machine.lz4_decompress_mb_per_s %.0f MB/s (one core, raw output)\n", dec);

  // Disk: sequential write then read, around the page cache.
  const std::string path = dir + "/machine_bench.disk";
  const size_t disk_mb = quick ? 64 : 1024, block = 4 << 20;
  std::vector<uint8_t> blk(block, 0x5a);
  for (size_t i = 0; i < block; i += 4096) blk[i] = uint8_t(i >> 12);
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) {
    std::fprintf(stderr, "machine_bench: cannot write %s\n", path.c_str());
    return 1;
  }
  t = clk::now();
  for (size_t done = 0; done < disk_mb << 20; done += block)
    if (::write(fd, blk.data(), block) != ssize_t(block)) break;
  ::fdatasync(fd);
  const double wr = double(disk_mb) * 1.048576 / seconds_since(t);
  ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
  ::close(fd);
  fd = ::open(path.c_str(), O_RDONLY);
  ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
  t = clk::now();
  size_t got = 0;
  for (ssize_t r; (r = ::read(fd, blk.data(), block)) > 0;) got += size_t(r);
  const double rd = double(got) / 1e6 / seconds_since(t);
  ::close(fd);
  std::filesystem::remove(path);
  std::printf("figure: machine.disk_write_mb_per_s %.0f MB/s (%zu MB sequential, fdatasync)\n", wr, disk_mb);
  std::printf("figure: machine.disk_read_mb_per_s %.0f MB/s (%zu MB sequential, not cached)\n", rd, disk_mb);
  return 0;
}
