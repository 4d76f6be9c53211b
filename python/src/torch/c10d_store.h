// C10dStore: chorus's rendezvous interface (transport/store.h) over the c10d::Store that
// torch.distributed hands a backend (TCPStore, FileStore, HashStore, PrefixStore, or a Python
// store). The torch backend bootstraps through it and runs no store of its own.
#pragma once

#include <c10/util/intrusive_ptr.h>
#include <torch/csrc/distributed/c10d/Store.hpp>

#include "transport/store.h"

namespace chorus::torch_backend {

// Thread-safe if the wrapped store is (every c10d store is).
class C10dStore : public transport::Store {
 public:
  explicit C10dStore(c10::intrusive_ptr<c10d::Store> store);

  void set(const std::string& key, const std::vector<std::uint8_t>& value) override;
  // Throws TimeoutError naming the key when it does not appear within `timeout`.
  std::vector<std::uint8_t> get(const std::string& key, std::chrono::milliseconds timeout) override;
  std::int64_t add(const std::string& key, std::int64_t delta) override;
  bool check(const std::vector<std::string>& keys) override;
  void wait(const std::vector<std::string>& keys, std::chrono::milliseconds timeout) override;

 private:
  c10::intrusive_ptr<c10d::Store> store_;
};

}  // namespace chorus::torch_backend
