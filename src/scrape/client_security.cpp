#include "scrape/client_security.hpp"

#include <unistd.h>

#include <tuple>

#include "common/text.hpp"

namespace cpupower::scrape {
namespace {

constexpr std::size_t kMaxPasswordFileBytes = 64 * 1024;

// Empty when `path` can be read, else why not.
std::string unreadable(const std::string& path) {
  const auto read = common::read_file_prefix(path, 1);
  if (read) return {};
  return "cannot read " + path + ": " + read.error();
}

}  // namespace

Result<std::string> read_password_file(const std::string& path) {
  const auto text = common::read_small_file(path, kMaxPasswordFileBytes);
  if (!text) return Error{"cannot read " + path + ": " + text.error()};
  std::string password = text->substr(0, text->find('\n'));
  if (!password.empty() && password.back() == '\r') password.pop_back();
  if (password.empty()) return Error{path + " holds no password on its first line"};
  if (password.find('\0') != std::string::npos) {
    return Error{path + ": the password holds a NUL byte"};
  }
  return password;
}

ResolvedSecurity resolve_client_security(const ClientSecuritySpec& spec) {
  const auto fail = [](std::string_view key, std::string what) {
    return ResolvedSecurity{std::nullopt, key, std::move(what)};
  };
  ClientSecurity out;
  for (const auto& [key, value, field] : {std::tuple{"ca_file", &spec.ca_file, &out.ca_file},
                                          std::tuple{"cert_file", &spec.cert_file, &out.cert_file},
                                          std::tuple{"key_file", &spec.key_file, &out.key_file}}) {
    if (!*value) continue;
    if ((*value)->empty()) return fail(key, "empty path");
    if (auto why = unreadable(**value); !why.empty()) return fail(key, std::move(why));
    *field = **value;
    out.https = true;
  }
  if (spec.tls) out.https = true;
  if (out.cert_file.empty() != out.key_file.empty()) {
    return fail(out.cert_file.empty() ? "cert_file" : "key_file",
                "a client certificate needs both cert_file and key_file");
  }
  if (spec.username || spec.password_file) {
    if (!spec.username || spec.username->empty()) {
      return fail("username", "missing: password_file is given");
    }
    if (spec.username->find(':') != std::string::npos) {
      return fail("username", "cannot hold ':' (Basic authentication splits on it)");
    }
    if (!spec.password_file || spec.password_file->empty()) {
      return fail("password_file",
                  "missing: username is given (the password is read from a "
                  "file, never given on the command line)");
    }
    const auto password = read_password_file(*spec.password_file);
    if (!password) return fail("password_file", password.error());
    out.username = *spec.username;
    out.password = *password;
  }
  return {out, {}, {}};
}

void apply_client_security(const CurlApi& curl, CURL* easy, const ClientSecurity& s) {
  if (s.https) {
    curl.easy_setopt(easy, CURLOPT_SSL_VERIFYPEER, 1L);
    curl.easy_setopt(easy, CURLOPT_SSL_VERIFYHOST, 2L);
    if (!s.ca_file.empty()) curl.easy_setopt(easy, CURLOPT_CAINFO, s.ca_file.c_str());
    if (!s.cert_file.empty()) {
      curl.easy_setopt(easy, CURLOPT_SSLCERT, s.cert_file.c_str());
      curl.easy_setopt(easy, CURLOPT_SSLKEY, s.key_file.c_str());
    }
  }
  if (!s.username.empty()) {
    curl.easy_setopt(easy, CURLOPT_HTTPAUTH, static_cast<long>(CURLAUTH_BASIC));
    curl.easy_setopt(easy, CURLOPT_USERNAME, s.username.c_str());
    curl.easy_setopt(easy, CURLOPT_PASSWORD, s.password.c_str());
  }
}

}  // namespace cpupower::scrape
