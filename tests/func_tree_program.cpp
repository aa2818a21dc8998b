// A program built with -finstrument-functions and linked with the
// recorder, with no call of the recorder's API: run with TINESCOPE_OUT set,
// it records itself. Four threads call a static function, a function in an
// anonymous namespace, a C function and a recursive method, each thread
// its own amount; each function also counts its own calls by caller
// (func_tree_shadow.h), and the program writes those counts, per thread id,
// to the file named by its argument.
#include <pthread.h>

#include <algorithm>
#include <csetjmp>
#include <cstdio>
#include <stdexcept>
#include <vector>

#include "func_tree_shadow.h"

// A frame's shadow entry, left as the frame is, by return or by an
// exception passing through (not instrumented: it is the count, not the
// program).
struct Shadow {
  __attribute__((no_instrument_function)) explicit Shadow(const char* name) { shadow_enter(name); }
  __attribute__((no_instrument_function)) ~Shadow() { shadow_exit(); }
};

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

// An exception thrown four frames down, caught above them: every frame it
// leaves exits (GCC calls the exit hook as the exception unwinds).
static int thrower(int depth) {
  Shadow s("thrower(int)");
  if (depth == 0) throw std::runtime_error("deep");
  return thrower(depth - 1) + 1;
}

static int catcher() {
  Shadow s("catcher()");
  int caught = 0;
  for (int i = 0; i < 10; ++i) {
    try {
      thrower(3);
    } catch (const std::exception&) {
      ++caught;
    }
  }
  return caught;
}

// A longjmp out of four frames: they never exit; the trace's reader closes
// them with the frame that does (counted as truncated).
static std::jmp_buf jump;
static volatile bool armed = false;  // (a path that returns, for the compiler)
static size_t skipped_by_longjmp = 0;

static void jumper(int depth) {
  shadow_enter("jumper(int)");
  if (depth == 0 && armed) std::longjmp(jump, 1);
  if (depth > 0) jumper(depth - 1);
  shadow_exit();
}

static int jump_back() {
  Shadow s("jump_back()");
  armed = true;
  int jumps = 0;
  volatile int i = 0;  // (volatile: live across the longjmp)
  while (i < 10) {
    const size_t depth = shadow_depth();
    // (Nothing changes between setjmp and the longjmp back to it but the
    // frames below.)
    if (setjmp(jump) == 0) jumper(3);
    else skipped_by_longjmp += shadow_unwind_to(depth), jumps += 1;
    i = i + 1;
  }
  return jumps;
}

static void* thread_main(void* arg) {
  shadow_enter("thread_main(void*)");
  const int k = int(reinterpret_cast<long>(arg));
  long sum = 0;
  // The standard library's templates, instantiated here: instrumented only
  // where built without -finstrument-functions-exclude-file-list, and left
  // out at run time by default (their file is a system header's).
  std::vector<int> v{5, 3, 9, 1, k};
  std::sort(v.begin(), v.end());
  sum += v.front();
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
  on_main += catcher() + jump_back();
  shadow_exit();
  std::printf("frames skipped by longjmp: %zu\n", skipped_by_longjmp);
  if (argc > 1 && shadow_write(argv[1]) != 0) return 2;
  return on_main > 0 ? 0 : 1;
}
