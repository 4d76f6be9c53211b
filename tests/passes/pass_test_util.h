// Small DSL programs and helpers shared by the per-pass golden tests.
#pragma once

#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "chorus/lang.h"
#include "compiler/pipeline.h"
#include "ir/text_format.h"

namespace chorus::testing {

// Ring AllReduce (GC3 Figure 3b with offset 0, count 1), in place, chunk factor = ranks.
inline std::unique_ptr<lang::Program> ringAllReduce(int ranks, lang::ProgramOptions options = {}) {
  auto p = std::make_unique<lang::Program>("ring", lang::allReduce(ranks, ranks, true), options);
  for (int r = 0; r < ranks; ++r) {
    auto c = p->chunk((r + 1) % ranks, lang::Buffer::input, r);
    for (int s = 1; s < ranks; ++s)
      c = p->chunk((r + 1 + s) % ranks, lang::Buffer::input, r).reduce(c);
    for (int s = 1; s < ranks; ++s)
      c = c.copy((r + s) % ranks, lang::Buffer::input, r);
  }
  return p;
}

// All-pairs AllReduce (GC3 §7.1.2): rank r owns chunk r; every rank sends its copy of chunk
// r to rank r's scratch, rank r reduces them locally and sends the sum back to everyone.
inline std::unique_ptr<lang::Program> allPairsAllReduce(int ranks) {
  auto p = std::make_unique<lang::Program>("allpairs", lang::allReduce(ranks, ranks, true));
  for (int r = 0; r < ranks; ++r)
    for (int q = 0; q < ranks; ++q)
      if (q != r) p->chunk(q, lang::Buffer::input, r).copy(r, lang::Buffer::scratch, q);
  for (int r = 0; r < ranks; ++r) {
    auto sum = p->chunk(r, lang::Buffer::input, r);
    for (int q = 0; q < ranks; ++q)
      if (q != r) sum = sum.reduce(p->chunk(r, lang::Buffer::scratch, q));
    for (int q = 0; q < ranks; ++q)
      if (q != r) sum.copy(q, lang::Buffer::input, r);
  }
  return p;
}

// The step lines ("    3: recvReduceCopySend input[0] -> input[0] count=1 ...") of one rank.
inline std::vector<std::string> stepLines(const ir::Algorithm& algorithm, int rank) {
  std::istringstream text(ir::printText(algorithm));
  std::vector<std::string> lines;
  std::string line;
  bool inRank = false;
  while (std::getline(text, line)) {
    if (line.rfind("rank ", 0) == 0)
      inRank = line.rfind("rank " + std::to_string(rank) + " ", 0) == 0;
    else if (inRank && line.find(": ") != std::string::npos)
      lines.push_back(line);
  }
  return lines;
}

inline compiler::CompileResult compileWith(const lang::Program& program,
                                           std::vector<std::string> disabled = {},
                                           int fifoSlots = compiler::kDefaultFifoSlots) {
  compiler::CompileOptions options;
  options.disabledPasses = std::move(disabled);
  options.fifoSlots = fifoSlots;
  return compiler::compileProgram(program.dag(), options);
}

}  // namespace chorus::testing
