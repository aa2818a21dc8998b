/* The C part of func_tree_program: a C function keeps its plain name. */
#include "func_tree_shadow.h"

int c_mix(int x) {
  shadow_enter("c_mix");
  int r = x * 7 + 3;
  shadow_exit();
  return r;
}
