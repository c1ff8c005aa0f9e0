// ktune/status.hpp — every public call returns a Status: a code plus a human-readable message.
#pragma once
#include <string>
#include <string_view>
#include <utility>

namespace ktune {

enum class StatusCode {
  ok = 0,
  invalid_argument,  // null pointer, bad dimension, leading dimension too small
  misaligned,        // no instance accepts the pointer / leading-dimension alignment
  unsupported,       // type, layout or epilogue combination ktune does not implement
  no_instance,       // arguments are fine but no compiled instance can run them on this device
  no_device,         // no CUDA device visible
  cuda_error,        // a CUDA runtime call failed
  cache_error,       // tuning cache unreadable / corrupt (never fatal for a GEMM call)
  internal,
};

constexpr std::string_view to_string(StatusCode c) {
  switch (c) {
    case StatusCode::ok: return "ok";
    case StatusCode::invalid_argument: return "invalid_argument";
    case StatusCode::misaligned: return "misaligned";
    case StatusCode::unsupported: return "unsupported";
    case StatusCode::no_instance: return "no_instance";
    case StatusCode::no_device: return "no_device";
    case StatusCode::cuda_error: return "cuda_error";
    case StatusCode::cache_error: return "cache_error";
    case StatusCode::internal: return "internal";
  }
  return "unknown";
}

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}
  static Status success() { return {}; }

  bool ok() const { return code_ == StatusCode::ok; }
  explicit operator bool() const { return ok(); }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }
  std::string to_string() const {
    return ok() ? std::string("ok") : std::string(ktune::to_string(code_)) + ": " + message_;
  }

 private:
  StatusCode code_ = StatusCode::ok;
  std::string message_;
};

inline Status error(StatusCode code, std::string message) { return {code, std::move(message)}; }

}  // namespace ktune

// Propagate a non-ok Status to the caller.
#define KTUNE_RETURN_IF_ERROR(expr)            \
  do {                                         \
    ::ktune::Status ktune_status_ = (expr);    \
    if (!ktune_status_.ok()) return ktune_status_; \
  } while (0)
