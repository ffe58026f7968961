// svg_canvas.h: the course's hand-drawn pictures as SVG, written once: lesson 10's timeline
// of a traced step (trace_recorder.h) and lesson 11's accuracy curves (capstone.h).
//
//   SvgCanvas svg(480, 300);                          // white background, sans-serif
//   svg.text(50, 24, "accuracy", {.size = 14});
//   svg.line(50, 260, 460, 260, "#ddd");
//   svg.polyline({{50, 250}, {250, 120}, {460, 80}}, "#1f77b4");
//   svg.write("run/curves.svg");                      // SystemError if it cannot
//
// Coordinates are pixels from the top left, printed with two decimals; text is escaped
// for XML, so a title may hold any characters.
//
// What this is not: a plotting library. Scales, axes and legends are the caller's; the
// benchmark's busbw plot, with its log axes and many series, is drawn by gnuplot
// (busbw_plot.h).
#pragma once

#include <sstream>
#include <string>
#include <utility>
#include <vector>

namespace course {

/// How a piece of text is drawn.
struct SvgText {
  double size = 0;            ///< font size; 0: the canvas's
  std::string anchor{};       ///< "", "middle" or "end" (SVG's text-anchor)
  std::string fill{};         ///< colour; "": black
  double rotate_degrees = 0;  ///< rotated about (x, y)
};

/// An SVG document drawn element by element, in the order of the calls (later on top).
class SvgCanvas {
 public:
  /// A `width` x `height` picture on a white background, text at `font_size`.
  SvgCanvas(double width, double height, double font_size = 12);

  /// `text` with its baseline starting (or, by `style.anchor`, centred or ending) at (x, y).
  void text(double x, double y, const std::string& text, const SvgText& style = {});
  /// A line; `dash` is an SVG dash pattern ("5,4"), "" for solid.
  void line(double x1, double y1, double x2, double y2, const std::string& stroke,
            const std::string& dash = "");
  /// A filled box; with a `tooltip`, the viewer shows it on hover. `stroke` "" draws no
  /// outline.
  void rect(double x, double y, double w, double h, const std::string& fill,
            const std::string& stroke = "", const std::string& tooltip = "");
  /// A filled disc of radius `r` centred at (cx, cy).
  void circle(double cx, double cy, double r, const std::string& fill);
  /// An open line through `points` (x, y) in order, unfilled.
  void polyline(const std::vector<std::pair<double, double>>& points, const std::string& stroke,
                double stroke_width = 2);

  /// The whole document, closed.
  std::string str() const;
  /// Writes str() to `path`. Throws SystemError when the file cannot be written.
  void write(const std::string& path) const;

 private:
  std::ostringstream body_;
};

/// `text` with &, <, > and quotes escaped for XML.
std::string xml_escape(const std::string& text);

}  // namespace course
