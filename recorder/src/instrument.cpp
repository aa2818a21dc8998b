// -finstrument-functions support: a program compiled with that flag calls
// these hooks on every function entry and exit. Leave functions out at compile
// time with -finstrument-functions-exclude-file-list= and
// -finstrument-functions-exclude-function-list= (no cost at all), or at run
// time with TINESCOPE_FUNC_EXCLUDE=pattern:pattern (fnmatch on demangled
// names; the collector drops them, the call still costs an event).
#include "tinescope/tinescope.h"

extern "C" {
TS_API __attribute__((no_instrument_function)) void __cyg_profile_func_enter(void* fn, void*) {
  ts_func_enter(fn);
}
TS_API __attribute__((no_instrument_function)) void __cyg_profile_func_exit(void* fn, void*) {
  ts_func_exit(fn);
}
}
