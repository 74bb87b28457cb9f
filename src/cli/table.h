#pragma once
// Aligned text tables for the CLI's list and describe verbs: left-aligned text, right-aligned
// numbers, two spaces between columns, no trailing blanks. Thread-compatible (pure).

#include <ostream>
#include <string>
#include <vector>

namespace cohort::cli {

// Columns whose every cell (after the header) parses as a number are right-aligned.
void PrintTable(std::ostream& out, const std::vector<std::string>& header,
                const std::vector<std::vector<std::string>>& rows);

}  // namespace cohort::cli
