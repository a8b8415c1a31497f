#include "exporter/web_config.hpp"

#include <gnutls/gnutls.h>
#include <gnutls/x509.h>
#include <yaml-cpp/yaml.h>

#include <filesystem>
#include <map>
#include <memory>
#include <set>
#include <type_traits>

#include "common/text.hpp"
#include "config/yaml_walk.hpp"
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
  explicit Parser(const std::string& file)
      : dir_(std::filesystem::path(file).parent_path().string()),
        // Go's yaml.v2 reads a string field's scalar as written; the first problem ends it.
        w_(file, {"(top level)", true, nullptr},
           [](config::ConfigError e) { throw Failure{std::move(e.message)}; }) {}

  WebConfig run(const std::string& file, std::string_view text) {
    WebConfig out;
    out.file = file;
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
    w_.entries(root, "", [&](const std::string& key, const YAML::Node&, const YAML::Node& v) {
      if (key == "tls_server_config") {
        tls = v;
      } else if (key == "basic_auth_users") {
        users(v, out);
      } else if (key == "http_server_config") {
        http_server(v, out);
      } else if (key == "rate_limit") {
        w_.section(key, v);  // exporter-toolkit's newer token bucket; its fields are not checked
        out.ignored.push_back("rate_limit");
      } else {
        fail(key,
             "unknown key (expected tls_server_config, basic_auth_users, "
             "http_server_config or rate_limit)");
      }
      return true;
    });
    if (tls) tls_server(*tls, out);
    return out;
  }

 private:
  [[noreturn]] void fail(const std::string& field, const std::string& what) {
    throw Failure{field + ": " + what};
  }

  std::string text(const std::string& path, const YAML::Node& v) {
    std::string out;
    w_.read(path, v, out);
    return out;
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
    const std::string s = text(path, v);
    for (std::size_t i = 0; i < std::size(kTlsVersionNames); ++i) {
      if (s == kTlsVersionNames[i]) return TlsVersion(static_cast<int>(TlsVersion::tls10) + i);
    }
    fail(path, "unknown TLS version \"" + common::escape_untrusted(s) +
                   "\" (expected TLS10, TLS11, TLS12 or TLS13)");
  }

  ClientAuth client_auth_of(const std::string& path, const std::string& s) {
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
    if (!w_.section(p, v)) return;
    WebTls t;
    // The certificate, key and client CA, each inline or by file name.
    std::map<std::string, std::string> pem;
    const std::string &cert = pem["cert"], &key = pem["key"], &client_ca = pem["client_ca"],
                      &cert_file = pem["cert_file"], &key_file = pem["key_file"],
                      &client_ca_file = pem["client_ca_file"];
    bool any = false;
    w_.entries(v, p, [&](const std::string& k, const YAML::Node&, const YAML::Node& fv) {
      const std::string path = config::YamlWalker::join(p, k);
      if (pem.count(k)) {
        pem[k] = text(path, fv);
        any = true;
      } else if (k == "client_auth_type") {
        const std::string name = text(path, fv);
        t.client_auth = client_auth_of(path, name);
        any = any || !name.empty();
      } else if (k == "min_version" || k == "max_version") {
        (k == "min_version" ? t.min_version : t.max_version) = version_of(path, fv);
      } else if (k == "cipher_suites" || k == "curve_preferences") {
        std::optional<std::vector<std::string>> names;
        w_.read(path, fv, names);
        out.ignored.push_back(path);
      } else if (k == "prefer_server_cipher_suites") {
        bool prefer = false;
        w_.read(path, fv, prefer);
        out.ignored.push_back(path);
      } else if (k == "client_allowed_sans") {
        // Refused rather than ignored: it narrows who may connect, and dropping it would
        // let in clients the file keeps out.
        fail(path,
             "not supported by cpu-power-exporter (remove it, or use a client CA "
             "that signs only the allowed clients)");
      } else {
        fail(path, "unknown key");
      }
      return true;
    });
    // exporter-toolkit: TLS is on once any TLS field is given; then cert and key must be.
    if (!any) return;
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
    gnutls_certificate_credentials_t raw = nullptr;
    if (gnutls_certificate_allocate_credentials(&raw) != GNUTLS_E_SUCCESS) {
      fail(cert_field, "cannot allocate GnuTLS credentials");
    }
    // Freed on every path, the refusals (which throw) included.
    const std::unique_ptr<std::remove_pointer_t<gnutls_certificate_credentials_t>,
                          decltype(&gnutls_certificate_free_credentials)>
        cred(raw, gnutls_certificate_free_credentials);
    const auto datum = [](const std::string& s) {
      return gnutls_datum_t{reinterpret_cast<unsigned char*>(const_cast<char*>(s.data())),
                            static_cast<unsigned>(s.size())};
    };
    const auto check = [&](int rc, const std::string& field, const char* what) {
      if (rc < 0) fail(field, std::string(what) + " (" + gnutls_strerror(rc) + ")");
    };
    const gnutls_datum_t c = datum(t.cert_pem), k = datum(t.key_pem);
    gnutls_x509_crt_t crt = nullptr;
    gnutls_x509_crt_init(&crt);
    const int cert_rc = gnutls_x509_crt_import(crt, &c, GNUTLS_X509_FMT_PEM);
    gnutls_x509_crt_deinit(crt);
    check(cert_rc, cert_field, "not a PEM certificate");
    gnutls_x509_privkey_t pk = nullptr;
    gnutls_x509_privkey_init(&pk);
    const int key_rc = gnutls_x509_privkey_import(pk, &k, GNUTLS_X509_FMT_PEM);
    gnutls_x509_privkey_deinit(pk);
    check(key_rc, key_field, "not a PEM private key");
    check(gnutls_certificate_set_x509_key_mem(cred.get(), &c, &k, GNUTLS_X509_FMT_PEM), key_field,
          "does not match the certificate");
    if (t.client_ca_pem.empty()) return;
    const gnutls_datum_t ca = datum(t.client_ca_pem);
    const int ca_rc = gnutls_certificate_set_x509_trust_mem(cred.get(), &ca, GNUTLS_X509_FMT_PEM);
    check(ca_rc, ca_field, "not a PEM CA bundle");
    if (ca_rc == 0) fail(ca_field, "holds no certificate");
  }

  void users(const YAML::Node& v, WebConfig& out) {
    const std::string p = "basic_auth_users";
    if (v.IsNull()) return;
    if (!v.IsMap()) fail(p, "expected a mapping of user names to bcrypt hashes");
    w_.entries(v, p, [&](const std::string& user, const YAML::Node&, const YAML::Node& hv) {
      const std::string path = config::YamlWalker::join(p, user);
      if (user.empty()) fail(p, "empty user name");
      if (user.find(':') != std::string::npos) {
        fail(path, "a user name cannot hold ':' (Basic authentication splits on it)");
      }
      const std::string hash = text(path, hv);
      if (!is_bcrypt_hash(hash)) {
        fail(path,
             "not a bcrypt hash (expected $2a$, $2b$ or $2y$, a two-digit cost and 53 "
             "characters of salt and hash, e.g. from `htpasswd -nBC 10 \"\"`)");
      }
      out.users.emplace(user, hash);
      return true;
    });
  }

  void http_server(const YAML::Node& v, WebConfig& out) {
    const std::string p = "http_server_config";
    if (!w_.section(p, v)) return;
    w_.entries(v, p, [&](const std::string& k, const YAML::Node&, const YAML::Node& fv) {
      const std::string path = config::YamlWalker::join(p, k);
      if (k == "http2") {
        bool http2 = false;  // HTTP/1.1 only: libmicrohttpd has no HTTP/2
        w_.read(path, fv, http2);
      } else if (k == "headers") {
        if (!fv.IsNull() && !fv.IsMap()) fail(path, "expected a mapping of header names");
        if (fv.IsMap()) {
          static const std::set<std::string> known = {"Content-Security-Policy", "X-Frame-Options",
                                                      "X-Content-Type-Options", "X-XSS-Protection",
                                                      "Strict-Transport-Security"};
          w_.entries(fv, path, [&](const std::string& h, const YAML::Node&, const YAML::Node& hv) {
            const std::string at = config::YamlWalker::join(path, h);
            if (!known.count(h)) fail(at, "unknown header");
            text(at, hv);
            return true;
          });
        }
      } else {
        fail(path, "unknown key (expected http2 or headers)");
      }
      out.ignored.push_back(path);
      return true;
    });
  }

  std::string dir_;
  config::YamlWalker w_;
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
    return Parser(file).run(file, text);
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
