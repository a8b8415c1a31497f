#pragma once
// libcurl, loaded on first use rather than linked: only the commands that speak HTTP (the
// collector and the readiness probes of `cpu-power run`) need it, and linking it made every
// command load libcurl and its ~30 dependencies (TLS, Kerberos, LDAP, ...) at start-up.
// curl/curl.h gives the types and constants; the functions come from the library loaded here.

#include <curl/curl.h>

#include <string>
#include "common/result.hpp"

namespace cpupower::scrape {

// The libcurl functions we call, by their curl_ names without the prefix.
struct CurlApi {
  CURLcode (*global_init)(long flags) = nullptr;
  CURL* (*easy_init)() = nullptr;
  CURLcode (*easy_setopt)(CURL*, CURLoption, ...) = nullptr;
  CURLcode (*easy_getinfo)(CURL*, CURLINFO, ...) = nullptr;
  CURLcode (*easy_perform)(CURL*) = nullptr;  // one blocking transfer (store/prom_api)
  void (*easy_cleanup)(CURL*) = nullptr;
  const char* (*easy_strerror)(CURLcode) = nullptr;
  CURLM* (*multi_init)() = nullptr;
  CURLMcode (*multi_setopt)(CURLM*, CURLMoption, ...) = nullptr;
  CURLMcode (*multi_add_handle)(CURLM*, CURL*) = nullptr;
  CURLMcode (*multi_remove_handle)(CURLM*, CURL*) = nullptr;
  CURLMcode (*multi_cleanup)(CURLM*) = nullptr;
  CURLMcode (*multi_perform)(CURLM*, int*) = nullptr;
  CURLMsg* (*multi_info_read)(CURLM*, int*) = nullptr;
  CURLMcode (*multi_poll)(CURLM*, curl_waitfd[], unsigned, int, int*) = nullptr;
  CURLMcode (*multi_timeout)(CURLM*, long*) = nullptr;
  CURLMcode (*multi_socket_action)(CURLM*, curl_socket_t, int, int*) = nullptr;
  const char* (*multi_strerror)(CURLMcode) = nullptr;
};

// Environment variable naming the libcurl to load instead of libcurl.so.4.
inline constexpr const char* kCurlLibraryEnv = "CPU_POWER_LIBCURL";

// libcurl ($CPU_POWER_LIBCURL, else libcurl.so.4), loaded and globally initialised once for
// the process; call it before starting threads that use curl (curl_global_init is not
// thread-safe). An error naming the reason when it cannot be loaded.
Result<const CurlApi*> curl_api();

}  // namespace cpupower::scrape
