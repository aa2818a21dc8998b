// A real program from outside this project, traced with no change (issue
// 54): Debian's stb_image and stb_image_write (libstb-dev's
// /usr/include/stb), their code compiled here with -finstrument-functions
// into a program linked with the recorder, which it never calls. It encodes
// a picture to PNG, then four threads each decode it ROUNDS times and check
// every pixel. Its output says how many decodes came back whole.
#define STB_IMAGE_IMPLEMENTATION
#define STB_IMAGE_WRITE_IMPLEMENTATION
#include <stb/stb_image.h>
#include <stb/stb_image_write.h>

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { kWidth = 96, kHeight = 64, kThreads = 4, kRounds = 5 };

static unsigned char pixels[kWidth * kHeight * 3];
static unsigned char* png;
static int png_bytes;

static void* decode_rounds(void* arg) {
  (void)arg;
  intptr_t whole = 0;
  for (int r = 0; r < kRounds; ++r) {
    int w = 0, h = 0, n = 0;
    unsigned char* img = stbi_load_from_memory(png, png_bytes, &w, &h, &n, 3);
    whole += img && w == kWidth && h == kHeight && memcmp(img, pixels, sizeof pixels) == 0;
    stbi_image_free(img);
  }
  return (void*)whole;
}

int main(void) {
  for (int y = 0; y < kHeight; ++y)
    for (int x = 0; x < kWidth; ++x) {
      unsigned char* p = &pixels[(y * kWidth + x) * 3];
      p[0] = (unsigned char)(x * 255 / kWidth), p[1] = (unsigned char)(y * 255 / kHeight), p[2] = (unsigned char)((x ^ y) * 7);
    }
  png = stbi_write_png_to_mem(pixels, kWidth * 3, kWidth, kHeight, 3, &png_bytes);
  if (!png) return 2;
  pthread_t threads[kThreads];
  for (int i = 0; i < kThreads; ++i) pthread_create(&threads[i], NULL, decode_rounds, NULL);
  intptr_t whole = 0;
  for (int i = 0; i < kThreads; ++i) {
    void* r = NULL;
    pthread_join(threads[i], &r);
    whole += (intptr_t)r;
  }
  STBIW_FREE(png);
  printf("decoded %ld of %d whole\n", (long)whole, kThreads * kRounds);
  return whole == kThreads * kRounds ? 0 : 1;
}
