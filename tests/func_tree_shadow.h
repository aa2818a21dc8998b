/* func_tree_program's own count of its calls: each function notes its
 * entry and exit on a shadow stack of its thread, so the program knows its
 * call tree without the recorder (func_tree_shadow.cpp, not instrumented).
 * shadow_write writes "TID<TAB>CALLER<TAB>CALLEE<TAB>COUNT" lines, CALLER
 * empty for a thread's first function. */
#pragma once
#include <stddef.h>
#ifdef __cplusplus
extern "C" {
#endif
void shadow_enter(const char* name);
void shadow_exit(void);
/* The thread's stack depth, and back to it after a longjmp: the frames it
 * skipped (which never exited), counted. */
size_t shadow_depth(void);
size_t shadow_unwind_to(size_t depth);
int shadow_write(const char* path);
int c_mix(int x);
#ifdef __cplusplus
}
#endif
