#pragma once
// The TLS key pair of in-process test servers: a self-signed ECDSA certificate for
// "localhost", valid from an hour ago for a day, made with GnuTLS when called, and the
// exporter's TLS 1.2-1.3 priorities. Shared by the exporter's unit tests and its TLS fuzz
// target.

#include <gnutls/gnutls.h>
#include <gnutls/x509.h>

#include <ctime>
#include <optional>

#include "exporter/http_server.hpp"
#include "exporter/web_config.hpp"

namespace cpupower::testing {

// nullopt when GnuTLS cannot sign the certificate.
inline std::optional<exporter::HttpTls> self_signed_tls(unsigned char serial_byte) {
  gnutls_x509_privkey_t key = nullptr;
  gnutls_x509_privkey_init(&key);
  gnutls_x509_privkey_generate(key, GNUTLS_PK_ECDSA,
                               GNUTLS_CURVE_TO_BITS(GNUTLS_ECC_CURVE_SECP256R1), 0);
  gnutls_x509_crt_t crt = nullptr;
  gnutls_x509_crt_init(&crt);
  gnutls_x509_crt_set_version(crt, 3);
  const unsigned char serial[] = {serial_byte, 1};
  gnutls_x509_crt_set_serial(crt, serial, sizeof serial);
  const std::time_t now = std::time(nullptr);
  gnutls_x509_crt_set_activation_time(crt, now - 3600);
  gnutls_x509_crt_set_expiration_time(crt, now + 86400);
  gnutls_x509_crt_set_dn_by_oid(crt, GNUTLS_OID_X520_COMMON_NAME, 0, "localhost", 9);
  gnutls_x509_crt_set_key(crt, key);
  const bool signed_ok = gnutls_x509_crt_sign2(crt, crt, key, GNUTLS_DIG_SHA256, 0) == 0;
  gnutls_datum_t c{}, k{};
  gnutls_x509_crt_export2(crt, GNUTLS_X509_FMT_PEM, &c);
  gnutls_x509_privkey_export2(key, GNUTLS_X509_FMT_PEM, &k);
  exporter::HttpTls tls;
  tls.cert_pem.assign(reinterpret_cast<const char*>(c.data), c.size);
  tls.key_pem.assign(reinterpret_cast<const char*>(k.data), k.size);
  gnutls_free(c.data);
  gnutls_free(k.data);
  gnutls_x509_crt_deinit(crt);
  gnutls_x509_privkey_deinit(key);
  if (!signed_ok) return std::nullopt;
  tls.priorities =
      exporter::gnutls_priorities(exporter::TlsVersion::tls12, exporter::TlsVersion::tls13);
  return tls;
}

}  // namespace cpupower::testing
