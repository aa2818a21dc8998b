// Makes the index_file fuzz seeds again (after a change to the index format
// or to the synthetic trace they index): valid.idx, and each regression as
// the same change to it with every checksum it covers made good again (the
// table block's, the directory's, the footer's), so that every build reaches
// the check behind it (docs/FUZZING.md). Not built by default:
//   cmake --build build --target remake_index_seeds
//   build/tests/fuzz/remake_index_seeds tests/fuzz/corpus/index_file
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <vector>

#include "fuzz_util.hpp"
#include "index_file_base.hpp"
#include "pyramid.hpp"
#include "tinescope/format.hpp"

using namespace tinescope;

namespace {

using Bytes = std::vector<uint8_t>;

uint64_t get64(const Bytes& b, size_t at) {
  uint64_t v;
  std::memcpy(&v, &b[at], 8);
  return v;
}
void put64(Bytes& b, size_t at, uint64_t v) { std::memcpy(&b[at], &v, 8); }

// The footer (the last 64 bytes, docs/INDEX.md): the directory's checksum, then its own.
void seal(Bytes& b) {
  const size_t foot = b.size() - 64;
  put64(b, foot + 32, format::checksum(&b[get64(b, foot + 16)], get64(b, foot + 24)));
  put64(b, foot + 56, format::checksum(&b[foot], 56));
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s CORPUS_DIR (tests/fuzz/corpus/index_file)\n", argv[0]);
    return 2;
  }
  const std::string dir = argv[1], trace = fuzz::scratch() + "/base.tine", seed = dir + "/valid.idx";
  std::string error;
  if (!fuzz::write_index_file_base(trace, error) || !fuzz::write_index_file_seed(trace, seed, error)) {
    std::fprintf(stderr, "%s\n", error.c_str());
    return 1;
  }
  auto ix = index::TraceIndex::load(trace, seed, error);
  if (!ix) {
    std::fprintf(stderr, "%s\n", error.c_str());
    return 1;
  }
  std::ifstream in(seed, std::ios::binary);
  const Bytes valid{std::istreambuf_iterator<char>(in), {}};

  // The chunk table: its records as loaded, found in the file; its reference
  // in the directory is its offset followed by its one block's checksum.
  const std::vector<index::ChunkRecord> chunks = ix->chunks();
  const size_t table_bytes = chunks.size() * sizeof(index::ChunkRecord);
  if (chunks.size() < 2 || chunks.size() > 2048) {
    std::fprintf(stderr, "expected 2 to 2048 chunks, not %zu\n", chunks.size());
    return 1;
  }
  size_t table = SIZE_MAX, ref = SIZE_MAX;
  for (size_t i = 0; i + table_bytes <= valid.size() && table == SIZE_MAX; i += 8)
    if (std::memcmp(&valid[i], chunks.data(), table_bytes) == 0) table = i;
  for (size_t i = 0; table != SIZE_MAX && i + 16 <= valid.size(); i += 8)
    if (get64(valid, i) == table && get64(valid, i + 8) == format::checksum(&valid[table], table_bytes)) ref = i;
  if (ref == SIZE_MAX) {
    std::fprintf(stderr, "the chunk table or its reference was not found\n");
    return 1;
  }
  const size_t second = table + sizeof(index::ChunkRecord);  // the second chunk's record

  // A level's page list (24-byte PageRefs): its
  // reference in the directory (count, offset, its block's checksum) whose
  // records read as pages do (1-56 nodes, among the node pages, in bucket
  // order). Its first page's count is changed below.
  const size_t foot = valid.size() - 64, dir_at = get64(valid, foot + 16), dir_end = dir_at + get64(valid, foot + 24);
  const uint64_t tables_begin = get64(valid, dir_at + 8);
  size_t page_list = SIZE_MAX, page_ref = SIZE_MAX, page_list_count = 0;
  for (size_t i = dir_at + 16; i + 16 <= dir_end && page_list == SIZE_MAX; i += 8) {
    // (The count is a u64 where the directory has come to, then zeros to
    // the next multiple of 8, then the offset.)
    const uint64_t at = get64(valid, i);
    uint64_t n = 0;
    for (size_t k = 0; k < 8 && n == 0; ++k) {
      if (k && valid[i - k] != 0) break;
      const uint64_t count = get64(valid, i - 8 - k);
      if (count >= 1 && count <= 2048 && at % 8 == 0 && at >= tables_begin &&
          at + count * sizeof(index::PageRef) <= dir_at &&
          get64(valid, i + 8) == format::checksum(&valid[at], count * sizeof(index::PageRef)))
        n = count;
    }
    if (n == 0) continue;
    bool pages = true;
    for (uint64_t k = 0; k < n && pages; ++k) {
      index::PageRef r, prev;
      std::memcpy(&r, &valid[at + k * sizeof r], sizeof r);
      if (k) std::memcpy(&prev, &valid[at + (k - 1) * sizeof r], sizeof r);
      pages = r.count >= 1 && r.count <= index::kNodesPerPage && r.offset >= 4096 && r.offset < tables_begin &&
              (k == 0 || prev.first_bucket < r.first_bucket);
    }
    if (pages) page_list = at, page_ref = i, page_list_count = n;
  }
  if (page_ref == SIZE_MAX) {
    std::fprintf(stderr, "no level's page list was found\n");
    return 1;
  }

  // Each change, and what loading the result must say ("" : it loads).
  struct Change {
    const char* file;
    void (*apply)(Bytes&, size_t second);
    const char* refusal;
  };
  const Change changes[] = {
      {"regression-1-chunk-offset-wraps.idx", [](Bytes& b, size_t at) { put64(b, at, 0xffffffffffffff9bull); },
       "damaged index table (the chunk index)"},
      // The directory ends with the grid: vec<u32> feedlets (one here), then
      // two tables of 3 185 checkpoints (2 blocks each): 36 + 32 bytes.
      {"regression-2-grid-names-a-missing-feedlet.idx",
       [](Bytes& b, size_t) {
         const size_t foot = b.size() - 64, end = get64(b, foot + 16) + get64(b, foot + 24);
         b[end - 72] = 99;
       },
       "a checkpoint names feedlet 99"},
      {"regression-3-chunk-record-points-at-no-chunk.idx", [](Bytes& b, size_t at) { b[at + 1] = 0x37; }, ""},
  };
  // The same for a change to the page list: its first page says it holds
  // 60 000 nodes (a page holds 56), which a query summed to reserve its
  // answer: the fuzzer's find, gigabytes reserved for a 64 KB index.
  auto page_count_past_a_page = [&](Bytes& b) {
    const uint16_t count = 60000;
    std::memcpy(&b[page_list + offsetof(index::PageRef, count)], &count, sizeof count);
    put64(b, page_ref + 8, format::checksum(&b[page_list], page_list_count * sizeof(index::PageRef)));
  };
  int failed = 0;
  for (const Change& c : changes) {
    Bytes b = valid;
    c.apply(b, second);
    put64(b, ref + 8, format::checksum(&b[table], table_bytes));
    seal(b);
    const std::string path = dir + "/" + c.file;
    std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char*>(b.data()), std::streamsize(b.size()));
    error.clear();
    auto loaded = index::TraceIndex::load(trace, path, error);
    const bool as_meant = *c.refusal ? !loaded && error.find(c.refusal) != std::string::npos : loaded != nullptr;
    std::printf("%s: %s%s\n", c.file, loaded ? "loads" : error.c_str(),
                as_meant ? "" : " (NOT as meant: the change missed its field; see docs/FUZZING.md)");
    failed += !as_meant;
  }
  {
    Bytes b = valid;
    page_count_past_a_page(b);
    seal(b);
    const std::string path = dir + "/regression-4-node-page-count-past-a-page.idx";
    std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char*>(b.data()), std::streamsize(b.size()));
    error.clear();
    const bool loads = index::TraceIndex::load(trace, path, error) != nullptr;  // (its queries find the page list damaged)
    std::printf("regression-4-node-page-count-past-a-page.idx: %s%s\n", loads ? "loads" : error.c_str(),
                loads ? "" : " (NOT as meant: see docs/FUZZING.md)");
    failed += !loads;
  }
  return failed ? 1 : 0;
}
