#pragma once
// The JSON field helpers every file format shares, for nlohmann's json and ordered_json alike.
// Writing: a value JSON cannot hold (NaN, infinity) or none at all is null. Reading, leniently:
// a key that is missing or of another type leaves the target as it was, so a file from an
// older or foreign writer still yields what it has.

#include <cmath>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include <nlohmann/json.hpp>

namespace cpupower::common {

// A number, or null when there is none or it is not finite.
template <class J = nlohmann::ordered_json>
J number_or_null(std::optional<double> value) {
  if (!value || !std::isfinite(*value)) return nullptr;
  return *value;
}

// The value, or null when there is none.
template <class J = nlohmann::ordered_json, class T>
J or_null(const std::optional<T>& value) {
  if (!value) return nullptr;
  return *value;
}

template <class T>
struct is_optional : std::false_type {};
template <class T>
struct is_optional<std::optional<T>> : std::true_type {};

// Reads obj[key] into `out` when it has out's type (std::string, bool, double (any number),
// an unsigned (a non-negative integer), a signed integer, a list of strings (its strings
// only), or an optional of one of them); true when it did. Never throws.
template <class J, class T>
bool get_to(const J& obj, const char* key, T& out) {
  const auto it = obj.find(key);
  if (it == obj.end()) return false;
  const J& v = *it;
  if constexpr (is_optional<T>::value) {
    typename T::value_type inner{};
    if (!get_to(obj, key, inner)) return false;
    out = std::move(inner);
    return true;
  } else if constexpr (std::is_same_v<T, std::vector<std::string>>) {
    if (!v.is_array()) return false;
    out.clear();
    for (const auto& item : v) {
      if (item.is_string()) out.push_back(item.template get<std::string>());
    }
    return true;
  } else {
    const bool fits = std::is_same_v<T, std::string> ? v.is_string()
                      : std::is_same_v<T, bool>      ? v.is_boolean()
                      : std::is_floating_point_v<T>  ? v.is_number()
                      : std::is_unsigned_v<T>        ? v.is_number_unsigned()
                                                     : v.is_number_integer();
    if (fits) out = v.template get<T>();
    return fits;
  }
}

}  // namespace cpupower::common
