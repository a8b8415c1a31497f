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
  if (const Status opened = lib.open({name}); !opened) {
    out.error = "cannot load libcurl (" + opened.error() + ")" +
                (overridden ? std::string("; ") + kCurlLibraryEnv + " names it"
                            : std::string("; install libcurl4"));
    return out;
  }
  common::SymbolBinder symbols(lib);
  CurlApi& a = out.api;
  symbols.bind(a.global_init, "curl_global_init");
  symbols.bind(a.easy_init, "curl_easy_init");
  symbols.bind(a.easy_setopt, "curl_easy_setopt");
  symbols.bind(a.easy_getinfo, "curl_easy_getinfo");
  symbols.bind(a.easy_perform, "curl_easy_perform");
  symbols.bind(a.easy_cleanup, "curl_easy_cleanup");
  symbols.bind(a.easy_strerror, "curl_easy_strerror");
  symbols.bind(a.multi_init, "curl_multi_init");
  symbols.bind(a.multi_setopt, "curl_multi_setopt");
  symbols.bind(a.multi_add_handle, "curl_multi_add_handle");
  symbols.bind(a.multi_remove_handle, "curl_multi_remove_handle");
  symbols.bind(a.multi_cleanup, "curl_multi_cleanup");
  symbols.bind(a.multi_perform, "curl_multi_perform");
  symbols.bind(a.multi_info_read, "curl_multi_info_read");
  symbols.bind(a.multi_poll, "curl_multi_poll");
  symbols.bind(a.multi_timeout, "curl_multi_timeout");
  symbols.bind(a.multi_socket_action, "curl_multi_socket_action");
  symbols.bind(a.multi_strerror, "curl_multi_strerror");
  if (const Status bound = symbols.status(); !bound) {
    // The first missing function says enough; the rest are usually missing for the same reason.
    const std::string& missing = bound.error();
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

Result<const CurlApi*> curl_api() {
  static std::once_flag once;
  static Loaded loaded;
  std::call_once(once, [] { loaded = load(); });
  if (!loaded.error.empty()) return Error{loaded.error};
  return &loaded.api;
}

}  // namespace cpupower::scrape
