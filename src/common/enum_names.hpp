#pragma once
// An enum's names as one table, {value, name} per value, that both directions read: so a
// value's name and its parse cannot drift apart.

#include <cstddef>
#include <optional>
#include <string_view>

namespace cpupower::common {

template <class E>
struct EnumName {
  E value;
  std::string_view name;
};

// The value's name; `fallback` for a value the table lacks.
template <class E, std::size_t N>
constexpr std::string_view name_of(const EnumName<E> (&table)[N], E value,
                                   std::string_view fallback = "unknown") {
  for (const auto& e : table) {
    if (e.value == value) return e.name;
  }
  return fallback;
}

// The value named exactly `name`; nullopt for any other text.
template <class E, std::size_t N>
constexpr std::optional<E> parse(const EnumName<E> (&table)[N], std::string_view name) {
  for (const auto& e : table) {
    if (e.name == name) return e.value;
  }
  return std::nullopt;
}

}  // namespace cpupower::common
