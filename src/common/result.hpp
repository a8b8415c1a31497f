#pragma once
// The one way `report` and `artifacts` say that something failed: a value or an error message
// that names the file, line or field. Callers must look at it ([[nodiscard]]).
//
//   Result<Table> read(const std::string& path) {
//     if (...) return Error{path + ":3: no 'timestamp_unix' column"};
//     return table;
//   }
//   auto table = read(path);
//   if (!table) return Error{table.error()};

#include <string>
#include <utility>
#include <variant>

namespace cpupower {

struct Error {
  std::string message;
};

template <class T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::in_place_index<0>, std::move(value)) {}      // NOLINT: implicit
  Result(Error error) : v_(std::in_place_index<1>, std::move(error)) {}  // NOLINT: implicit

  bool ok() const { return v_.index() == 0; }
  explicit operator bool() const { return ok(); }

  T& value() & { return std::get<0>(v_); }
  const T& value() const& { return std::get<0>(v_); }
  T&& value() && { return std::get<0>(std::move(v_)); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

  // The message; empty when the result holds a value.
  const std::string& error() const {
    static const std::string kNone;
    return ok() ? kNone : std::get<1>(v_).message;
  }

 private:
  std::variant<T, Error> v_;
};

// A result without a value: success or an error.
struct Ok {};
using Status = Result<Ok>;

}  // namespace cpupower
