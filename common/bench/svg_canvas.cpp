// svg_canvas.cpp: see svg_canvas.h.
#include "svg_canvas.h"

#include "output_file.h"

namespace course {

std::string xml_escape(const std::string& text) {
  std::string out;
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&apos;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

SvgCanvas::SvgCanvas(double width, double height, double font_size) {
  body_.precision(2);
  body_ << std::fixed << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << width
        << "\" height=\"" << height << "\" font-family=\"sans-serif\" font-size=\"" << font_size
        << "\">\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
}

void SvgCanvas::text(double x, double y, const std::string& text, const SvgText& style) {
  body_ << "<text x=\"" << x << "\" y=\"" << y << "\"";
  if (style.size > 0) body_ << " font-size=\"" << style.size << "\"";
  if (!style.anchor.empty()) body_ << " text-anchor=\"" << style.anchor << "\"";
  if (!style.fill.empty()) body_ << " fill=\"" << style.fill << "\"";
  if (style.rotate_degrees != 0) {
    body_ << " transform=\"rotate(" << style.rotate_degrees << " " << x << " " << y << ")\"";
  }
  body_ << ">" << xml_escape(text) << "</text>\n";
}

void SvgCanvas::line(double x1, double y1, double x2, double y2, const std::string& stroke,
                     const std::string& dash) {
  body_ << "<line x1=\"" << x1 << "\" y1=\"" << y1 << "\" x2=\"" << x2 << "\" y2=\"" << y2
        << "\" stroke=\"" << stroke << "\"";
  if (!dash.empty()) body_ << " stroke-dasharray=\"" << dash << "\"";
  body_ << "/>\n";
}

void SvgCanvas::rect(double x, double y, double w, double h, const std::string& fill,
                     const std::string& stroke, const std::string& tooltip) {
  body_ << "<rect x=\"" << x << "\" y=\"" << y << "\" width=\"" << w << "\" height=\"" << h
        << "\" fill=\"" << fill << "\"";
  if (!stroke.empty()) body_ << " stroke=\"" << stroke << "\" stroke-width=\"0.3\"";
  if (tooltip.empty()) {
    body_ << "/>\n";
  } else {
    body_ << "><title>" << xml_escape(tooltip) << "</title></rect>\n";
  }
}

void SvgCanvas::circle(double cx, double cy, double r, const std::string& fill) {
  body_ << "<circle cx=\"" << cx << "\" cy=\"" << cy << "\" r=\"" << r << "\" fill=\"" << fill
        << "\"/>\n";
}

void SvgCanvas::polyline(const std::vector<std::pair<double, double>>& points,
                         const std::string& stroke, double stroke_width) {
  body_ << "<polyline fill=\"none\" stroke=\"" << stroke << "\" stroke-width=\"" << stroke_width
        << "\" points=\"";
  for (const auto& [x, y] : points) body_ << x << "," << y << " ";
  body_ << "\"/>\n";
}

std::string SvgCanvas::str() const {
  return body_.str() + "</svg>\n";
}

void SvgCanvas::write(const std::string& path) const {
  write_output_file(path, str());
}

}  // namespace course
