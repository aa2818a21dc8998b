// Fuzz target: the chunk reader, from a file and from a live feed. Any bytes
// are read without crashing; damage is reported, never fatal. The same bytes
// pushed to a live-feed reader in arbitrary pieces decode the same events.
#include <cstdlib>

#include "fuzz_util.hpp"

using namespace tinescope;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fuzz::Touch whole;
  trace::Parser parser(whole);
  size_t done = parser.parse(data, size, 0, true);
  if (done > size) std::abort();

  // The live-feed receiver: the bytes in pieces whose sizes come from the bytes.
  fuzz::Touch live;
  trace::StreamReader reader(live, {});
  size_t at = 0, k = 0;
  while (at < size) {
    size_t piece = 1 + (size > 0 ? data[(k++ * 7) % size] : 0) * 13;
    piece = std::min(piece, size - at);
    reader.feed(data + at, piece);
    at += piece;
  }
  reader.close();
  // Splitting never changes what is decoded.
  if (reader.parser().events() != parser.events() || reader.parser().chunks() != parser.chunks()) std::abort();
  return 0;
}
