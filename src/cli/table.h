#pragma once
// Aligned text tables for the CLI's list and describe verbs: left-aligned text, right-aligned
// numbers, two spaces between columns, no trailing blanks. Thread-compatible (pure).

#include <ostream>
#include <string>
#include <vector>

#include "wire/system_metrics.h"

namespace cohort::cli {

// Columns whose every cell (after the header) is a number, alone or followed by its unit
// ("3.5", "97.5%", "22.6 GiB", "1.2 MiB/s"; "-" for none), are right-aligned.
void PrintTable(std::ostream& out, const std::vector<std::string>& header,
                const std::vector<std::vector<std::string>>& rows);

// `value` in `unit` for a table cell: bytes in binary units ("512 B", "22.6 GiB", "3.0
// MiB/s"), percentages and rates with one decimal ("97.5%", "3.9/s"); with no unit, six
// significant digits ("0.306637", "2.78533e+08").
std::string FormatQuantity(double value, wire::SeriesUnit unit);

}  // namespace cohort::cli
