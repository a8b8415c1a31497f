#pragma once
// HTTP Basic authentication against bcrypt hashes (the web config's basic_auth_users).
// Hashes are checked with the system's crypt (libxcrypt crypt_rn: $2a$, $2b$, $2y$), never
// with code of our own, and the result is compared in constant time. bcrypt is slow on
// purpose (about 50-100 ms at cost 10), so a successful (user, password) pair is remembered,
// keyed by a keyed hash (HMAC-SHA-256 with a per-process random key) of the two: a scraper
// every second then pays bcrypt once. Failures are never remembered. check_cached answers
// without bcrypt where it can (no header, a malformed one, a remembered pair), so the HTTP
// server answers those on its polling threads and hands only the rest to its
// authentication thread. Unknown users are checked against a dummy
// hash, so that the time taken does not tell which user names exist.

#include <cstddef>
#include <cstdint>
#include <list>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

namespace cpupower::exporter {

// $2a$, $2b$ or $2y$, a two-digit cost 04..31, '$' and 53 characters of [./A-Za-z0-9].
bool is_bcrypt_hash(std::string_view hash);

// Whether `password` hashes to `hash` (crypt_rn); false for an unusable hash.
bool bcrypt_verify(std::string_view password, const std::string& hash);

// Equal in time independent of where they differ (lengths may leak).
bool constant_time_equal(std::string_view a, std::string_view b);

// RFC 4648 base64, padding required; nullopt for anything else.
std::optional<std::string> base64_decode(std::string_view text);

// The user and password of an `Authorization: Basic ...` header value; nullopt when it is not
// a well-formed Basic credential.
struct BasicCredentials {
  std::string user;
  std::string password;
};
std::optional<BasicCredentials> parse_basic_authorization(std::string_view header);

enum class AuthResult {
  ok,
  missing,        // no Authorization header
  malformed,      // not Basic, or not base64 of user:password
  unknown_user,   // no such user
  wrong_password  // the user exists, the password does not match
};
std::string_view auth_result_name(AuthResult r);

class BasicAuth {
 public:
  // `users`: user -> bcrypt hash (is_bcrypt_hash). `cache_capacity` successful pairs are
  // remembered, the least recently used forgotten first.
  explicit BasicAuth(std::map<std::string, std::string> users, std::size_t cache_capacity = 256);

  // Checks an Authorization header value (nullptr: none). Thread-safe.
  AuthResult check(const char* authorization);
  // The same answer when it needs no bcrypt (missing, malformed, or a remembered pair);
  // nullopt when only check() can tell. Thread-safe.
  std::optional<AuthResult> check_cached(const char* authorization);

  // Successful checks answered from the cache, and bcrypt runs, since construction.
  std::uint64_t cache_hits() const;
  std::uint64_t bcrypt_runs() const;

 private:
  using Key = std::string;  // 32 bytes of HMAC-SHA-256
  Key key_of(std::string_view user, std::string_view password) const;
  bool cached(const Key& key);
  void remember(const Key& key);

  std::map<std::string, std::string> users_;
  std::string hmac_key_;
  const std::size_t capacity_;
  mutable std::mutex mu_;
  std::list<Key> lru_;  // most recent first
  std::unordered_map<Key, std::list<Key>::iterator> index_;
  std::uint64_t hits_ = 0;
  std::uint64_t runs_ = 0;
};

}  // namespace cpupower::exporter
