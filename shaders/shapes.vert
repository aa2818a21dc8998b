#version 450 core
// Lines and triangles in framebuffer pixels: arrows, cursor, selection,
// hatched gaps and cut items. Few of them per frame, by design.
layout(location = 0) in vec2 a_pos;
layout(location = 1) in vec4 a_colour;
layout(location = 2) in float a_pattern;
uniform vec2 u_framebuffer;
out vec4 v_colour;
flat out float v_pattern;
void main() {
  v_colour = a_colour;
  v_pattern = a_pattern;
  gl_Position = vec4(a_pos.x / u_framebuffer.x * 2.0 - 1.0, 1.0 - a_pos.y / u_framebuffer.y * 2.0, 0.0, 1.0);
}
