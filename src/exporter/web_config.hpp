#pragma once
// The exporter's --web.config.file: the Prometheus exporter-toolkit web configuration
// (docs/security.md), so that the file written for node_exporter works here unchanged.
//
//   tls_server_config:   cert_file, key_file (or inline cert, key), client_auth_type,
//                        client_ca_file (or inline client_ca), min_version, max_version;
//                        cipher_suites, curve_preferences, prefer_server_cipher_suites are
//                        accepted and not applied (GnuTLS picks from its defaults)
//   http_server_config:  http2, headers: accepted and not applied (noted in the log)
//   basic_auth_users:    user: bcrypt hash ($2a$, $2b$, $2y$)
//   rate_limit:          accepted and not applied (noted in the log)
//
// Any other key, at any level, is an error naming it, as exporter-toolkit's strict YAML
// decoding has it. Relative file names are relative to the web config file's directory. The
// certificate, key and client CA are read and checked here, once, at startup.

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.hpp"

namespace cpupower::exporter {

// crypto/tls's ClientAuthType names, in exporter-toolkit's spelling.
enum class ClientAuth {
  none,                // NoClientCert (default)
  request,             // RequestClientCert: asked for, not required, not verified
  require_any,         // RequireAnyClientCert: required, not verified
  verify_if_given,     // VerifyClientCertIfGiven: verified when sent
  require_and_verify,  // RequireAndVerifyClientCert: required and verified
};
std::string_view client_auth_name(ClientAuth a);

enum class TlsVersion { tls10 = 10, tls11 = 11, tls12 = 12, tls13 = 13 };
std::string_view tls_version_name(TlsVersion v);  // TLS12

struct WebTls {
  std::string cert_pem;
  std::string key_pem;
  std::string client_ca_pem;  // empty: no client CA
  std::string cert_source;    // the file it came from, or "cert (inline)", for logs
  ClientAuth client_auth = ClientAuth::none;
  TlsVersion min_version = TlsVersion::tls12;
  TlsVersion max_version = TlsVersion::tls13;
};

struct WebConfig {
  std::string file;
  std::optional<WebTls> tls;                 // unset: plain HTTP
  std::map<std::string, std::string> users;  // user -> bcrypt hash; empty: no basic auth
  std::vector<std::string> ignored;          // "http_server_config.http2", ... (logged)
};

// Parses `text` as the web config file `file`; referenced files are read through the real
// file system, relative to `file`'s directory. An error "FILE: FIELD: what" when it is refused.
Result<WebConfig> parse_web_config(std::string_view text, const std::string& file);

// Reads and parses the file.
Result<WebConfig> load_web_config(const std::string& file);

// The GnuTLS priority string for a version range: "NORMAL:-VERS-ALL:+VERS-TLS1.2:+VERS-TLS1.3".
std::string gnutls_priorities(TlsVersion min, TlsVersion max);

}  // namespace cpupower::exporter
