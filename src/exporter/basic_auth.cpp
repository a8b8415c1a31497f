#include "exporter/basic_auth.hpp"

#include <crypt.h>
#include <nettle/base64.h>
#include <nettle/hmac.h>
#include <sys/random.h>

#include <array>
#include <cerrno>
#include <memory>

namespace cpupower::exporter {
namespace {

// A valid bcrypt hash at cost 10 of a phrase nobody knows: unknown users are checked against
// it, so that they take as long as known ones.
constexpr const char* kDummyHash = "$2b$10$bfaYxJPnc5ny7j05h.dypuEGTLFOajW9QquNSRw/mILrBX7v.IcX2";

bool bcrypt_char(char c) {
  return c == '.' || c == '/' || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
         (c >= '0' && c <= '9');
}

std::string random_key() {
  std::string key(32, '\0');
  std::size_t got = 0;
  while (got < key.size()) {
    const ssize_t n = ::getrandom(key.data() + got, key.size() - got, 0);
    if (n < 0) {
      if (errno == EINTR) continue;
      break;  // not expected on Linux >= 3.17; the key then stays partly zero
    }
    got += static_cast<std::size_t>(n);
  }
  return key;
}

}  // namespace

bool is_bcrypt_hash(std::string_view h) {
  // $2b$10$ + 22 characters of salt + 31 of hash = 60.
  if (h.size() != 60 || h[0] != '$' || h[1] != '2' || h[3] != '$' || h[6] != '$') return false;
  if (h[2] != 'a' && h[2] != 'b' && h[2] != 'y') return false;
  if (h[4] < '0' || h[4] > '9' || h[5] < '0' || h[5] > '9') return false;
  const int cost = (h[4] - '0') * 10 + (h[5] - '0');
  if (cost < 4 || cost > 31) return false;
  for (std::size_t i = 7; i < h.size(); ++i) {
    if (!bcrypt_char(h[i])) return false;
  }
  return true;
}

bool constant_time_equal(std::string_view a, std::string_view b) {
  const std::size_t n = std::max(a.size(), b.size());
  unsigned char diff = a.size() == b.size() ? 0 : 1;
  for (std::size_t i = 0; i < n; ++i) {
    const unsigned char x = i < a.size() ? static_cast<unsigned char>(a[i]) : 0;
    const unsigned char y = i < b.size() ? static_cast<unsigned char>(b[i]) : 0;
    diff |= static_cast<unsigned char>(x ^ y);
  }
  return diff == 0;
}

bool bcrypt_verify(std::string_view password, const std::string& hash) {
  if (!is_bcrypt_hash(hash)) return false;
  // crypt takes a C string: a password with a NUL would be cut short there.
  if (password.find('\0') != std::string_view::npos) return false;
  const std::string phrase(password);
  auto data = std::make_unique<crypt_data>();  // ~32 KiB: not on a polling thread's stack
  const char* out = ::crypt_rn(phrase.c_str(), hash.c_str(), data.get(), sizeof(crypt_data));
  if (out == nullptr || out[0] == '*') return false;
  return constant_time_equal(out, hash);
}

std::optional<std::string> base64_decode(std::string_view text) {
  // Nettle's decoder: it refuses characters outside the alphabet, data after the padding,
  // and input that ends in the middle of a group.
  if (text.size() % 4 != 0) return std::nullopt;
  std::string out(BASE64_DECODE_LENGTH(text.size()), '\0');
  base64_decode_ctx ctx;
  base64_decode_init(&ctx);
  std::size_t n = out.size();
  if (base64_decode_update(&ctx, &n, reinterpret_cast<uint8_t*>(out.data()), text.size(),
                           text.data()) != 1 ||
      base64_decode_final(&ctx) != 1) {
    return std::nullopt;
  }
  out.resize(n);
  return out;
}

std::optional<BasicCredentials> parse_basic_authorization(std::string_view header) {
  // The scheme is case-insensitive (RFC 7617), then one or more spaces.
  constexpr std::string_view kScheme = "basic";
  if (header.size() <= kScheme.size()) return std::nullopt;
  for (std::size_t i = 0; i < kScheme.size(); ++i) {
    const char c = header[i];
    if ((c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c) != kScheme[i]) {
      return std::nullopt;
    }
  }
  std::string_view rest = header.substr(kScheme.size());
  if (rest.front() != ' ') return std::nullopt;
  while (!rest.empty() && rest.front() == ' ') rest.remove_prefix(1);
  while (!rest.empty() && rest.back() == ' ') rest.remove_suffix(1);
  const auto decoded = base64_decode(rest);
  if (!decoded) return std::nullopt;
  const auto colon = decoded->find(':');
  if (colon == std::string::npos) return std::nullopt;
  return BasicCredentials{decoded->substr(0, colon), decoded->substr(colon + 1)};
}

std::string_view auth_result_name(AuthResult r) {
  switch (r) {
    case AuthResult::ok:
      return "ok";
    case AuthResult::missing:
      return "no credentials";
    case AuthResult::malformed:
      return "malformed credentials";
    case AuthResult::unknown_user:
      return "unknown user";
    case AuthResult::wrong_password:
      return "wrong password";
  }
  return "?";
}

BasicAuth::BasicAuth(std::map<std::string, std::string> users, std::size_t cache_capacity)
    : users_(std::move(users)), hmac_key_(random_key()), capacity_(cache_capacity) {}

BasicAuth::Key BasicAuth::key_of(std::string_view user, std::string_view password) const {
  hmac_sha256_ctx ctx;
  hmac_sha256_set_key(&ctx, hmac_key_.size(), reinterpret_cast<const uint8_t*>(hmac_key_.data()));
  // The user's length first: "ab" + "c" and "a" + "bc" are different pairs.
  const std::uint64_t user_len = user.size();
  hmac_sha256_update(&ctx, sizeof user_len, reinterpret_cast<const uint8_t*>(&user_len));
  hmac_sha256_update(&ctx, user.size(), reinterpret_cast<const uint8_t*>(user.data()));
  hmac_sha256_update(&ctx, password.size(), reinterpret_cast<const uint8_t*>(password.data()));
  Key key(SHA256_DIGEST_SIZE, '\0');
  hmac_sha256_digest(&ctx, SHA256_DIGEST_SIZE, reinterpret_cast<uint8_t*>(key.data()));
  return key;
}

bool BasicAuth::cached(const Key& key) {
  std::lock_guard lock(mu_);
  const auto it = index_.find(key);
  if (it == index_.end()) return false;
  lru_.splice(lru_.begin(), lru_, it->second);
  ++hits_;
  return true;
}

void BasicAuth::remember(const Key& key) {
  std::lock_guard lock(mu_);
  if (capacity_ == 0 || index_.count(key)) return;
  lru_.push_front(key);
  index_.emplace(key, lru_.begin());
  if (lru_.size() > capacity_) {
    index_.erase(lru_.back());
    lru_.pop_back();
  }
}

std::optional<AuthResult> BasicAuth::check_cached(const char* authorization) {
  if (authorization == nullptr) return AuthResult::missing;
  const auto creds = parse_basic_authorization(authorization);
  if (!creds) return AuthResult::malformed;
  if (cached(key_of(creds->user, creds->password))) return AuthResult::ok;
  return std::nullopt;
}

AuthResult BasicAuth::check(const char* authorization) {
  if (authorization == nullptr) return AuthResult::missing;
  const auto creds = parse_basic_authorization(authorization);
  if (!creds) return AuthResult::malformed;
  const Key key = key_of(creds->user, creds->password);
  if (cached(key)) return AuthResult::ok;
  const auto it = users_.find(creds->user);
  const bool known = it != users_.end();
  {
    std::lock_guard lock(mu_);
    ++runs_;
  }
  const bool match = bcrypt_verify(creds->password, known ? it->second : kDummyHash);
  if (!known) return AuthResult::unknown_user;
  if (!match) return AuthResult::wrong_password;
  remember(key);
  return AuthResult::ok;
}

std::uint64_t BasicAuth::cache_hits() const {
  std::lock_guard lock(mu_);
  return hits_;
}

std::uint64_t BasicAuth::bcrypt_runs() const {
  std::lock_guard lock(mu_);
  return runs_;
}

}  // namespace cpupower::exporter
