// The recorder sees every longjmp of the program, so that the frames it
// leaves (their exit hooks never run) are ended at the next function entry
// (recorder.cpp, -finstrument-functions). Each of glibc's jumps is defined
// here, marks the thread, and goes on to glibc's own (looked up once, as the
// library loads: a jump out of a signal handler must not call dlsym).
// (No <setjmp.h>: its declarations of these would clash with ours.)
#include <dlfcn.h>

#include "tinescope/tinescope.h"

struct __jmp_buf_tag;

namespace tinescope::rec {
void note_longjmp();  // recorder.cpp
}

namespace {
using Jump = void (*)(__jmp_buf_tag*, int);
using JumpChk = void (*)(__jmp_buf_tag*, int);
Jump real_longjmp, real__longjmp, real_siglongjmp;
JumpChk real_longjmp_chk;

__attribute__((constructor)) void find_jumps() {
  real_longjmp = reinterpret_cast<Jump>(dlsym(RTLD_NEXT, "longjmp"));
  real__longjmp = reinterpret_cast<Jump>(dlsym(RTLD_NEXT, "_longjmp"));
  real_siglongjmp = reinterpret_cast<Jump>(dlsym(RTLD_NEXT, "siglongjmp"));
  real_longjmp_chk = reinterpret_cast<JumpChk>(dlsym(RTLD_NEXT, "__longjmp_chk"));
}
}  // namespace

#define TS_JUMP(name, real)                                                               \
  extern "C" TS_API __attribute__((noreturn, no_instrument_function)) void name(__jmp_buf_tag* env, int value) { \
    tinescope::rec::note_longjmp();                                                       \
    real(env, value);                                                                     \
    __builtin_unreachable();                                                              \
  }
TS_JUMP(longjmp, real_longjmp)
TS_JUMP(_longjmp, real__longjmp)
TS_JUMP(siglongjmp, real_siglongjmp)
TS_JUMP(__longjmp_chk, real_longjmp_chk)
