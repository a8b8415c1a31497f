#include "common/log.hpp"

#include <spdlog/pattern_formatter.h>
#include <spdlog/sinks/stdout_sinks.h>

#include <mutex>

#include "common/enum_names.hpp"

namespace cpupower::common {
namespace {

// Upper-case level right-aligned in five columns, as tracing-subscriber prints it.
class LevelFlag final : public spdlog::custom_flag_formatter {
 public:
  void format(const spdlog::details::log_msg& msg, const std::tm&,
              spdlog::memory_buf_t& dest) override {
    static constexpr std::string_view kNames[] = {"TRACE", "DEBUG", " INFO", " WARN",
                                                  "ERROR", "ERROR", "  OFF"};
    const auto name = kNames[static_cast<int>(msg.level)];
    dest.append(name.data(), name.data() + name.size());
  }
  std::unique_ptr<custom_flag_formatter> clone() const override {
    return std::make_unique<LevelFlag>();
  }
};

std::mutex g_mutex;
spdlog::level::level_enum g_level = spdlog::level::info;

spdlog::sink_ptr shared_sink() {
  static spdlog::sink_ptr sink = [] {
    auto s = std::make_shared<spdlog::sinks::stdout_sink_mt>();
    auto formatter = std::make_unique<spdlog::pattern_formatter>(spdlog::pattern_time_type::utc);
    formatter->add_flag<LevelFlag>('*').set_pattern("%Y-%m-%dT%H:%M:%S.%fZ %* %n: %v");
    s->set_formatter(std::move(formatter));
    return s;
  }();
  return sink;
}

}  // namespace

std::optional<spdlog::level::level_enum> parse_log_level(std::string_view text) {
  using spdlog::level::level_enum;
  static constexpr EnumName<level_enum> kLevels[] = {
      {level_enum::trace, "trace"}, {level_enum::debug, "debug"}, {level_enum::info, "info"},
      {level_enum::warn, "warn"},   {level_enum::err, "error"},   {level_enum::off, "off"}};
  return parse(kLevels, text);
}

void init_logging(spdlog::level::level_enum level) {
  std::lock_guard lock(g_mutex);
  g_level = level;
  spdlog::apply_all([level](const std::shared_ptr<spdlog::logger>& l) { l->set_level(level); });
}

std::shared_ptr<spdlog::logger> logger(const std::string& target) {
  std::lock_guard lock(g_mutex);
  if (auto existing = spdlog::get(target)) return existing;
  auto l = std::make_shared<spdlog::logger>(target, shared_sink());
  l->set_level(g_level);
  l->flush_on(spdlog::level::trace);  // srun captures stdout into a file: never sit on a line
  spdlog::register_logger(l);
  return l;
}

std::string quoted(std::string_view value) {
  bool plain = !value.empty();
  for (char c : value) {
    if (c == ' ' || c == '"' || c == '\\' || c == '=' || c == '\n' || c == '\t') plain = false;
  }
  if (plain) return std::string(value);
  std::string out = "\"";
  for (char c : value) {
    if (c == '"' || c == '\\') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  out += '"';
  return out;
}

}  // namespace cpupower::common
