// Two pictures compared pixel by pixel, for regression tests of figures
// (`tinescope compare-png`, mission story 8): how many pixels differ by more
// than a tolerance, the largest difference and where, and a picture of the
// differences to look at.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace tinescope::render {

struct PictureDiff {
  bool same_size = true;
  uint64_t pixels = 0;     // in each picture
  uint64_t differing = 0;  // pixels with a channel (RGBA) off by more than the tolerance
  int largest = 0;         // the largest channel difference
  int largest_x = 0, largest_y = 0;
  double mean = 0;         // mean channel difference over all pixels
  // The second picture faded to grey, each differing pixel red (brighter
  // the larger the difference): RGBA8, width × height of the pictures.
  std::vector<uint8_t> picture;
};

// a and b: RGBA8, top row first. Pictures of different sizes differ
// (same_size false, every pixel counted) and get no difference picture.
PictureDiff compare_pictures(int aw, int ah, const std::vector<uint8_t>& a, int bw, int bh, const std::vector<uint8_t>& b,
                             int tolerance);

}  // namespace tinescope::render
