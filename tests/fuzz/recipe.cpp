// The recipe loader (config/load, config/validate): any bytes as recipe.yaml. An accepted
// recipe keeps the rules that protect the run: both storage_subdir fields stay strictly below
// the log directory and hold no control character, and the resolved settings describe.

#include <string>

#include "config/describe.hpp"
#include "config/load.hpp"
#include "config/validate.hpp"
#include "fuzz_util.hpp"

namespace {

bool has_control(const std::string& s) {
  for (const char c : s) {
    const auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u == 0x7f) return true;
  }
  return false;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  namespace config = cpupower::config;
  const auto result = config::load_recipe_text(cpupower::fuzz::as_text(data, size), "fuzz.yaml");
  for (const auto& e : result.errors) (void)config::format_error(e);
  if (!result.recipe) {
    FUZZ_CHECK(!result.errors.empty(), "refused without an error");
    return 0;
  }
  FUZZ_CHECK(result.errors.empty());
  const config::Recipe& r = *result.recipe;
  const auto& t = r.telemetry;
  if (t.enabled) {
    FUZZ_CHECK(config::is_safe_relative_subpath(t.storage_subdir) &&
               !has_control(t.storage_subdir));
    if (t.cpu_power.enabled) {
      FUZZ_CHECK(config::is_safe_relative_subpath(t.cpu_power.storage_subdir) &&
                 !has_control(t.cpu_power.storage_subdir));
      FUZZ_CHECK(t.cpu_power.storage_subdir != t.storage_subdir);
    }
  }
  if (r.runtime.network_interface) FUZZ_CHECK(!has_control(*r.runtime.network_interface));
  for (const auto& [key, value] : r.runtime.srun_options) {
    FUZZ_CHECK(key.find('\0') == std::string::npos);
    if (value) FUZZ_CHECK(value->find('\0') == std::string::npos);
  }
  (void)config::describe_recipe(r);
  return 0;
}
