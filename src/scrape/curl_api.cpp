#include "scrape/curl_api.hpp"

#include <algorithm>
#include <cstdlib>
#include <mutex>

#include "common/dynamic_library.hpp"

namespace cpupower::scrape {
namespace {

struct Loaded {
  CurlApi api;
  std::string error;  // empty when `api` is usable
};

Loaded load() {
  Loaded out;
  const char* override_path = std::getenv(kCurlLibraryEnv);
  const bool overridden = override_path != nullptr && *override_path != '\0';
  const std::string name = overridden ? override_path : "libcurl.so.4";
  common::DynamicLibrary lib;
  std::string why;
  if (!lib.open({name}, &why)) {
    out.error = "cannot load libcurl (" + why + ")" +
                (overridden ? std::string("; ") + kCurlLibraryEnv + " names it"
                            : std::string("; install libcurl4"));
    return out;
  }
  std::string missing;
  CurlApi& a = out.api;
  a.global_init = lib.symbol<decltype(a.global_init)>("curl_global_init", &missing);
  a.easy_init = lib.symbol<decltype(a.easy_init)>("curl_easy_init", &missing);
  a.easy_setopt = lib.symbol<decltype(a.easy_setopt)>("curl_easy_setopt", &missing);
  a.easy_getinfo = lib.symbol<decltype(a.easy_getinfo)>("curl_easy_getinfo", &missing);
  a.easy_cleanup = lib.symbol<decltype(a.easy_cleanup)>("curl_easy_cleanup", &missing);
  a.easy_strerror = lib.symbol<decltype(a.easy_strerror)>("curl_easy_strerror", &missing);
  a.multi_init = lib.symbol<decltype(a.multi_init)>("curl_multi_init", &missing);
  a.multi_setopt = lib.symbol<decltype(a.multi_setopt)>("curl_multi_setopt", &missing);
  a.multi_add_handle = lib.symbol<decltype(a.multi_add_handle)>("curl_multi_add_handle", &missing);
  a.multi_remove_handle =
      lib.symbol<decltype(a.multi_remove_handle)>("curl_multi_remove_handle", &missing);
  a.multi_cleanup = lib.symbol<decltype(a.multi_cleanup)>("curl_multi_cleanup", &missing);
  a.multi_perform = lib.symbol<decltype(a.multi_perform)>("curl_multi_perform", &missing);
  a.multi_info_read = lib.symbol<decltype(a.multi_info_read)>("curl_multi_info_read", &missing);
  a.multi_poll = lib.symbol<decltype(a.multi_poll)>("curl_multi_poll", &missing);
  a.multi_timeout = lib.symbol<decltype(a.multi_timeout)>("curl_multi_timeout", &missing);
  a.multi_socket_action =
      lib.symbol<decltype(a.multi_socket_action)>("curl_multi_socket_action", &missing);
  a.multi_strerror = lib.symbol<decltype(a.multi_strerror)>("curl_multi_strerror", &missing);
  if (!missing.empty()) {
    // The first missing function says enough; the rest are usually missing for the same reason.
    const auto more = static_cast<std::size_t>(std::count(missing.begin(), missing.end(), ';'));
    out.error = lib.name() + " is not a usable libcurl (7.66 or later): " +
                missing.substr(0, missing.find(';')) +
                (more > 0 ? " (and " + std::to_string(more) + " more)" : "");
    return out;
  }
  const CURLcode rc = a.global_init(CURL_GLOBAL_ALL);
  if (rc != CURLE_OK) out.error = std::string("curl_global_init: ") + a.easy_strerror(rc);
  return out;
}

}  // namespace

const CurlApi* curl_api(std::string* error) {
  static std::once_flag once;
  static Loaded loaded;
  std::call_once(once, [] { loaded = load(); });
  if (!loaded.error.empty()) {
    if (error) *error = loaded.error;
    return nullptr;
  }
  return &loaded.api;
}

}  // namespace cpupower::scrape
