#include "common/text.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>

namespace cpupower::common {

std::string_view trim(std::string_view s) {
  const char* ws = " \t\r\n\v\f";
  const auto b = s.find_first_not_of(ws);
  if (b == std::string_view::npos) return {};
  const auto e = s.find_last_not_of(ws);
  return s.substr(b, e - b + 1);
}

std::string to_lower(std::string_view s) {
  std::string out(s);
  for (auto& c : out) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return out;
}

std::optional<std::uint64_t> parse_u64(std::string_view s) {
  std::uint64_t v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size() || s.empty()) return std::nullopt;
  return v;
}

std::optional<std::int64_t> parse_i64(std::string_view s) {
  std::int64_t v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size() || s.empty()) return std::nullopt;
  return v;
}

std::optional<double> parse_double(std::string_view s) {
  if (!s.empty() && s.front() == '+') s.remove_prefix(1);
  double v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size() || s.empty()) return std::nullopt;
  return v;
}

std::optional<std::uint64_t> trailing_number(std::string_view name) {
  std::size_t i = name.size();
  while (i > 0 && name[i - 1] >= '0' && name[i - 1] <= '9') --i;
  if (i == name.size()) return std::nullopt;
  return parse_u64(name.substr(i));
}

bool natural_less(std::string_view a, std::string_view b) {
  auto stem = [](std::string_view s) {
    std::size_t i = s.size();
    while (i > 0 && s[i - 1] >= '0' && s[i - 1] <= '9') --i;
    return s.substr(0, i);
  };
  const auto sa = stem(a), sb = stem(b);
  if (sa != sb) return sa < sb;
  const auto na = trailing_number(a), nb = trailing_number(b);
  if (na && nb && *na != *nb) return *na < *nb;
  return a < b;
}

namespace {

// Reads until end of file or until more than `max_bytes` are in (up to a buffer more). The
// buffer suits the large files too (a merged node file, a manifest): one read per 64 KiB.
Result<std::string> read_up_to(const std::string& path, std::size_t max_bytes) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Error{std::strerror(errno)};
  std::string out;
  constexpr std::size_t kBuffer = 64 * 1024;
  std::vector<char> buf(max_bytes < kBuffer ? max_bytes + 1 : kBuffer);  // never 0: SIZE_MAX
  while (out.size() <= max_bytes) {
    const ssize_t n = ::read(fd, buf.data(), buf.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      Error error{std::strerror(errno)};
      ::close(fd);
      return error;
    }
    if (n == 0) break;
    out.append(buf.data(), static_cast<std::size_t>(n));
  }
  ::close(fd);
  return out;
}

}  // namespace

Result<std::string> read_small_file(const std::string& path, std::size_t max_bytes) {
  auto text = read_up_to(path, max_bytes);
  if (text && text->size() > max_bytes) {
    return Error{"larger than " + std::to_string(max_bytes) + " bytes"};
  }
  return text;
}

Result<std::string> read_file_prefix(const std::string& path, std::size_t max_bytes) {
  auto text = read_up_to(path, max_bytes);
  if (text && text->size() > max_bytes) text->resize(max_bytes);
  return text;
}

Status write_file_atomic(const std::string& path, std::string_view content, bool fsync_file) {
  const std::string tmp = path + ".tmp." + std::to_string(::getpid());
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return Error{"open " + tmp + ": " + std::strerror(errno)};
  std::size_t done = 0;
  while (done < content.size()) {
    const ssize_t n = ::write(fd, content.data() + done, content.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      Error error{"write " + tmp + ": " + std::strerror(errno)};
      ::close(fd);
      ::unlink(tmp.c_str());
      return error;
    }
    done += static_cast<std::size_t>(n);
  }
  if (fsync_file && ::fsync(fd) != 0) {
    Error error{"fsync " + tmp + ": " + std::strerror(errno)};
    ::close(fd);
    ::unlink(tmp.c_str());
    return error;
  }
  ::close(fd);
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    Error error{"rename " + tmp + " -> " + path + ": " + std::strerror(errno)};
    ::unlink(tmp.c_str());
    return error;
  }
  return Ok{};
}

std::vector<std::string> split(std::string_view s, char sep) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (true) {
    const auto pos = s.find(sep, start);
    out.emplace_back(s.substr(start, pos == std::string_view::npos ? pos : pos - start));
    if (pos == std::string_view::npos) break;
    start = pos + 1;
  }
  return out;
}

namespace {

// The length of the valid UTF-8 sequence at the start of `s` (1 to 4), or 0 when its first
// byte does not start one: stray continuation bytes, overlong forms, surrogates and code
// points past U+10FFFF are all invalid.
std::size_t utf8_length(std::string_view s) {
  const auto b = [&](std::size_t i) { return static_cast<unsigned char>(s[i]); };
  const auto cont = [&](std::size_t i) { return i < s.size() && (b(i) & 0xc0) == 0x80; };
  const unsigned char c = b(0);
  if (c < 0x80) return 1;
  if (c < 0xc2) return 0;
  if (c < 0xe0) return cont(1) ? 2 : 0;
  if (c < 0xf0) {
    if (!cont(1) || !cont(2)) return 0;
    if (c == 0xe0 && b(1) < 0xa0) return 0;   // overlong
    if (c == 0xed && b(1) >= 0xa0) return 0;  // UTF-16 surrogate
    return 3;
  }
  if (c < 0xf5) {
    if (!cont(1) || !cont(2) || !cont(3)) return 0;
    if (c == 0xf0 && b(1) < 0x90) return 0;   // overlong
    if (c == 0xf4 && b(1) >= 0x90) return 0;  // past U+10FFFF
    return 4;
  }
  return 0;
}

}  // namespace

std::string escape_untrusted(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  char buf[8];
  for (std::size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c >= 0x20 && c < 0x7f && c != '\\') {
      out += static_cast<char>(c);
      ++i;
      continue;
    }
    if (c == '\\') {
      out += "\\\\";
      ++i;
      continue;
    }
    if (c == '\n' || c == '\r' || c == '\t') {
      out += c == '\n' ? "\\n" : c == '\r' ? "\\r" : "\\t";
      ++i;
      continue;
    }
    const std::size_t n = c < 0x80 ? 0 : utf8_length(s.substr(i));
    if (n == 0) {  // a C0 control, DEL, or a byte that is not UTF-8
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
      ++i;
      continue;
    }
    // C1 controls (U+0080..U+009F: CSI and friends act on terminals too) and the two
    // noncharacters XML refuses (U+FFFE, U+FFFF) as \uXXXX; any other character as it is.
    const auto b1 = n > 1 ? static_cast<unsigned char>(s[i + 1]) : 0;
    const auto b2 = n > 2 ? static_cast<unsigned char>(s[i + 2]) : 0;
    if (n == 2 && c == 0xc2 && b1 < 0xa0) {
      std::snprintf(buf, sizeof buf, "\\u%04x", b1);
      out += buf;
    } else if (n == 3 && c == 0xef && b1 == 0xbf && (b2 == 0xbe || b2 == 0xbf)) {
      out += b2 == 0xbe ? "\\ufffe" : "\\uffff";
    } else {
      out.append(s.substr(i, n));
    }
    i += n;
  }
  return out;
}

std::string escape_controls(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  char buf[8];
  for (const char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    if (c < 0x20 || c == 0x7f) {
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    } else {
      out += ch;
    }
  }
  return out;
}

bool valid_utf8(std::string_view s) {
  for (std::size_t i = 0, n = 0; i < s.size(); i += n) {
    if ((n = utf8_length(s.substr(i))) == 0) return false;
  }
  return true;
}

std::string escape_untrusted_xml(std::string_view s) {
  const std::string shown = escape_untrusted(s);
  std::string out;
  out.reserve(shown.size());
  for (const char c : shown) {
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

}  // namespace cpupower::common
