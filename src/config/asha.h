#pragma once
// adaptive_asha: Determined's adaptive asynchronous successive halving (Li et al., "A System for
// Massively Parallel Hyperparameter Tuning", arXiv:1810.05934), the arithmetic the master and
// the trial processes share.
//
// Trials are spread over brackets; a trial of a bracket with R rungs trains in R searcher
// operations whose lengths are its rungs, max_length / divisor^(R-1-k) for k = 0..R-1 (in the
// unit of searcher.max_length). After each operation but the last, the trial reports the
// searcher metric and the searcher (master/searcher/asha_searcher.h) compares it with what the
// bracket's other trials reported at that rung: it goes on only when it is among the best
// 1/divisor of them, otherwise it is stopped (and, without stop_once, may be promoted later).
//
// Brackets by mode: aggressive 1 (max_rungs rungs), standard ceil(max_rungs / 2), conservative
// max_rungs; bracket b has max_rungs - b rungs, so later brackets stop trials later or never.
// Trial i (0-based, in creation order) belongs to bracket i % brackets.
//
// Example (max_length 1000 batches, max_rungs 3, divisor 4, aggressive):
//   AshaBrackets(s) == {{63, 250, 1000}}

#include <cstdint>
#include <vector>

#include "cohort/config/experiment_config.h"

namespace cohort::config {

// Whether the searcher stops and promotes trials at rungs: adaptive_asha, and async_halving
// (Determined's single bracket of num_rungs rungs; here one bracket of the same arithmetic).
bool HasRungs(const SearcherConfig& searcher);

// Per bracket, its operation lengths: ascending, at least 1, the last max_length. Brackets:
// async_halving's one of num_rungs rungs; adaptive_asha's bracket_rungs when given (the rungs
// of each bracket), else by mode as above. Empty when !HasRungs or without a max_length.
std::vector<std::vector<int64_t>> AshaBrackets(const SearcherConfig& searcher);

// The searcher operations of the experiment's `index`-th trial (0-based, creation order): its
// bracket's rungs for adaptive_asha and async_halving, {max_length} for the other searchers, {} without a
// max_length.
std::vector<int64_t> SearcherOperations(const SearcherConfig& searcher, int64_t index);

// Whether a trial that reported `mine` at a rung goes on, given the metrics `others` the
// bracket's other trials reported at that rung: yes when fewer than
// ceil((others.size() + 1) / divisor) of them are strictly better. The first trial to reach a
// rung always goes on.
bool AshaPromotes(const std::vector<double>& others, double mine, double divisor,
                  bool smaller_is_better);

}  // namespace cohort::config
