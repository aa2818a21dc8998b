#include "tinescope/render/picture_diff.hpp"

#include <algorithm>
#include <cstdlib>

namespace tinescope::render {

PictureDiff compare_pictures(int aw, int ah, const std::vector<uint8_t>& a, int bw, int bh, const std::vector<uint8_t>& b,
                             int tolerance) {
  PictureDiff d;
  d.pixels = uint64_t(std::max(aw, 0)) * uint64_t(std::max(ah, 0));
  if (aw != bw || ah != bh || a.size() != d.pixels * 4 || b.size() != a.size()) {
    d.same_size = false;
    d.differing = std::max(d.pixels, uint64_t(std::max(bw, 0)) * uint64_t(std::max(bh, 0)));
    d.largest = 255;
    return d;
  }
  d.picture.resize(a.size());
  double sum = 0;
  for (uint64_t i = 0; i < d.pixels; ++i) {
    int worst = 0;
    for (int k = 0; k < 4; ++k) {
      const int diff = std::abs(int(a[i * 4 + k]) - int(b[i * 4 + k]));
      worst = std::max(worst, diff);
      sum += diff;
    }
    uint8_t* out = &d.picture[i * 4];
    if (worst > tolerance) {
      ++d.differing;
      out[0] = uint8_t(std::min(255, 128 + worst / 2)), out[1] = 0, out[2] = 0;
    } else {
      // The picture faded: the eye finds its way by it, the red stands out.
      const int grey = (int(b[i * 4]) * 3 + int(b[i * 4 + 1]) * 6 + int(b[i * 4 + 2])) / 10;
      out[0] = out[1] = out[2] = uint8_t(160 + grey / 4);
    }
    out[3] = 255;
    if (worst > d.largest) d.largest = worst, d.largest_x = int(i % uint64_t(aw)), d.largest_y = int(i / uint64_t(aw));
  }
  d.mean = d.pixels ? sum / double(d.pixels * 4) : 0;
  return d;
}

}  // namespace tinescope::render
