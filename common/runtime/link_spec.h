// link_spec.h: the figures of a cluster link to emulate, "10gbit,20us", and where a run
// gets them (--link, or COURSE_LINK in the environment).
//
// What this is not: the pacing. comm/emulated_link.h paces the tcp transport's sends on
// the link described here; this file only parses and describes it, so that the driver
// (runtime/) can check `--link` and hand it to its ranks without knowing about sockets.
//
// Strings: "<bandwidth>[,<latency>[,<burst>]]", bandwidth a number with gbit, mbit or kbit
// (optionally "/s"; bits, powers of ten, as network links are quoted: 1gbit = 1e9 bit/s),
// latency a number with ns, us or ms (0 when omitted), burst a size with b, kb or mb
// (powers of two, as tc writes a qdisc's burst: 512kb = 524288 bytes; 0 when omitted).
// "none", "off" and "" mean no emulation. Anything else is a ConfigError that says what
// was expected.
//
// The burst is the link of a traffic shaper rather than a wire: a token bucket of that
// many bytes, which an idle link fills at the bandwidth and a message may empty at once
// (the kernel's tbf qdisc, tools/shaped_link.sh). A NIC's wire has none: 0.
#pragma once

#include <cstddef>
#include <string>

namespace course {

/// The environment variable the launcher passes to every rank ("10gbit,20us").
inline constexpr const char* kLinkEnv = "COURSE_LINK";

/// A link's figures; a default LinkSpec is no emulation (loopback as it is).
struct LinkSpec {
  double bits_per_second = 0;  ///< 0: no emulation
  double latency_s = 0;        ///< per message
  size_t burst_bytes = 0;      ///< the token bucket's depth (0: a wire, no bucket)

  /// True when sends are paced.
  bool emulated() const { return bits_per_second > 0; }
  /// Seconds the wire takes for one message of `bytes` bytes (latency included).
  double wire_seconds(size_t bytes) const;
  /// "emulated 10 Gbit/s, 20 us per message" (", 512 KiB burst" with a bucket) or
  /// "loopback (no emulated link)".
  std::string describe() const;
};

/// Parses "10gbit,20us" or "1gbit,0us,512kb" (see the top of this file). Throws ConfigError naming
/// the string and the accepted forms.
LinkSpec parse_link(const std::string& text);

/// COURSE_LINK parsed (no emulation when unset or empty). Throws ConfigError as parse_link,
/// naming the variable.
LinkSpec link_from_env();

/// What tools/shaped_link.sh tells each node about the link the kernel shapes for it
/// ("1gbit both ways, tbf burst 512kb"); the ranks' own sockets are then not paced.
inline constexpr const char* kShapedLinkEnv = "COURSE_SHAPED_LINK";

/// "link: emulated 10 Gbit/s, 20 us per message (tcp transport)" for a benchmark's header:
/// the link of COURSE_LINK, as the ranks' sockets are paced on it, or the kernel's link of
/// COURSE_SHAPED_LINK when there is no COURSE_LINK.
std::string link_header();

}  // namespace course
