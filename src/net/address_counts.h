// How many connections each client address has open, for HttpServer's cap: shared with the
// connections the server has handed over (tunnel.h), which may outlive it. For
// http_server.cc only.
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

namespace corral::net {

struct AddressCounts {
  std::mutex mu;
  std::unordered_map<std::string, size_t> open;  // GUARDED_BY(mu)

  bool Take(const std::string& address, size_t cap) {
    std::lock_guard<std::mutex> lock(mu);
    size_t& n = open[address];
    if (n >= cap) return false;
    ++n;
    return true;
  }
  void Release(const std::string& address) {
    std::lock_guard<std::mutex> lock(mu);
    auto it = open.find(address);
    if (it != open.end() && --it->second == 0) open.erase(it);
  }
};

// A handed-over connection's place under its address's cap, given back when it is dropped.
class AddressSlot {
 public:
  AddressSlot(std::shared_ptr<AddressCounts> counts, std::string address)
      : counts_(std::move(counts)), address_(std::move(address)) {}
  ~AddressSlot() { counts_->Release(address_); }
  AddressSlot(const AddressSlot&) = delete;
  AddressSlot& operator=(const AddressSlot&) = delete;

 private:
  std::shared_ptr<AddressCounts> counts_;
  std::string address_;
};

}  // namespace corral::net
