// The exporter's web config (exporter-toolkit format), bcrypt Basic authentication, the
// per-peer log limiter, and the collector's TLS / Basic authentication settings.

#include <crypt.h>
#include <gmock/gmock.h>
#include <gnutls/gnutls.h>
#include <gnutls/x509.h>
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <memory>

#include "config/load.hpp"
#include "exporter/basic_auth.hpp"
#include "exporter/peer_log.hpp"
#include "exporter/web_config.hpp"
#include "scrape/client_security.hpp"
#include "temp_dir.hpp"

namespace {

using cpupower::testing::TempDir;
using namespace cpupower::exporter;
using ::testing::HasSubstr;
using ::testing::StartsWith;

// A self-signed ECDSA certificate and its key, made with GnuTLS at test time.
struct Pem {
  std::string cert;
  std::string key;
};

std::string export_datum(gnutls_datum_t d) {
  std::string out(reinterpret_cast<const char*>(d.data), d.size);
  gnutls_free(d.data);
  return out;
}

Pem self_signed(const char* cn) {
  gnutls_x509_privkey_t key = nullptr;
  gnutls_x509_privkey_init(&key);
  EXPECT_EQ(gnutls_x509_privkey_generate(key, GNUTLS_PK_ECDSA,
                                         GNUTLS_CURVE_TO_BITS(GNUTLS_ECC_CURVE_SECP256R1), 0),
            0);
  gnutls_x509_crt_t crt = nullptr;
  gnutls_x509_crt_init(&crt);
  gnutls_x509_crt_set_version(crt, 3);
  const unsigned char serial[] = {1, 2, 3, 4};
  gnutls_x509_crt_set_serial(crt, serial, sizeof serial);
  const std::time_t now = std::time(nullptr);
  gnutls_x509_crt_set_activation_time(crt, now - 3600);
  gnutls_x509_crt_set_expiration_time(crt, now + 86400);
  gnutls_x509_crt_set_dn_by_oid(crt, GNUTLS_OID_X520_COMMON_NAME, 0, cn, std::strlen(cn));
  gnutls_x509_crt_set_key(crt, key);
  gnutls_x509_crt_set_basic_constraints(crt, 1, -1);
  EXPECT_EQ(gnutls_x509_crt_sign2(crt, crt, key, GNUTLS_DIG_SHA256, 0), 0);
  gnutls_datum_t c{}, k{};
  gnutls_x509_crt_export2(crt, GNUTLS_X509_FMT_PEM, &c);
  gnutls_x509_privkey_export2(key, GNUTLS_X509_FMT_PEM, &k);
  gnutls_x509_crt_deinit(crt);
  gnutls_x509_privkey_deinit(key);
  return {export_datum(c), export_datum(k)};
}

void write(const std::string& path, const std::string& text) {
  std::FILE* f = std::fopen(path.c_str(), "w");
  ASSERT_NE(f, nullptr);
  std::fwrite(text.data(), 1, text.size(), f);
  std::fclose(f);
}

// A bcrypt hash of `password` made by the system's crypt with `prefix` ($2b$, $2y$, $2a$).
std::string hash_of(const std::string& password, const char* prefix, unsigned long cost = 4) {
  char salt[CRYPT_GENSALT_OUTPUT_SIZE];
  if (!crypt_gensalt_rn(prefix, cost, nullptr, 0, salt, sizeof salt)) return {};
  auto data = std::make_unique<crypt_data>();
  const char* out = crypt_rn(password.c_str(), salt, data.get(), sizeof(crypt_data));
  return out ? std::string(out) : std::string();
}

// A directory with a key pair, a second unrelated one, and a CA, for web config files.
class WebConfigTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const Pem server = self_signed("server");
    const Pem other = self_signed("other");
    const Pem ca = self_signed("ca");
    write(dir.file("server.crt"), server.cert);
    write(dir.file("server.key"), server.key);
    write(dir.file("other.key"), other.key);
    write(dir.file("ca.crt"), ca.cert);
    write(dir.file("junk.pem"), "not a certificate\n");
  }

  cpupower::Result<WebConfig> parse(const std::string& text) {
    return parse_web_config(text, dir.file("web.yml"));
  }

  // The error for `text`, which must be refused.
  std::string refused(const std::string& text) {
    const auto c = parse(text);
    EXPECT_FALSE(c) << text;
    EXPECT_THAT(c.error(), StartsWith(dir.file("web.yml") + ": "));
    return c.error().substr(dir.file("web.yml").size() + 2);
  }

  TempDir dir{"cpupower-webcfg"};
  const std::string tls = "tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n";
};

TEST_F(WebConfigTest, AnEmptyFileIsPlainHttpWithoutAuthentication) {
  const auto c = parse("");
  ASSERT_TRUE(c) << c.error();
  EXPECT_FALSE(c->tls);
  EXPECT_TRUE(c->users.empty());
  EXPECT_TRUE(parse("tls_server_config:\nbasic_auth_users:\n"));
}

TEST_F(WebConfigTest, ReadsEveryTlsFieldWithPathsRelativeToTheFile) {
  const std::string h = hash_of("pw", "$2y$");
  const auto c = parse(tls +
                       "  client_auth_type: RequireAndVerifyClientCert\n"
                       "  client_ca_file: ca.crt\n"
                       "  min_version: TLS13\n"
                       "  max_version: TLS13\n"
                       "basic_auth_users:\n  alice: " +
                       h + "\n");
  ASSERT_TRUE(c) << c.error();
  ASSERT_TRUE(c->tls);
  EXPECT_EQ(c->tls->client_auth, ClientAuth::require_and_verify);
  EXPECT_EQ(c->tls->min_version, TlsVersion::tls13);
  EXPECT_EQ(c->tls->max_version, TlsVersion::tls13);
  EXPECT_THAT(c->tls->cert_pem, HasSubstr("BEGIN CERTIFICATE"));
  EXPECT_THAT(c->tls->key_pem, HasSubstr("PRIVATE KEY"));
  EXPECT_THAT(c->tls->client_ca_pem, HasSubstr("BEGIN CERTIFICATE"));
  EXPECT_EQ(c->tls->cert_source, dir.file("server.crt"));
  EXPECT_EQ(c->users.at("alice"), h);
  EXPECT_EQ(gnutls_priorities(c->tls->min_version, c->tls->max_version),
            "NORMAL:-VERS-ALL:+VERS-TLS1.3");
}

TEST_F(WebConfigTest, DefaultsAreTls12ToTls13WithoutClientCertificates) {
  const auto c = parse(tls);
  ASSERT_TRUE(c) << c.error();
  ASSERT_TRUE(c->tls);
  EXPECT_EQ(c->tls->client_auth, ClientAuth::none);
  EXPECT_EQ(gnutls_priorities(c->tls->min_version, c->tls->max_version),
            "NORMAL:-VERS-ALL:+VERS-TLS1.2:+VERS-TLS1.3");
  EXPECT_EQ(gnutls_priorities(TlsVersion::tls10, TlsVersion::tls11),
            "NORMAL:-VERS-ALL:+VERS-TLS1.0:+VERS-TLS1.1");
}

TEST_F(WebConfigTest, EveryClientAuthTypeByName) {
  for (const auto& [name, want] :
       {std::pair{"NoClientCert", ClientAuth::none},
        std::pair{"RequestClientCert", ClientAuth::request},
        std::pair{"RequireAnyClientCert", ClientAuth::require_any},
        std::pair{"RequireClientCert", ClientAuth::require_any},
        std::pair{"VerifyClientCertIfGiven", ClientAuth::verify_if_given},
        std::pair{"RequireAndVerifyClientCert", ClientAuth::require_and_verify}}) {
    const bool needs_ca =
        want == ClientAuth::verify_if_given || want == ClientAuth::require_and_verify;
    const auto c = parse(tls + "  client_auth_type: " + name + "\n" +
                         (needs_ca ? "  client_ca_file: ca.crt\n" : ""));
    ASSERT_TRUE(c) << name << ": " << c.error();
    EXPECT_EQ(c->tls->client_auth, want) << name;
  }
}

TEST_F(WebConfigTest, InlineCertificateAndKey) {
  const Pem p = self_signed("inline");
  YAML::Emitter out;
  out << YAML::BeginMap << YAML::Key << "tls_server_config" << YAML::Value << YAML::BeginMap
      << YAML::Key << "cert" << YAML::Value << YAML::Literal << p.cert << YAML::Key << "key"
      << YAML::Value << YAML::Literal << p.key << YAML::EndMap << YAML::EndMap;
  const auto c = parse(out.c_str());
  ASSERT_TRUE(c) << c.error();
  EXPECT_EQ(c->tls->cert_pem, p.cert);
  EXPECT_EQ(c->tls->cert_source, "cert (inline)");
}

TEST_F(WebConfigTest, KnownKeysThatAreNotAppliedAreAcceptedAndNoted) {
  const auto c = parse(tls +
                       "  cipher_suites: [TLS_AES_128_GCM_SHA256]\n"
                       "  curve_preferences: [X25519]\n"
                       "  prefer_server_cipher_suites: true\n"
                       "http_server_config:\n  http2: false\n"
                       "  headers: {X-Frame-Options: deny}\n"
                       "rate_limit: {interval: 1s, burst: 20}\n");
  ASSERT_TRUE(c) << c.error();
  EXPECT_THAT(c->ignored,
              ::testing::UnorderedElementsAre(
                  "tls_server_config.cipher_suites", "tls_server_config.curve_preferences",
                  "tls_server_config.prefer_server_cipher_suites", "http_server_config.http2",
                  "http_server_config.headers", "rate_limit"));
}

// Booleans are YAML 1.1's, as exporter-toolkit's yaml.v2 and the recipe's PyYAML read them.
TEST_F(WebConfigTest, BooleansAreYaml11Booleans) {
  for (const std::string value : {"true", "False", "TRUE", "yes", "No", "ON", "off"}) {
    EXPECT_TRUE(parse("http_server_config:\n  http2: " + value + "\n")) << value;
  }
  for (const std::string value : {"tRuE", "\"true\"", "1", "maybe"}) {
    EXPECT_THAT(refused("http_server_config:\n  http2: " + value + "\n"),
                StartsWith("http_server_config.http2: expected true or false, got "))
        << value;
  }
}

TEST_F(WebConfigTest, EachMistakeIsAnErrorNamingItsField) {
  const std::string h = hash_of("pw", "$2b$");
  struct Case {
    std::string text;
    std::string want;
  };
  const std::vector<Case> cases = {
      {"tls_server_config: [\n", "invalid YAML"},
      {"- a\n", "expected a mapping at the top level"},
      {"tls_config:\n  cert_file: x\n", "tls_config: unknown key"},
      {tls + "  certfile: x\n", "tls_server_config.certfile: unknown key"},
      {"tls_server_config:\n  key_file: server.key\n", "tls_server_config.cert_file: missing"},
      {"tls_server_config:\n  cert_file: server.crt\n", "tls_server_config.key_file: missing"},
      {"tls_server_config:\n  client_auth_type: NoClientCert\n",
       "tls_server_config.cert_file: missing"},
      {"tls_server_config:\n  cert_file: nope.crt\n  key_file: server.key\n",
       "tls_server_config.cert_file: cannot read " + dir.file("nope.crt") +
           ": No such file or directory"},
      {"tls_server_config:\n  cert_file: server.crt\n  key_file: nope.key\n",
       "tls_server_config.key_file: cannot read " + dir.file("nope.key")},
      {"tls_server_config:\n  cert_file: junk.pem\n  key_file: server.key\n",
       "tls_server_config.cert_file: not a PEM certificate"},
      {"tls_server_config:\n  cert_file: server.crt\n  key_file: junk.pem\n",
       "tls_server_config.key_file: not a PEM private key"},
      {"tls_server_config:\n  cert_file: server.crt\n  key_file: other.key\n",
       "tls_server_config.key_file: does not match the certificate"},
      {tls + "  client_auth_type: RequireAndVerify\n",
       "tls_server_config.client_auth_type: unknown client auth type \"RequireAndVerify\""},
      {tls + "  min_version: TLS14\n", "tls_server_config.min_version: unknown TLS version"},
      {tls + "  max_version: SSL3\n", "tls_server_config.max_version: unknown TLS version"},
      {tls + "  min_version: TLS13\n  max_version: TLS12\n",
       "tls_server_config.min_version: TLS13 is above max_version TLS12"},
      {tls + "  client_ca_file: ca.crt\n",
       "tls_server_config.client_ca_file: a client CA is given but client_auth_type is "
       "NoClientCert"},
      {tls + "  client_auth_type: RequireAndVerifyClientCert\n",
       "tls_server_config.client_ca_file: missing"},
      {tls + "  client_auth_type: VerifyClientCertIfGiven\n  client_ca_file: junk.pem\n",
       "tls_server_config.client_ca_file: "},
      {tls + "  client_auth_type: RequireAnyClientCert\n  client_allowed_sans: [a]\n",
       "tls_server_config.client_allowed_sans: not supported"},
      {tls + "  cert: x\n", "tls_server_config.cert: give cert or cert_file, not both"},
      {tls + "  prefer_server_cipher_suites: maybe\n",
       "tls_server_config.prefer_server_cipher_suites: expected true or false"},
      {"basic_auth_users:\n  alice: secret\n", "basic_auth_users.alice: not a bcrypt hash"},
      {"basic_auth_users:\n  alice: $1$abc$def\n", "basic_auth_users.alice: not a bcrypt hash"},
      {"basic_auth_users:\n  alice: " + h.substr(0, 59) + "\n",
       "basic_auth_users.alice: not a bcrypt hash"},
      {"basic_auth_users:\n  \"a:b\": " + h + "\n", "basic_auth_users.a:b: a user name cannot"},
      {"basic_auth_users: [alice]\n", "basic_auth_users: expected a mapping"},
      {"basic_auth_users:\n  alice: " + h + "\n  alice: " + h + "\n",
       "basic_auth_users.alice: duplicate key"},
      {"http_server_config:\n  http3: true\n", "http_server_config.http3: unknown key"},
      {"http_server_config:\n  headers: {X-Powered-By: me}\n",
       "http_server_config.headers.X-Powered-By: unknown header"},
  };
  for (const auto& c : cases) {
    EXPECT_THAT(refused(c.text), StartsWith(c.want)) << c.text;
  }
}

TEST_F(WebConfigTest, AFileThatCannotBeReadNamesIt) {
  const auto missing = load_web_config(dir.file("missing.yml"));
  EXPECT_FALSE(missing);
  EXPECT_EQ(missing.error(), dir.file("missing.yml") +
                                 ": cannot read the web config file: No such file or directory");
  write(dir.file("web.yml"), tls);
  const auto c = load_web_config(dir.file("web.yml"));
  ASSERT_TRUE(c) << c.error();
  EXPECT_TRUE(c->tls);
}

// A file over the size cap is refused whole: cut at the cap, this one would parse as a
// configuration without its users, an exporter serving without authentication.
TEST_F(WebConfigTest, AFileOverTheCapIsRefusedNotCut) {
  write(dir.file("big.yml"), "# " + std::string(1u << 20, 'x') +
                                 "\nbasic_auth_users:\n  alice: $2y$10$abcdefghijklmnopqrstuv\n");
  const auto big = load_web_config(dir.file("big.yml"));
  ASSERT_FALSE(big);
  EXPECT_EQ(big.error(),
            dir.file("big.yml") + ": cannot read the web config file: larger than 1048576 bytes");
}

TEST(Bcrypt, VerifiesHashesMadeByTheSystemsCryptWithEachPrefix) {
  for (const char* prefix : {"$2b$", "$2y$", "$2a$"}) {
    const std::string h = hash_of("correct horse", prefix);
    ASSERT_FALSE(h.empty()) << prefix;
    EXPECT_TRUE(h.starts_with(prefix)) << h;
    EXPECT_TRUE(is_bcrypt_hash(h)) << h;
    EXPECT_TRUE(bcrypt_verify("correct horse", h)) << h;
    EXPECT_FALSE(bcrypt_verify("correct horse ", h)) << h;
    EXPECT_FALSE(bcrypt_verify("", h)) << h;
  }
}

TEST(Bcrypt, VerifiesAFixedHashFromPython) {
  // python3: crypt.crypt('secret', '$2y$05$abcdefghijklmnopqrstuu')
  const std::string h = "$2y$05$abcdefghijklmnopqrstuuOQiyCxlgf/oeuTqixKmWdcYUh4Hjl0a";
  EXPECT_TRUE(bcrypt_verify("secret", h));
  EXPECT_FALSE(bcrypt_verify("Secret", h));
  EXPECT_FALSE(bcrypt_verify(std::string("secret\0x", 8), h));
}

TEST(Bcrypt, RecognisesOnlyBcryptHashes) {
  const std::string h = "$2y$05$abcdefghijklmnopqrstuuOQiyCxlgf/oeuTqixKmWdcYUh4Hjl0a";
  EXPECT_TRUE(is_bcrypt_hash(h));
  EXPECT_FALSE(is_bcrypt_hash(""));
  EXPECT_FALSE(is_bcrypt_hash("$2x$05$abcdefghijklmnopqrstuuOQiyCxlgf/oeuTqixKmWdcYUh4Hjl0a"));
  EXPECT_FALSE(is_bcrypt_hash("$2y$03$abcdefghijklmnopqrstuuOQiyCxlgf/oeuTqixKmWdcYUh4Hjl0a"));
  EXPECT_FALSE(is_bcrypt_hash("$2y$05$abcdefghijklmnopqrstuuOQiyCxlgf/oeuTqixKmWdcYUh4Hjl0!"));
  EXPECT_FALSE(is_bcrypt_hash(h + "a"));
  EXPECT_FALSE(is_bcrypt_hash("$6$salt$hash"));
  EXPECT_FALSE(bcrypt_verify("secret", "$6$salt$hash"));
}

TEST(Bcrypt, ConstantTimeEqualIsEquality) {
  EXPECT_TRUE(constant_time_equal("", ""));
  EXPECT_TRUE(constant_time_equal("abc", "abc"));
  EXPECT_FALSE(constant_time_equal("abc", "abd"));
  EXPECT_FALSE(constant_time_equal("abc", "ab"));
  EXPECT_FALSE(constant_time_equal("", "a"));
}

TEST(Bcrypt, CostTenTakesTensOfMilliseconds) {
  const std::string h = hash_of("pw", "$2b$", 10);
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_TRUE(bcrypt_verify("pw", h));
  const double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  std::printf("bcrypt verify at cost 10: %.1f ms\n", ms);
  EXPECT_GT(ms, 1.0);  // it really ran bcrypt
}

TEST(BasicAuthHeader, DecodesBase64AndSplitsAtTheFirstColon) {
  EXPECT_EQ(base64_decode("YWxpY2U6czNjcmV0"), "alice:s3cret");
  EXPECT_EQ(base64_decode("YQ=="), "a");
  EXPECT_EQ(base64_decode("YWI="), "ab");
  EXPECT_EQ(base64_decode(""), "");
  EXPECT_FALSE(base64_decode("YQ="));
  EXPECT_FALSE(base64_decode("Y=Q="));
  EXPECT_FALSE(base64_decode("YQ==YQ=="));
  EXPECT_FALSE(base64_decode("YW!j"));
  const auto c = parse_basic_authorization("Basic YWxpY2U6czNjOnJldA==");  // alice:s3c:ret
  ASSERT_TRUE(c);
  EXPECT_EQ(c->user, "alice");
  EXPECT_EQ(c->password, "s3c:ret");
  EXPECT_TRUE(parse_basic_authorization("basic   YWxpY2U6czNjcmV0"));
  EXPECT_FALSE(parse_basic_authorization("Bearer YWxpY2U6czNjcmV0"));
  EXPECT_FALSE(parse_basic_authorization("Basic"));
  EXPECT_FALSE(parse_basic_authorization("BasicYWxpY2U6czNjcmV0"));
  EXPECT_FALSE(parse_basic_authorization("Basic YWxpY2U="));  // no colon
}

TEST(BasicAuth, ChecksUsersAndCachesOnlySuccesses) {
  BasicAuth auth({{"alice", hash_of("s3cret", "$2y$")}, {"bob", hash_of("pw", "$2b$")}});
  const std::string alice = "Basic YWxpY2U6czNjcmV0";        // alice:s3cret
  const std::string wrong = "Basic YWxpY2U6bm9wZQ==";        // alice:nope
  const std::string mallory = "Basic bWFsbG9yeTpzM2NyZXQ=";  // mallory:s3cret
  EXPECT_EQ(auth.check(nullptr), AuthResult::missing);
  EXPECT_EQ(auth.check("Basic !!!!"), AuthResult::malformed);
  EXPECT_EQ(auth.bcrypt_runs(), 0u);
  EXPECT_EQ(auth.check(alice.c_str()), AuthResult::ok);
  EXPECT_EQ(auth.bcrypt_runs(), 1u);
  EXPECT_EQ(auth.check(alice.c_str()), AuthResult::ok);  // from the cache
  EXPECT_EQ(auth.check(alice.c_str()), AuthResult::ok);
  EXPECT_EQ(auth.bcrypt_runs(), 1u);
  EXPECT_EQ(auth.cache_hits(), 2u);
  EXPECT_EQ(auth.check(wrong.c_str()), AuthResult::wrong_password);
  EXPECT_EQ(auth.check(wrong.c_str()), AuthResult::wrong_password);  // never cached
  EXPECT_EQ(auth.bcrypt_runs(), 3u);
  EXPECT_EQ(auth.check(mallory.c_str()), AuthResult::unknown_user);  // bcrypt all the same
  EXPECT_EQ(auth.bcrypt_runs(), 4u);
  // Another user's password does not open alice.
  EXPECT_EQ(auth.check("Basic YWxpY2U6cHc="), AuthResult::wrong_password);  // alice:pw
  EXPECT_EQ(auth.check("Basic Ym9iOnB3"), AuthResult::ok);                  // bob:pw
}

TEST(BasicAuth, CheckCachedAnswersOnlyWhatNeedsNoBcrypt) {
  BasicAuth auth({{"alice", hash_of("s3cret", "$2y$")}});
  const std::string alice = "Basic YWxpY2U6czNjcmV0";  // alice:s3cret
  const std::string wrong = "Basic YWxpY2U6bm9wZQ==";  // alice:nope
  EXPECT_EQ(auth.check_cached(nullptr), AuthResult::missing);
  EXPECT_EQ(auth.check_cached("Bearer x"), AuthResult::malformed);
  EXPECT_EQ(auth.check_cached(alice.c_str()), std::nullopt);  // not remembered yet
  EXPECT_EQ(auth.check_cached(wrong.c_str()), std::nullopt);
  EXPECT_EQ(auth.check_cached("Basic Ym9iOnB3"), std::nullopt);  // unknown bob: bcrypt decides
  EXPECT_EQ(auth.bcrypt_runs(), 0u);
  EXPECT_EQ(auth.check(alice.c_str()), AuthResult::ok);
  EXPECT_EQ(auth.check_cached(alice.c_str()), AuthResult::ok);
  EXPECT_EQ(auth.check(wrong.c_str()), AuthResult::wrong_password);
  EXPECT_EQ(auth.check_cached(wrong.c_str()), std::nullopt);  // failures are never remembered
  EXPECT_EQ(auth.bcrypt_runs(), 2u);
  EXPECT_EQ(auth.cache_hits(), 1u);
}

TEST(BasicAuth, TheCacheIsBounded) {
  BasicAuth auth({{"a", hash_of("1", "$2b$")}, {"b", hash_of("2", "$2b$")}}, 1);
  const std::string a = "Basic YTox", b = "Basic Yjoy";  // a:1, b:2
  EXPECT_EQ(auth.check(a.c_str()), AuthResult::ok);
  EXPECT_EQ(auth.check(b.c_str()), AuthResult::ok);  // forgets a
  EXPECT_EQ(auth.check(a.c_str()), AuthResult::ok);
  EXPECT_EQ(auth.bcrypt_runs(), 3u);
  EXPECT_EQ(auth.cache_hits(), 0u);
}

TEST(PeerLogLimiter, LogsEachKindOncePerPeer) {
  PeerLogLimiter limiter(16);
  EXPECT_TRUE(limiter.first("wrong_credentials", "10.0.0.1"));
  for (int i = 0; i < 1000; ++i) EXPECT_FALSE(limiter.first("wrong_credentials", "10.0.0.1"));
  EXPECT_TRUE(limiter.first("no_credentials", "10.0.0.1"));
  EXPECT_TRUE(limiter.first("wrong_credentials", "10.0.0.2"));
  EXPECT_EQ(limiter.counts().at("wrong_credentials"), 1002u);
  EXPECT_EQ(limiter.counts().at("no_credentials"), 1u);
  EXPECT_EQ(limiter.suppressed(), 1000u);
  EXPECT_EQ(limiter.remembered(), 3u);
}

TEST(PeerLogLimiter, MemoryIsBoundedUnderAFloodOfAddresses) {
  PeerLogLimiter limiter(100);
  for (int i = 0; i < 100000; ++i) {
    EXPECT_TRUE(limiter.first("plain_http_on_tls_port", "10.1." + std::to_string(i)));
  }
  EXPECT_EQ(limiter.remembered(), 100u);
  // The most recent are remembered, the oldest forgotten (and logged again if they return).
  EXPECT_FALSE(limiter.first("plain_http_on_tls_port", "10.1.99999"));
  EXPECT_TRUE(limiter.first("plain_http_on_tls_port", "10.1.0"));
  // Seeing a peer again keeps it remembered.
  PeerLogLimiter small(2);
  EXPECT_TRUE(small.first("k", "a"));
  EXPECT_TRUE(small.first("k", "b"));
  EXPECT_FALSE(small.first("k", "a"));  // a is now the most recent
  EXPECT_TRUE(small.first("k", "c"));   // forgets b
  EXPECT_FALSE(small.first("k", "a"));
  EXPECT_TRUE(small.first("k", "b"));
}

TEST(ClientSecurity, ReadsThePasswordFileAndNamesEachMistake) {
  TempDir dir("cpupower-clientsec");
  write(dir.file("pw"), "s3 cret\nsecond line\n");
  write(dir.file("empty"), "\n");
  write(dir.file("ca.crt"), "x");
  cpupower::scrape::ClientSecuritySpec spec;
  spec.username = "alice";
  spec.password_file = dir.file("pw");
  auto s = cpupower::scrape::resolve_client_security(spec);
  ASSERT_TRUE(s.security) << s.why;
  EXPECT_EQ(s.security->password, "s3 cret");
  EXPECT_FALSE(s.security->https);
  spec.ca_file = dir.file("ca.crt");
  s = cpupower::scrape::resolve_client_security(spec);
  ASSERT_TRUE(s.security) << s.why;
  EXPECT_TRUE(s.security->https);

  // "--<key>: why" for a refused spec.
  std::string error;
  const auto fails = [&](const cpupower::scrape::ClientSecuritySpec& sp) {
    const auto r = cpupower::scrape::resolve_client_security(sp);
    EXPECT_FALSE(r.security);
    error = "--" + std::string(r.refused_key) + ": " + r.why;
    return error;
  };
  auto bad = spec;
  bad.password_file = dir.file("empty");
  EXPECT_EQ(fails(bad),
            "--password_file: " + dir.file("empty") + " holds no password on its first line");
  bad.password_file = dir.file("none");
  EXPECT_THAT(fails(bad), StartsWith("--password_file: cannot read " + dir.file("none")));
  bad = spec;
  bad.password_file.reset();
  EXPECT_THAT(fails(bad), StartsWith("--password_file: missing"));
  bad = spec;
  bad.username.reset();
  EXPECT_THAT(fails(bad), StartsWith("--username: missing"));
  bad = spec;
  bad.username = "a:b";
  EXPECT_THAT(fails(bad), StartsWith("--username: cannot hold ':'"));
  bad = spec;
  bad.cert_file = dir.file("ca.crt");
  EXPECT_THAT(fails(bad), StartsWith("--key_file: a client certificate needs both"));
  bad = spec;
  bad.ca_file = dir.file("nope");
  EXPECT_THAT(fails(bad), StartsWith("--ca_file: cannot read"));
  // Never the password in a message.
  EXPECT_THAT(error, ::testing::Not(HasSubstr("s3 cret")));
}

TEST(RecipeSecurity, ReadsTheExporterSecurityKeys) {
  const auto r = cpupower::config::load_recipe_text(
      "telemetry:\n"
      "  enabled: true\n"
      "  cpu_power_exporter:\n"
      "    web_config_file: /etc/cpu-power/web.yml\n"
      "    tls_config: {ca_file: /etc/ca.crt, cert_file: c.crt, key_file: c.key}\n"
      "    basic_auth: {username: prom, password_file: /etc/pw}\n",
      "r.yaml");
  ASSERT_TRUE(r.recipe) << (r.errors.empty() ? "" : r.errors[0].message);
  const auto& e = *r.recipe->telemetry.cpu_power_exporter;
  EXPECT_EQ(e.web_config_file, "/etc/cpu-power/web.yml");
  EXPECT_EQ(e.tls_config->ca_file, "/etc/ca.crt");
  EXPECT_EQ(e.tls_config->key_file, "c.key");
  EXPECT_EQ(e.basic_auth->username, "prom");
  EXPECT_EQ(e.basic_auth->password_file, "/etc/pw");
}

TEST(RecipeSecurity, EachMistakeNamesItsField) {
  const auto first_error = [](const std::string& block) {
    const auto r = cpupower::config::load_recipe_text(
        "telemetry:\n  enabled: true\n  cpu_power_exporter:\n" + block, "r.yaml");
    return r.errors.empty() ? std::string() : r.errors[0].message;
  };
  EXPECT_THAT(first_error("    basic_auth: {username: prom, password: hunter2}\n"),
              StartsWith("telemetry.cpu_power_exporter.basic_auth.password: a password is not "
                         "written in the recipe"));
  EXPECT_EQ(first_error("    basic_auth: {username: prom}\n"),
            "telemetry.cpu_power_exporter.basic_auth.password_file: missing required field");
  EXPECT_EQ(first_error("    basic_auth: {username: 'a:b', password_file: /p}\n"),
            "telemetry.cpu_power_exporter.basic_auth.username cannot hold ':' (Basic "
            "authentication splits on it)");
  EXPECT_THAT(first_error("    tls_config: {cert_file: c.crt}\n"),
              StartsWith("telemetry.cpu_power_exporter.tls_config: a client certificate needs "
                         "both cert_file and key_file"));
  EXPECT_THAT(first_error("    tls_config: {cafile: x}\n"),
              StartsWith("unknown key \"cafile\" in telemetry.cpu_power_exporter.tls_config"));
  EXPECT_EQ(first_error("    web_config_file: ''\n"),
            "telemetry.cpu_power_exporter.web_config_file must not be empty");
}

}  // namespace
