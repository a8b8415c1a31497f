#include "exporter/web_config.hpp"

#include <gnutls/gnutls.h>
#include <gnutls/x509.h>
#include <yaml-cpp/yaml.h>

#include <filesystem>
#include <set>

#include "common/text.hpp"
#include "exporter/basic_auth.hpp"

namespace cpupower::exporter {
namespace {

// Certificates, keys and CA bundles are small; a larger file is a mistake (a wrong path).
constexpr std::size_t kMaxPemBytes = 1u << 20;
constexpr std::size_t kMaxConfigBytes = 1u << 20;
// The web config's spellings, in the order of the enums (TLS10 is tls10, the first version).
constexpr std::string_view kClientAuthNames[] = {"NoClientCert", "RequestClientCert",
                                                 "RequireAnyClientCert", "VerifyClientCertIfGiven",
                                                 "RequireAndVerifyClientCert"};
constexpr std::string_view kTlsVersionNames[] = {"TLS10", "TLS11", "TLS12", "TLS13"};

struct Failure {
  std::string message;
};

class Parser {
 public:
  Parser(const std::string& file) : file_(file) {
    dir_ = std::filesystem::path(file).parent_path().string();
  }

  WebConfig run(std::string_view text) {
    WebConfig out;
    out.file = file_;
    YAML::Node root;
    try {
      root = YAML::Load(std::string(text));
    } catch (const YAML::Exception& e) {
      std::string where;
      if (!e.mark.is_null()) {
        where = " at line " + std::to_string(e.mark.line + 1) + ", column " +
                std::to_string(e.mark.column + 1);
      }
      throw Failure{"invalid YAML" + where + ": " + e.msg};
    }
    if (!root || root.IsNull()) return out;  // an empty file: plain HTTP, no auth
    if (!root.IsMap()) throw Failure{"expected a mapping at the top level"};
    std::optional<YAML::Node> tls;
    for (const auto& [key, v] : entries(root, "")) {
      if (key == "tls_server_config") {
        tls = v;
      } else if (key == "basic_auth_users") {
        users(v, out);
      } else if (key == "http_server_config") {
        http_server(v, out);
      } else if (key == "rate_limit") {
        // exporter-toolkit's newer token bucket; its fields are not checked here.
        if (!v.IsNull() && !v.IsMap()) fail(key, "expected a mapping");
        out.ignored.push_back("rate_limit");
      } else {
        fail(key,
             "unknown key (expected tls_server_config, basic_auth_users, "
             "http_server_config or rate_limit)");
      }
    }
    if (tls) tls_server(*tls, out);
    return out;
  }

 private:
  [[noreturn]] void fail(const std::string& field, const std::string& what) {
    throw Failure{field + ": " + what};
  }

  static std::string join(const std::string& path, const std::string& key) {
    return path.empty() ? key : path + "." + key;
  }

  // The entries of a mapping, keys checked for being scalars and unique.
  std::vector<std::pair<std::string, YAML::Node>> entries(const YAML::Node& map,
                                                          const std::string& path) {
    std::vector<std::pair<std::string, YAML::Node>> out;
    std::set<std::string> seen;
    for (const auto entry : map) {
      const YAML::Node k = entry.first;
      if (!k.IsScalar()) fail(path.empty() ? "(top level)" : path, "keys must be plain names");
      const std::string key = k.Scalar();
      if (!seen.insert(key).second) fail(join(path, key), "duplicate key");
      out.emplace_back(key, entry.second);
    }
    return out;
  }

  std::string string_of(const std::string& path, const YAML::Node& v) {
    if (v.IsNull()) return {};
    if (!v.IsScalar()) fail(path, "expected a string");
    if (v.Scalar().find('\0') != std::string::npos) fail(path, "holds a NUL byte");
    return v.Scalar();
  }

  bool bool_of(const std::string& path, const YAML::Node& v) {
    const std::string s = common::to_lower(string_of(path, v));
    if (s == "true") return true;
    if (s == "false") return false;
    fail(path, "expected true or false, got \"" + common::escape_untrusted(v.Scalar()) + "\"");
  }

  void string_list(const std::string& path, const YAML::Node& v) {
    if (v.IsNull()) return;
    if (!v.IsSequence()) fail(path, "expected a list of strings");
    for (const auto& item : v) string_of(path, item);
  }

  std::string resolve(const std::string& name) const {
    if (name.empty() || name.front() == '/' || dir_.empty()) return name;
    return (std::filesystem::path(dir_) / name).string();
  }

  std::string read_pem(const std::string& field, const std::string& name) {
    const std::string path = resolve(name);
    auto text = common::read_small_file(path, kMaxPemBytes);
    if (!text) fail(field, "cannot read " + path + ": " + text.error());
    return *text;
  }

  TlsVersion version_of(const std::string& path, const YAML::Node& v) {
    const std::string s = string_of(path, v);
    for (std::size_t i = 0; i < std::size(kTlsVersionNames); ++i) {
      if (s == kTlsVersionNames[i]) return TlsVersion(static_cast<int>(TlsVersion::tls10) + i);
    }
    fail(path, "unknown TLS version \"" + common::escape_untrusted(s) +
                   "\" (expected TLS10, TLS11, TLS12 or TLS13)");
  }

  ClientAuth client_auth_of(const std::string& path, const YAML::Node& v) {
    const std::string s = string_of(path, v);
    if (s.empty()) return ClientAuth::none;
    // RequireClientCert: exporter-toolkit's older spelling, still accepted there.
    if (s == "RequireClientCert") return ClientAuth::require_any;
    for (std::size_t i = 0; i < std::size(kClientAuthNames); ++i) {
      if (s == kClientAuthNames[i]) return ClientAuth(i);
    }
    fail(path, "unknown client auth type \"" + common::escape_untrusted(s) +
                   "\" (expected NoClientCert, RequestClientCert, RequireAnyClientCert, "
                   "VerifyClientCertIfGiven or RequireAndVerifyClientCert)");
  }

  void tls_server(const YAML::Node& v, WebConfig& out) {
    const std::string p = "tls_server_config";
    if (v.IsNull()) return;
    if (!v.IsMap()) fail(p, "expected a mapping");
    WebTls t;
    std::string cert, key, client_ca, cert_file, key_file, client_ca_file;
    bool any = false;
    for (const auto& [k, fv] : entries(v, p)) {
      const std::string path = join(p, k);
      if (k == "cert") {
        cert = string_of(path, fv);
      } else if (k == "key") {
        key = string_of(path, fv);
      } else if (k == "client_ca") {
        client_ca = string_of(path, fv);
      } else if (k == "cert_file") {
        cert_file = string_of(path, fv);
      } else if (k == "key_file") {
        key_file = string_of(path, fv);
      } else if (k == "client_ca_file") {
        client_ca_file = string_of(path, fv);
      } else if (k == "client_auth_type") {
        t.client_auth = client_auth_of(path, fv);
        any = any || !string_of(path, fv).empty();
        continue;
      } else if (k == "min_version") {
        t.min_version = version_of(path, fv);
        continue;
      } else if (k == "max_version") {
        t.max_version = version_of(path, fv);
        continue;
      } else if (k == "cipher_suites" || k == "curve_preferences") {
        string_list(path, fv);
        out.ignored.push_back(path);
        continue;
      } else if (k == "prefer_server_cipher_suites") {
        bool_of(path, fv);
        out.ignored.push_back(path);
        continue;
      } else if (k == "client_allowed_sans") {
        // Refused rather than ignored: it narrows who may connect, and dropping it would
        // let in clients the file keeps out.
        fail(path,
             "not supported by cpu-power-exporter (remove it, or use a client CA "
             "that signs only the allowed clients)");
      } else {
        fail(path, "unknown key");
      }
      any = true;
    }
    // exporter-toolkit: TLS is on once any TLS field is given; then cert and key must be.
    if (!any && cert.empty() && key.empty()) return;
    if (!cert.empty() && !cert_file.empty()) {
      fail(p + ".cert", "give cert or cert_file, not both");
    }
    if (!key.empty() && !key_file.empty()) fail(p + ".key", "give key or key_file, not both");
    if (!client_ca.empty() && !client_ca_file.empty()) {
      fail(p + ".client_ca", "give client_ca or client_ca_file, not both");
    }
    if (cert.empty() && cert_file.empty()) fail(p + ".cert_file", "missing (or give cert)");
    if (key.empty() && key_file.empty()) fail(p + ".key_file", "missing (or give key)");
    t.cert_pem = cert_file.empty() ? cert : read_pem(p + ".cert_file", cert_file);
    t.cert_source = cert_file.empty() ? std::string("cert (inline)") : resolve(cert_file);
    t.key_pem = key_file.empty() ? key : read_pem(p + ".key_file", key_file);
    if (!client_ca_file.empty()) {
      t.client_ca_pem = read_pem(p + ".client_ca_file", client_ca_file);
    } else {
      t.client_ca_pem = client_ca;
    }
    const std::string ca_field = client_ca_file.empty() ? p + ".client_ca" : p + ".client_ca_file";
    if (!t.client_ca_pem.empty() && t.client_auth == ClientAuth::none) {
      fail(ca_field,
           "a client CA is given but client_auth_type is NoClientCert (set "
           "client_auth_type, e.g. RequireAndVerifyClientCert)");
    }
    if ((t.client_auth == ClientAuth::verify_if_given ||
         t.client_auth == ClientAuth::require_and_verify) &&
        t.client_ca_pem.empty()) {
      fail(p + ".client_ca_file", "missing: client_auth_type " +
                                      std::string(client_auth_name(t.client_auth)) +
                                      " verifies client certificates against it");
    }
    if (t.min_version > t.max_version) {
      fail(p + ".min_version", std::string(tls_version_name(t.min_version)) +
                                   " is above max_version " +
                                   std::string(tls_version_name(t.max_version)));
    }
    check_credentials(t, cert_file.empty() ? p + ".cert" : p + ".cert_file",
                      key_file.empty() ? p + ".key" : p + ".key_file", ca_field);
    out.tls = std::move(t);
  }

  // The certificate and key must load as a pair, and the client CA hold a certificate:
  // otherwise the daemon would fail later with a far less helpful message.
  void check_credentials(const WebTls& t, const std::string& cert_field,
                         const std::string& key_field, const std::string& ca_field) {
    gnutls_certificate_credentials_t cred = nullptr;
    if (gnutls_certificate_allocate_credentials(&cred) != GNUTLS_E_SUCCESS) {
      fail(cert_field, "cannot allocate GnuTLS credentials");
    }
    const auto datum = [](const std::string& s) {
      return gnutls_datum_t{reinterpret_cast<unsigned char*>(const_cast<char*>(s.data())),
                            static_cast<unsigned>(s.size())};
    };
    std::string problem, field;
    {
      gnutls_x509_crt_t crt = nullptr;
      gnutls_x509_crt_init(&crt);
      const gnutls_datum_t c = datum(t.cert_pem);
      const int rc = gnutls_x509_crt_import(crt, &c, GNUTLS_X509_FMT_PEM);
      gnutls_x509_crt_deinit(crt);
      if (rc < 0) {
        field = cert_field;
        problem = std::string("not a PEM certificate (") + gnutls_strerror(rc) + ")";
      }
    }
    if (problem.empty()) {
      gnutls_x509_privkey_t pk = nullptr;
      gnutls_x509_privkey_init(&pk);
      const gnutls_datum_t k = datum(t.key_pem);
      const int rc = gnutls_x509_privkey_import(pk, &k, GNUTLS_X509_FMT_PEM);
      gnutls_x509_privkey_deinit(pk);
      if (rc < 0) {
        field = key_field;
        problem = std::string("not a PEM private key (") + gnutls_strerror(rc) + ")";
      }
    }
    if (problem.empty()) {
      const gnutls_datum_t c = datum(t.cert_pem), k = datum(t.key_pem);
      const int rc = gnutls_certificate_set_x509_key_mem(cred, &c, &k, GNUTLS_X509_FMT_PEM);
      if (rc < 0) {
        field = key_field;
        problem = std::string("does not match the certificate (") + gnutls_strerror(rc) + ")";
      }
    }
    if (problem.empty() && !t.client_ca_pem.empty()) {
      const gnutls_datum_t ca = datum(t.client_ca_pem);
      const int rc = gnutls_certificate_set_x509_trust_mem(cred, &ca, GNUTLS_X509_FMT_PEM);
      if (rc <= 0) {
        field = ca_field;
        problem = rc < 0 ? std::string("not a PEM CA bundle (") + gnutls_strerror(rc) + ")"
                         : std::string("holds no certificate");
      }
    }
    gnutls_certificate_free_credentials(cred);
    if (!problem.empty()) fail(field, problem);
  }

  void users(const YAML::Node& v, WebConfig& out) {
    const std::string p = "basic_auth_users";
    if (v.IsNull()) return;
    if (!v.IsMap()) fail(p, "expected a mapping of user names to bcrypt hashes");
    for (const auto& [user, hv] : entries(v, p)) {
      const std::string path = join(p, user);
      if (user.empty()) fail(p, "empty user name");
      if (user.find(':') != std::string::npos) {
        fail(path, "a user name cannot hold ':' (Basic authentication splits on it)");
      }
      const std::string hash = string_of(path, hv);
      if (!is_bcrypt_hash(hash)) {
        fail(path,
             "not a bcrypt hash (expected $2a$, $2b$ or $2y$, a two-digit cost and 53 "
             "characters of salt and hash, e.g. from `htpasswd -nBC 10 \"\"`)");
      }
      out.users.emplace(user, hash);
    }
  }

  void http_server(const YAML::Node& v, WebConfig& out) {
    const std::string p = "http_server_config";
    if (v.IsNull()) return;
    if (!v.IsMap()) fail(p, "expected a mapping");
    for (const auto& [k, fv] : entries(v, p)) {
      const std::string path = join(p, k);
      if (k == "http2") {
        bool_of(path, fv);  // HTTP/1.1 only: libmicrohttpd has no HTTP/2
      } else if (k == "headers") {
        if (!fv.IsNull() && !fv.IsMap()) fail(path, "expected a mapping of header names");
        if (fv.IsMap()) {
          static const std::set<std::string> known = {"Content-Security-Policy", "X-Frame-Options",
                                                      "X-Content-Type-Options", "X-XSS-Protection",
                                                      "Strict-Transport-Security"};
          for (const auto& [h, hv] : entries(fv, path)) {
            if (!known.count(h)) fail(join(path, h), "unknown header");
            string_of(join(path, h), hv);
          }
        }
      } else {
        fail(path, "unknown key (expected http2 or headers)");
      }
      out.ignored.push_back(path);
    }
  }

  const std::string& file_;
  std::string dir_;
};

}  // namespace

std::string_view client_auth_name(ClientAuth a) {
  return kClientAuthNames[static_cast<std::size_t>(a)];
}

std::string_view tls_version_name(TlsVersion v) {
  return kTlsVersionNames[static_cast<std::size_t>(v) -
                          static_cast<std::size_t>(TlsVersion::tls10)];
}

std::string gnutls_priorities(TlsVersion min, TlsVersion max) {
  std::string out = "NORMAL:-VERS-ALL";
  for (int v = static_cast<int>(min); v <= static_cast<int>(max); ++v) {
    out += ":+VERS-TLS1." + std::to_string(v - 10);
  }
  return out;
}

Result<WebConfig> parse_web_config(std::string_view text, const std::string& file) {
  try {
    return Parser(file).run(text);
  } catch (const Failure& f) {
    return Error{file + ": " + f.message};
  } catch (const YAML::Exception& e) {  // conversions; not expected
    return Error{file + ": invalid web config: " + e.what()};
  }
}

Result<WebConfig> load_web_config(const std::string& file) {
  const auto text = common::read_small_file(file, kMaxConfigBytes);
  if (!text) return Error{file + ": cannot read the web config file: " + text.error()};
  return parse_web_config(*text, file);
}

}  // namespace cpupower::exporter
