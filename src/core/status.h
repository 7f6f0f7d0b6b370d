// Status and Result<T>: the error type that crosses module boundaries (no exceptions do).
#pragma once

#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <utility>
#include <variant>

namespace corral {

enum class ErrorCode {
  kOk = 0,
  kInvalidArgument,  // bad input: names the field, the value and what is accepted
  kNotFound,
  kAlreadyExists,
  kFailedPrecondition,  // valid request, wrong state (e.g. cancel a finished job)
  kUnauthenticated,
  kPermissionDenied,
  kResourceExhausted,  // over a limit (pending jobs per user, request rate): later, or less
  kUnavailable,        // transient: retry
  kInternal,
};

const char* ErrorCodeName(ErrorCode code);

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(ErrorCode code, std::string message) : code_(code), message_(std::move(message)) {}
  static Status Ok() { return {}; }

  bool ok() const { return code_ == ErrorCode::kOk; }
  ErrorCode code() const { return code_; }
  const std::string& message() const { return message_; }
  std::string ToString() const;

 private:
  ErrorCode code_ = ErrorCode::kOk;
  std::string message_;
};

inline Status InvalidArgument(std::string m) { return {ErrorCode::kInvalidArgument, std::move(m)}; }
inline Status NotFound(std::string m) { return {ErrorCode::kNotFound, std::move(m)}; }
inline Status FailedPrecondition(std::string m) {
  return {ErrorCode::kFailedPrecondition, std::move(m)};
}
inline Status Unavailable(std::string m) { return {ErrorCode::kUnavailable, std::move(m)}; }
inline Status Internal(std::string m) { return {ErrorCode::kInternal, std::move(m)}; }
inline Status PermissionDenied(std::string m) {
  return {ErrorCode::kPermissionDenied, std::move(m)};
}
inline Status Unauthenticated(std::string m) { return {ErrorCode::kUnauthenticated, std::move(m)}; }

// Result<T> holds a value or a non-ok Status.
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : value_(std::move(value)) {}         // NOLINT: implicit by design
  Result(Status status) : status_(std::move(status)) {  // NOLINT
    if (status_.ok()) status_ = Internal("Result constructed from an ok Status");
  }

  bool ok() const { return value_.has_value(); }
  const Status& status() const { return status_; }
  T& value() & { return *value_; }
  const T& value() const& { return *value_; }
  T&& value() && { return std::move(*value_); }
  T* operator->() { return &*value_; }
  const T* operator->() const { return &*value_; }
  T& operator*() & { return *value_; }
  const T& operator*() const& { return *value_; }

 private:
  std::optional<T> value_;
  Status status_;
};

[[noreturn]] void CheckFailed(const char* file, int line, const char* expr, const std::string& msg);

}  // namespace corral

// A broken invariant aborts with a message: it is a bug, not an error to handle.
#define CORRAL_CHECK(cond, ...)                                                              \
  do {                                                                                       \
    if (!(cond)) ::corral::CheckFailed(__FILE__, __LINE__, #cond, std::string{__VA_ARGS__}); \
  } while (0)

#define CORRAL_RETURN_IF_ERROR(expr) \
  do {                               \
    ::corral::Status _st = (expr);   \
    if (!_st.ok()) return _st;       \
  } while (0)
