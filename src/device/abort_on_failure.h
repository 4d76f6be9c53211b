// How a device executor's call fails (device layer): every rank refuses a bad plan alike before
// it touches a peer, so a PlanError is only rethrown; any other failure aborts the group's
// connections first, so no peer waits for this rank until its timeout.
#pragma once

#include <exception>
#include <utility>

#include <fmt/format.h>

#include "support/error.h"
#include "transport/connections.h"

namespace chorus::device {

template <class Body>
void abortGroupOnFailure(transport::ConnectionSet& connections, int rank, Body&& body) {
  try {
    std::forward<Body>(body)();
  } catch (const PlanError&) {
    throw;
  } catch (const std::exception& error) {
    connections.abort(fmt::format("rank {} failed: {}", rank, error.what()));
    throw;
  }
}

}  // namespace chorus::device
