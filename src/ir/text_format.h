// The chorus text IR: a compact, line-oriented print of ir::Algorithm (one step per line) that
// parses back losslessly. Printed by `chorus compile --format text` and CHORUS_DEBUG_PASSES.
#pragma once

#include <string>
#include <string_view>

#include "ir/algorithm.h"

namespace chorus::ir {

// Deterministic text, e.g.
//   algorithm "allreduce.ring" collective=allreduce protocol=Simple inplace=1 ranks=4 chunks=4
//       minBytes=0 maxBytes=0 root=0 custom=""          (one line)
//   rank 0 input=4 output=0 scratch=0
//     tb 0 send=1 recv=3 channel=0
//       0: send input[0] -> input[0] count=1
//       1: recvReduceSend input[3] -> input[3] count=1 deps=(1,2) hasdep
// A step's peer and channel (Step::peer, Step::channel) print as "peer=P channel=C" after
// count=, each only when set (not -1).
std::string printText(const Algorithm& algorithm);

// Parses the output of printText (blank lines and lines starting with '#' are ignored).
// Throws ParseError "source:LINE: ..." on any malformed line.
Algorithm parseText(std::string_view text, const std::string& sourceName);

}  // namespace chorus::ir
