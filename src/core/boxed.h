#pragma once
// A value held on the heap, copied as a value. For a large member of a rare alternative of a
// std::variant: a variant is as large as its largest alternative, so one inline Service makes
// every change the head keeps (the event stream's buffer, the commit queue) that large.

#include <utility>

#include <memory>

namespace corral {

template <typename T>
class Boxed {
 public:
  Boxed() : value_(std::make_unique<T>()) {}
  Boxed(T value) : value_(std::make_unique<T>(std::move(value))) {}  // NOLINT: implicit, as T
  Boxed(const Boxed& other) : value_(std::make_unique<T>(*other)) {}
  Boxed& operator=(const Boxed& other) {
    if (this != &other) value_ = std::make_unique<T>(*other);
    return *this;
  }
  // As with any moved-from value, a moved-from box may only be assigned to or destroyed.
  Boxed(Boxed&& other) noexcept = default;
  Boxed& operator=(Boxed&& other) noexcept = default;
  ~Boxed() = default;

  const T& operator*() const { return *value_; }
  T& operator*() { return *value_; }
  const T* operator->() const { return value_.get(); }
  T* operator->() { return value_.get(); }
  bool operator==(const Boxed& other) const { return *value_ == *other.value_; }

 private:
  std::unique_ptr<T> value_;
};

}  // namespace corral
