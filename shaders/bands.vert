#version 450 core
// One instance per band of a figure: a rectangle in framebuffer pixels (top
// left origin) that shows one row of a picture texture.
layout(location = 0) in vec4 a_rect;  // x, y, w, h
layout(location = 1) in vec4 a_info;  // row, kind, unused, unused
uniform vec2 u_framebuffer;
out vec4 v_rect;
flat out vec4 v_info;
void main() {
  vec2 corner = vec2(gl_VertexID & 1, gl_VertexID >> 1);
  vec2 p = a_rect.xy + corner * a_rect.zw;
  v_rect = a_rect;
  v_info = a_info;
  gl_Position = vec4(p.x / u_framebuffer.x * 2.0 - 1.0, 1.0 - p.y / u_framebuffer.y * 2.0, 0.0, 1.0);
}
