#include "launch/readiness.hpp"

#include <algorithm>

#include "scrape/curl_api.hpp"

namespace cpupower::launch {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

constexpr milliseconds kRetry{100};
constexpr milliseconds kRequestTimeout{1000};

std::size_t discard(char*, std::size_t size, std::size_t n, void*) {
  return size * n;
}

struct Probe {
  std::string url;
  CURL* easy = nullptr;
  Clock::time_point next_try;
  std::optional<double> ready_after_s;
};

}  // namespace

std::string health_url(const scrape::Endpoint& endpoint, bool https) {
  std::string url = scrape::endpoint_url(endpoint, https);
  const std::string metrics = "/metrics";
  if (url.size() >= metrics.size() &&
      url.compare(url.size() - metrics.size(), metrics.size(), metrics) == 0) {
    url.replace(url.size() - metrics.size(), metrics.size(), "/health");
  }
  return url;
}

std::vector<std::optional<double>> wait_until_ready(const std::vector<scrape::Endpoint>& endpoints,
                                                    Clock::time_point deadline,
                                                    const std::function<bool()>& give_up,
                                                    const scrape::ClientSecurity& security) {
  const auto started = Clock::now();
  std::vector<Probe> probes(endpoints.size());
  for (std::size_t i = 0; i < endpoints.size(); ++i) {
    probes[i].url = health_url(endpoints[i], security.https);
    probes[i].next_try = started;
  }
  const auto api = scrape::curl_api();
  const scrape::CurlApi* curl = api ? *api : nullptr;
  CURLM* multi = curl ? curl->multi_init() : nullptr;
  if (!multi) return std::vector<std::optional<double>>(endpoints.size());
  std::size_t ready = 0;
  while (ready < probes.size() && Clock::now() < deadline && !(give_up && give_up())) {
    const auto now = Clock::now();
    for (auto& p : probes) {
      if (p.ready_after_s || p.easy || p.next_try > now) continue;
      const auto left = std::chrono::duration_cast<milliseconds>(deadline - now);
      p.easy = curl->easy_init();
      if (!p.easy) continue;
      curl->easy_setopt(p.easy, CURLOPT_URL, p.url.c_str());
      curl->easy_setopt(p.easy, CURLOPT_NOSIGNAL, 1L);
      curl->easy_setopt(p.easy, CURLOPT_NOPROXY, "*");  // a cluster proxy must never see these
      curl->easy_setopt(
          p.easy, CURLOPT_TIMEOUT_MS,
          static_cast<long>(std::max<long long>(1, std::min(left, kRequestTimeout).count())));
      curl->easy_setopt(p.easy, CURLOPT_WRITEFUNCTION, discard);
      curl->easy_setopt(p.easy, CURLOPT_PRIVATE, &p);
      scrape::apply_client_security(*curl, p.easy, security);
      curl->multi_add_handle(multi, p.easy);
    }
    int running = 0;
    curl->multi_perform(multi, &running);
    while (CURLMsg* msg = curl->multi_info_read(multi, &running)) {
      if (msg->msg != CURLMSG_DONE) continue;
      Probe* p = nullptr;
      curl->easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, reinterpret_cast<char**>(&p));
      long code = 0;
      curl->easy_getinfo(msg->easy_handle, CURLINFO_RESPONSE_CODE, &code);
      if (msg->data.result == CURLE_OK && code == 200) {
        p->ready_after_s = std::chrono::duration<double>(Clock::now() - started).count();
        ++ready;
      } else {
        p->next_try = Clock::now() + kRetry;
      }
      curl->multi_remove_handle(multi, p->easy);
      curl->easy_cleanup(p->easy);
      p->easy = nullptr;
    }
    if (ready < probes.size()) curl->multi_poll(multi, nullptr, 0, 20, nullptr);
  }
  for (auto& p : probes) {
    if (!p.easy) continue;
    curl->multi_remove_handle(multi, p.easy);
    curl->easy_cleanup(p.easy);
  }
  curl->multi_cleanup(multi);
  std::vector<std::optional<double>> out;
  for (const auto& p : probes) out.push_back(p.ready_after_s);
  return out;
}

}  // namespace cpupower::launch
