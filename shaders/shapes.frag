#version 450 core
in vec4 v_colour;
flat in float v_pattern;
out vec4 o_colour;
void main() {
  // Pattern 1: diagonal hatching (lost data), 3 px on, 3 px off.
  if (v_pattern > 0.5 && v_pattern < 1.5 && mod(gl_FragCoord.x + gl_FragCoord.y, 6.0) >= 3.0) discard;
  // Pattern 2: the other diagonal, 2 px on, 4 off (an item cut where data
  // was lost: it crosses pattern 1, and leaves a label readable).
  if (v_pattern > 1.5 && mod(gl_FragCoord.x - gl_FragCoord.y, 6.0) >= 2.0) discard;
  o_colour = v_colour;
}
