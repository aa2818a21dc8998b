#version 450 core
// Looks up the band's row of the picture at this pixel's column. The column
// is where the pixel falls in the picture (offset and scale re-project a
// picture made for a slightly different window while a newer one is built).
uniform sampler2D u_colour;    // RGBA8: intervals, instants, scope strips
uniform sampler2D u_envelope;  // RG32F: counter min and max in [0, 1]
uniform vec2 u_framebuffer;
uniform float u_plot_x;
uniform float u_offset;        // picture column = (x - u_plot_x - u_offset) / u_scale
uniform float u_scale;
uniform vec3 u_background;
in vec4 v_rect;
flat in vec4 v_info;
out vec4 o_colour;
void main() {
  float x = gl_FragCoord.x;
  int col = int(floor((x - u_plot_x - u_offset) / u_scale));
  int row = int(v_info.x);
  int kind = int(v_info.y);
  int width = textureSize(u_colour, 0).x;
  if (col < 0 || col >= width) discard;
  if (kind == 1) {  // counter: the min..max envelope, bottom up, one pixel at least
    vec2 mm = texelFetch(u_envelope, ivec2(col, row), 0).rg;
    if (isnan(mm.x)) discard;
    float y = (v_rect.y + v_rect.w - (u_framebuffer.y - gl_FragCoord.y)) / v_rect.w;
    float pad = 1.0 / v_rect.w;
    if (y < mm.x - pad || y > mm.y + pad) discard;
    o_colour = vec4(0.45, 0.75, 1.0, 1.0);
    return;
  }
  vec4 c = texelFetch(u_colour, ivec2(col, row), 0);
  if (c.a == 0.0) discard;
  o_colour = vec4(mix(u_background, c.rgb, c.a), 1.0);
}
