// A program built with -finstrument-functions and linked with the
// recorder, with no call of the recorder's API: run with TINESCOPE_OUT set,
// it records itself. Four threads call a static function, a function in an
// anonymous namespace, a C function and a recursive method, each thread
// its own amount; each function also counts its own calls by caller
// (func_tree_shadow.h), and the program writes those counts, per thread id,
// to the file named by its argument.
#include <pthread.h>

#include "func_tree_shadow.h"

static int sq(int x) {
  shadow_enter("sq(int)");
  int r = x * x;
  shadow_exit();
  return r;
}

namespace {
int fold(int a, int b) {
  shadow_enter("(anonymous namespace)::fold(int, int)");
  int r = sq(a) + c_mix(b);
  shadow_exit();
  return r;
}
}  // namespace

struct Walker {
  int walk(int depth);
};

int Walker::walk(int depth) {
  shadow_enter("Walker::walk(int)");
  int r = depth <= 0 ? sq(3) : walk(depth - 1) + fold(depth, depth + 1);
  shadow_exit();
  return r;
}

static void* thread_main(void* arg) {
  shadow_enter("thread_main(void*)");
  const int k = int(reinterpret_cast<long>(arg));
  long sum = 0;
  Walker w;
  for (int i = 0; i < 200 * (k + 1); ++i) {
    sum += w.walk(i % (3 + k));
    if (i % 7 == k) sum += c_mix(i);
  }
  shadow_exit();
  return reinterpret_cast<void*>(sum & 1);
}

int main(int argc, char** argv) {
  shadow_enter("main");
  pthread_t t[4];
  for (long k = 0; k < 4; ++k) pthread_create(&t[k], nullptr, thread_main, reinterpret_cast<void*>(k));
  for (pthread_t& x : t) pthread_join(x, nullptr);
  int on_main = fold(2, 3);
  shadow_exit();
  if (argc > 1 && shadow_write(argv[1]) != 0) return 2;
  return on_main > 0 ? 0 : 1;
}
